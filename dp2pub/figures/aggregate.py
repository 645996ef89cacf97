"""Means over seeds with a 95% Student t interval, per configuration and metric, the interval
clipped to the range the metric's values can take."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

#: Columns that differ between the repetitions of one configuration.
REPLICATE_COLUMNS = ("run_id", "seed", "value")

_UNIT = (0.0, 1.0)
_NON_NEGATIVE = (0.0, math.inf)
#: (metric name pattern, range of its values), first match wins (docs/explanation/metric-contract.md).
#: TVDs (``tvd_<k>way``, the paper figures' ``tvd``), accuracies and misclassification rates
#: are fractions; NCP is a percentage; MSEs, counts (records, classes, class sizes), C_avg,
#: budgets, noise scales and wall times cannot be negative. Other metrics are unbounded.
RANGES: tuple[tuple[str, tuple[float, float]], ...] = (
    (r"tvd(_\d+way)?", _UNIT),
    (r"(accuracy|misclass)_.+", _UNIT),
    (r"ncp", (0.0, 100.0)),
    (
        r"mse_.+|discernibility|cavg|suppressed|n_.+|[klt]_achieved|epsilon_.+|delta|sigma|ibu_.+|time_.+",
        _NON_NEGATIVE,
    ),
)


def metric_range(metric: str) -> tuple[float, float]:
    """The range of the values of ``metric`` (:data:`RANGES`; ``(-inf, inf)`` if none matches)."""
    return next((bounds for pattern, bounds in RANGES if re.fullmatch(pattern, metric)), (-math.inf, math.inf))


def aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """Group the tidy runs by every column but ``run_id``, ``seed`` and ``value``.

    Returns the group columns and ``n``, ``mean``, ``sd`` (sample standard deviation),
    ``ci95`` = t(0.975, n-1) * sd / sqrt(n), ``ci_low`` and ``ci_high``. With one run the
    interval collapses to the mean (``sd`` and ``ci95`` are 0).

    ``ci_low`` and ``ci_high`` are ``mean -/+ ci95`` clipped to the metric's range
    (:func:`metric_range`: a TVD or an accuracy to [0, 1], an MSE at 0), so neither the summary
    CSV nor a band drawn from it reaches values the metric cannot take; ``ci95`` stays the
    unclipped half-width. Where a configuration's runs logged a value beyond an end of that range
    (the TVD of an unbiased estimate, whose negative entries let it exceed 1), the range does
    not hold for it and that end is not clipped.
    """
    keys = [c for c in table.columns if c not in REPLICATE_COLUMNS]
    grouped = table.groupby(keys, dropna=False, sort=True)["value"]
    summary = grouped.agg(n="count", mean="mean", sd="std", _min="min", _max="max").reset_index()
    summary["sd"] = summary["sd"].fillna(0.0)
    n = summary["n"].to_numpy()
    t = special.stdtrit(np.maximum(n - 1, 1), 0.975)  # stats.t.ppf's own, without importing scipy.stats
    summary["ci95"] = np.where(n > 1, t * summary["sd"] / np.sqrt(n), 0.0)
    bounds = np.array([metric_range(metric) for metric in summary["metric"]], dtype=float).reshape(-1, 2)
    low = np.where(summary.pop("_min") < bounds[:, 0], -np.inf, bounds[:, 0])
    high = np.where(summary.pop("_max") > bounds[:, 1], np.inf, bounds[:, 1])
    summary["ci_low"] = np.clip(summary["mean"] - summary["ci95"], low, high)
    summary["ci_high"] = np.clip(summary["mean"] + summary["ci95"], low, high)
    return summary


def summary_csv(directory: Path, study: str) -> Path:
    """Where the summary of ``study`` is written."""
    return Path(directory) / f"{study}_summary.csv"
