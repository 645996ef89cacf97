"""Samarati's full-domain generalization with suppression.

P. Samarati, "Protecting respondents' identities in microdata release", IEEE TKDE 13(6),
2001. Every QI ``j`` is generalized to one level ``l_j`` of its hierarchy; the level vectors
form a lattice ordered componentwise, whose height is Σ l_j. A node *satisfies* k-anonymity
with suppression when at most ``max_suppression`` records lie in equivalence classes smaller
than ``k`` (those records are then suppressed). Generalizing a node merges classes, so
satisfaction is monotone along the lattice and a binary search on the height finds the
lowest height with a satisfying node (the paper's minimal generalization). Among the
satisfying nodes of that height, the one with the lowest NCP (suppressed records counted as
fully generalized) is chosen; ties go to the first in lexicographic order.

Class sizes are counted on the distinct QI rows (weighted by their multiplicity), each node's
generalized codes by lookup tables and a mixed-radix key, so no Python loop runs over rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp2pub.anonymity.hierarchy import Hierarchy


@dataclass(frozen=True)
class SamaratiResult:
    """The chosen generalization.

    Attributes:
        levels: the chosen level of every QI (a lattice node).
        height: Σ levels, the minimal height with a satisfying node.
        generalized: (n, q) level codes of every record's QIs at ``levels``.
        keep: boolean (n,), false for the suppressed records.
        nodes_checked: number of lattice nodes whose classes were counted.
    """

    levels: tuple[int, ...]
    height: int
    generalized: np.ndarray
    keep: np.ndarray
    nodes_checked: int


def lattice(heights: list[int] | np.ndarray) -> np.ndarray:
    """All level vectors ``0 <= l_j <= heights[j]``, one per row, in lexicographic order."""
    heights = np.asarray(heights, dtype=np.int64)
    grids = np.indices(tuple(heights + 1)).reshape(len(heights), -1).T
    return grids.astype(np.int64)


class LatticeSearch:
    """Counts the records in small classes for any lattice node, on the distinct QI rows."""

    def __init__(self, qi_codes: np.ndarray, hierarchies: list[Hierarchy], k: int) -> None:
        self.hierarchies = hierarchies
        self.k = int(k)
        rows, self.weights = np.unique(np.ascontiguousarray(qi_codes), axis=0, return_counts=True)
        self.n = int(self.weights.sum())
        # per QI and level: the distinct rows' generalized codes and that level's size
        self.codes = [[h.maps[l][rows[:, j]] for l in range(h.height + 1)] for j, h in enumerate(hierarchies)]
        self.sizes = [[len(h.labels[l]) for l in range(h.height + 1)] for h in hierarchies]
        # per QI and level: each distinct row's NCP share (w - 1) / (s - 1)
        self.cost = []
        for j, h in enumerate(hierarchies):
            s = max(len(h.labels[0]) - 1, 1)
            self.cost.append([(h.leaf_width(l)[rows[:, j]] - 1) / s for l in range(h.height + 1)])
        self.checked: dict[tuple[int, ...], int] = {}

    def small(self, node: tuple[int, ...]) -> np.ndarray:
        """Boolean per distinct row: does it lie in a class smaller than k at ``node``?"""
        key = np.zeros(len(self.weights), dtype=np.int64)
        cells = 1
        for j, level in enumerate(node):
            key *= self.sizes[j][level]
            key += self.codes[j][level]
            cells *= self.sizes[j][level]
        if cells <= max(4 * len(key), 1 << 16):  # small key space: count directly
            class_size = np.bincount(key, weights=self.weights, minlength=cells)
            return class_size[key] < self.k
        _, inverse = np.unique(key, return_inverse=True)
        class_size = np.bincount(inverse, weights=self.weights)
        return class_size[inverse] < self.k

    def suppressed(self, node: tuple[int, ...]) -> int:
        """Records in classes smaller than k at ``node`` (cached)."""
        if node not in self.checked:
            self.checked[node] = int(self.weights[self.small(node)].sum())
        return self.checked[node]

    def ncp(self, node: tuple[int, ...]) -> float:
        """NCP in percent at ``node`` with its small classes suppressed."""
        small = self.small(node)
        per_row = sum(self.cost[j][level] for j, level in enumerate(node)) / len(node)
        per_row = np.where(small, 1.0, per_row)
        return 100.0 * float((per_row * self.weights).sum()) / self.n


def samarati(
    qi_codes: np.ndarray, hierarchies: list[Hierarchy], k: int, max_suppression: int
) -> SamaratiResult:
    """The minimal-height full-domain generalization of ``qi_codes`` (n, q) that is
    k-anonymous after suppressing at most ``max_suppression`` records (1 <= k <= n)."""
    search = LatticeSearch(qi_codes, hierarchies, k)
    nodes = lattice([h.height for h in hierarchies])
    node_heights = nodes.sum(axis=1)

    def satisfying(height: int, first_only: bool) -> list[tuple[int, ...]]:
        found = []
        for row in nodes[node_heights == height]:
            node = tuple(int(v) for v in row)
            if search.suppressed(node) <= max_suppression:
                found.append(node)
                if first_only:
                    break
        return found

    low, high = 0, int(node_heights.max())  # the top node (one class of n >= k) satisfies
    while low < high:
        mid = (low + high) // 2
        if satisfying(mid, first_only=True):
            high = mid
        else:
            low = mid + 1
    candidates = satisfying(low, first_only=False)
    costs = [search.ncp(node) for node in candidates]
    best = candidates[int(np.argmin(costs))]
    generalized = np.stack(
        [h.maps[level][qi_codes[:, j]] for j, (h, level) in enumerate(zip(hierarchies, best))], axis=1
    )
    keep = ~small_class_rows(generalized, k)
    return SamaratiResult(best, low, generalized, keep, len(search.checked))


def small_class_rows(generalized: np.ndarray, k: int) -> np.ndarray:
    """Boolean per record: is its class (identical generalized QI row) smaller than k?"""
    _, inverse, counts = np.unique(np.ascontiguousarray(generalized), axis=0,
                                   return_inverse=True, return_counts=True)
    return counts[inverse.ravel()] < k
