"""Timing the benchmarks: warm-up, repeated runs, the fastest and the median."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

#: A benchmark's results, as written to its JSON.
Result = dict[str, Any]


def timings(work: Callable[[], object], repeats: int) -> list[float]:
    """Wall seconds of each of ``repeats`` runs of ``work`` (garbage collected before each)."""
    seconds = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - start)
    return seconds


def summary(seconds: list[float], n: int) -> Result:
    """The runs of ``n`` units: their times, the fastest and the median, as times and rates."""
    best, median = min(seconds), statistics.median(seconds)
    return {
        "n": n,
        "seconds": seconds,
        "min_s": best,
        "median_s": median,
        "per_s_best": n / best,
        "per_s_median": n / median,
    }


def warmed(work: Callable[[], object], repeats: int, warmup: Callable[[], object], n: int) -> Result:
    """:func:`summary` of ``work`` on ``n`` units, after one untimed run of ``warmup``
    (whose wall time, compilation included, is kept as ``warmup_s``)."""
    start = time.perf_counter()
    warmup()
    warmup_s = time.perf_counter() - start
    return {**summary(timings(work, repeats), n), "warmup_s": warmup_s}
