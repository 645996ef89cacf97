"""Inverse-CDF sampling from the rows of a table of weights, vectorized over all draws.

Every sampler of the package (ancestral sampling of a Bayesian network, the posterior draws of
invariant PRAM) picks, for each record, a column of some row of a weight table. They all go
through :func:`sample_rows`, which turns the table into row-wise cumulative distributions
(:func:`cumulative_rows`) and inverts them at one uniform draw per record
(:func:`inverse_cdf`).
"""

from __future__ import annotations

import numpy as np

#: Bytes per draw of :func:`sample_rows` and :func:`inverse_cdf` beside their table: eight
#: 8-byte words (the row index, the uniform, and the binary search's flat base, count, next
#: count and two temporaries, with their flags). Publishers' memory estimates count it.
DRAW_BYTES = 64


def cumulative_rows(table: np.ndarray) -> np.ndarray:
    """Row-wise cumulative distribution of a 2-D table of non-negative weights.

    Each row's cumulative sums are divided by the row total, so the last column is 1 (a row
    whose total is exactly 1 is left untouched). A row with no weight becomes all ones, which
    :func:`inverse_cdf` maps to column 0.
    """
    cumulative = np.cumsum(table, axis=1)
    totals = cumulative[:, -1:]
    return np.divide(cumulative, totals, out=np.ones_like(cumulative), where=totals > 0)


def inverse_cdf(cdf: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """For each ``i``, the first column ``c`` with ``cdf[rows[i], c] > u[i]`` (the last column
    when there is none), i.e. the number of entries of ``cdf[rows[i], :-1]`` that are <= u[i].

    ``cdf`` is (rows, k) and non-decreasing along each row. The search is a binary search run
    for all draws at once: about log2(k) passes that each read one entry per draw, with no
    (draws x k) intermediate and exact comparisons (no rounding from flattening the rows into
    one sorted array).
    """
    k = cdf.shape[1]
    flat = np.ascontiguousarray(cdf).ravel()
    base = np.asarray(rows, dtype=np.int64) * k - 1  # flat index of column c - 1 is base + c
    count = np.zeros(base.size, dtype=np.int64)
    step = 1 << ((k - 1).bit_length() - 1) if k > 1 else 0
    while step:  # binary lifting: count stays the length of a prefix whose entries are <= u
        longer = np.minimum(count + step, k - 1)
        grow = (count + step <= k - 1) & (flat[base + longer] <= u)
        count = np.where(grow, longer, count)
        step >>= 1
    return count


def sample_rows(table: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each ``r`` in ``rows``, a column drawn with probability proportional to ``table[r]``.

    Consumes exactly one ``rng.random(rows.size)``.
    """
    return inverse_cdf(cumulative_rows(table), rows, rng.random(rows.size))


__all__ = ["cumulative_rows", "inverse_cdf", "sample_rows"]
