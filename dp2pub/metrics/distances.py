"""Distances between an original and a published (or estimated) distribution.

Definitions are the metric contract (docs/explanation/metric-contract.md).
"""

from __future__ import annotations

import numpy as np


def tvd(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance ``1/2 sum_v |p(v) - q(v)|`` of two frequency arrays.

    The metric contract (docs/explanation/metric-contract.md) defines ``tvd_1way`` and ``tvd_<k>way`` with it.

    Parameters
    ----------
    p, q : array_like
        Two frequency arrays of one shape (a marginal and its estimate).

    Returns
    -------
    float
        The distance, in [0, 1] for two distributions (an unbiased estimate, which may have
        negative entries, can be farther).

    Examples
    --------
    >>> from dp2pub import tvd
    >>> tvd([0.5, 0.5], [0.75, 0.25])
    0.25
    >>> tvd([[0.5, 0.0], [0.0, 0.5]], [[0.25, 0.25], [0.25, 0.25]])
    0.5
    """
    return 0.5 * float(np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def mse(p: np.ndarray, q: np.ndarray) -> float:
    """Mean over cells of the squared difference ``(p(v) - q(v))^2``.

    On frequencies this is ``mse_freq`` of one attribute, on counts the count-scale
    ``mse_count`` (docs/explanation/metric-contract.md).

    Parameters
    ----------
    p, q : array_like
        Two arrays of one shape (frequencies or counts).

    Returns
    -------
    float
        The mean squared difference.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import mse
    >>> mse([0.5, 0.5], [0.75, 0.25])
    0.0625
    >>> counts, estimate = np.array([500, 500]), np.array([0.75, 0.25])
    >>> mse(counts, estimate * counts.sum())  # mse_count of the same estimate
    62500.0
    """
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
