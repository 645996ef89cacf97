"""Which attribute subsets the k-way metrics measure: all of them, or a seeded sample."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

import numpy as np


def attribute_subsets(d: int, way: int, max_subsets: int | None, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """All ``way``-subsets of ``d`` attributes, or a seeded sample of ``max_subsets`` of them.

    The sample is drawn without replacement from the lexicographic list of combinations, so
    it depends only on ``(d, way, max_subsets)`` and the generator's state.
    """
    total = math.comb(d, way)
    if max_subsets is None or total <= max_subsets:
        return list(itertools.combinations(range(d), way))
    if total > 10**6:  # too many to list: draw distinct sorted tuples directly
        chosen: set[tuple[int, ...]] = set()
        while len(chosen) < max_subsets:
            chosen.add(tuple(sorted(rng.choice(d, size=way, replace=False).tolist())))
        return sorted(chosen)
    picks = np.sort(rng.choice(total, size=max_subsets, replace=False))
    wanted = set(picks.tolist())
    return [c for i, c in enumerate(itertools.combinations(range(d), way)) if i in wanted]


def cell_chunks(
    subsets: Sequence[tuple[int, ...]], cells: np.ndarray, max_cells: int = 2**22
) -> Iterator[tuple[list[tuple[int, ...]], np.ndarray]]:
    """Consecutive runs of ``subsets`` (with their cell counts ``cells``) of at most
    ``max_cells`` cells in all, or one subset each when it alone is larger."""
    ends = np.cumsum(cells)
    start = 0
    while start < len(subsets):
        before = int(ends[start - 1]) if start else 0
        end = max(start + 1, int(np.searchsorted(ends, before + max_cells, side="right")))
        yield list(subsets[start:end]), cells[start:end]
        start = end
