"""The oracle benchmark's page on the site is the rendering of its committed results, and on a
synthetic run its ratios, extrapolation marks, xxhash shim and checks say what they should
(none of it needs the reference libraries)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from dp2pub.bench import oracles, oracles_report, pages, timing
from dp2pub.bench import references as refs

ROOT = Path(__file__).resolve().parent.parent
OK = {"correlation": 0.99, "max_abs_error": 0.01, "ok": True}


def timed(n: int, best: float) -> dict[str, Any]:
    """A summary of three runs of ``n`` units: ``best`` seconds, then twice and four times it
    (so the median is twice the best)."""
    return timing.summary([2 * best, best, 4 * best], n)


def synthetic(argv: list[str] | None = None, shim: bool = True) -> dict[str, Any]:
    """A results dict as the benchmark writes it, n = 1,000: dp2pub takes 1 ms on every oracle;
    pure-ldp's GRR 1 s at equal n, its OLH 0.5 s on 100 users (extrapolated), its SUE fails;
    multi-freq-ldpy is not installed."""
    p = oracles.parser()
    args = p.parse_args(["--n", "1000", "--reference-n", "100", "--repeats", "3"] if argv is None else argv)
    n = args.n
    ours = {oracle: timed(n, 0.001) for oracle in refs.ORACLES}
    references = {
        "pure-ldp": {
            "oracles": {
                "grr": {"at_reference_n": timed(100, 0.1), "at_n": timed(n, 1.0), "projected_s": 3.0, "check": OK},
                "sue": {"error": "TypeError: boom"},
                "olh": {"at_reference_n": timed(100, 0.5), "at_n": None, "projected_s": 60.0, "check": OK},
            }
        },
        "multi-freq-ldpy": {"error": "not installed (multi_freq_ldpy); pip install -e '.[bench]'"},
    }
    xxhash = {"applied": True, "xxhash": "4.1.0", "overhead_ns_per_hash": 100.0} if shim else {"applied": False}
    return {
        "config": oracles.configuration(args, p),
        "machine": {"processor": "Test CPU", "cpus": 2, "python": "3.11.0"},
        "versions": {"numpy": "2.0", "pure-ldp": "1.2.0", "multi-freq-ldpy": None, "xxhash": "4.1.0", "numba": None},
        "dp2pub": ours,
        "checks": {oracle: OK for oracle in refs.ORACLES},
        "grr_table": {
            "n": 2000,
            "d": 10,
            "k": 16,
            "perturb": timed(20_000, 0.01),
            "perturb_and_estimate": timed(20_000, 0.02),
        },
        "references": references,
        "xxhash_shim": xxhash,
        "ratios": oracles.ratios(ours, references, n, oracles.shim_seconds(xxhash, args.k)),
    }


def rows(rendered: str, oracle: str) -> dict[str, str]:
    """The table rows of ``oracle`` in a rendering, by library."""
    return {line.split(" | ")[1]: line for line in rendered.splitlines() if line.startswith(f"| {oracle} | ")}


def test_the_site_page_is_the_rendering_of_the_committed_results():
    results = json.loads((ROOT / oracles_report.DOCS_JSON).read_text())
    page = (ROOT / "docs" / "reference" / "benchmarks" / "oracles.md").read_text()
    start, end = pages.markers("oracles")
    assert page.count(start) == page.count(end) == 1
    assert pages.block_of(page, "oracles") == ""  # the repository's page holds no figures
    assert pages.block_of(pages.fill(page, ROOT), "oracles") == oracles_report.render(results)
    assert pages.docs_json("oracles") == oracles_report.DOCS_JSON


def test_the_committed_results_record_how_they_were_measured():
    results = json.loads((ROOT / oracles_report.DOCS_JSON).read_text())
    config = results["config"]
    assert {"n", "k", "epsilon", "repeats", "warmup_n", "reference_n", "reference_budget", "default"} <= set(config)
    assert config["default"] == (config["differs_from_default"] == {})
    assert {"processor", "cpus", "python"} <= set(results["machine"])
    assert {"numpy", "pure-ldp", "multi-freq-ldpy"} <= set(results["versions"])


def test_ratios_come_from_the_fastest_runs_and_mark_equal_and_extrapolated_n():
    ratios = synthetic()["ratios"]
    grr, olh = ratios["pure-ldp"]["grr"], ratios["pure-ldp"]["olh"]
    assert grr["best"] == pytest.approx(1000) and grr["median"] == pytest.approx(1000)
    assert grr["equal_n"] and grr["n"] == grr["reference_n"] == 1000
    # OLH: 100 users in 0.5 s (best) and 1 s (median) against 1,000 users in 1 ms and 2 ms
    assert olh["best"] == pytest.approx(1e6 / 200) and olh["median"] == pytest.approx(5e5 / 100)
    assert not olh["equal_n"] and (olh["n"], olh["reference_n"]) == (1000, 100)
    assert olh["reference_min_s_at_n"] == pytest.approx(5.0) and olh["dp2pub_min_s"] == pytest.approx(0.001)
    assert set(ratios["pure-ldp"]) == {"grr", "olh"} and ratios["multi-freq-ldpy"] == {}


def test_the_shim_s_cost_is_taken_off_the_hashing_oracles_only():
    assert oracles.shim_seconds({"applied": True, "overhead_ns_per_hash": 100.0}, 128) == pytest.approx(
        {"olh": 129e-7, "rappor": 2e-7}
    )
    assert oracles.shim_seconds({"applied": False}, 128) == {}
    olh = synthetic()["ratios"]["pure-ldp"]["olh"]
    shim_s = 129 * 100e-9  # k + 1 hashes of 100 ns
    assert olh["shim_share"] == pytest.approx(shim_s * 200)
    assert olh["per_s_best_without_shim"] == pytest.approx(1 / (1 / 200 - shim_s))
    assert olh["best_without_shim"] == pytest.approx(1e6 * (1 / 200 - shim_s))
    assert "shim_share" not in synthetic()["ratios"]["pure-ldp"]["grr"]
    assert "shim_share" not in synthetic(shim=False)["ratios"]["pure-ldp"]["olh"]


def test_the_rendering_marks_every_row():
    rendered = oracles_report.render(synthetic())
    grr, sue, olh, rappor = (rows(rendered, oracle) for oracle in ("grr", "sue", "olh", "rappor"))
    assert "| 1M (500k) |" in grr["dp2pub"] and "n = 1,000 |" in grr["dp2pub"]
    assert "| 1k (500) | 1,000× (1,000×) | equal n = 1,000 |" in grr["pure-ldp"]
    assert "| 200 (100) | 5,000× (5,000×) | **extrapolated** from n = 100 to 1,000 |" in olh["pure-ldp"]
    assert "failed: TypeError: boom" in sue["pure-ldp"]
    assert "not installed (multi_freq_ldpy)" in grr["multi-freq-ldpy"]
    assert "not implemented" in rappor["pure-ldp"]
    assert (
        "Test CPU, 2 logical cores; Python 3.11.0, numpy 2.0; pure-ldp 1.2.0, multi-freq-ldpy not installed" in rendered
    )
    assert "**Not the default configuration**: n = 1,000 (default 1,000,000)" in rendered
    assert "fastest run (minimum time)" in rendered and "ratio of the medians" in rendered
    assert "xxhash 4.1.0 rejects" in rendered and "100 ns" in rendered and "0% of pure-ldp's OLH" in rendered
    assert "all passed" in rendered


def test_a_default_run_is_not_marked_and_a_failed_check_is():
    result = synthetic([])
    assert result["config"]["default"] and "Not the default" not in oracles_report.render(result)
    result["references"]["pure-ldp"]["oracles"]["olh"]["check"] = {**OK, "ok": False, "correlation": 0.1}
    rendered = oracles_report.render(result)
    assert "**failed: pure-ldp olh**" in rendered and "estimate check failed" in rows(rendered, "olh")["pure-ldp"]


def test_a_block_is_replaced_between_the_markers_and_render_prints_it(tmp_path, capsys):
    start, end = pages.markers("oracles")
    text = f"before\n{start}\nold\n{end}\nafter\n"
    assert pages.replace_block(text, "new\nblock", "oracles") == f"before\n{start}\nnew\nblock\n{end}\nafter\n"
    assert pages.block_of(pages.replace_block(text, "new", "oracles"), "oracles") == "new"
    with pytest.raises(ValueError, match="not found"):
        pages.replace_block("no markers", "new", "oracles")
    (tmp_path / "r.json").write_text(json.dumps(synthetic()))
    capsys.readouterr()
    assert oracles.main(["--render", str(tmp_path / "r.json")]) == json.loads(json.dumps(synthetic()))
    assert capsys.readouterr().out.strip("\n") == oracles_report.render(synthetic())


def test_a_reference_runs_at_equal_n_only_within_its_budget():
    calls: list[int] = []

    def estimate(values: list[int]) -> np.ndarray:
        calls.append(len(values))
        return np.zeros(4)

    def args(**overrides: Any) -> argparse.Namespace:
        return argparse.Namespace(
            **{"reference_n": 10, "repeats": 2, "warmup_n": 5, "reference_budget": 1e9, **overrides}
        )

    values = list(range(50))
    within = refs.time_reference(estimate, values, args())
    assert calls == [5, 10, 10, 50, 50] and within["at_n"]["n"] == 50 and within["at_reference_n"]["n"] == 10
    calls.clear()
    beyond = refs.time_reference(estimate, values, args(reference_budget=0.0))
    assert calls == [5, 10, 10] and beyond["at_n"] is None
    calls.clear()
    small = refs.time_reference(estimate, values, args(reference_n=100, reference_budget=0.0))
    assert calls == [5, 50, 50] and small["at_n"] is small["at_reference_n"]


def test_the_xxhash_shim_encodes_strings_and_passes_the_rest_through():
    fake = ModuleType("xxhash")

    def hasher(bits: int):
        def xxh(data: Any = b"", seed: int = 0) -> tuple[int, Any, int]:
            if isinstance(data, str):
                raise TypeError("Strings must be encoded before hashing")
            return bits, data, seed

        return xxh

    fake.xxh32, fake.xxh64 = hasher(32), hasher(64)  # type: ignore[attr-defined]
    fake.VERSION = "4.1.0"  # type: ignore[attr-defined]
    shim = refs.utf8_xxhash(fake)
    assert shim.xxh32("12", seed=7) == (32, b"12", 7) and shim.xxh32(b"12", seed=2**40) == (32, b"12", 2**40)
    assert shim.xxh64("12", seed=2**63) == (64, b"12", 2**63)
    assert shim.xxh32("é") == (32, "é".encode(), 0) and shim.VERSION == "4.1.0"
    assert refs.rejects_str(fake) and not refs.rejects_str(shim)


def test_the_check_tells_a_working_oracle_from_a_broken_one():
    values = refs.skewed(16, 2000, np.random.default_rng(0))
    truth = np.bincount(values, minlength=16) / 2000
    assert refs.check(truth + 0.001, values, 16)["ok"]
    broken = refs.check(np.random.default_rng(1).uniform(0, 0.1, 16), values, 16)
    assert not broken["ok"] and broken["max_abs_error"] > 0.1
