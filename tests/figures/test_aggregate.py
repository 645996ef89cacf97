"""aggregate: mean, n and the Student t 95% interval per configuration, by hand, clipped to
the metric's range."""

import math

import pandas as pd
import pytest

from dp2pub.figures.aggregate import aggregate, metric_range


def test_mean_and_t_interval_by_hand():
    table = pd.DataFrame(
        {
            "run_id": list("abcdef"),
            "epsilon": [1.0, 1.0, 1.0, 2.0, 2.0, 4.0],
            "seed": [0, 1, 2, 0, 1, 0],
            "mechanism.f": [None] * 6,  # an all-missing param must not drop the rows
            "metric": "mse_freq",
            "value": [1.0, 2.0, 6.0, 1.0, 3.0, 5.0],
        }
    )
    summary = aggregate(table).set_index("epsilon")
    assert summary["n"].tolist() == [3, 2, 1]
    assert summary["mean"].tolist() == pytest.approx([3.0, 2.0, 5.0])
    # n=3: sd = sqrt(((1-3)^2 + (2-3)^2 + (6-3)^2) / 2) = sqrt(7); t(0.975, 2) = 4.302653
    assert summary.loc[1.0, "ci95"] == pytest.approx(4.302653 * math.sqrt(7) / math.sqrt(3), rel=1e-6)
    # n=2: sd = sqrt(2); t(0.975, 1) = 12.706205
    assert summary.loc[2.0, "ci95"] == pytest.approx(12.706205 * math.sqrt(2) / math.sqrt(2), rel=1e-6)
    assert summary.loc[2.0, "ci_high"] == pytest.approx(2.0 + 12.706205, rel=1e-6)
    assert summary.loc[2.0, "ci_low"] == 0.0  # 2 - 12.7, but an MSE is never negative
    # n=1: the interval collapses to the mean
    assert summary.loc[4.0, ["ci95", "sd"]].tolist() == [0.0, 0.0]
    assert summary.loc[4.0, "ci_low"] == summary.loc[4.0, "ci_high"] == 5.0
    assert "seed" not in summary and "run_id" not in summary


def runs(metric: str, values: list[float]) -> pd.DataFrame:
    """One configuration's runs of ``metric``, one per seed."""
    n = len(values)
    return pd.DataFrame(
        {"run_id": [f"r{i}" for i in range(n)], "epsilon": 1.0, "seed": range(n), "metric": metric, "value": values}
    )


def test_a_tvd_band_near_zero_is_clipped_at_zero_and_keeps_its_upper_end():
    summary = aggregate(runs("tvd_1way", [0.01, 0.02, 0.30])).iloc[0]
    assert summary["mean"] - summary["ci95"] < -0.25  # the unclipped interval reaches below 0
    assert summary["ci_low"] == 0.0
    assert summary["ci_high"] == pytest.approx(summary["mean"] + summary["ci95"])
    assert summary["ci_high"] < 1.0


def test_an_accuracy_band_near_one_is_clipped_at_one():
    summary = aggregate(runs("accuracy_nb", [0.99, 0.98, 0.70])).iloc[0]
    assert summary["mean"] + summary["ci95"] > 1.25
    assert summary["ci_high"] == 1.0
    assert summary["ci_low"] == pytest.approx(summary["mean"] - summary["ci95"])


def test_the_family_tvd_and_misclassification_are_fractions_ncp_a_percentage():
    assert aggregate(runs("tvd", [0.9, 0.1, 0.95])).iloc[0]["ci_high"] == 1.0
    assert aggregate(runs("misclass_svm", [0.05, 0.9, 0.1])).iloc[0]["ci_low"] == 0.0
    ncp = aggregate(runs("ncp", [99.0, 90.0, 98.0])).iloc[0]
    assert ncp["ci_high"] == 100.0 and ncp["ci_low"] > 0.0


def test_values_outside_the_range_widen_it():
    # an unbiased estimate's TVD exceeds 1: the interval is not cut below the values logged
    summary = aggregate(runs("tvd_1way", [3.0, 5.0, 40.0])).iloc[0]
    assert summary["ci_high"] == pytest.approx(summary["mean"] + summary["ci95"])
    assert summary["ci_low"] == 0.0


def test_metric_ranges():
    assert metric_range("tvd_3way") == metric_range("accuracy_majority") == (0.0, 1.0)
    assert metric_range("misclass_majority") == (0.0, 1.0)
    assert metric_range("ncp") == (0.0, 100.0)
    assert metric_range("mse_count") == metric_range("discernibility") == (0.0, math.inf)
    assert metric_range("something_else") == (-math.inf, math.inf)
