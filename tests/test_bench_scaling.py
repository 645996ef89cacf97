"""The scaling benchmark: its exponent fit, and a small sweep end to end."""

import json

import numpy as np
import pytest

from dp2pub.bench import scaling


def test_the_exponent_is_the_log_log_slope_over_the_fitted_points():
    ns = [1e3, 1e4, 1e5, 1e6, 1e7]
    bent = [0.2, 0.2, 0.1, 1.0, 10.0]  # linear from 1e5 on, a fixed cost below
    assert scaling.exponent(ns, bent, 1e5) == pytest.approx(1.0)
    assert scaling.exponent(ns, [3.0 * n**0.5 for n in ns], 1e3) == pytest.approx(0.5)
    assert scaling.exponent(ns, [0.01] * 5, 1e5) == pytest.approx(0.0)
    # a fixed cost bends the small points: fitting them too would report a flatter curve
    assert scaling.exponent(ns, bent, 1e3) < 0.7
    assert scaling.exponent(ns, [1, 2, 3, 4, 5], 1e7) is None  # one point
    assert scaling.exponent(ns, [1, 2, 0, 4, 5], 1e3) is None  # log of 0


@pytest.mark.slow
def test_a_small_sweep_measures_every_case_and_draws_the_figure(tmp_path):
    out, figure = tmp_path / "scaling.json", tmp_path / "scaling.png"
    argv = ["--ns", "1000", "1000000", "--ds", "3", "6", "--d-n", "2000", "--cases", "grr", "grr_aggregates"]
    results = scaling.main([*argv, "--out", str(out), "--figure", str(figure)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(results)) and figure.stat().st_size > 10_000
    for axis, values in (("n", [1000, 1_000_000]), ("d", [3, 6])):
        for case in ("grr", "grr_aggregates"):
            points = results[axis][case]["points"]
            assert [p[axis] for p in points] == values
            assert all(p["seconds"] > 0 and np.isfinite(p["memory_gib"]) for p in points)
    # how the times grow with n is the benchmark's figure, not a test's: a loaded machine moves it
