"""The naive baseline: every user perturbs every attribute with GRR at ``epsilon / d``.

This is the seed documents' "first perturbation" with the budget split evenly over the
attributes (SPL). The raw reports form the published table; the server's marginal estimates
depend on the ``estimator``: ``none`` counts the reports as they are (the seeds' choice),
``unbiased`` inverts the channel, ``clip`` / ``norm_sub`` post-process that inverse.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.mechanisms.estimators import ESTIMATORS, postprocess
from dp2pub.mechanisms.grr import GRR
from dp2pub.metrics.marginals import marginal_counts
from dp2pub.publish.base import Outcome
from dp2pub.validation import check_choice, check_epsilon


@dataclass(frozen=True)
class GRRReportsRelease:
    """Marginals estimated from a table of independent per-attribute GRR reports.

    The reports of a set of attributes went through the Kronecker product of their channels,
    so the unbiased joint estimate applies each attribute's inverse along its own axis.
    """

    reports: Dataset
    oracles: tuple[GRR, ...]
    estimator: str

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        cols = list(columns)
        counts = marginal_counts(self.reports.codes[:, cols], self.reports.domain.sizes[cols])
        freq = counts / self.reports.n
        if self.estimator == "none":
            return freq
        for axis, j in enumerate(cols):
            freq = self.oracles[j].unbias(freq, axis=axis)
        return postprocess(freq, self.estimator)

    def expected_mse(self, column: int) -> float | None:
        if self.estimator != "unbiased":
            return None
        return self.oracles[column].expected_mse(self.reports.n)


@dataclass(frozen=True)
class GRRTable:
    """Publisher ``grr``: GRR on every attribute at ``epsilon / d`` (SPL)."""

    estimator: str = "unbiased"
    name: str = "grr"

    def __post_init__(self) -> None:
        check_choice(self.estimator, "estimator", ESTIMATORS)

    def publish(self, data: Dataset, epsilon: float, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        share = epsilon / data.d
        oracles = tuple(GRR(share, int(k)) for k in data.domain.sizes)
        start = time.perf_counter()
        reports = np.empty_like(data.codes)
        for j, oracle in enumerate(oracles):  # one vectorized draw per attribute
            reports[:, j] = oracle.perturb(data.codes[:, j], rng)
        perturbed = time.perf_counter()
        release = GRRReportsRelease(data.with_codes(reports), oracles, self.estimator)
        ledger = [
            {"phase": "perturb", "attribute": name, "epsilon": share} for name in data.domain.names
        ]
        return Outcome(
            release=release,
            published=release.reports,
            ledger=ledger,
            timings={"perturb": perturbed - start},
        )
