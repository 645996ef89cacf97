"""Functional dependencies between published attributes and quasi-identifiers.

Generalizing the quasi-identifiers (QIs) protects nothing if another published attribute
recodes one of them: adult's ``education-num`` is a one-to-one recoding of ``education``, so
publishing it unchanged next to a generalized ``education`` gives the value back and splits
the equivalence classes (every class of a "10-anonymous" table can shrink to one record).
Before anonymizing, every attribute that is published as it is, is checked against every
QI, in both directions, on the data itself: ``q -> a`` (``a`` is a function of ``q``: it
publishes a coarsening of ``q`` that generalizing ``q`` does not remove) and ``a -> q``
(``a`` determines ``q``). An attribute or QI with a single value in the data is ignored (a
constant determines nothing and is a function of anything).

A dependency holds when the number of distinct ``(q, a)`` pairs equals the number of
distinct values of ``q`` (resp. ``a``): one ``bincount`` of mixed-radix pair codes per pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp2pub.data.dataset import Dataset


@dataclass(frozen=True)
class Dependency:
    """``attribute`` (published unchanged) and the quasi-identifier it is tied to;
    ``determines``: attribute -> QI; ``determined``: QI -> attribute."""

    attribute: str
    quasi_identifier: str
    determines: bool
    determined: bool

    def describe(self) -> str:
        """``education-num <-> education``, ``a -> q`` or ``a <- q``."""
        arrow = "<->" if self.determines and self.determined else ("->" if self.determines else "<-")
        return f"{self.attribute} {arrow} {self.quasi_identifier}"


def _distinct(codes: np.ndarray, size: int) -> int:
    return int(np.count_nonzero(np.bincount(codes, minlength=size)))


def dependencies(data: Dataset, qi: list[int], published: list[int]) -> list[Dependency]:
    """Every (published attribute, QI) pair of ``data`` in which one determines the other.

    Args:
        qi: the QI column positions.
        published: the positions of the attributes published unchanged.
    """
    sizes = data.domain.sizes
    codes = [data.codes[:, j].astype(np.int64) for j in range(data.d)]
    distinct = {j: _distinct(codes[j], int(sizes[j])) for j in set(qi) | set(published)}
    found = []
    for a in published:
        for q in qi:
            if distinct[a] < 2 or distinct[q] < 2:
                continue
            pairs = _distinct(codes[q] * int(sizes[a]) + codes[a], int(sizes[q]) * int(sizes[a]))
            determines, determined = pairs == distinct[a], pairs == distinct[q]
            if determines or determined:
                found.append(Dependency(data.domain.names[a], data.domain.names[q], determines, determined))
    return found
