"""Mondrian multidimensional k-anonymity.

K. LeFevre, D. J. DeWitt, R. Ramakrishnan, "Mondrian Multidimensional K-Anonymity",
ICDE 2006. Top-down greedy partitioning: a partition is cut on the QI with the widest
normalized range ((max code - min code) / (domain size - 1), categorical codes taken in
their domain order) at its median; a cut is allowable iff both sides keep at least k
records, otherwise the next-widest QI is tried, and a partition with no allowable cut is
final. Each final partition's QI values are generalized to their [min, max] range.

- ``strict``: the cut sends values <= split to the left and > split to the right, so the
  partitions' boxes are disjoint; with ties the split is the value whose cumulative count is
  closest to half the partition among the allowable ones (the median when it is allowable).
- ``relaxed``: records are sorted on the QI and cut at position m // 2, so records with the
  median value may go to either side (boxes may overlap); allowable iff m >= 2k.

The recursion runs on an explicit stack of row-index arrays; all per-record work is numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MODES = ("strict", "relaxed")


@dataclass(frozen=True)
class MondrianResult:
    """The final partitions.

    Attributes:
        partition: (n,) the final partition of every record.
        low, high: (P, q) smallest and largest QI code of every partition.
    """

    partition: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @property
    def n_partitions(self) -> int:
        return int(self.low.shape[0])


def strict_cut(values: np.ndarray, low: int, high: int, k: int) -> np.ndarray | None:
    """Boolean left-side mask of the allowable cut ``values <= split`` closest to the
    median, or None when no cut leaves >= k records on both sides."""
    m = len(values)
    cumulative = np.cumsum(np.bincount(values - low, minlength=high - low + 1))[:-1]
    allowed = (cumulative >= k) & (m - cumulative >= k)
    if not allowed.any():
        return None
    offsets = np.flatnonzero(allowed)
    split = low + int(offsets[np.argmin(np.abs(2 * cumulative[offsets] - m))])
    return values <= split


def relaxed_cut(values: np.ndarray, k: int) -> np.ndarray | None:
    """Boolean left-side mask of the m // 2 smallest values (ties split by position), or
    None when a side would have fewer than k records."""
    m = len(values)
    if m // 2 < k:
        return None
    left = np.zeros(m, dtype=bool)
    left[np.argsort(values, kind="stable")[: m // 2]] = True
    return left


def mondrian(qi_codes: np.ndarray, sizes: np.ndarray, k: int, mode: str = "strict") -> MondrianResult:
    """Partition the records of ``qi_codes`` (n, q), QI ``j`` having ``sizes[j]`` values,
    into classes of at least ``k`` records (1 <= k <= n)."""
    codes = np.ascontiguousarray(qi_codes, dtype=np.int64)
    n = codes.shape[0]
    scale = np.maximum(np.asarray(sizes, dtype=np.float64) - 1, 1.0)
    partition = np.empty(n, dtype=np.int64)
    lows, highs = [], []
    stack = [np.arange(n)]
    while stack:
        rows = stack.pop()
        block = codes[rows]
        low, high = block.min(axis=0), block.max(axis=0)
        left = None
        if len(rows) >= 2 * k:
            spread = (high - low) / scale
            for j in np.argsort(-spread, kind="stable"):
                if spread[j] == 0:
                    break
                column = block[:, j]
                left = (strict_cut(column, int(low[j]), int(high[j]), k) if mode == "strict"
                        else relaxed_cut(column, k))
                if left is not None:
                    break
        if left is None:
            partition[rows] = len(lows)
            lows.append(low)
            highs.append(high)
        else:
            stack.append(rows[~left])
            stack.append(rows[left])
    return MondrianResult(partition, np.array(lows), np.array(highs))
