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

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from dp2pub.anonymity.hierarchy import Hierarchy
from dp2pub.anonymity.privacy import PrivacyModel, SensitiveAttribute
from dp2pub.data.dataset import code_dtype


@dataclass(frozen=True)
class SamaratiResult:
    """The chosen generalization.

    Attributes:
        levels: the chosen level of every QI (a lattice node).
        height: Σ levels, the minimal height with a satisfying node.
        generalized: (n, q) level codes of every record's QIs at ``levels``, in the smallest
            unsigned dtype that holds them (:func:`generalize`).
        keep: boolean (n,), false for the suppressed records.
        nodes_checked: number of lattice nodes whose classes were counted.
    """

    levels: tuple[int, ...]
    height: int
    generalized: np.ndarray
    keep: np.ndarray
    nodes_checked: int


def _joint_rows(qi_codes: np.ndarray, sensitive: tuple[SensitiveAttribute, ...]) -> np.ndarray:
    """The rows of the QIs and the sensitive attributes side by side, C-contiguous, in the
    QIs' dtype or the smallest one that also holds the sensitive codes (not int64: the rows
    are only compared)."""
    if not sensitive:
        return np.ascontiguousarray(qi_codes)
    dtype = np.promote_types(qi_codes.dtype, code_dtype(max(s.size for s in sensitive)))
    joint = np.empty((len(qi_codes), qi_codes.shape[1] + len(sensitive)), dtype=dtype)
    joint[:, : qi_codes.shape[1]] = qi_codes
    for i, attribute in enumerate(sensitive):
        joint[:, qi_codes.shape[1] + i] = attribute.codes
    return joint


def generalize(qi_codes: np.ndarray, hierarchies: list[Hierarchy], levels: tuple[int, ...]) -> np.ndarray:
    """The (n, q) level codes of every record's QIs at ``levels``, column by column in the
    smallest unsigned dtype that holds the largest level's codes (no int64 copy per column)."""
    largest = max((len(h.labels[level]) for h, level in zip(hierarchies, levels)), default=1)
    out = np.empty((len(qi_codes), len(hierarchies)), dtype=code_dtype(largest))
    for j, (h, level) in enumerate(zip(hierarchies, levels)):
        out[:, j] = h.maps[level].astype(out.dtype)[qi_codes[:, j]]
    return out


def lattice(heights: list[int] | np.ndarray) -> np.ndarray:
    """All level vectors ``0 <= l_j <= heights[j]``, one per row, in lexicographic order."""
    heights = np.asarray(heights, dtype=np.int64)
    grids = np.indices(tuple(heights + 1)).reshape(len(heights), -1).T
    return grids.astype(np.int64)


def nodes_at(heights: list[int], height: int) -> Iterator[tuple[int, ...]]:
    """The level vectors ``0 <= l_j <= heights[j]`` of sum ``height``, in lexicographic order
    (the rows of :func:`lattice` of that height, without the whole lattice: it has
    ``prod(heights + 1)`` nodes, 98,304 for adult's QIs)."""
    if not heights:
        if height == 0:
            yield ()
        return
    rest = sum(heights[1:])
    for first in range(max(0, height - rest), min(heights[0], height) + 1):
        for tail in nodes_at(heights[1:], height - first):
            yield (first, *tail)


