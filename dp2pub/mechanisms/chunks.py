"""Work over users in chunks, so memory stays bounded whatever n is."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: Users per chunk are chosen so that a chunk's (users x domain) work array stays this small.
CHUNK_CELLS = 1 << 22


def chunks(n: int, width: int) -> Iterator[slice]:
    """Slices of ``range(n)`` whose ``len * width`` stays near :data:`CHUNK_CELLS`."""
    step = max(1, CHUNK_CELLS // max(1, width))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def chunk_rows(n: int, width: int) -> int:
    """Users of the largest slice :func:`chunks` yields: what a chunked loop holds at once."""
    return min(int(n), max(1, CHUNK_CELLS // max(1, width)))


def rowwise_outer(matrices: list[np.ndarray]) -> np.ndarray:
    """Row-by-row outer product of (m, k_j) matrices, flattened: shape (m, prod k_j)."""
    product = matrices[0]
    for matrix in matrices[1:]:
        product = (product[:, :, None] * matrix[:, None, :]).reshape(len(matrix), -1)
    return product
