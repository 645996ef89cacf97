"""Distances between an original and a published (or estimated) distribution.

Definitions are the metric contract of docs/design.md (section 8).
"""

from __future__ import annotations

import numpy as np


def tvd(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance ``1/2 sum_v |p(v) - q(v)|`` of two frequency arrays."""
    return 0.5 * float(np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def mse(p: np.ndarray, q: np.ndarray) -> float:
    """Mean over cells of ``(p(v) - q(v))^2``; on frequencies this is ``mse_freq`` of one
    attribute, on counts the count-scale ``mse_count``."""
    return float(np.mean((np.asarray(p, float) - np.asarray(q, float)) ** 2))


def stacked_tvd(p: np.ndarray, q: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """:func:`tvd` of each pair of marginals in two concatenations of flattened marginals
    (``cells[i]`` values each), bit for bit: each marginal is summed as one row of a
    (marginals, cells) block, the order in which :func:`tvd` sums it."""
    gaps = np.abs(np.asarray(p, float) - np.asarray(q, float))
    starts = np.cumsum(cells) - cells
    out = np.zeros(len(cells))
    for width in np.unique(cells):
        which = np.flatnonzero(cells == width)
        out[which] = 0.5 * gaps[starts[which][:, None] + np.arange(width)].sum(axis=1)
    return out
