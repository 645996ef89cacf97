"""Rare values merged, as MST compresses its domain (McKenna, Miklau, Sheldon, "Winning the
NIST Contest: A scalable and general approach to differentially private synthetic data",
JPC 2021, section 4: the values whose noisy 1-way count is below 3 standard deviations of its
noise are merged into one; private-pgm's ``mechanisms/mst.py``, ``compress_domain`` and
``reverse_data``).

:class:`Compression` maps codes and marginals onto the smaller domain and back, each record
of the merged value drawn uniformly among the values it merged (``reverse_data``): MST's
(:mod:`dp2pub.publish.mst`) and ``ldp_marginals``'s ``rare_sd``. Under LDP a marginal's
estimate has the same noise in every cell, rare or not, so an attribute of many rare values
spends most of its pairs' cells on noise: a pair of adult15's native-country (41 values, 38
of them under 0.5% of the records) with age has 656 cells. :func:`compress` is the rule
``ldp_marginals`` merges by. Post-processing of differentially private estimates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Compression:
    """Each attribute's values kept (``kept[a]``, increasing) of its ``original[a]``; the
    others, if any, map to one more value after them."""

    kept: tuple[np.ndarray, ...]
    original: tuple[int, ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        """The compressed domain's sizes."""
        return tuple(k.size + int(k.size < s) for k, s in zip(self.kept, self.original))

    @property
    def merged(self) -> int:
        """How many values were merged (not kept), over all attributes."""
        return sum(s - k.size for k, s in zip(self.kept, self.original))

    def rare(self, attribute: int) -> np.ndarray:
        """The values of ``attribute`` merged into its last compressed value."""
        return np.setdiff1d(np.arange(self.original[attribute]), self.kept[attribute])

    def encode(self, codes: np.ndarray) -> np.ndarray:
        """Records' codes (n, d) on the compressed domain (int64)."""
        out = np.empty(codes.shape, dtype=np.int64)
        for a, kept in enumerate(self.kept):
            lookup = np.full(self.original[a], kept.size, dtype=np.int64)
            lookup[kept] = np.arange(kept.size)
            out[:, a] = lookup[codes[:, a]]
        return out

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Compressed records (n, d) back on the original domain (int64): a kept value as it
        was, the merged one drawn uniformly among the values it merged (``reverse_data``)."""
        out = np.empty(codes.shape, dtype=np.int64)
        for a, kept in enumerate(self.kept):
            rare = self.rare(a)
            column = codes[:, a]
            merged = column >= kept.size
            out[:, a] = kept[np.minimum(column, max(kept.size - 1, 0))] if kept.size else 0
            if rare.size:
                out[merged, a] = rare[rng.integers(rare.size, size=int(merged.sum()))]
        return out

    def table(self, table: np.ndarray, key: Sequence[int]) -> np.ndarray:
        """A marginal of the attributes ``key`` summed onto the compressed domain."""
        for axis, a in enumerate(key):
            rare = self.rare(a)
            if rare.size:
                merged = table.take(rare, axis=axis).sum(axis=axis, keepdims=True)
                table = np.concatenate([table.take(self.kept[a], axis=axis), merged], axis=axis)
        return table


def compress(estimates: Sequence[np.ndarray], stddevs: Sequence[float], threshold: float) -> Compression:
    """``ldp_marginals``'s rule: each attribute's values whose estimated frequency (of
    ``estimates[a]``, of standard deviation ``stddevs[a]``) is below ``threshold`` standard
    deviations merged into one, when there are at least two of them (a value merged alone
    changes nothing); the largest estimate always kept, so that no attribute becomes
    constant. MST's own rule (3 standard deviations of its noisy counts, any number of values,
    all of them if all are rare) is :func:`dp2pub.publish.mst.compress`."""
    kept: list[np.ndarray] = []
    for f in estimates:
        f = np.asarray(f, dtype=np.float64)
        rare = f < threshold * stddevs[len(kept)]
        rare[np.argmax(f)] = False
        kept.append(np.flatnonzero(~rare) if rare.sum() >= 2 else np.arange(f.size))
    return Compression(tuple(kept), tuple(len(f) for f in estimates))
