"""Generalized (k-ary) randomized response, GRR, also called direct encoding.

Wang, Blocki, Li, Jha, "Locally Differentially Private Protocols for Frequency Estimation",
USENIX Security 2017, section 4.1: a user with value ``x`` reports ``x`` with probability
``p = e^eps / (e^eps + k - 1)`` and each other value with probability
``q = 1 / (e^eps + k - 1)``, so ``p / q = e^eps``.
"""

from __future__ import annotations

import math

import numpy as np

from dp2pub.mechanisms.oracle import FrequencyOracle


class GRR(FrequencyOracle):
    """The GRR frequency oracle for one attribute with domain ``0 .. k-1`` at budget epsilon.

    Reports are values (codes) of the same dtype as the input; a report supports itself.
    """

    name = "grr"

    def __init__(self, epsilon: float, k: int) -> None:
        super().__init__(epsilon, k)
        self.check_informative()

    @property
    def p(self) -> float:
        """Probability of reporting the true value (written with ``e^-eps``: finite for any eps)."""
        return 1.0 / (1.0 + (self.k - 1) * math.exp(-self.epsilon))

    @property
    def q(self) -> float:
        """Probability of reporting one given other value."""
        return math.exp(-self.epsilon) / (1.0 + (self.k - 1) * math.exp(-self.epsilon))

    p_star = p
    q_star = q

    @property
    def ratio(self) -> float:
        return self.p / self.q

    def privacy_loss(self) -> float:
        """``ln(p / q)`` of the float channel that :meth:`perturb` realizes: infinite once p
        rounds to 1 (``(k - 1) e^-eps`` below 2^-53, about eps > 37 + ln(k - 1)), where no
        uniform draw ever picks another value."""
        p, q = self.p, self.q
        return math.log(p / q) if q > 0 and p < 1.0 else math.inf

    def transition_matrix(self) -> np.ndarray:
        """Exact channel ``P[x, y] = Pr[report y | value x]`` (rows sum to one)."""
        return self.channel_matrix()

    def channel_matrix(self) -> np.ndarray:
        """The k x k channel ``Q = (p - q) I + q 1 1^T``."""
        return np.full((self.k, self.k), self.q) + np.eye(self.k) * (self.p - self.q)

    def perturb(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Perturb a whole column of values at once; returns reports of the same dtype.

        One uniform ``u`` per user decides both branches: ``u < p`` keeps the value; otherwise
        ``(u - p) / (1 - p)`` is uniform on [0, 1) and picks one of the ``k - 1`` other values.
        Any array shape is accepted (each entry is one independent report).
        """
        values = np.asarray(values)
        if values.size and (values.min() < 0 or values.max() >= self.k):
            self.check_values(values.ravel())
        p, k = self.p, self.k
        u = rng.random(values.shape)
        keep = u < p
        u -= p
        u *= (k - 1) / (1.0 - p) if p < 1.0 else 0.0  # p == 1 in floating point: every u < p
        np.clip(u, 0, k - 2, out=u)  # kept users (u < p) are overwritten below; guards rounding
        other = u.astype(np.int32)
        other += other >= values
        np.copyto(other, values, where=keep, casting="unsafe")
        return other.astype(values.dtype, copy=False)

    def support(self, reports: np.ndarray) -> np.ndarray:
        """One-hot rows: a report supports exactly the value it names."""
        onehot = np.zeros((len(reports), self.k), dtype=np.uint8)
        onehot[np.arange(len(reports)), np.asarray(reports, dtype=np.intp)] = 1
        return onehot

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        """``C(v)``: the report histogram."""
        return np.bincount(np.asarray(reports).ravel(), minlength=self.k)

    def forward(self, table: np.ndarray, axis: int = 0) -> np.ndarray:
        """Apply the channel along one axis of a (joint) frequency table: ``(p-q) T + q sum T``."""
        return (self.p - self.q) * table + self.q * table.sum(axis=axis, keepdims=True)

    def unbias(self, counts: np.ndarray, axis: int = 0) -> np.ndarray:
        """Apply the inverse channel along one axis of a (joint) count or frequency table.

        ``(C - N q) / (p - q)`` where ``N`` is the total along ``axis``; applied to each axis
        of a joint table in turn it inverts the Kronecker product of independent GRR channels
        without building it.
        """
        total = counts.sum(axis=axis, keepdims=True)
        return (counts - total * self.q) / (self.p - self.q)

    def variance(self, n: int) -> float:
        """``Var[f_hat(v)]`` for a value of frequency near 0 (Wang et al. 2017, section 4.1):

        ``(e^eps + k - 2) / (n (e^eps - 1)^2)``, the DESIGN table entry.
        """
        e = math.exp(-self.epsilon)  # the same ratio times e^-2eps / e^-2eps: finite for any eps
        return (e + (self.k - 2) * e * e) / (n * (1 - e) ** 2)
