"""Fixed bins that turn a non-negative integer attribute into a small categorical one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bins:
    """Bins with integer ``edges`` e_0 < e_1 < ... < e_m: bin 0 holds x < e_0, bin i holds
    e_{i-1} <= x < e_i, bin m holds x >= e_m (m + 1 bins, so every value has one).

    Attributes:
        edges: the strictly increasing inner edges.
        minimum: the smallest valid value (smaller values are input errors).
    """

    edges: tuple[int, ...]
    minimum: int = 0

    def __post_init__(self) -> None:
        edges = np.asarray(self.edges)
        if edges.size == 0 or np.any(np.diff(edges) <= 0) or edges[0] <= self.minimum:
            raise ValueError(f"bin edges must increase from above minimum={self.minimum}: {self.edges}")

    @property
    def labels(self) -> tuple[str, ...]:
        """``"<20"``, ``"20-24"``, ..., ``">=70"``; a bin holding one value is that value
        (``"0"``, ``"40"``)."""
        first = str(self.minimum) if self.edges[0] == self.minimum + 1 else f"<{self.edges[0]}"
        pairs = zip(self.edges, self.edges[1:])
        inner = [str(lo) if hi == lo + 1 else f"{lo}-{hi - 1}" for lo, hi in pairs]
        return (first, *inner, f">={self.edges[-1]}")

    def codes(self, values: np.ndarray) -> np.ndarray:
        """The bin of every value (vectorized ``searchsorted``)."""
        return np.searchsorted(np.asarray(self.edges), values, side="right")
