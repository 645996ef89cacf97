"""Independent marginals: each attribute's histogram with Laplace noise, sampled into a table.

Central DP (a trusted curator), neighbouring tables differing in one record's values (n is
public): that changes two counts of each histogram by one, an L1 sensitivity of 2, so each
of the d histograms gets epsilon / d and Laplace noise of scale 2d / epsilon (Dwork, McSherry,
Nissim & Smith, TCC 2006). Counts below ``min_count`` are zeroed, the rest normalized and
sampled attribute by attribute: the "independent" baseline of marginal-based synthesizers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dp2pub import Dataset, Outcome, Publisher, Spend, TableRelease, split_budget, working_bytes
from dp2pub.validation import check_epsilon, check_float


@dataclass(frozen=True, kw_only=True)
class Independent(Publisher):
    name: ClassVar[str] = "independent"
    min_count: float = 0.0  # noisy counts below it count as 0 (post-processing)

    def __post_init__(self) -> None:
        check_float(self.min_count, "min_count", 0.0, open_low=False)  # ConfigError naming the key

    def memory_bytes(self, n: int, sizes) -> int:
        return working_bytes(n, sizes)  # the published copy and a few 8-byte arrays per record

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        share = split_budget(check_epsilon(epsilon), data.d)  # d shares summing to <= epsilon
        codes = np.empty_like(data.codes)
        for j, k in enumerate(data.domain.sizes):
            noisy = np.bincount(data.codes[:, j], minlength=k) + rng.laplace(scale=2 / share, size=k)
            kept = np.where(noisy >= self.min_count, noisy, 0.0)
            p = kept / kept.sum() if kept.sum() > 0 else np.full(k, 1 / k)
            codes[:, j] = rng.choice(k, size=data.n, p=p)
        ledger = [Spend("histogram", attribute, share) for attribute in data.domain.names]
        return Outcome(TableRelease(data.with_codes(codes)), ledger)
