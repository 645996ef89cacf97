"""Means over seeds with a 95% Student t interval, per configuration and metric."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

#: Columns that differ between the repetitions of one configuration.
REPLICATE_COLUMNS = ("run_id", "seed", "value")


def aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """Group the tidy runs by every column but ``run_id``, ``seed`` and ``value``.

    Returns the group columns and ``n``, ``mean``, ``sd`` (sample standard deviation),
    ``ci95`` = t(0.975, n-1) * sd / sqrt(n), ``ci_low`` and ``ci_high``. With one run the
    interval collapses to the mean (``sd`` and ``ci95`` are 0).
    """
    keys = [c for c in table.columns if c not in REPLICATE_COLUMNS]
    grouped = table.groupby(keys, dropna=False, sort=True)["value"]
    summary = grouped.agg(n="count", mean="mean", sd="std").reset_index()
    summary["sd"] = summary["sd"].fillna(0.0)
    n = summary["n"].to_numpy()
    t = stats.t.ppf(0.975, np.maximum(n - 1, 1))
    summary["ci95"] = np.where(n > 1, t * summary["sd"] / np.sqrt(n), 0.0)
    summary["ci_low"] = summary["mean"] - summary["ci95"]
    summary["ci_high"] = summary["mean"] + summary["ci95"]
    return summary


def summary_csv(directory: Path, study: str) -> Path:
    """Where the summary of ``study`` is written."""
    return Path(directory) / f"{study}_summary.csv"
