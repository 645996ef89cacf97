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

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from dp2pub.mechanisms import ORACLES
from dp2pub.mechanisms.accounting import split_budget
from dp2pub.mechanisms.ibu import IBUTrace
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.validation import check_choice, check_epsilon, check_float

#: Post-processings that give non-negative frequencies (probabilities need them).
NB_ESTIMATORS: tuple[str, ...] = ("clip", "norm_sub", "ibu")
STRATEGIES: tuple[str, ...] = ("split", "sample")


class LDPNaiveBayes(ClassifierMixin, BaseEstimator):
    """Naive Bayes trained on epsilon-LDP reports (Yilmaz et al., arXiv:1905.01039), as a
    scikit-learn classifier: it works with ``clone``, ``cross_val_score`` and pipelines.

    Args:
        oracle: frequency oracle of every report: ``grr``, ``sue``, ``oue``, ``olh``.
        epsilon: each user's total budget.
        estimator: non-negative post-processing of the estimates (``clip``, ``norm_sub``, ``ibu``).
        strategy: ``split`` or ``sample`` (see the module docstring).
        alpha: Laplace smoothing of the estimated counts.
        options: further keyword arguments of the oracle (None: none).
        sizes: the feature domain sizes (None: one more than the largest code seen in ``fit``;
            give them when a test record may hold a value no training record has).
        n_classes: the classes are the codes ``0 .. n_classes-1`` (None: the labels seen in
            ``fit``, in sorted order).
        random_state: the users' randomness: a ``numpy.random.Generator`` (used as is, and
            advanced by each fit), an integer seed, or None (fresh entropy). ``clone`` copies a
            Generator, so every clone (each fold of ``cross_val_score``) draws the same noise:
            give an integer or None for independent folds.

    Parameters are checked by :meth:`fit` (scikit-learn's convention); after it:
    ``classes_``, ``prior_`` (c,), ``joints_`` (per feature the (k_j, c) estimated joint
    frequencies), ``log_prior_``, ``log_conditionals_`` (per feature log P(x_j | c), (k_j, c)),
    ``reports_per_estimate_`` (users behind each of the d + 1 estimates) and ``budgets_``.
    """

    def __init__(
        self,
        *,
        oracle: str = "grr",
        epsilon: float = 1.0,
        estimator: str = "norm_sub",
        strategy: str = "split",
        alpha: float = 1.0,
        options: Mapping | None = None,
        sizes: Sequence[int] | None = None,
        n_classes: int | None = None,
        random_state: np.random.Generator | int | None = None,
    ) -> None:
        self.oracle = oracle
        self.epsilon = epsilon
        self.estimator = estimator
        self.strategy = strategy
        self.alpha = alpha
        self.options = options
        self.sizes = sizes
        self.n_classes = n_classes
        self.random_state = random_state

    def check_params(self) -> float:
        """Check every parameter (ConfigError naming the first bad one); returns epsilon."""
        check_choice(self.oracle, "oracle", tuple(name for name in ORACLES if name != "rappor"))
        check_choice(self.estimator, "estimator", NB_ESTIMATORS)
        check_choice(self.strategy, "strategy", STRATEGIES)
        check_float(self.alpha, "alpha", 0.0)  # the Laplace smoothing constant
        return check_epsilon(self.epsilon)

    def _oracle(self, epsilon: float, k: int) -> FrequencyOracle:
        return ORACLES[self.oracle](epsilon=epsilon, k=int(k), **(self.options or {}))

    def fit(self, X: np.ndarray, y: np.ndarray) -> LDPNaiveBayes:
        """Simulate the users' reports of ``X`` (n, d integer codes) and ``y`` (n labels)
        and estimate the model from them."""
        epsilon = self.check_params()
        X = np.asarray(X, dtype=np.int64)
        y = np.asarray(y)
        if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] == 0:
            raise ValueError(f"X must be (n, d) and y (n,) with n > 0; got {X.shape} and {y.shape}")
        if self.n_classes is None:
            self.classes_, y = np.unique(y, return_inverse=True)
        else:
            self.classes_, y = np.arange(int(self.n_classes)), y.astype(np.int64)
        rng = (
            self.random_state
            if isinstance(self.random_state, np.random.Generator)
            else np.random.default_rng(self.random_state)
        )
        n, d = X.shape
        sizes = np.asarray(X.max(axis=0) + 1 if self.sizes is None else self.sizes, dtype=np.int64)
        c = self.classes_.size
        # report 0: the class; report 1 + j: the pair (x_j, y) as x_j * c + y
        domains = [c] + [int(k) * c for k in sizes]
        if self.strategy == "split":
            share = split_budget(epsilon, d + 1)
            users: list[slice | np.ndarray] = [slice(None)] * (d + 1)
        else:
            share = epsilon
            chosen = rng.integers(0, d + 1, size=n)
            users = [np.flatnonzero(chosen == r) for r in range(d + 1)]
        oracles = [self._oracle(share, k) for k in domains]
        estimates, counts, self.ibu_trace_ = [], [], IBUTrace()
        for r, (oracle, who) in enumerate(zip(oracles, users)):
            values = y[who] if r == 0 else X[who, r - 1] * c + y[who]
            m = values.shape[0]
            if m == 0:  # no user sampled this report: nothing is known about it
                estimates.append(np.full(oracle.k, 1.0 / oracle.k))
            else:
                estimates.append(oracle.estimate(oracle.perturb(values, rng), self.estimator, self.ibu_trace_))
            counts.append(m)
        self.n_features_in_ = d
        self.budgets_ = [o.epsilon for o in oracles]
        self.reports_per_estimate_ = counts
        self.prior_ = estimates[0]
        self.joints_ = [est.reshape(int(k), c) for est, k in zip(estimates[1:], sizes)]
        return self._smooth(counts)

    def _smooth(self, counts: list[int]) -> LDPNaiveBayes:
        """Log probabilities from the estimated counts with Laplace smoothing ``alpha``."""
        a = float(self.alpha)  # checked by fit
        class_counts = counts[0] * self.prior_
        self.log_prior_ = np.log((class_counts + a) / (class_counts.sum() + a * class_counts.size))
        self.log_conditionals_ = []
        for m, joint in zip(counts[1:], self.joints_):
            pair_counts = m * joint  # N(v, c)
            cond = (pair_counts + a) / (pair_counts.sum(axis=0, keepdims=True) + a * joint.shape[0])
            self.log_conditionals_.append(np.log(cond))
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """``log P(c) + sum_j log P(x_j | c)`` for every record and class, (m, c).

        Raises:
            NotFittedError: before :meth:`fit`.
            ValueError: if ``X`` has another number of features, or a code outside a
                feature's domain.
        """
        check_is_fitted(self, "log_conditionals_")
        X = np.asarray(X, dtype=np.int64)
        sizes = [table.shape[0] for table in self.log_conditionals_]
        if X.ndim != 2 or X.shape[1] != len(sizes):
            raise ValueError(f"X must be (m, {len(sizes)}) codes; got shape {X.shape}")
        if X.size and (X.min() < 0 or np.any(X.max(axis=0) >= sizes)):
            raise ValueError(f"X holds a code outside the features' domains 0..k-1, k = {sizes}")
        scores = np.broadcast_to(self.log_prior_, (X.shape[0], self.log_prior_.size)).copy()
        for j, table in enumerate(self.log_conditionals_):  # one gather per feature, all records at once
            scores += table[X[:, j]]
        return scores

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """``P(c | x)`` of every record and class (columns in the order of ``classes_``)."""
        return softmax(self.decision_function(X), axis=1)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The naive Bayes class of every row of ``X``."""
        best = np.argmax(self.decision_function(X), axis=1)  # checks that the model is fitted
        return self.classes_[best]
