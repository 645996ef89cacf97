"""The sweep benchmark (``python -m dp2pub.bench sweep``) on a tiny sweep: its parts add up
to each job's share of the wall time, and its table and JSON report what it measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dp2pub.bench import pages, sweep
from tests.conftest import rendered_block

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_a_tiny_sweep_is_measured_and_its_parts_add_up(tmp_path):
    out = tmp_path / "sweep.json"
    results = sweep.main(["--jobs", "3", "--n", "200", "--launchers", "basic", "--stores", "sqlite", "--out", str(out)])
    basic = results["sqlite"]["basic"]
    assert sum(basic[part] for part in sweep.PARTS) == pytest.approx(basic["slot"], rel=1e-12)
    assert basic["slot"] == pytest.approx(basic["wall"] / 3, rel=1e-12)  # one worker
    assert 0 < basic["work"] < basic["slot"] and basic["tracking"] > 0 and basic["startup"] > 0
    assert basic["jobs_per_min"] == pytest.approx(60 * 3 / basic["wall"], rel=1e-12)
    written = json.loads(out.read_text())
    assert written["results"] == results and (written["jobs"], written["n"]) == (3, 200)
    assert written["machine"]["cpus"] >= 1 and len(written["machine"]["load_after"]) == 3


def test_the_table_gives_each_launchers_time_relative_to_joblib():
    row = {"jobs_per_min": 60.0, "slot": 2.0, "overhead": 1.9, "wall": 64.0, **dict.fromkeys(sweep.PARTS, 0.4)}
    text = sweep.table({"sqlite": {"joblib": row, "ray": {**row, "wall": 96.0}}})
    lines = text.splitlines()
    assert lines[0].startswith("| store | launcher | jobs/min | slot s | work s |")
    assert lines[2].endswith("| 1.00 |") and lines[3].endswith("| 1.50 |")


def test_the_page_block_is_rendered_from_the_json(tmp_path, capsys):
    row = {"jobs_per_min": 60.0, "slot": 2.0, "overhead": 1.9, "wall": 64.0, **dict.fromkeys(sweep.PARTS, 0.4)}
    machine = {"cpus": 2, "processor": "cpu", "platform": "os", "python": "3.11"}
    written = {"date": "2026-01-01", "jobs": 64, "n": 1000, "results": {"sqlite": {"joblib": row}}}
    written["machine"] = {**machine, "load_before": [1.0, 1, 1], "load_after": [2.0, 2, 2]}
    block = rendered_block(tmp_path, capsys, sweep.main, written)
    assert block == sweep.render(written)
    assert block.startswith("Measured 2026-01-01 by `python -m dp2pub.bench sweep` on 2 cores")
    assert "load average 1.0 before, 2.0 after): 64 jobs of GRR on 1000 synthetic records" in block
    assert block.endswith(sweep.table(written["results"]))


def test_the_site_page_is_the_rendering_of_the_committed_results():
    committed = json.loads((ROOT / sweep.DOCS_JSON).read_text())
    page = (ROOT / "docs" / "reference" / "benchmarks" / "sweep.md").read_text()
    assert pages.block_of(page, "sweep") == ""  # the repository's page holds no figures
    assert pages.block_of(pages.fill(page, ROOT), "sweep") == sweep.render(committed)
    assert pages.docs_json("sweep") == sweep.DOCS_JSON
