"""Which attribute subsets the k-way metrics measure: all of them, or a seeded sample."""

from __future__ import annotations

import itertools
import math

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
