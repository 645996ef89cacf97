"""The sweep benchmark (``python -m dp2pub.bench sweep``) on a tiny sweep: its parts add up
to each job's share of the wall time, and its table and JSON report what it measured."""

from __future__ import annotations

import json

import pytest

from dp2pub.bench import sweep


@pytest.mark.slow
def test_a_tiny_sweep_is_measured_and_its_parts_add_up(tmp_path):
    out = tmp_path / "sweep.json"
    results = sweep.main(["--jobs", "3", "--n", "200", "--launchers", "basic", "--stores", "sqlite", "--out", str(out)])
    basic = results["sqlite"]["basic"]
    assert sum(basic[part] for part in sweep.PARTS) == pytest.approx(basic["slot"], rel=1e-12)
    assert basic["slot"] == pytest.approx(basic["wall"] / 3, rel=1e-12)  # one worker
    assert 0 < basic["work"] < basic["slot"] and basic["tracking"] > 0 and basic["startup"] > 0
    assert basic["jobs_per_min"] == pytest.approx(60 * 3 / basic["wall"], rel=1e-12)
    assert json.loads(out.read_text())["results"] == results


def test_the_table_gives_each_launchers_time_relative_to_joblib():
    row = {"jobs_per_min": 60.0, "slot": 2.0, "overhead": 1.9, "wall": 64.0, **dict.fromkeys(sweep.PARTS, 0.4)}
    text = sweep.table({"sqlite": {"joblib": row, "ray": {**row, "wall": 96.0}}})
    lines = text.splitlines()
    assert lines[0].startswith("| store | launcher | jobs/min | slot s | work s |")
    assert lines[2].endswith("| 1.00 |") and lines[3].endswith("| 1.50 |")
