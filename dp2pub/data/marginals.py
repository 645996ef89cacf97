"""Joint marginals of integer-coded columns by mixed-radix codes and one ``bincount``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def joint_codes(codes: np.ndarray, sizes: np.ndarray | Sequence[int]) -> np.ndarray:
    """Mixed-radix code of each row of ``codes`` (n, m): ``sum_j codes[:, j] * prod(sizes[j+1:])``."""
    out = codes[:, 0].astype(np.int64)
    for j in range(1, codes.shape[1]):  # Horner's rule, column by column: no (n, m) int64 copy
        out *= int(sizes[j])
        np.add(out, codes[:, j], out=out, casting="unsafe")
    return out


def marginal_counts(codes: np.ndarray, sizes: np.ndarray | Sequence[int]) -> np.ndarray:
    """Counts of every combination of the columns of ``codes`` (their joint marginal).

    Rows are turned into mixed-radix codes (:func:`joint_codes`) and counted by one
    ``bincount``.

    Parameters
    ----------
    codes : numpy.ndarray
        (n, m) integer codes, column j in ``0 .. sizes[j]-1``.
    sizes : sequence of int
        The domain size of each of the m columns.

    Returns
    -------
    numpy.ndarray
        The int64 counts, an array of shape ``sizes`` (``counts[a, b]``: rows with ``a`` in
        the first column and ``b`` in the second).

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import load_car, marginal_counts
    >>> car = load_car()
    >>> columns = [car.domain.index("safety"), car.domain.index("class")]
    >>> print(marginal_counts(car.codes[:, columns], car.domain.sizes[columns]))
    [[576   0   0   0]
     [357 180  39   0]
     [277 204  30  65]]
    """
    shape = tuple(int(s) for s in sizes)
    flat = np.bincount(joint_codes(codes, shape), minlength=math.prod(shape))
    return flat.reshape(shape)


def subset_cells(sizes: np.ndarray | Sequence[int], subsets: Sequence[tuple[int, ...]]) -> np.ndarray:
    """The number of cells of each subset's joint marginal (the product of its domain sizes)."""
    sizes = [int(s) for s in sizes]
    return np.array([math.prod(sizes[j] for j in subset) for subset in subsets], dtype=np.int64)


def distinct_rows(codes: np.ndarray, sizes: np.ndarray | Sequence[int]) -> tuple[np.ndarray, np.ndarray | None]:
    """The distinct rows of ``codes`` and how many times each occurs (float64), when finding
    them is cheap (at most 2^20 rows, row codes that fit in int64) and pays (at most half as
    many distinct rows as rows); otherwise ``codes`` itself and None (every row once)."""
    n, sizes = codes.shape[0], [int(s) for s in sizes]
    if n > 2**20 or math.prod(sizes) >= 2**62:
        return codes, None
    _, first, counts = np.unique(joint_codes(codes, sizes), return_index=True, return_counts=True)
    if 2 * first.size > n:
        return codes, None
    return np.asfortranarray(codes[first]), counts.astype(np.float64)


def _runs(subsets: Sequence[tuple[int, ...]]) -> list[tuple[tuple[int, ...], list[int]]]:
    """(prefix, members): runs of subsets that share all but their last attribute and whose
    last attributes are consecutive (e, e + 1, ...), as the lexicographic order lists them."""
    by_prefix: dict[tuple[int, ...], list[list[int]]] = {}
    for i, subset in enumerate(subsets):
        runs = by_prefix.setdefault(tuple(subset[:-1]), [])
        if runs and subsets[runs[-1][-1]][-1] + 1 == subset[-1]:
            runs[-1].append(i)
        else:
            runs.append([i])
    return [(prefix, run) for prefix, runs in by_prefix.items() for run in runs]


def _run_counts(
    block: np.ndarray,
    values: np.ndarray,
    weights: np.ndarray | None,
    sizes: np.ndarray,
    prefix: tuple[int, ...],
    first: int,
    stop: int,
) -> np.ndarray:
    """Counts of (prefix cell, value of an attribute first .. stop - 1) over ``block``'s rows,
    shaped (prefix cells, the attributes' values side by side), by one ``bincount``.

    ``values[j]`` holds attribute j's codes shifted by the sizes of the attributes before it,
    so the attributes' keys do not overlap: key = prefix code * span + shifted value.
    """
    cols = list(prefix)
    base = int(sizes[:first].sum())
    span = int(sizes[first:stop].sum())
    shift = joint_codes(block[:, cols], sizes[cols]) * span - base if cols else np.full(len(block), -base)
    keys = values[first:stop] + shift
    w = None if weights is None else np.tile(weights, stop - first)
    cells = math.prod(int(s) for s in sizes[cols]) * span
    return np.bincount(keys.ravel(), weights=w, minlength=cells).reshape(-1, span)


def stacked_marginal_counts(
    codes: np.ndarray,
    sizes: np.ndarray | Sequence[int],
    subsets: Sequence[tuple[int, ...]],
    max_keys: int = 2**23,
) -> np.ndarray:
    """The joint counts of every subset of columns, each flattened in C order (as
    :func:`marginal_counts`'s array), concatenated in the order of ``subsets``; float64, exact.

    Subsets that share all but their last attribute, the last ones consecutive, are counted
    together (the shared prefix's codes once, one ``bincount`` of at most ``max_keys`` keys per
    block of rows), and with many subsets repeated rows are counted once with their
    multiplicity (:func:`distinct_rows`).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    cells = subset_cells(sizes, subsets)
    if not subsets:
        return np.zeros(0)
    starts = np.cumsum(cells) - cells
    rows, weights = distinct_rows(codes, sizes) if len(subsets) >= 16 else (codes, None)
    out = np.zeros(int(cells.sum()))
    runs = _runs(subsets)
    step = max(1, max_keys // codes.shape[1])
    for lo in range(0, rows.shape[0], step):
        block = rows[lo : lo + step]
        values = block.T.astype(np.int64)  # (d, rows), each attribute shifted to its own key range
        values += (np.cumsum(sizes) - sizes)[:, None]
        w = None if weights is None else weights[lo : lo + step]
        for prefix, members in runs:
            lasts = [subsets[i][-1] for i in members]
            counts = _run_counts(block, values, w, sizes, prefix, lasts[0], lasts[-1] + 1)
            at = 0
            for i, e in zip(members, lasts):
                out[starts[i] : starts[i] + cells[i]] += counts[:, at : at + sizes[e]].ravel()
                at += int(sizes[e])
    return out
