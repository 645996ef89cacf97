"""The classifiers of the utility metrics ``accuracy_<model>``, by name.

Every model takes integer-coded categorical features whose attribute ``j`` has codes
``0 .. sizes[j]-1`` and is a scikit-learn estimator (a pipeline where features are one-hot
encoded), so a feature value unseen in training never breaks prediction.

- ``logreg``: one-hot features, ``LogisticRegression`` (lbfgs, ``max_iter=2000``).
- ``nb``: ``CategoricalNB`` with ``min_categories = sizes`` (Laplace smoothing ``alpha``).
- ``svm``: one-hot features, ``LinearSVC``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from dp2pub.validation import ConfigError

if TYPE_CHECKING:  # scikit-learn is imported when a model is built (tests/test_layers.py, DEFERRED)
    from sklearn.base import ClassifierMixin
    from sklearn.naive_bayes import CategoricalNB
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder


def one_hot(sizes: Sequence[int]) -> OneHotEncoder:
    """One-hot encoding over the whole declared domain of every feature."""
    from sklearn.preprocessing import OneHotEncoder

    return OneHotEncoder(categories=[np.arange(int(k)) for k in sizes], handle_unknown="ignore")


def logreg(sizes: Sequence[int], random_state: int, alpha: float = 1.0) -> Pipeline:
    """Multinomial logistic regression on one-hot features."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(one_hot(sizes), LogisticRegression(max_iter=2000, random_state=random_state))


def naive_bayes(sizes: Sequence[int], random_state: int, alpha: float = 1.0) -> CategoricalNB:
    """Categorical naive Bayes with Laplace smoothing ``alpha`` over the declared domains."""
    from sklearn.naive_bayes import CategoricalNB

    return CategoricalNB(alpha=alpha, min_categories=np.asarray(sizes, dtype=np.int64))


def svm(sizes: Sequence[int], random_state: int, alpha: float = 1.0) -> Pipeline:
    """Linear support vector machine on one-hot features."""
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    return make_pipeline(one_hot(sizes), LinearSVC(random_state=random_state))


#: ``metrics.models`` entries -> builders ``(feature sizes, random_state, alpha) -> estimator``.
MODELS: dict[str, Callable[..., ClassifierMixin]] = {"logreg": logreg, "nb": naive_bayes, "svm": svm}


def build_model(name: str, sizes: Sequence[int], random_state: int, alpha: float = 1.0) -> ClassifierMixin:
    """The unfitted model ``name``; ConfigError naming ``metrics.models`` if it is unknown."""
    if name not in MODELS:
        raise ConfigError("metrics.models", name, "one of " + ", ".join(sorted(MODELS)))
    return MODELS[name](sizes, random_state, alpha)
