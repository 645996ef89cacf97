"""Naive Bayes from locally differentially private reports.

Yilmaz, Al-Rubaie & Chang, "Locally Differentially Private Naive Bayes Classification",
arXiv:1905.01039 (2019). For each feature ``j`` a training user reports, under epsilon-LDP
with a frequency oracle, the pair ``(x_j, y)`` of their value and class encoded as the single
value ``x_j * c + y`` of a domain of size ``k_j * c`` (``c`` classes). The server estimates
the joint frequencies of each (feature value, class) pair, which is all naive Bayes needs:

    P(x_j = v | c) = N(v, c) / sum_u N(u, c)

with ``N`` the estimated counts, post-processed to be non-negative (``clip``, ``norm_sub``
or ``ibu``) and Laplace-smoothed with ``alpha``. A test record is classified by
``argmax_c log P(c) + sum_j log P(x_j | c)``, one table lookup per feature for all records.

The class prior ``P(c)`` comes from one more report of the class alone (``prior: report``,
the protocol as first implemented here), or from the pair reports themselves
(``prior: pairs``): every pair estimate, summed over the feature's values, is an unbiased
estimate of the class frequencies, and their inverse-variance weighted mean spends no
report of its own.

How the budget is used (``accounting``):

- ``total`` (the default): ``epsilon`` is the user's whole budget. ``strategy: split`` gives
  each of the R reports (d pairs, plus the class with ``prior: report``) ``epsilon / R``;
  ``strategy: sample`` has every user send one of the R reports, drawn uniformly, with the
  whole ``epsilon`` (each distribution is then estimated from the users who reported it).
- ``per_report``: every report gets ``epsilon``, as the public reimplementation
  kusabhadranv/nb_dp does; under ``split`` a user then spends ``R * epsilon`` in all
  (under ``sample`` one report, ``epsilon``).

``encoding: slots`` is the encoding of the public reimplementation kusabhadranv/nb_dp
instead of the pairs: for every class c' and feature j the user fills a slot with x_j if
their class is c' and with a uniformly drawn value of feature j otherwise, and reports each
of the c * d slots (and the class, so ``prior: report``) over the k_j values of feature j;
the server recovers ``f(v, c') = f_slot(v) - (1 - f(c')) / k_j``. More reports over smaller
domains: at a fixed total budget each gets ``epsilon / (c d + 1)``.

Every report's oracle is ``oracle`` (``grr``, ``sue``, ``oue``, ``olh``), or with ``adaptive``
whichever of GRR and OUE has the smaller closed-form variance on that report's domain
(:func:`dp2pub.mechanisms.adaptive.adaptive_oracle`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from dp2pub.mechanisms import postprocess
from dp2pub.mechanisms.accounting import split_budget
from dp2pub.mechanisms.adaptive import build_oracle
from dp2pub.mechanisms.ibu import IBUTrace
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.validation import ConfigError, check_choice, check_epsilon, check_float

#: Post-processings that give non-negative frequencies (probabilities need them).
NB_ESTIMATORS: tuple[str, ...] = ("clip", "norm_sub", "ibu")
#: The oracles of the reports: one for all, or ``adaptive`` (GRR or OUE per domain).
NB_ORACLES: tuple[str, ...] = ("grr", "sue", "oue", "olh", "adaptive")
STRATEGIES: tuple[str, ...] = ("split", "sample")
PRIORS: tuple[str, ...] = ("report", "pairs")
ENCODINGS: tuple[str, ...] = ("pairs", "slots")
ACCOUNTINGS: tuple[str, ...] = ("total", "per_report")


def report_budget(epsilon: float, reports: int, strategy: str, accounting: str) -> float:
    """The epsilon of each report when a user has ``reports`` of them: ``epsilon`` under
    ``sample`` (one report per user) or ``per_report``, else its exact share of ``epsilon``
    (:func:`~dp2pub.mechanisms.accounting.split_budget`)."""
    if strategy == "sample" or accounting == "per_report":
        return epsilon
    return split_budget(epsilon, reports)


#: A report: ``(None, None)`` the class, ``(j, None)`` the pair of feature j and the class,
#: ``(j, c)`` feature j's slot of class c (``encoding: slots``).
Report = tuple[int | None, int | None]


def report_domain(report: Report, sizes: np.ndarray, c: int) -> int:
    """The number of values of a report: c classes, k_j * c pairs, or k_j values."""
    j, cls = report
    if j is None:
        return c
    return int(sizes[j]) * (c if cls is None else 1)


def report_values(
    report: Report,
    X: np.ndarray,
    y: np.ndarray,
    who: slice | np.ndarray,
    sizes: np.ndarray,
    c: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """The true values the users ``who`` perturb for ``report``: their class, their pair
    ``x_j * c + y``, or in the slot of class c' their x_j if their class is c' and else a
    value drawn uniformly from feature j's domain."""
    j, cls = report
    if j is None:
        return y[who]
    if cls is None:
        return X[who, j] * c + y[who]
    own = y[who] == cls
    return np.where(own, X[who, j], rng.integers(0, int(sizes[j]), size=own.shape[0]))


