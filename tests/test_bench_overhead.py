"""The overhead benchmark (``python -m dp2pub.bench overhead``) at tiny sizes: every case is
measured against a floor or reference of the same run, and its JSON and table report it. No
assertion on the ratios themselves: they depend on the machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dp2pub.bench import overhead, pages
from tests.conftest import rendered_block

ROOT = Path(__file__).resolve().parent.parent

#: Rows of differences of two noisy sweeps: with a few jobs, their sign is noise.
MARGINAL = {"sweep marginal", "sweep joblib speed-up"}


@pytest.mark.slow
def test_every_case_is_a_ratio_of_two_times_of_the_same_run(tmp_path, capsys):
    out = tmp_path / "overhead.json"
    argv = ["--repeats", "1", "--jobs", "3", "--small-jobs", "2", "--aggregate-jobs", "4"]
    results = overhead.main([*argv, "--ldp-dataset", "nltcs", "--out", str(out)])
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(results))
    assert set(written["cases"]) == set(overhead.CASES)
    assert written["machine"]["cpus"] >= 1 and len(written["machine"]["load_after"]) == 3
    for rows in written["cases"].values():
        for row in rows:
            assert row["floor_s"] > 0 or row["case"] in MARGINAL
            assert row["measured_s"] > 0 or row["case"] in MARGINAL
            assert row["ratio"] == pytest.approx(row["measured_s"] / row["floor_s"], rel=1e-12)
    assert written["cases"]["aggregates"][0]["jobs"] == 4
    marginal = written["cases"]["sweep"][0]["measured"]
    walls = marginal["walls"]
    assert marginal["median_s"] == pytest.approx(walls["3"][0] - walls["2"][0], rel=1e-12)
    table = capsys.readouterr().out
    assert "| startup --help |" in table and "| store new/existing |" in table


def test_the_aggregate_sweep_is_cut_to_about_the_jobs_asked():
    assert overhead.aggregate_grid(200) == ([], 200)
    assert overhead.aggregate_grid(4) == (["epsilon=0.5", "seed=range(0,1)"], 4)
    assert overhead.aggregate_grid(40) == (["epsilon=0.5,1,2,4,8", "seed=range(0,2)"], 40)


def test_a_row_meets_its_target_by_its_ratio_of_medians():
    timed = {"median_s": 3.0, "min_s": 2.0}
    row = overhead.row("job", timed, {"median_s": 2.0, "min_s": 1.0}, ("<=", 1.5))
    assert row["ratio"] == 1.5 and row["met"] is True and row["target"] == "<= 1.5"
    assert overhead.row("x", timed, {"median_s": 2.0}, (">=", 1.6))["met"] is False
    assert overhead.row("x", timed, {"median_s": 2.0}, None)["met"] is None
    lines = overhead.table([row]).splitlines()
    assert lines[0] == "| case | measured (s) | floor/reference (s) | ratio | target | met |"
    assert lines[2] == "| job | 3 | 2 | 1.50 | <= 1.5 | yes |"


def test_the_page_block_is_rendered_from_the_json(tmp_path, capsys):
    rows = [overhead.row("job", {"median_s": 3.0}, {"median_s": 2.0}, ("<=", 1.5))]
    machine = {"cpus": 2, "processor": "cpu", "platform": "os", "python": "3.11", "load_before": [1.0, 1, 1]}
    results = {"date": "2026-01-01", "options": {"repeats": 5, "jobs": 200, "small_jobs": 20}, "cases": {"job": rows}}
    results["machine"] = {**machine, "load_after": [2.0, 2, 2]}
    block = rendered_block(tmp_path, capsys, overhead.main, results)
    assert block == overhead.render(results)
    assert block.startswith("Measured 2026-01-01 by `python -m dp2pub.bench overhead` on 2 cores")
    assert "load average 1.0 before, 2.0 after" in block and block.endswith("| job | 3 | 2 | 1.50 | <= 1.5 | yes |")


def test_the_site_page_is_the_rendering_of_the_committed_results():
    committed = json.loads((ROOT / overhead.DOCS_JSON).read_text())
    page = (ROOT / "docs" / "reference" / "benchmarks" / "overhead.md").read_text()
    assert pages.block_of(page, "overhead") == ""  # the repository's page holds no figures
    assert pages.block_of(pages.fill(page, ROOT), "overhead") == overhead.render(committed)
    assert pages.docs_json("overhead") == overhead.DOCS_JSON
