"""Rare values merged, as MST compresses its domain (McKenna, Miklau, Sheldon, "Winning the
NIST Contest: A scalable and general approach to differentially private synthetic data",
JPC 2021, section 4: the values whose noisy 1-way count is below 3 standard deviations of its
noise are merged into one; private-pgm's ``mechanisms/mst.py``, ``compress_domain`` and
``reverse_data``).

Under LDP a marginal's estimate has the same noise in every cell, rare or not, so an
attribute of many rare values spends most of its pairs' cells on noise: a pair of adult15's
native-country (41 values, 38 of them under 0.5% of the records) with age has 656 cells.
:func:`compress` merges, attribute by attribute, the values whose estimated frequency is
below ``threshold`` standard deviations of the estimate into one value; :class:`Compression`
maps codes and estimates onto the smaller domain and back, each record of a merged value
drawn uniformly among the values it merged (MST's ``reverse_data``: their estimates are
noise by the rule that merged them). Post-processing of differentially private estimates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dp2pub.data.domain import Domain


@dataclass(frozen=True)
class Compression:
    """Each attribute's map from its values to the compressed ones (``maps[a][v]``): the values
    kept, in their order, then one value for the merged ones when there are at least two."""

    maps: tuple[np.ndarray, ...]

    @property
    def sizes(self) -> list[int]:
        """The compressed domain's sizes."""
        return [int(m.max()) + 1 for m in self.maps]

    @property
    def merged(self) -> int:
        """How many values were merged, over all attributes (a value merged alone is kept)."""
        return sum(m.size - int(m.max()) - 1 for m in self.maps)

    def domain(self, domain: Domain) -> Domain:
        """``domain`` compressed: a merged value is labelled by its values joined by ``|``."""
        labels = []
        for m, own in zip(self.maps, domain.labels):
            kept = [own[v] for v in range(m.size) if np.sum(m == m[v]) == 1]
            rare = [own[v] for v in range(m.size) if np.sum(m == m[v]) > 1]
            labels.append((*kept, "|".join(rare)) if rare else tuple(kept))
        return Domain(domain.names, tuple(labels), domain.ordinal)

    def codes(self, codes: np.ndarray) -> np.ndarray:
        """Records' codes (n, d) on the compressed domain."""
        return np.column_stack([m[codes[:, a]] for a, m in enumerate(self.maps)]).astype(codes.dtype)

    def table(self, table: np.ndarray, key: Sequence[int]) -> np.ndarray:
        """A marginal of the attributes ``key`` summed onto the compressed domain."""
        for axis, a in enumerate(key):
            m = self.maps[a]
            table = np.moveaxis(table, axis, 0)
            merged = np.zeros((int(m.max()) + 1, *table.shape[1:]))
            np.add.at(merged, m, table)
            table = np.moveaxis(merged, 0, axis)
        return table

    def expand(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Compressed records (n, d) back on the original domain: a kept value as it was, the
        merged one drawn uniformly among the values it merged (MST's ``reverse_data``; in
        proportion to their estimates instead, adult15 and br2000 at epsilon 1.6 had a higher
        3-way AVD)."""
        result = np.empty_like(codes)
        for a, m in enumerate(self.maps):
            back = np.argsort(m, kind="stable")  # the kept values in order, then the merged ones
            result[:, a] = back[codes[:, a]]
            rare = np.flatnonzero(m == m.max())
            if rare.size > 1:
                merged = np.flatnonzero(codes[:, a] == m.max())
                result[merged, a] = rare[rng.integers(0, rare.size, merged.size)]
        return result


def compress(estimates: Sequence[np.ndarray], stddevs: Sequence[float], threshold: float) -> Compression:
    """Each attribute's values whose estimated frequency (``estimates[a]``, of standard
    deviation ``stddevs[a]``) is below ``threshold`` standard deviations merged into one,
    when there are at least two of them (MST's rule, with ``threshold`` 3); the most frequent
    estimate is always kept, so that no attribute becomes constant."""
    maps = []
    for f, sd in zip(estimates, stddevs):
        f = np.asarray(f, dtype=np.float64)
        rare = f < threshold * sd
        rare[np.argmax(f)] = False
        if rare.sum() < 2:
            rare[:] = False
        m = np.empty(f.size, dtype=np.int64)
        m[~rare] = np.arange(int((~rare).sum()))
        m[rare] = int((~rare).sum())
        maps.append(m)
    return Compression(tuple(maps))
