"""The memory benchmark runs and its measurement extrapolates under the 2 GiB target."""

import json

import pytest

from dp2pub.bench import memory

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow


def test_memory_bench_measures_a_job_and_scales_under_the_limit(tmp_path):
    n = 2_000_000  # a fifth of the benchmark's 10^7 users, to keep the suite fast
    results = memory.main(["--n", str(n), "--cases", "grr", "--out", str(tmp_path / "memory.json")])
    assert json.loads((tmp_path / "memory.json").read_text()) == results
    peak, idle = results["cases"]["grr"]["peak_gib"], results["idle_peak_gib"]
    assert idle < peak
    # the job's own memory (above the imports) grows at most linearly in n: 10^7 users stay under 2 GiB
    assert idle + (peak - idle) * 10_000_000 / n < memory.LIMIT_GIB
