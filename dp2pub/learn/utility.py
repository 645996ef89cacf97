"""Classifier utility of a published table (DESIGN section 4, ``accuracy_<model>``).

Each model is trained on the published training part and tested on the original held-out
test part, which no mechanism touched; ``accuracy_<model>_baseline`` is the same model
trained on the original training part. The target is predicted from every other attribute.

Generalized tables (k-anonymity) publish other labels for the quasi-identifiers. A test
record's original value ``v`` is then encoded as the first published generalized value that
covers ``v`` (for Mondrian, the first published range containing ``v`` when ranges
overlap); a value that no published value covers (all its records suppressed) becomes one
extra ``unknown`` category.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.exceptions import ConvergenceWarning

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


def _accuracy(model, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray) -> float:
    """Test accuracy of ``model`` fitted on the training arrays (a single training class is
    predicted for everyone: scikit-learn refuses to fit one class)."""
    classes = np.unique(y_train)
    if classes.size < 2:
        return float(np.mean(y_test == classes[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x_train, y_train)
    return float(np.mean(model.predict(x_test) == y_test))


def classifier_metrics(
    train_published: Dataset,
    train_original: Dataset,
    test: Dataset,
    models: Sequence[str],
    rng: np.random.Generator,
    covers: Sequence[np.ndarray] | None = None,
) -> dict[str, float]:
    """``accuracy_<model>`` and ``accuracy_<model>_baseline`` for each model name.

    Args:
        train_published: the published training part (may be on generalized labels).
        train_original: the original training part (the baseline's training data).
        test: the original held-out test part.
        models: names in :data:`dp2pub.learn.models.MODELS`.
        rng: draws one integer ``random_state`` per model (shared by both fits).
        covers: for generalized tables, per attribute the (published x original) cover
            matrix of :class:`dp2pub.publish.kanonymity.GeneralizedRelease`.

    Returns an empty dict when the target itself was published on other labels (its
    predictions could not be compared with the original test labels).
    """
    target = train_original.domain.index(train_original.target)
    if tuple(train_published.domain.labels[target]) != tuple(train_original.domain.labels[target]):
        return {}
    features = [j for j in range(train_original.d) if j != target]
    maps = recoders(train_published.domain, train_original.domain, covers)
    # a generalized attribute gets one more category: "unknown" (see :func:`recoders`)
    generalized = [tuple(train_published.domain.labels[j]) != tuple(train_original.domain.labels[j]) for j in features]
    pub_sizes = [int(train_published.domain.sizes[j]) + int(g) for j, g in zip(features, generalized)]
    orig_sizes = [int(train_original.domain.sizes[j]) for j in features]
    x_pub = train_published.codes[:, features].astype(np.int64)
    y_pub = train_published.codes[:, target].astype(np.int64)
    x_orig = train_original.codes[:, features].astype(np.int64)
    y_orig = train_original.codes[:, target].astype(np.int64)
    x_test = test.codes[:, features].astype(np.int64)
    y_test = test.codes[:, target].astype(np.int64)
    x_test_pub = np.column_stack([maps[j][x_test[:, i]] for i, j in enumerate(features)])
    metrics: dict[str, float] = {}
    for name in models:
        state = random_state(rng)
        published_model = build_model(name, pub_sizes, state)
        baseline_model = build_model(name, orig_sizes, state)
        metrics[f"accuracy_{name}"] = _accuracy(published_model, x_pub, y_pub, x_test_pub, y_test)
        metrics[f"accuracy_{name}_baseline"] = _accuracy(baseline_model, x_orig, y_orig, x_test, y_test)
    return metrics
