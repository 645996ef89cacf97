"""Classifier utility of a release (``accuracy_<model>``, docs/explanation/metric-contract.md).

One code path for every release that can give a classifier: a model trained on a published
table, or a model the mechanism learned itself (LDP naive Bayes). Each is tested on the
original held-out test part, which no mechanism touched; ``accuracy_<model>_baseline`` is
the same model trained on the original training part. The target is predicted from every
other attribute.

Generalized tables (k-anonymity) publish other labels for the quasi-identifiers. A test
record's original value ``v`` is then encoded as the first published generalized value that
covers ``v`` (for Mondrian, the first published range containing ``v`` when ranges
overlap); a value that no published value covers (all its records suppressed) becomes one
extra ``unknown`` category.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.data.domain import Domain
from dp2pub.learn.models import build_model
from dp2pub.learn.split import random_state


def recoders(published: Domain, original: Domain, covers: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """Per attribute, the array mapping original codes to published codes.

    Attributes published on their original labels map to themselves. For a generalized one,
    ``covers[j][g, v] > 0`` says that published value ``g`` covers original value ``v``;
    ``v`` maps to the first such ``g``, or to ``published size`` (unknown) if there is none.
    """
    maps = []
    for j, (pub, orig) in enumerate(zip(published.labels, original.labels)):
        if tuple(pub) == tuple(orig):
            maps.append(np.arange(len(orig), dtype=np.int64))
            continue
        if covers is None:
            raise ValueError(f"attribute {original.names[j]!r} is published on other labels and no cover is given")
        member = np.asarray(covers[j]) > 0  # (published, original)
        first = np.argmax(member, axis=0)
        maps.append(np.where(member.any(axis=0), first, len(pub)).astype(np.int64))
    return maps


class Classifier(Protocol):
    """A fitted classifier of integer-coded features (scikit-learn's ``predict``)."""

    def predict(self, x: np.ndarray) -> np.ndarray: ...


class Learnable(Protocol):
    """What a release offers the utility metrics (:class:`dp2pub.publish.release.Release`)."""

    def classifier(self, model: str, original: Dataset, random_state: int) -> Classifier | None:
        """Model ``model`` learned from the release, predicting ``original.target`` from
        the original codes of the other attributes; None if the release cannot give one."""

    def baseline(self, model: str, original: Dataset, random_state: int) -> Classifier:
        """The same model with the same settings, learned from ``original`` without privacy."""


@dataclass(frozen=True)
class Recoded:
    """A classifier fitted on published codes, predicting from original codes: each feature
    is first mapped by ``maps[i]`` (:func:`recoders`)."""

    model: Classifier
    maps: tuple[np.ndarray, ...]

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.model.predict(np.column_stack([m[x[:, i]] for i, m in enumerate(self.maps)]))


def split_xy(data: Dataset, target: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``data``'s features (every attribute but the target) and target, as int64 codes
    (``target``: a column position, default ``data``'s own target)."""
    target = data.target_column if target is None else target
    features = [j for j in range(data.d) if j != target]
    return data.codes[:, features].astype(np.int64), data.codes[:, target].astype(np.int64)


def fit_model(
    model: str, x: np.ndarray, y: np.ndarray, sizes: Sequence[int], random_state: int, alpha: float = 1.0
) -> Classifier:
    """The model ``model`` fitted on ``(x, y)`` (features of domain ``sizes``); a single
    training class is predicted for everyone (scikit-learn refuses to fit one class)."""
    from sklearn.dummy import DummyClassifier  # deferred (tests/test_layers.py, DEFERRED)
    from sklearn.exceptions import ConvergenceWarning

    if np.unique(y).size < 2:
        return DummyClassifier(strategy="most_frequent").fit(x, y)
    estimator = build_model(model, sizes, random_state, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(x, y)


def baseline_classifier(model: str, original: Dataset, random_state: int, alpha: float = 1.0) -> Classifier:
    """Model ``model`` fitted on the original table itself (no privacy): the baseline of
    ``accuracy_<model>``."""
    x, y = split_xy(original)
    target = original.target_column
    sizes = [int(k) for j, k in enumerate(original.domain.sizes) if j != target]
    return fit_model(model, x, y, sizes, random_state, alpha)


def table_classifier(
    model: str,
    table: Dataset,
    original: Dataset,
    random_state: int,
    covers: Sequence[np.ndarray] | None = None,
    alpha: float = 1.0,
) -> Classifier | None:
    """Model ``model`` trained on the published ``table`` (maybe on generalized labels, then
    ``covers`` says which original values each published value covers), predicting from
    original codes; None when the target itself was published on other labels (its
    predictions could not be compared with the original test labels)."""
    target = original.target_column
    if tuple(table.domain.labels[target]) != tuple(original.domain.labels[target]):
        return None
    features = [j for j in range(original.d) if j != target]
    maps = recoders(table.domain, original.domain, covers)
    # a generalized attribute gets one more category: "unknown" (see :func:`recoders`)
    generalized = [tuple(table.domain.labels[j]) != tuple(original.domain.labels[j]) for j in features]
    sizes = [int(table.domain.sizes[j]) + int(g) for j, g in zip(features, generalized)]
    x, y = split_xy(table, target)
    return Recoded(fit_model(model, x, y, sizes, random_state, alpha), tuple(maps[j] for j in features))


def classifier_metrics(
    release: Learnable, train: Dataset, test: Dataset, models: Sequence[str], rng: np.random.Generator
) -> dict[str, float]:
    """``accuracy_<model>`` (the release's classifier) and ``accuracy_<model>_baseline`` (the
    same model learned from the original ``train``), both on the original held-out ``test``,
    for each model the release can give (``rng`` draws one ``random_state`` per model,
    shared by both fits), and with them ``accuracy_majority`` (:func:`majority_rate`), the
    rate a classifier must beat to have learned anything."""
    x_test, y_test = split_xy(test)
    metrics: dict[str, float] = {}
    for name in models:
        state = random_state(rng)
        learned = release.classifier(name, train, state)
        if learned is None:
            continue
        metrics[f"accuracy_{name}"] = float(np.mean(learned.predict(x_test) == y_test))
        baseline = release.baseline(name, train, state)
        metrics[f"accuracy_{name}_baseline"] = float(np.mean(baseline.predict(x_test) == y_test))
    if metrics:
        metrics["accuracy_majority"] = majority_rate(train, test)
    return metrics


def majority_rate(train: Dataset, test: Dataset) -> float:
    """The accuracy on ``test`` of always predicting ``train``'s most frequent target value."""
    y_train, y_test = train.column(train.target_column), test.column(test.target_column)
    majority = int(np.argmax(np.bincount(y_train.astype(np.int64))))
    return float(np.mean(y_test == majority))


def task_metrics(
    release: Learnable,
    train: Dataset,
    test: Dataset,
    tasks: Sequence[str],
    models: Sequence[str],
    rng: np.random.Generator,
) -> dict[str, float]:
    """Per task (a target attribute) and model: ``misclass_<model>.<task>`` (the release's
    classifier), ``misclass_<model>_baseline.<task>`` (the same model on the original
    ``train``), and ``misclass_majority.<task>`` (always the majority class of ``train``),
    all misclassification rates on the original held-out ``test``."""
    metrics: dict[str, float] = {}
    for task in tasks:
        train_t, test_t = train.with_target(task), test.with_target(task)
        for name, accuracy in classifier_metrics(release, train_t, test_t, models, rng).items():
            model = name.removeprefix("accuracy_")
            metrics[f"misclass_{model}.{task}"] = 1.0 - accuracy
        metrics[f"misclass_majority.{task}"] = 1.0 - majority_rate(train_t, test_t)
    return metrics


def below_majority(metrics: Mapping[str, float]) -> list[str]:
    """One line for each release classifier that does worse than always predicting the
    majority class: ``accuracy_<model>`` below ``accuracy_majority``, or
    ``misclass_<model>.<task>`` above ``misclass_majority.<task>`` (baselines on the
    original data are not the release's, and are left out)."""
    lines = []
    for name, value in metrics.items():
        prefix, _, task = name.partition(".")
        kind, _, model = prefix.partition("_")
        if kind not in ("accuracy", "misclass") or model in ("majority", "") or model.endswith("_baseline"):
            continue
        majority = f"{kind}_majority" + (f".{task}" if task else "")
        if majority not in metrics:
            continue
        worse = value < metrics[majority] if kind == "accuracy" else value > metrics[majority]
        if worse:
            side = "below" if kind == "accuracy" else "above"
            lines.append(
                f"{name} {value:.4g} is {side} {majority} {metrics[majority]:.4g} "
                "(always predicting the training part's majority class)"
            )
    return lines
