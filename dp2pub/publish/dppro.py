"""Publisher ``dppro``: DPPro, random projection with Gaussian noise, a central-DP baseline of
the DP2-Pub paper.

Xu, Ren, Zhang, Qin, Ren, "DPPro: Differentially Private High-Dimensional Data Release via
Random Projection", IEEE TIFS 12(12), 2017. The DP2-Pub paper (Jiang et al., IEEE TKDE 2023)
describes it as projecting "a d-dimensional vector representation of a user's attributes into
a lower k-dimensional space by a random projection" and adding noise to each resulting
vector. A trusted curator holds the table. What this implementation chose where the papers
are silent (docs/mechanisms/dppro.md):

- **Vectors:** each record's features are one-hot encoded (one indicator block per
  attribute, ``D = sum of the feature domain sizes``); two records differ by at most
  ``Delta = sqrt(2 d_f)`` in L2, ``d_f`` the number of features; neighbouring tables differ in
  one record (replaced).
- **Release:** the projection ``P`` (``D x k``, ``N(0, 1/k)`` entries, drawn independently of
  the data: public) and ``Y = X P + Z``, ``Z`` Gaussian of scale
  :func:`~dp2pub.mechanisms.dppro.dppro_sigma` at ``(eps_f, delta)``.
- **Labels:** a label cannot be read back from a projection, and released in the clear it
  would not be private; so the label attributes (``labels``: the study's learning tasks,
  ``metrics.tasks``, else the table's target) are not projected but released by generalized
  randomized response (:class:`~dp2pub.mechanisms.grr.GRR`), ``eps_l = label_share *
  epsilon`` split evenly over them, the projection of the other attributes getting ``eps_f =
  (1 - label_share) * epsilon`` (sequential composition per user: ``(eps_l, 0)`` then
  ``(eps_f, delta)``). A table without labels projects every attribute with the whole budget
  and gives no classifier.
- **Use:** an analyst trains a linear model on ``(Y, one label's noisy values)`` and
  classifies a record by projecting its one-hot vector (over the projected attributes) with
  the same ``P`` (:class:`DPProRelease`); a task on one label does not see the other labels.
  A projection to ``k`` dimensions cannot be inverted, and no way to estimate categorical
  marginals from ``Y`` is part of this implementation: the release answers no marginal query
  (``max_way = 0``), and a job logs no marginal metric for it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.dummy import DummyClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from dp2pub.data.dataset import Dataset
from dp2pub.learn.utility import Classifier
from dp2pub.mechanisms.accounting import REPLACE_ONE, Spend, fit_shares, two_shares
from dp2pub.mechanisms.dppro import (
    dppro_sigma,
    one_hot_sensitivity,
    project_codes,
    projection_matrix,
    release_projection,
)
from dp2pub.mechanisms.grr import GRR
from dp2pub.publish.base import Outcome, Publisher, parts_total, working_bytes
from dp2pub.publish.release import Release
from dp2pub.validation import ConfigError, check_epsilon, check_int, check_list, check_probability, check_text

#: The models a projected release trains (linear models on real vectors); ``nb`` takes
#: categorical features and gets none.
LINEAR_MODELS = ("svm", "logreg")


def linear_model(model: str, random_state: int) -> ClassifierMixin:
    """The scikit-learn estimator of ``model`` on real features, with the settings of
    :mod:`dp2pub.learn.models` (``LinearSVC()``, ``LogisticRegression(max_iter=2000)``)."""
    if model == "svm":
        return LinearSVC(random_state=random_state)
    return LogisticRegression(max_iter=2000, random_state=random_state)


@dataclass(frozen=True)
class Projected:
    """A classifier of projected vectors that predicts from original codes: the record's
    features at positions ``keep`` are one-hot encoded over ``sizes`` and multiplied by
    ``projection`` first."""

    model: Classifier
    projection: np.ndarray
    sizes: tuple[int, ...]
    keep: tuple[int, ...]

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.model.predict(project_codes(x[:, list(self.keep)], self.sizes, self.projection))


@dataclass(frozen=True)
class DPProRelease(Release):
    """DPPro's release: the public projection, the noisy projected features of every record
    and the records' label attributes by randomized response.

    Attributes:
        projection: ``D x k``, ``D`` the one-hot dimension of the projected attributes.
        released: ``n x k``, the noisy projected records.
        labels: column of a label attribute in the original table -> its randomized codes.
        features: the columns of the projected attributes (every one that is not a label).
        sizes: their domain sizes.
    """

    projection: np.ndarray
    released: np.ndarray
    labels: Mapping[int, np.ndarray]
    features: tuple[int, ...]
    sizes: tuple[int, ...]
    max_way: int | None = 0

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        raise ValueError("dppro releases projected vectors: it answers no marginal query (max_way 0)")

    def classifier(self, model: str, original: Dataset, random_state: int) -> Classifier | None:
        """``svm`` (LinearSVC) or ``logreg`` trained on the projected vectors and the randomized
        values of ``original``'s target, predicting from ``original``'s feature codes (those
        that were projected) projected with the same matrix; None for other models or a target
        whose values were not released."""
        if model not in LINEAR_MODELS or original.target is None or original.target_column not in self.labels:
            return None
        target = original.target_column
        sizes = tuple(int(original.domain.sizes[j]) for j in self.features)
        if sizes != self.sizes:
            raise ValueError(f"the release projects features of sizes {self.sizes}, not {sizes}")
        labels = self.labels[target]
        if np.unique(labels).size < 2:
            fitted: Classifier = DummyClassifier(strategy="most_frequent").fit(self.released, labels)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                fitted = linear_model(model, random_state).fit(self.released, labels)
        others = [j for j in range(original.d) if j != target]  # the columns of x in predict
        return Projected(fitted, self.projection, self.sizes, tuple(others.index(j) for j in self.features))


@dataclass(frozen=True, kw_only=True)
class DPProPublisher(Publisher):
    """``mechanism=dppro``: DPPro, random projection with Gaussian noise (central DP).

    A trusted curator one-hot encodes every record's features, projects them with a public
    random ``D x k`` matrix of ``N(0, 1/k)`` entries and adds Gaussian noise of scale
    :func:`~dp2pub.mechanisms.dppro.dppro_sigma` at ``(eps_f, delta)`` [1]_. The label
    attributes are released by generalized randomized response at ``eps_l = label_share *
    epsilon`` instead (a label cannot be read back from a projection); the projection gets
    ``eps_f = (1 - label_share) * epsilon``. An analyst trains a linear model on the
    projected vectors (:class:`DPProRelease`); the release answers no marginal query
    (``max_way = 0``). DPPro is a central-DP baseline of the DP2-Pub paper [2]_; the module
    docstring lists what this implementation chose where the papers are silent.

    Parameters
    ----------
    k : int, optional
        The projected dimension, >= 1 (default 64).
    delta : float, optional
        The delta of (epsilon, delta)-DP, in (0, 1) (default 1e-5); below 1/n to mean
        anything.
    label_share : float, optional
        The share of epsilon spent on the labels (randomized response), in (0, 1) (default
        0.5); unused for a table without labels.
    labels : sequence of str, optional
        The attributes released by randomized response for learning tasks, each a name;
        None (default): the table's target, if it has one.

    Raises
    ------
    ConfigError
        For a value out of range or an empty ``labels``.

    References
    ----------
    .. [1] C. Xu, J. Ren, Y. Zhang, Z. Qin, K. Ren, "DPPro: Differentially Private
       High-Dimensional Data Release via Random Projection", IEEE TIFS 12(12), 2017.
    .. [2] H. Jiang, H. Yu, X. Cheng, J. Pei, R. Pless, J. Yu, "DP2-Pub: Differentially
       Private High-Dimensional Data Publication with Invariant Post Randomization", IEEE
       TKDE 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import DPProPublisher, load_car
    >>> car = load_car()
    >>> outcome = DPProPublisher(k=16).publish(car, epsilon=2.0, rng=np.random.default_rng(0))
    >>> outcome.release.released.shape, outcome.release.max_way
    ((1728, 16), 0)
    >>> [(item.phase, item.epsilon) for item in outcome.ledger]
    [('project', 1.0), ('label', 1.0)]
    >>> round(outcome.extra_metrics["sigma"], 2)
    35.82
    >>> model = outcome.release.classifier("logreg", car, random_state=0)
    >>> round(float(np.mean(model.predict(car.codes) == car.column("class"))), 3)
    0.7
    """

    name: ClassVar[str] = "dppro"
    k: int = 64
    delta: float = 1e-5
    label_share: float = 0.5
    labels: Sequence[str] | None = None

    def __post_init__(self) -> None:
        check_int(self.k, "k", 1)
        check_probability(self.delta, "delta")
        check_probability(self.label_share, "label_share")
        if self.labels is not None:
            hint = "a non-empty list of attribute names, or null for the table's target"
            names = check_list(self.labels, "labels", hint)
            if not names:
                raise ConfigError("labels", self.labels, hint)
            object.__setattr__(self, "labels", tuple(check_text(n, "labels", hint) for n in names))

    def label_columns(self, data: Dataset) -> list[int]:
        """The columns released by randomized response: ``labels``, else the target, if any."""
        if self.labels is None:
            return [data.target_column] if data.target is not None else []
        names = list(data.domain.names)
        unknown = [name for name in self.labels if name not in names]
        if unknown:
            raise ConfigError("mechanism.labels", list(self.labels), f"attributes of {data.name}: {', '.join(names)}")
        return sorted({names.index(name) for name in self.labels})

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """The sum of :meth:`memory_parts`."""
        return parts_total(self.memory_parts(n, sizes))

    def memory_parts(self, n: int, sizes: Sequence[int] | np.ndarray) -> dict[str, int]:
        """The table's working memory; and the part of ``k``: the projection (``D x k``
        float64), the release (``n x k``), one more ``n x k`` array while it is made (the
        gathered rows, then the noise) and the copy a classifier makes of it (liblinear: 16
        bytes an entry)."""
        return {"": working_bytes(n, sizes), "k": 8 * self.k * (int(np.sum(sizes)) + 4 * int(n))}

    @property
    def max_way(self) -> int:
        """Projected vectors answer no marginal query."""
        return 0

    def answer_bytes(self, n: int, sizes: Sequence[int] | np.ndarray, way: int) -> int:
        """None: the release answers no marginal query (``max_way`` 0)."""
        return 0

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """Project ``data``'s features with Gaussian noise and its labels by randomized response.

        Parameters
        ----------
        data : Dataset
            The table to publish.
        epsilon : float
            The central budget, shared by the labels and the projection.
        rng : numpy.random.Generator
            The source of the projection, the noise and the responses.

        Returns
        -------
        Outcome
            A :class:`DPProRelease` (classifiers, no marginals), its ledger and the noise
            scale ``sigma`` and ``delta`` as further metrics.
        """
        epsilon = check_epsilon(epsilon)
        label_columns = self.label_columns(data)
        features = [j for j in range(data.d) if j not in label_columns]
        if not features:
            raise ConfigError("dataset.d", data.d, "at least one attribute besides the labels")
        if not label_columns:
            eps_labels, eps_features = 0.0, epsilon
        else:
            eps_labels, eps_features = two_shares(epsilon, self.label_share)
        sizes = tuple(int(data.domain.sizes[j]) for j in features)
        sensitivity = one_hot_sensitivity(len(features))
        sigma = dppro_sigma(eps_features, self.delta, self.k, sensitivity)
        start = time.perf_counter()
        projection = projection_matrix(sum(sizes), self.k, rng)
        released = release_projection(data.codes[:, features], sizes, projection, sigma, rng)
        projected = time.perf_counter()
        ledger = [Spend("project", "(Gaussian, every feature)", eps_features, neighbours=REPLACE_ONE)]
        timings = {"project": projected - start}
        labels = {}
        # each label at an equal part of eps_labels, fitted so that the ledger's sum is <= epsilon
        parts = len(label_columns)
        shares = fit_shares([eps_labels / parts] * parts, epsilon, spent=[eps_features]) if parts else []
        for column, share in zip(label_columns, shares):
            labels[column] = GRR(epsilon=share, k=int(data.domain.sizes[column])).perturb(data.codes[:, column], rng)
            ledger.append(Spend("label", data.domain.names[column], share, neighbours=REPLACE_ONE))
        if label_columns:
            timings["label"] = time.perf_counter() - projected
        settings = {
            "k": self.k,
            "delta": self.delta,
            "label_share": self.label_share if label_columns else None,
            "labels": [data.domain.names[j] for j in label_columns],
            "sensitivity": sensitivity,
            "sigma": sigma,
            "one_hot_dimension": sum(sizes),
            "model": "central DP",
        }
        return Outcome(
            DPProRelease(projection, released, labels, tuple(features), sizes),
            ledger,
            timings,
            extra_metrics={"delta": self.delta, "sigma": sigma},
            artifacts={"settings": settings},
        )
