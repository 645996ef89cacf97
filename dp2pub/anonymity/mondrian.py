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
  median value may go to either side (boxes may overlap); allowable iff m >= 2k. Records tied
  on the cut QI are ordered by the other QIs (in QI order, then by row), so a tie is split
  between similar records rather than at an arbitrary file position.

With a :class:`~dp2pub.anonymity.privacy.PrivacyModel` that has sensitive attributes, a cut
is allowable only if both sides also meet its distinct l-diversity and t-closeness (the
paper's "allowable" generalized to any monotone model; LeFevre et al. 2006, section 4).

The recursion runs on an explicit stack of row-index arrays; all per-record work is numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp2pub.anonymity.privacy import PrivacyModel, SensitiveAttribute, class_histograms

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


def strict_cut(
    values: np.ndarray, low: int, high: int, model: PrivacyModel, sensitive: tuple[SensitiveAttribute, ...] = ()
) -> np.ndarray | None:
    """Boolean left-side mask of the allowable cut ``values <= split`` closest to the
    median, or None when no cut leaves both sides meeting the model; ``sensitive``: the
    model's attributes on these rows."""
    m, width = len(values), high - low + 1
    offset = np.subtract(values, low, dtype=np.int64)  # values may be codes of a narrow dtype
    left_size = np.cumsum(np.bincount(offset, minlength=width))[:-1]  # split after each value
    left_h, right_h = [], []
    for attribute in sensitive:  # per candidate split: the sensitive histogram of each side
        per_value = class_histograms(offset, width, attribute.codes, attribute.size)
        left_h.append(np.cumsum(per_value, axis=0)[:-1])
        right_h.append(per_value.sum(axis=0) - left_h[-1])
    allowed = model.satisfied(model.stats_of_histograms(left_size, left_h)) & model.satisfied(
        model.stats_of_histograms(m - left_size, right_h)
    )
    if not allowed.any():
        return None
    offsets = np.flatnonzero(allowed)
    split = low + int(offsets[np.argmin(np.abs(2 * left_size[offsets] - m))])
    return values <= split


def relaxed_cut(
    block: np.ndarray, column: int, model: PrivacyModel, sensitive: tuple[SensitiveAttribute, ...] = ()
) -> np.ndarray | None:
    """Boolean left-side mask of the m // 2 records first in the order of QI ``column``, ties
    ordered by the other QIs of ``block`` (m, q), or None when a side would not meet the model."""
    m = len(block)
    if m // 2 < model.k:
        return None
    others = [block[:, c] for c in reversed(range(block.shape[1])) if c != column]
    left = np.zeros(m, dtype=bool)
    left[np.lexsort((np.arange(m), *others, block[:, column]))[: m // 2]] = True
    if sensitive:
        stats = model.stats((~left).astype(np.int64), 2, sensitive=sensitive)
        if not model.satisfied(stats).all():
            return None
    return left


def mondrian(
    qi_codes: np.ndarray, sizes: np.ndarray, k: int, mode: str = "strict", model: PrivacyModel | None = None
) -> MondrianResult:
    """Partition the records of ``qi_codes`` (n, q), QI ``j`` having ``sizes[j]`` values,
    into classes of at least ``k`` records (1 <= k <= n) that also meet ``model``'s l and t
    when given (its ``k`` is ``k``; the whole table must meet it)."""
    model = model if model is not None else PrivacyModel(k)
    if model.k != k:
        raise ValueError(f"the model's k ({model.k}) is not k ({k})")
    codes = np.ascontiguousarray(qi_codes)  # the table's dtype: cuts compare codes, no int64 copy
    n = codes.shape[0]
    scale = np.maximum(np.asarray(sizes, dtype=np.float64) - 1, 1.0)
    partition = np.empty(n, dtype=np.int64)
    lows: list[np.ndarray] = []
    highs: list[np.ndarray] = []
    stack = [np.arange(n)]
    while stack:
        rows = stack.pop()
        low, high, left = _cut(codes, rows, scale, k, mode, model)
        if left is None:
            partition[rows] = len(lows)
            lows.append(low)
            highs.append(high)
        else:
            stack.append(rows[~left])
            stack.append(rows[left])
    return MondrianResult(partition, np.array(lows, dtype=np.int64), np.array(highs, dtype=np.int64))


def _cut(
    codes: np.ndarray, rows: np.ndarray, scale: np.ndarray, k: int, mode: str, model: PrivacyModel
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The smallest and largest QI codes of partition ``rows``, and the left-side mask of
    its allowable cut on the widest QI that has one (None: the partition is final). Its rows'
    codes are gathered here, so they are freed before its sides are."""
    block = codes[rows]
    low, high = block.min(axis=0), block.max(axis=0)
    if len(rows) < 2 * k:
        return low, high, None
    spread = (high - low) / scale
    sensitive = tuple(s.subset(rows) for s in model.sensitive)
    for j in np.argsort(-spread, kind="stable"):
        if spread[j] == 0:
            break
        left = (
            strict_cut(block[:, j], int(low[j]), int(high[j]), model, sensitive)
            if mode == "strict"
            else relaxed_cut(block, int(j), model, sensitive)
        )
        if left is not None:
            return low, high, left
    return low, high, None
