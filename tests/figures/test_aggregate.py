"""aggregate: mean, n and the Student t 95% interval per configuration, by hand."""

import math

import pandas as pd
import pytest

from dp2pub.figures.aggregate import aggregate


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
    assert summary.loc[2.0, "ci_low"] == pytest.approx(2.0 - 12.706205, rel=1e-6)
    # n=1: the interval collapses to the mean
    assert summary.loc[4.0, ["ci95", "sd"]].tolist() == [0.0, 0.0]
    assert summary.loc[4.0, "ci_low"] == summary.loc[4.0, "ci_high"] == 5.0
    assert "seed" not in summary and "run_id" not in summary