def pooled_prior(
    oracles: Sequence[FrequencyOracle], unbiased: Sequence[np.ndarray], counts: Sequence[int], sizes: np.ndarray, c: int
) -> np.ndarray:
    """The class frequencies from the unbiased pair estimates: each summed over its feature's
    values, weighted by the inverse of that sum's variance near 0 (k_j cells of the oracle's
    closed-form variance on its m_j users). The weights depend on the domains and the numbers
    of reports only, so the mean stays unbiased."""
    weights = np.array(
        [0.0 if m == 0 else 1.0 / (int(k) * oracle.variance(m)) for oracle, m, k in zip(oracles, counts, sizes)]
    )
    sums = np.stack([est.reshape(int(k), c).sum(axis=0) for est, k in zip(unbiased, sizes)])
    return weights @ sums / weights.sum()


class LDPNaiveBayes(ClassifierMixin, BaseEstimator):
    """Naive Bayes trained on epsilon-LDP reports (Yilmaz et al., arXiv:1905.01039), as a
    scikit-learn classifier: it works with ``clone``, ``cross_val_score`` and pipelines.

    Args:
        oracle: frequency oracle of every report: ``grr``, ``sue``, ``oue``, ``olh``, or
            ``adaptive`` (GRR or OUE, the smaller variance on each report's domain).
        epsilon: each user's total budget (``accounting: total``) or each report's
            (``per_report``).
        estimator: non-negative post-processing of the estimates (``clip``, ``norm_sub``, ``ibu``).
        strategy: ``split`` or ``sample`` (see the module docstring).
        prior: ``report`` (a report of the class) or ``pairs`` (from the pair reports).
        accounting: ``total`` or ``per_report`` (see the module docstring).
        encoding: ``pairs`` (the (value, class) pair per feature) or ``slots`` (a slot per
            feature and class, the reimplementation's; needs ``prior: report``).
        alpha: Laplace smoothing of the estimated counts.
        options: further keyword arguments of the oracle (None: none; not with ``adaptive``).
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
    ``reports_`` (what each of the R reports is, a :data:`Report`),
    ``reports_per_estimate_`` (users behind each report's estimate), ``budgets_`` (each
    report's epsilon), ``oracles_`` (each report's oracle name) and, with ``prior: pairs``,
    ``class_estimate_`` (the unbiased class frequencies before post-processing).
    """

    def __init__(
        self,
        *,
        oracle: str = "adaptive",
        epsilon: float = 1.0,
        estimator: str = "norm_sub",
        strategy: str = "sample",
        prior: str = "pairs",
        accounting: str = "total",
        encoding: str = "pairs",
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
        self.prior = prior
        self.accounting = accounting
        self.encoding = encoding
        self.alpha = alpha
        self.options = options
        self.sizes = sizes
        self.n_classes = n_classes
        self.random_state = random_state

    def check_params(self) -> float:
        """Check every parameter (ConfigError naming the first bad one); returns epsilon."""
        check_choice(self.oracle, "oracle", NB_ORACLES)
        check_choice(self.estimator, "estimator", NB_ESTIMATORS)
        check_choice(self.strategy, "strategy", STRATEGIES)
        check_choice(self.prior, "prior", PRIORS)
        check_choice(self.accounting, "accounting", ACCOUNTINGS)
        check_choice(self.encoding, "encoding", ENCODINGS)
        if self.encoding == "slots" and self.prior != "report":
            raise ConfigError(
                "prior", self.prior, "report with encoding slots (a slot tells nothing of the class frequencies)"
            )
        if self.encoding == "slots" and self.estimator == "ibu":
            raise ConfigError(
                "estimator", "ibu", "clip or norm_sub with encoding slots (its joints come from unbiased slots)"
            )
        check_float(self.alpha, "alpha", 0.0)  # the Laplace smoothing constant
        if self.oracle == "adaptive" and self.options:
            raise ConfigError("options", dict(self.options), "none with oracle adaptive (it builds GRR and OUE)")
        return check_epsilon(self.epsilon)

    def _oracle(self, epsilon: float, k: int) -> FrequencyOracle:
        return build_oracle(self.oracle, epsilon, k, **(self.options or {}))

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
        self.n_features_in_ = d
        self.__dict__.pop("class_estimate_", None)  # a refit with prior: report has none
        oracles, estimates, unbiased, counts = self._simulate(epsilon, X, y, sizes, c, rng)
        features = slice(1, None) if self.prior == "report" else slice(None)  # the feature reports
        if self.prior == "report":
            self.prior_, class_users = estimates[0], counts[0]
        else:
            self.class_estimate_ = pooled_prior(oracles, unbiased, counts, sizes, c)
            self.prior_, class_users = postprocess(self.class_estimate_, self._projection), n
        if self.encoding == "pairs":
            self.joints_ = [est.reshape(int(k), c) for est, k in zip(estimates[features], sizes)]
            return self._smooth(class_users, counts[features])
        self.joints_ = self._slot_joints(unbiased[0], unbiased[features], sizes, c)
        return self._smooth(class_users, np.reshape(counts[features], (c, d)).mean(axis=0).tolist())

    def _simulate(
        self, epsilon: float, X: np.ndarray, y: np.ndarray, sizes: np.ndarray, c: int, rng: np.random.Generator
    ) -> tuple[list[FrequencyOracle], list[np.ndarray], list[np.ndarray], list[int]]:
        """Every user's reports (``split``: all R; ``sample``: one drawn uniformly), perturbed
        and estimated: per report its oracle, the post-processed estimate (uniform if nobody
        sent it), the unbiased one, and the number of users behind it. Sets ``reports_``, ``budgets_``,
        ``oracles_``, ``reports_per_estimate_`` and ``ibu_trace_``."""
        self.reports_ = self._plan(X.shape[1], c)
        domains = [report_domain(report, sizes, c) for report in self.reports_]
        share = report_budget(epsilon, len(domains), self.strategy, self.accounting)
        if self.strategy == "split":
            users: list[slice | np.ndarray] = [slice(None)] * len(domains)
        else:
            chosen = rng.integers(0, len(domains), size=X.shape[0])
            users = [np.flatnonzero(chosen == r) for r in range(len(domains))]
        oracles = [self._oracle(share, k) for k in domains]
        estimates, unbiased, counts, self.ibu_trace_ = [], [], [], IBUTrace()
        for report, oracle, who in zip(self.reports_, oracles, users):
            values = report_values(report, X, y, who, sizes, c, rng)
            counts.append(values.shape[0])
            if counts[-1] == 0:  # no user sampled this report: nothing is known about it
                estimates.append(np.full(oracle.k, 1.0 / oracle.k))
                unbiased.append(estimates[-1])
                continue
            perturbed = oracle.perturb(values, rng)
            estimates.append(oracle.estimate(perturbed, self.estimator, self.ibu_trace_))
            unbiased.append(oracle.estimate(perturbed, "unbiased"))
        self.budgets_ = [o.epsilon for o in oracles]
        self.oracles_ = [o.name for o in oracles]
        self.reports_per_estimate_ = counts
        return oracles, estimates, unbiased, counts

    @property
    def _projection(self) -> str:
        """The post-processing of an estimate built from unbiased ones (``ibu`` would need
        reports of its own: the projection instead)."""
        return "clip" if self.estimator == "clip" else "norm_sub"

    def _plan(self, d: int, c: int) -> list[Report]:
        """The reports every user has: the class (``prior: report``), then per feature
        its pair, or with ``encoding: slots`` one slot per class."""
        head: list[Report] = [(None, None)] if self.prior == "report" else []
        if self.encoding == "pairs":
            return head + [(j, None) for j in range(d)]
        return head + [(j, cls) for cls in range(c) for j in range(d)]

    def _slot_joints(
        self, class_estimate: np.ndarray, slots: Sequence[np.ndarray], sizes: np.ndarray, c: int
    ) -> list[np.ndarray]:
        """Per feature the (k_j, c) joint frequencies from its slots: slot (j, c') holds x_j
        for the users of class c' and a uniform value for the others, so
        ``f(v, c') = f_slot(v) - (1 - f(c')) / k_j`` (unbiased from unbiased estimates),
        then post-processed as one distribution."""
        joints = []
        for j, k in enumerate(int(k) for k in sizes):
            columns = [slots[cls * len(sizes) + j] - (1.0 - class_estimate[cls]) / k for cls in range(c)]
            joint = np.stack(columns, axis=1)  # (k_j, c)
            joints.append(postprocess(joint.ravel(), self._projection).reshape(k, c))
        return joints

    def _smooth(self, class_users: float, pair_users: Sequence[float]) -> LDPNaiveBayes:
        """Log probabilities from the estimated counts with Laplace smoothing ``alpha``: the
        class frequencies stand for ``class_users`` users, feature j's joint for ``pair_users[j]``."""
        a = float(self.alpha)  # checked by fit
        class_counts = class_users * self.prior_
        self.log_prior_ = np.log((class_counts + a) / (class_counts.sum() + a * class_counts.size))
        self.log_conditionals_ = []
        for m, joint in zip(pair_users, self.joints_):
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
