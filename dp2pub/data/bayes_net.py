"""The one discrete Bayesian network type of the package, and its ancestral sampler.

A network over attributes ``0..d-1`` (column positions) is a topological ``order`` and the
``parents`` of every attribute. Structure learning (:mod:`dp2pub.structure.bayes_net`) builds
the graph only; a network that also holds domain ``sizes`` and one conditional probability
table per attribute (:meth:`BayesianNetwork.with_tables`) can draw records
(:meth:`BayesianNetwork.sample`). The random generator of :mod:`dp2pub.data.synthetic_bn` and
PrivBayes' noisy network both sample through it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dp2pub.data.dataset import code_dtype
from dp2pub.data.marginals import joint_codes
from dp2pub.data.sampling import sample_rows


@dataclass(frozen=True, eq=False, init=False)
class BayesianNetwork:
    """A Bayesian network over attributes ``0..d-1`` (column positions).

    Attributes:
        order: the attributes in a topological order (parents before children; the first
            is the root).
        parents: ``parents[x]`` = the parent attributes of ``x``, sorted (empty for a root).
            Given as a mapping, or as a sequence indexed by attribute.
        sizes: domain size of every attribute (``sizes[x]``), or None for a graph only.
        cpts: ``cpts[x][u, v]`` = P(x = v | parents' mixed-radix code u), shape
            (product of the parents' sizes, ``sizes[x]``); rows are weights, normalized when
            sampled. None for a graph only. Given as a mapping, or a sequence by attribute.

    Two networks are equal when they have the same order, parents, sizes and tables.
    The constructor takes the inputs above and stores them normalized (the attributes' types).
    """

    order: list[int]
    parents: dict[int, tuple[int, ...]]
    sizes: np.ndarray | None
    cpts: dict[int, np.ndarray] | None
    _children: dict[int, tuple[int, ...]] = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        order: Iterable[int],
        parents: Mapping[int, Iterable[int]] | Sequence[Iterable[int]],
        sizes: Sequence[int] | np.ndarray | None = None,
        cpts: Mapping[int, np.ndarray] | Sequence[np.ndarray] | None = None,
    ) -> None:
        order = [int(x) for x in order]
        given = parents if isinstance(parents, Mapping) else dict(enumerate(parents))
        if sorted(order) != sorted(given) or len(set(order)) != len(order):
            raise ValueError("order and parents must list the same attributes, each once")
        seen: set[int] = set()
        for x in order:
            if not set(given[x]) <= seen:
                raise ValueError(f"attribute {x} has a parent that comes after it in order")
            seen.add(x)
        normalized = {x: tuple(sorted(int(p) for p in given[x])) for x in order}
        children: dict[int, list[int]] = {x: [] for x in order}
        for x in order:
            for p in normalized[x]:
                children[p].append(x)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "parents", normalized)
        object.__setattr__(self, "_children", {x: tuple(sorted(c)) for x, c in children.items()})
        object.__setattr__(self, "sizes", None)
        object.__setattr__(self, "cpts", None)
        if (sizes is None) != (cpts is None):
            raise ValueError("give both sizes and cpts, or neither")
        if sizes is not None and cpts is not None:
            self._set_tables(np.asarray(sizes, dtype=np.int64), cpts)

    def _set_tables(self, sizes: np.ndarray, cpts: Mapping[int, np.ndarray] | Sequence[np.ndarray]) -> None:
        if sizes.shape != (len(self.order),):
            raise ValueError(f"sizes must give one domain size per attribute ({len(self.order)})")
        given = cpts if isinstance(cpts, Mapping) else dict(enumerate(cpts))
        tables = {}
        for x in self.order:
            table = np.asarray(given[x])
            shape = (math.prod(int(sizes[p]) for p in self.parents[x]), int(sizes[x]))
            if table.shape != shape:
                raise ValueError(f"the table of attribute {x} has shape {table.shape}, expected {shape}")
            tables[x] = table
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "cpts", tables)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BayesianNetwork):
            return NotImplemented
        if (self.order, self.parents) != (other.order, other.parents) or (self.sizes is None) != (other.sizes is None):
            return False
        if self.sizes is None or other.sizes is None or self.cpts is None or other.cpts is None:
            return True  # graphs only: sizes and cpts are None together, on both sides (checked above)
        return np.array_equal(self.sizes, other.sizes) and all(
            np.array_equal(self.cpts[x], other.cpts[x]) for x in self.order
        )

    __hash__ = None  # type: ignore[assignment]  # holds arrays and dicts: not hashable

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[int, Sequence[int]]]) -> BayesianNetwork:
        """A network from ``(child, parents)`` pairs in order; the root may be omitted, as in
        DataSynthesizer's output (then it is the first pair's parent)."""
        pairs = [(int(c), tuple(int(p) for p in ps)) for c, ps in pairs]
        if pairs and pairs[0][1]:
            roots = [p for p in pairs[0][1] if p not in {c for c, _ in pairs}]
            pairs = [(r, ()) for r in roots] + pairs
        return cls([c for c, _ in pairs], dict(pairs))

    def with_tables(
        self, sizes: Sequence[int] | np.ndarray, cpts: Mapping[int, np.ndarray] | Sequence[np.ndarray]
    ) -> BayesianNetwork:
        """The same graph with domain sizes and one conditional table per attribute."""
        return BayesianNetwork(self.order, self.parents, np.asarray(sizes, dtype=np.int64), cpts)

    @property
    def root(self) -> int:
        """The first attribute of the order."""
        return self.order[0]

    @property
    def degree(self) -> int:
        """The largest number of parents of any attribute."""
        return max((len(p) for p in self.parents.values()), default=0)

    def pairs(self) -> list[tuple[int, tuple[int, ...]]]:
        """``(child, parents)`` in order, the root included with no parents."""
        return [(x, self.parents[x]) for x in self.order]

    def children(self, x: int) -> tuple[int, ...]:
        """Ch(x): the attributes that have ``x`` as a parent, sorted."""
        return self._children[x]

    def markov_blanket(self, x: int) -> tuple[int, ...]:
        """MB(x) = Pa(x) u Ch(x) u Pa(Ch(x)) minus x, sorted (DP2-Pub's clustering)."""
        blanket = set(self.parents[x]) | set(self._children[x])
        for child in self._children[x]:
            blanket.update(self.parents[child])
        blanket.discard(x)
        return tuple(sorted(blanket))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records by ancestral sampling, as an (n, d) column-major code array.

        One vectorized step per attribute in ``order``: the parents' mixed-radix code picks
        each record's table row, and one ``rng.random(n)`` is inverted through the rows'
        cumulative distributions (:func:`dp2pub.data.sampling.sample_rows`).
        """
        if self.sizes is None or self.cpts is None:
            raise ValueError("the network has no conditional tables to sample from (see with_tables)")
        sizes = self.sizes
        codes = np.zeros((n, len(sizes)), dtype=code_dtype(int(sizes.max())), order="F")
        for x in self.order:
            parents = list(self.parents[x])
            rows = joint_codes(codes[:, parents], sizes[parents]) if parents else np.zeros(n, dtype=np.int64)
            codes[:, x] = sample_rows(self.cpts[x], rows, rng)
        return codes


__all__ = ["BayesianNetwork"]