class LatticeSearch:
    """Counts the records in violating classes for any lattice node, on the distinct rows."""

    def __init__(self, qi_codes: np.ndarray, hierarchies: list[Hierarchy], model: PrivacyModel) -> None:
        self.hierarchies = hierarchies
        # k alone: the distinct QI rows suffice
        self.model = model = model if model.constrains_sensitive else PrivacyModel(model.k)
        q = qi_codes.shape[1]
        joint = _joint_rows(qi_codes, model.sensitive)
        distinct, self.weights = np.unique(joint, axis=0, return_counts=True)
        del joint
        rows = distinct[:, :q]
        # the sensitive attributes on the distinct rows (their overall distributions kept)
        self.sensitive = tuple(
            SensitiveAttribute(s.name, distinct[:, q + i], s.size, s.ordered, s.reference)
            for i, s in enumerate(model.sensitive)
        )
        self.n = int(self.weights.sum())
        # per QI and level: the distinct rows' generalized codes (in the level's code dtype,
        # not int64: one byte a row and level, mostly) and that level's size; level 0 is the QI
        self.codes = [
            [h.maps[l].astype(code_dtype(len(h.labels[l])))[rows[:, j]] for l in range(h.height + 1)]
            for j, h in enumerate(hierarchies)
        ]
        self.sizes = [[len(h.labels[l]) for l in range(h.height + 1)] for h in hierarchies]
        # per QI and level: each value's NCP share (w - 1) / (s - 1), looked up per row in ncp
        self.cost = []
        for h in hierarchies:
            s = max(len(h.labels[0]) - 1, 1)
            self.cost.append([(h.leaf_width(l) - 1) / s for l in range(h.height + 1)])
        self.checked: dict[tuple[int, ...], int] = {}

    def classes(self, node: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """The class of every distinct row at ``node``, and the number of class codes."""
        key = self.codes[0][node[0]].astype(np.int64)  # Horner's rule from the first QI's codes
        cells = self.sizes[0][node[0]]
        for j, level in enumerate(node[1:], start=1):
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
        size = np.bincount(inverse, weights=self.weights, minlength=n_classes)
        small = size[inverse] < self.model.k
        if not self.model.constrains_sensitive or self.weights[small].sum() > limit:
            return small
        # the sensitive statistics of the classes present only, numbered in order: the class
        # codes may be cells of the key space, up to 4 a row, each with a histogram
        present = np.flatnonzero(size)
        del size, small
        dense = np.searchsorted(present, inverse)
        stats = self.model.stats(dense, len(present), self.weights, self.sensitive)
        return ~self.model.satisfied(stats)[dense]

    def suppressed(self, node: tuple[int, ...], limit: float = np.inf) -> int:
        """Records in violating classes at ``node`` (cached); a count above ``limit`` may be
        a lower bound of it (only the classes smaller than k counted)."""
        if node not in self.checked:
            self.checked[node] = int(self.weights[self.violating(node, limit)].sum())
        return self.checked[node]

    def ncp(self, node: tuple[int, ...]) -> float:
        """NCP in percent at ``node`` with its small classes suppressed."""
        per_row = sum(self.cost[j][level][self.codes[j][0]] for j, level in enumerate(node)) / len(node)
        per_row = np.where(self.violating(node), 1.0, per_row)
        return 100.0 * float((per_row * self.weights).sum()) / self.n


def samarati(
    qi_codes: np.ndarray,
    hierarchies: list[Hierarchy],
    k: int,
    max_suppression: int,
    model: PrivacyModel | None = None,
) -> SamaratiResult:
    """The minimal-height full-domain generalization of ``qi_codes`` (n, q; any integer
    dtype, the table's codes need no int64 copy) that is k-anonymous (1 <= k <= n), and meets
    ``model``'s l and t when given (its ``k`` is ``k``), after suppressing at most
    ``max_suppression`` records."""
    model = model if model is not None else PrivacyModel(k)
    if model.k != k:
        raise ValueError(f"the model's k ({model.k}) is not k ({k})")
    search = LatticeSearch(qi_codes, hierarchies, model)
    heights = [h.height for h in hierarchies]

    def satisfying(height: int, first_only: bool) -> list[tuple[int, ...]]:
        found = []
        for node in nodes_at(heights, height):
            if search.suppressed(node, max_suppression) <= max_suppression:
                found.append(node)
                if first_only:
                    break
        return found

    low, high = 0, sum(heights)  # the top node (one class of n >= k) satisfies
    while low < high:
        mid = (low + high) // 2
        if satisfying(mid, first_only=True):
            high = mid
        else:
            low = mid + 1
    candidates = satisfying(low, first_only=False)
    costs = [search.ncp(node) for node in candidates]
    best = candidates[int(np.argmin(costs))]
    generalized = generalize(qi_codes, hierarchies, best)
    keep = ~violating_rows(generalized, model)
    return SamaratiResult(best, low, generalized, keep, len(search.checked))


def violating_rows(generalized: np.ndarray, model: PrivacyModel) -> np.ndarray:
    """Boolean per record: does its class (identical generalized QI row) violate ``model``?"""
    _, inverse = np.unique(np.ascontiguousarray(generalized), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    return ~model.satisfied(model.stats(inverse, int(inverse.max()) + 1))[inverse]
