"""Publisher ``ldp_nb``: naive Bayes learned from LDP reports (Yilmaz, Al-Rubaie & Chang,
arXiv:1905.01039; :class:`dp2pub.learn.ldp_nb.LDPNaiveBayes`).

It publishes no table but a model. For the marginal metrics it answers 1-way marginals: the
class from the class report, feature ``j`` from its estimated (value, class) joint summed
over the classes. As a classifier it gives model ``nb`` (itself), so the utility metrics
report ``accuracy_nb`` next to ``accuracy_nb_baseline`` (scikit-learn's CategoricalNB with
the same ``alpha`` on the same training rows, without privacy).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.learn.ldp_nb import LDPNaiveBayes
from dp2pub.learn.utility import Classifier, baseline_classifier
from dp2pub.mechanisms.accounting import Spend, epsilon_spent
from dp2pub.mechanisms.grr import GRR
from dp2pub.mechanisms.oracles import ORACLES
from dp2pub.mechanisms.unary import OUE
from dp2pub.publish.base import Outcome, Publisher, reports_bytes
from dp2pub.publish.release import Release
from dp2pub.validation import ConfigError, check_epsilon


@dataclass(frozen=True)
class NaiveBayesRelease(Release):
    """An LDP naive Bayes model: a classifier (``nb``), and the 1-way marginals of the
    training table it estimated."""

    model: LDPNaiveBayes
    target: int
    max_way: int | None = 1

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        if len(columns) != 1:
            raise ValueError("ldp_nb estimates 1-way marginals only")
        j = columns[0]
        if j == self.target:
            return self.model.prior_
        return self.model.joints_[j if j < self.target else j - 1].sum(axis=1)

    @property
    def models(self) -> tuple[str, ...]:
        return ("nb",)

    def classifier(self, model: str, original: Dataset, random_state: int) -> Classifier | None:
        """The model itself, for ``nb`` and the target it learned; no other model or task."""
        return self.model if model == "nb" and original.target_column == self.target else None

    def baseline(self, model: str, original: Dataset, random_state: int) -> Classifier:
        """CategoricalNB with the model's ``alpha`` on the original training rows."""
        return baseline_classifier(model, original, random_state, self.model.alpha)


def _features(data: Dataset) -> tuple[int, list[int]]:
    if data.target is None:
        raise ConfigError("mechanism.name", "ldp_nb", f"a mechanism for a dataset with a target; {data.name} has none")
    target = data.domain.index(data.target)
    return target, [j for j in range(data.d) if j != target]


