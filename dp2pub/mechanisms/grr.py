"""Generalized (k-ary) randomized response, GRR, also called direct encoding.

Wang, Blocki, Li, Jha, "Locally Differentially Private Protocols for Frequency Estimation",
USENIX Security 2017, section 4.1: a user with value ``x`` reports ``x`` with probability
``p = e^eps / (e^eps + k - 1)`` and each other value with probability
``q = 1 / (e^eps + k - 1)``, so ``p / q = e^eps``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dp2pub.mechanisms.estimators import ESTIMATORS, postprocess
from dp2pub.validation import ConfigError, check_choice, check_epsilon, check_int


@dataclass(frozen=True)
class GRR:
    """The GRR frequency oracle for one attribute with domain ``0 .. k-1`` at budget epsilon."""

    epsilon: float
    k: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "k", check_int(self.k, "k", 2))

    @property
    def p(self) -> float:
        """Probability of reporting the true value."""
        return math.exp(self.epsilon) / (math.exp(self.epsilon) + self.k - 1)

    @property
    def q(self) -> float:
        """Probability of reporting one given other value."""
        return 1.0 / (math.exp(self.epsilon) + self.k - 1)

    def transition_matrix(self) -> np.ndarray:
        """Exact channel ``P[x, y] = Pr[report y | value x]`` (rows sum to one)."""
        return np.full((self.k, self.k), self.q) + np.eye(self.k) * (self.p - self.q)

    def perturb(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Perturb a whole column of values at once; returns reports of the same dtype.

        One uniform ``u`` per user decides both branches: ``u < p`` keeps the value; otherwise
        ``(u - p) / (1 - p)`` is uniform on [0, 1) and picks one of the ``k - 1`` other values.
        """
        values = np.asarray(values)
        self.check_values(values)
        p, k = self.p, self.k
        u = rng.random(values.shape)
        other = ((u - p) * ((k - 1) / (1.0 - p))).astype(np.int64)
        np.clip(other, 0, k - 2, out=other)
        other += other >= values
        return np.where(u < p, values, other).astype(values.dtype, copy=False)

    def check_values(self, values: np.ndarray) -> None:
        """Raise ConfigError naming the first value outside ``0 .. k-1``."""
        if values.size and (values.min() < 0 or values.max() >= self.k):
            bad = values[(values < 0) | (values >= self.k)][0]
            raise ConfigError("value", int(bad), f"a code in 0..{self.k - 1}")

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        """``C(v)``: how many reports support each value (for GRR, the report histogram)."""
        return np.bincount(np.asarray(reports, dtype=np.intp), minlength=self.k)

    def unbias(self, counts: np.ndarray, axis: int = 0) -> np.ndarray:
        """Apply the inverse channel along one axis of a (joint) count or frequency table.

        ``(C - N q) / (p - q)`` where ``N`` is the total along ``axis``; applied to each axis
        of a joint table in turn it inverts the Kronecker product of independent GRR channels
        without building it.
        """
        total = counts.sum(axis=axis, keepdims=True)
        return (counts - total * self.q) / (self.p - self.q)

    def estimate(self, reports: np.ndarray, estimator: str = "unbiased") -> np.ndarray:
        """Estimated frequency of each value from a column of reports.

        ``none`` returns the raw report histogram; the others post-process the unbiased
        estimate ``(C - n q) / (n (p - q))`` (see :mod:`dp2pub.mechanisms.estimators`).
        """
        check_choice(estimator, "estimator", ESTIMATORS)
        counts = self.support_counts(reports).astype(np.float64)
        n = counts.sum()
        if estimator == "none":
            return counts / n
        return postprocess(self.unbias(counts) / n, estimator)

    def variance(self, n: int) -> float:
        """``Var[f_hat(v)]`` for a value of frequency near 0 (Wang et al. 2017, section 4.1):

        ``(e^eps + k - 2) / (n (e^eps - 1)^2)``, the DESIGN table entry.
        """
        e = math.exp(self.epsilon)
        return (e + self.k - 2) / (n * (e - 1) ** 2)

    def expected_mse(self, n: int) -> float:
        """Exact expected MSE of the unbiased estimate, averaged over the k values.

        ``Var[f_hat(v)] = [q(1-q) / (p-q)^2 + f(v)(1-p-q) / (p-q)] / n`` (Wang et al. 2017,
        Theorem 2); averaging over v uses only ``sum_v f(v) = 1``, so the result holds for any
        true distribution.
        """
        p, q, k = self.p, self.q, self.k
        return (q * (1 - q) / (p - q) ** 2 + (1 - p - q) / ((p - q) * k)) / n
