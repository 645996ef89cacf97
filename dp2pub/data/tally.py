"""A table's 1-way histograms without its records: the input of aggregate-level simulation.

A frequency oracle whose report counts have a closed-form distribution given the
true counts (:meth:`dp2pub.mechanisms.oracle.FrequencyOracle.simulate_counts`) needs no
record per user to be simulated exactly in distribution; for 1-way estimates a
:class:`Tally` is all the data it needs, so a study can have a billion users
(``mechanism.simulate=aggregates``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dp2pub.data.dataset import LABEL_BYTES, Dataset
from dp2pub.data.domain import Domain

#: Bytes of one value's count (int64).
COUNT_BYTES = 8


@dataclass(frozen=True, eq=False)
class Tally:
    """``counts[j][v]``: how many users have value v of attribute j (every attribute's counts
    sum to the same n >= 1).

    It offers what a job needs of its input apart from the records: ``name``, ``n``, ``d``,
    ``domain``, ``target``, :meth:`one_way_counts` and :meth:`fingerprint`.
    """

    counts: tuple[np.ndarray, ...]
    domain: Domain
    target: str | None = None
    name: str = "table"
    #: The notes of the table it counts (:attr:`Dataset.notes`).
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        counts = tuple(np.asarray(c) for c in self.counts)
        if len(counts) != len(self.domain):
            raise ValueError(f"a tally needs one histogram per attribute ({len(self.domain)}), got {len(counts)}")
        for c, k, name in zip(counts, self.domain.sizes, self.domain.names):
            if c.shape != (k,) or not np.issubdtype(c.dtype, np.integer) or c.min() < 0:
                raise ValueError(f"attribute {name!r}: counts must be {k} non-negative integers, got {describe(c)}")
        totals = {int(c.sum()) for c in counts}
        if len(totals) != 1 or 0 in totals:
            raise ValueError(f"tally {self.name!r}: every attribute must count the same n >= 1 users, got {totals}")
        object.__setattr__(self, "counts", tuple(c.astype(np.int64) for c in counts))

    @classmethod
    def of(cls, data: Dataset) -> Tally:
        """The histograms of ``data``'s attributes."""
        counts = tuple(data.one_way_counts(j) for j in range(data.d))
        return cls(counts, data.domain, data.target, data.name, data.notes)

    @property
    def n(self) -> int:
        """Number of users."""
        return int(self.counts[0].sum())

    @property
    def d(self) -> int:
        """Number of attributes."""
        return len(self.counts)

    def one_way_counts(self, j: int) -> np.ndarray:
        """The histogram of attribute ``j`` (int64, length its domain size)."""
        return self.counts[j]

    def fingerprint(self) -> str:
        """A hex digest (SHA-256) of the name, target, domain and counts: equal tallies, equal
        digests (not the digest of the table they count: the records are not here)."""
        digest = hashlib.sha256()
        header = ["tally", self.name, self.target, self.domain.names, self.domain.labels, self.domain.ordinal]
        digest.update(json.dumps(header).encode())
        for c in self.counts:
            digest.update(c.tobytes())
        return digest.hexdigest()


def describe(counts: np.ndarray) -> str:
    """An array of counts in one short line: its shape, dtype and smallest entry."""
    smallest = f", min {counts.min()}" if counts.size else ""
    return f"shape {counts.shape} dtype {counts.dtype}{smallest}"


def tally_bytes(sizes: Sequence[int] | np.ndarray) -> int:
    """The memory of a tally over attributes of domain ``sizes``: a count and a label per value."""
    return (COUNT_BYTES + LABEL_BYTES) * sum(int(k) for k in sizes)