@dataclass(frozen=True, kw_only=True)
class LDPNBPublisher(Publisher):
    """``mechanism=ldp_nb``: naive Bayes learned from LDP reports of (value, class) pairs.

    Every training user reports (value, class) pairs (and with ``prior: report`` their class)
    under LDP; the server fits naive Bayes [1]_ (:class:`~dp2pub.learn.ldp_nb.LDPNaiveBayes`,
    whose docstring defines the options). It publishes no table but a model
    (:class:`NaiveBayesRelease`), which answers 1-way marginals and is classifier ``nb``.

    Parameters
    ----------
    oracle : str, optional
        ``grr``, ``sue``, ``oue``, ``olh`` or ``adaptive`` (default).
    estimator : str, optional
        ``clip``, ``norm_sub`` (default) or ``ibu`` (non-negative estimates).
    strategy : str, optional
        ``split`` (epsilon shared by the reports) or ``sample`` (default: one report per
        user).
    prior : str, optional
        ``report`` (the class reported alone) or ``pairs`` (default: from the pair reports).
    accounting : str, optional
        ``total`` (default: epsilon is the user's whole budget) or ``per_report`` (each
        report gets epsilon; the ledger, ``epsilon_spent`` and a note give the true total).
    encoding : str, optional
        ``pairs`` (default) or ``slots`` (the reimplementation kusabhadranv/nb_dp's).
    alpha : float, optional
        Laplace smoothing (default 1.0).
    options : mapping, optional
        Further keyword arguments of the oracle.

    Raises
    ------
    ConfigError
        For an option out of range; when publishing, for a dataset without a target.

    References
    ----------
    .. [1] E. Yilmaz, M. Al-Rubaie, J. M. Chang, "Locally Differentially Private Naive Bayes
       Classification", arXiv:1905.01039, 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import LDPNBPublisher, load_adult
    >>> train, test = load_adult().train_test()
    >>> outcome = LDPNBPublisher(oracle="oue").publish(train, epsilon=2.0, rng=np.random.default_rng(0))
    >>> outcome.epsilon_spent, outcome.published is None, outcome.release.models
    (2.0, True, ('nb',))
    >>> model = outcome.release.classifier("nb", test, random_state=0)
    >>> features = np.delete(test.codes, test.target_column, axis=1)
    >>> round(float(np.mean(model.predict(features) == test.column("income"))), 3)
    0.803
    """

    oracle: str = "adaptive"
    estimator: str = "norm_sub"
    strategy: str = "sample"
    prior: str = "pairs"
    accounting: str = "total"
    encoding: str = "pairs"
    alpha: float = 1.0
    options: Mapping = field(default_factory=dict)
    name: ClassVar[str] = "ldp_nb"
    needs_target: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.model(1.0).check_params()

    def guarantee(self, epsilon: float | None) -> str:
        """``epsilon=1.0``, or ``epsilon=1.0 per report`` when each report spends it."""
        return f"epsilon={epsilon}" + (" per report" if self.spends_per_report else "")

    @property
    def spends_per_report(self) -> bool:
        """Whether a user spends epsilon on each of several reports (``per_report`` with
        ``split``; under ``sample`` a user sends one report, so the accountings agree)."""
        return self.accounting == "per_report" and self.strategy == "split"

    def model(
        self,
        epsilon: float,
        *,
        sizes: Sequence[int] | None = None,
        n_classes: int | None = None,
        random_state: np.random.Generator | int | None = None,
    ) -> LDPNaiveBayes:
        """The unfitted model of this publisher at budget ``epsilon`` (with the data's
        ``sizes``, ``n_classes`` and ``random_state`` when known)."""
        return LDPNaiveBayes(
            oracle=self.oracle,
            epsilon=epsilon,
            estimator=self.estimator,
            strategy=self.strategy,
            prior=self.prior,
            accounting=self.accounting,
            encoding=self.encoding,
            alpha=self.alpha,
            options=dict(self.options),
            sizes=sizes,
            n_classes=n_classes,
            random_state=random_state,
        )

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """The features' codes as the caller's copy and as int64 and the classes as int64
        (w + 8 bytes a record and feature, and 8), with ``sample`` each user's report (int64)
        and the users of each report (int64 in all) and a flag; and one report at a time
        (reports are estimated, then dropped): its users' values (int64, and a product, a
        gather and a sum while they are made: 32 bytes a user) and their reports and
        estimates (:func:`~dp2pub.publish.base.reports_bytes`) over the largest domain, value x
        class (the class is the largest attribute at most; the slot encoding's are the value's
        alone). A report's users are all of them (``split``), or under ``sample`` a binomial
        share of them, at most 2 n / R + 64 of n (R reports): a count beyond it has probability
        below 1e-18 (Chernoff) at any n and R."""
        n, sizes = int(n), [int(k) for k in sizes]
        largest, features = max(sizes, default=1), max(len(sizes) - 1, 1)
        itemsize = code_dtype(largest).itemsize
        reports = features * (largest if self.encoding == "slots" else 1) + (self.prior == "report")
        users = n if self.strategy == "split" else min(n, 2 * n // reports + 64)
        domain = largest if self.encoding == "slots" else largest * largest
        oracles = (GRR, OUE) if self.oracle == "adaptive" else (ORACLES[self.oracle],)
        ibu = self.estimator == "ibu"
        table = n * features * (itemsize + 8) + 8 * n + (17 * n if self.strategy == "sample" else 0)
        return table + 32 * users + reports_bytes(oracles, users, domain, ibu, itemsize=8, **self.options)

    @property
    def max_way(self) -> int:
        """1-way marginals only (:class:`NaiveBayesRelease`)."""
        return 1

    def answer_bytes(self, n: int, sizes: Sequence[int] | np.ndarray, way: int) -> int:
        """None: the model's 1-way marginals are its own small tables."""
        return 0

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """Fit the model on the reports of every record of ``data``.

        Parameters
        ----------
        data : Dataset
            The training table; it must have a target (the class).
        epsilon : float
            The budget per user (``accounting: per_report``: per report).
        rng : numpy.random.Generator
            The source of the reports' randomness.

        Returns
        -------
        Outcome
            A :class:`NaiveBayesRelease` (the model) and the ledger of the reports.

        Raises
        ------
        ConfigError
            For a dataset without a target or an ``epsilon`` out of range.
        """
        target, features = _features(data)
        epsilon = check_epsilon(epsilon)
        start = time.perf_counter()
        model = self.model(
            epsilon,
            sizes=[int(k) for k in data.domain.sizes[features]],
            n_classes=int(data.domain.sizes[target]),
            random_state=rng,
        )
        model.fit(data.codes[:, features], data.codes[:, target])
        elapsed = time.perf_counter() - start
        names = data.domain.names
        ledger = _ledger(model, names[target], [names[j] for j in features], data.domain.labels[target])
        beyond, allowed = "", None
        if self.spends_per_report:
            allowed = math.fsum([epsilon] * len(model.reports_))
            beyond = (
                f"epsilon_spent={epsilon_spent(ledger):g} is each user's true total: mechanism.accounting=per_report "
                f"gave each of {len(ledger)} reports epsilon={epsilon:g} (accounting=total keeps it within epsilon)"
            )
        release, trace = NaiveBayesRelease(model, target), model.ibu_trace_.metrics()
        return Outcome(release, ledger, {"fit": elapsed}, trace, beyond_budget=beyond, allowed_epsilon=allowed)


def _ledger(model: LDPNaiveBayes, target: str, features: list[str], classes: tuple[str, ...]) -> list[Spend]:
    """Each report a user sends (``split``: all of them, spent in sequence), or the one they
    sampled (``sample``: one report per user)."""
    if model.strategy == "sample":
        return [Spend("report", "one sampled report", max(model.budgets_))]
    names = [
        target
        if j is None
        else f"({features[j]}, {target})"
        if c is None
        else f"{features[j]} if {target}={classes[c]}"
        for j, c in model.reports_
    ]
    return [Spend("report", name, budget) for name, budget in zip(names, model.budgets_)]
