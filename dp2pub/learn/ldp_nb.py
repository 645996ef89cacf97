"""Naive Bayes from locally differentially private reports.

Yilmaz, Al-Rubaie & Chang, "Locally Differentially Private Naive Bayes Classification",
arXiv:1905.01039 (2019). Every training user reports, under epsilon-LDP with a frequency
oracle, their class ``y`` and, for each feature ``j``, the pair ``(x_j, y)`` encoded as the
single value ``x_j * c + y`` of the domain of size ``k_j * c`` (``c`` classes). The server
estimates the class frequencies and the joint frequencies of each (feature value, class)
pair, which is all naive Bayes needs:

    P(c) from the class report;  P(x_j = v | c) = N(v, c) / sum_u N(u, c)

with ``N`` the estimated counts, post-processed to be non-negative (``clip``, ``norm_sub``
or ``ibu``) and Laplace-smoothed with ``alpha``. A test record is classified by
``argmax_c log P(c) + sum_j log P(x_j | c)``, one table lookup per feature for all records.

The d + 1 reports share the budget (``strategy: split``, epsilon / (d + 1) each), or every
user sends one uniformly sampled report with the whole epsilon (``strategy: sample``; each
distribution is then estimated from the users who reported it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dp2pub.mechanisms import ORACLES
from dp2pub.mechanisms.accounting import split_budget
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.validation import ConfigError, check_choice, check_epsilon

#: Post-processings that give non-negative frequencies (probabilities need them).
NB_ESTIMATORS: tuple[str, ...] = ("clip", "norm_sub", "ibu")
STRATEGIES: tuple[str, ...] = ("split", "sample")


def check_alpha(value: object, key: str = "alpha") -> float:
    """The Laplace smoothing constant: a finite number > 0."""
    try:
        alpha = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(key, value, "a finite number > 0") from None
    if not np.isfinite(alpha) or alpha <= 0:
        raise ConfigError(key, value, "a finite number > 0")
    return alpha


@dataclass
class LDPNaiveBayes:
    """Naive Bayes trained on epsilon-LDP reports (Yilmaz et al., arXiv:1905.01039).

    Args:
        oracle: frequency oracle of every report: ``grr``, ``sue``, ``oue``, ``olh``.
        epsilon: each user's total budget.
        estimator: non-negative post-processing of the estimates (``clip``, ``norm_sub``, ``ibu``).
        strategy: ``split`` or ``sample`` (see the module docstring).
        alpha: Laplace smoothing of the estimated counts.
        options: further keyword arguments of the oracle.

    After :meth:`fit`: ``prior_`` (c,), ``joints_`` (per feature the (k_j, c) estimated joint
    frequencies), ``log_prior_``, ``log_conditionals_`` (per feature log P(x_j | c), (k_j, c)),
    ``reports_per_estimate_`` (users behind each of the d + 1 estimates) and ``budgets_``.
    """

    oracle: str = "grr"
    epsilon: float = 1.0
    estimator: str = "norm_sub"
    strategy: str = "split"
    alpha: float = 1.0
    options: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_choice(self.oracle, "oracle", tuple(name for name in ORACLES if name != "rappor"))
        self.epsilon = check_epsilon(self.epsilon)
        check_choice(self.estimator, "estimator", NB_ESTIMATORS)
        check_choice(self.strategy, "strategy", STRATEGIES)
        self.alpha = check_alpha(self.alpha)

    def _oracle(self, epsilon: float, k: int) -> FrequencyOracle:
        return ORACLES[self.oracle](epsilon, int(k), **self.options)

    def fit(
        self,
        X: np.ndarray,
        y: np.ndarray,
        rng: np.random.Generator,
        sizes: Sequence[int] | None = None,
        n_classes: int | None = None,
    ) -> LDPNaiveBayes:
        """Simulate the users' reports of ``X`` (n, d integer codes) and ``y`` (n class codes)
        and estimate the model from them. ``sizes`` (feature domain sizes) and ``n_classes``
        default to one more than the largest code seen."""
        X = np.asarray(X, dtype=np.int64)
        y = np.asarray(y, dtype=np.int64)
        if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] == 0:
            raise ValueError(f"X must be (n, d) and y (n,) with n > 0; got {X.shape} and {y.shape}")
        n, d = X.shape
        sizes = np.asarray(X.max(axis=0) + 1 if sizes is None else sizes, dtype=np.int64)
        c = int(y.max() + 1 if n_classes is None else n_classes)
        # report 0: the class; report 1 + j: the pair (x_j, y) as x_j * c + y
        domains = [c] + [int(k) * c for k in sizes]
        if self.strategy == "split":
            share = split_budget(self.epsilon, d + 1)
            users: list[slice | np.ndarray] = [slice(None)] * (d + 1)
        else:
            share = self.epsilon
            chosen = rng.integers(0, d + 1, size=n)
            users = [np.flatnonzero(chosen == r) for r in range(d + 1)]
        oracles = [self._oracle(share, k) for k in domains]
        estimates, counts = [], []
        for r, (oracle, who) in enumerate(zip(oracles, users)):
            values = y[who] if r == 0 else X[who, r - 1] * c + y[who]
            m = values.shape[0]
            if m == 0:  # no user sampled this report: nothing is known about it
                estimates.append(np.full(oracle.k, 1.0 / oracle.k))
            else:
                estimates.append(oracle.estimate(oracle.perturb(values, rng), self.estimator))
            counts.append(m)
        self.budgets_ = [o.epsilon for o in oracles]
        self.reports_per_estimate_ = counts
        self.prior_ = estimates[0]
        self.joints_ = [est.reshape(int(k), c) for est, k in zip(estimates[1:], sizes)]
        return self._smooth(counts)

    def _smooth(self, counts: list[int]) -> LDPNaiveBayes:
        """Log probabilities from the estimated counts with Laplace smoothing ``alpha``."""
        a = self.alpha
        class_counts = counts[0] * self.prior_
        self.log_prior_ = np.log((class_counts + a) / (class_counts.sum() + a * class_counts.size))
        self.log_conditionals_ = []
        for m, joint in zip(counts[1:], self.joints_):
            pair_counts = m * joint  # N(v, c)
            cond = (pair_counts + a) / (pair_counts.sum(axis=0, keepdims=True) + a * joint.shape[0])
            self.log_conditionals_.append(np.log(cond))
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """``log P(c) + sum_j log P(x_j | c)`` for every record and class, (m, c)."""
        X = np.asarray(X, dtype=np.int64)
        scores = np.broadcast_to(self.log_prior_, (X.shape[0], self.log_prior_.size)).copy()
        for j, table in enumerate(self.log_conditionals_):  # one gather per feature, all records at once
            scores += table[X[:, j]]
        return scores

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The naive Bayes class of every row of ``X``."""
        return np.argmax(self.decision_function(X), axis=1)
