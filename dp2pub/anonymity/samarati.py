"""Samarati's full-domain generalization with suppression.

P. Samarati, "Protecting respondents' identities in microdata release", IEEE TKDE 13(6),
2001. Every QI ``j`` is generalized to one level ``l_j`` of its hierarchy; the level vectors
form a lattice ordered componentwise, whose height is Σ l_j. A node *satisfies* k-anonymity
with suppression when at most ``max_suppression`` records lie in equivalence classes that
violate the privacy model (those records are then suppressed): fewer than ``k`` records, and
optionally fewer than ``l`` distinct values of a sensitive attribute or an EMD above ``t``
from its overall distribution (:mod:`dp2pub.anonymity.privacy`). Generalizing a node merges
classes; for k and distinct l a merged class satisfies the model when one of its parts did,
so the number of suppressed records can only fall along the lattice and a binary search on
the height finds the lowest height with a satisfying node (the paper's minimal
generalization). Among the satisfying nodes of that height, the one with the lowest NCP
(suppressed records counted as fully generalized) is chosen; ties go to the first in
lexicographic order.

With ``t`` and suppression that monotonicity fails (a class close to the overall
distribution merged with a far one can move away from it), so the height found is a
satisfying one but not always the lowest; the published table meets the model either way:
the search only ever returns a node it has checked, and the top node (one class, EMD 0)
always satisfies.

Class statistics are computed on the distinct rows of the QIs and sensitive attributes
(weighted by their multiplicity), each node's generalized codes by lookup tables and a
mixed-radix key, so no Python loop runs over rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp2pub.anonymity.hierarchy import Hierarchy
from dp2pub.anonymity.privacy import PrivacyModel, SensitiveAttribute


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
    """Counts the records in violating classes for any lattice node, on the distinct rows."""

    def __init__(self, qi_codes: np.ndarray, hierarchies: list[Hierarchy], model: PrivacyModel) -> None:
        self.hierarchies = hierarchies
        # k alone: the distinct QI rows suffice
        self.model = model = model if model.constrains_sensitive else PrivacyModel(model.k)
        q = qi_codes.shape[1]
        joint = np.column_stack([qi_codes, *[s.codes for s in model.sensitive]]) if model.sensitive else qi_codes
        distinct, self.weights = np.unique(np.ascontiguousarray(joint), axis=0, return_counts=True)
        rows = distinct[:, :q]
        # the sensitive attributes on the distinct rows (their overall distributions kept)
        self.sensitive = tuple(
            SensitiveAttribute(s.name, distinct[:, q + i], s.size, s.ordered, s.reference)
            for i, s in enumerate(model.sensitive)
        )
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

    def classes(self, node: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """The class of every distinct row at ``node``, and the number of class codes."""
        key = np.zeros(len(self.weights), dtype=np.int64)
        cells = 1
        for j, level in enumerate(node):
            key *= self.sizes[j][level]
            key += self.codes[j][level]
            cells *= self.sizes[j][level]
        if cells <= max(4 * len(key), 1 << 16):  # small key space: classes are the cells
            return key, cells
        _, inverse = np.unique(key, return_inverse=True)
        return inverse.ravel(), int(inverse.max()) + 1

    def violating(self, node: tuple[int, ...], limit: float = np.inf) -> np.ndarray:
        """Boolean per distinct row: does its class at ``node`` violate the model? When the
        classes smaller than k already hold more than ``limit`` records, only those are
        marked (enough to know that the node fails)."""
        inverse, n_classes = self.classes(node)
        small = np.bincount(inverse, weights=self.weights, minlength=n_classes)[inverse] < self.model.k
        if not self.model.constrains_sensitive or self.weights[small].sum() > limit:
            return small
        stats = self.model.stats(inverse, n_classes, self.weights, self.sensitive)
        return ~self.model.satisfied(stats)[inverse]

    def suppressed(self, node: tuple[int, ...], limit: float = np.inf) -> int:
        """Records in violating classes at ``node`` (cached); a count above ``limit`` may be
        a lower bound of it (only the classes smaller than k counted)."""
        if node not in self.checked:
            self.checked[node] = int(self.weights[self.violating(node, limit)].sum())
        return self.checked[node]

    def ncp(self, node: tuple[int, ...]) -> float:
        """NCP in percent at ``node`` with its small classes suppressed."""
        per_row = sum(self.cost[j][level] for j, level in enumerate(node)) / len(node)
        per_row = np.where(self.violating(node), 1.0, per_row)
        return 100.0 * float((per_row * self.weights).sum()) / self.n


def samarati(
    qi_codes: np.ndarray,
    hierarchies: list[Hierarchy],
    k: int,
    max_suppression: int,
    model: PrivacyModel | None = None,
) -> SamaratiResult:
    """The minimal-height full-domain generalization of ``qi_codes`` (n, q) that is
    k-anonymous (1 <= k <= n), and meets ``model``'s l and t when given (its ``k`` is
    ``k``), after suppressing at most ``max_suppression`` records."""
    model = model if model is not None else PrivacyModel(k)
    if model.k != k:
        raise ValueError(f"the model's k ({model.k}) is not k ({k})")
    search = LatticeSearch(qi_codes, hierarchies, model)
    nodes = lattice([h.height for h in hierarchies])
    node_heights = nodes.sum(axis=1)

    def satisfying(height: int, first_only: bool) -> list[tuple[int, ...]]:
        found = []
        for row in nodes[node_heights == height]:
            node = tuple(int(v) for v in row)
            if search.suppressed(node, max_suppression) <= max_suppression:
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
    keep = ~violating_rows(generalized, model)
    return SamaratiResult(best, low, generalized, keep, len(search.checked))


def violating_rows(generalized: np.ndarray, model: PrivacyModel) -> np.ndarray:
    """Boolean per record: does its class (identical generalized QI row) violate ``model``?"""
    _, inverse = np.unique(np.ascontiguousarray(generalized), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    return ~model.satisfied(model.stats(inverse, int(inverse.max()) + 1))[inverse]
