"""What a release answers, gathered for comparison: its published table, its marginals, its
closed-form errors, its classifiers' predictions, and the state of a dataclass release."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.learn.utility import split_xy
from dp2pub.publish.base import Outcome
from dp2pub.publish.release import Release

#: The models the metrics may ask a release for (``metrics.models``).
MODELS = ("logreg", "nb", "svm")
#: Most subsets of each size whose marginals are asked.
MAX_SUBSETS = 10


def subsets(release: Release, data: Dataset) -> list[tuple[int, ...]]:
    """The attribute subsets asked of ``release``: every attribute, then up to
    :data:`MAX_SUBSETS` pairs and triples where ``max_way`` allows them."""
    top = min(3, data.d) if release.max_way is None else min(release.max_way, 3, data.d)
    return [
        c
        for way in range(1, top + 1)
        for c in itertools.islice(itertools.combinations(range(data.d), way), MAX_SUBSETS)
    ]


def predictions(release: Release, data: Dataset) -> dict[str, np.ndarray]:
    """Each classifier the release gives for ``data``'s target (of :data:`MODELS` and its own
    ``models``), by its predictions on ``data``'s features (``random_state`` 0)."""
    if data.target is None:
        return {}
    features, _ = split_xy(data)
    found = {}
    for model in dict.fromkeys([*MODELS, *release.models]):
        fitted = release.classifier(model, data, 0)
        if fitted is not None:
            found[model] = np.asarray(fitted.predict(features))
    return found


def state(value: Any, path: str = "release") -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` of a release's dataclass fields (those compared), recursively through
    dataclasses, mappings, tuples and lists: arrays and plain values as they are, any other
    object by its type's name only."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            if item.compare:
                yield from state(getattr(value, item.name), f"{path}.{item.name}")
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield from state(inner, f"{path}[{key!r}]")
    elif isinstance(value, (tuple, list)):
        for index, inner in enumerate(value):
            yield from state(inner, f"{path}[{index}]")
    elif isinstance(value, (np.ndarray, np.generic, int, float, str, bytes, bool, type(None))):
        yield path, value
    else:
        yield path, type(value).__qualname__


def answers(outcome: Outcome, data: Dataset) -> dict[str, Any]:
    """Everything comparable that ``outcome`` says about ``data``, by name (timings apart)."""
    release = outcome.release
    found: dict[str, Any] = {"ledger": [dataclasses.astuple(item) for item in outcome.ledger]}
    found["extra_metrics"] = sorted(outcome.extra_metrics.items())
    if release.published is not None:
        found["published.codes"] = release.published.codes
        found["published.labels"] = release.published.domain.labels
    if release.max_way != 0:
        found["marginals"] = release.marginals(subsets(release, data))
    found["expected_mse"] = [release.expected_mse(j, true_distribution(data, j)) for j in range(data.d)]
    found.update({f"predictions[{model}]": value for model, value in predictions(release, data).items()})
    found["diagnostics"] = sorted(release.diagnostics().items())
    found.update(state(release))
    return found


def true_distribution(data: Dataset, column: int) -> np.ndarray:
    """The frequencies of ``column``'s values in ``data``."""
    return data.one_way_counts(column) / data.n


def same(a: Any, b: Any) -> bool:
    """Whether two answers are identical: arrays and sequences elementwise, NaN equal to NaN."""
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        a, b = np.asarray(a), np.asarray(b)
        floats = a.dtype.kind in "fc" and b.dtype.kind in "fc"
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=floats))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN and NaN
    return type(a) is type(b) and bool(a == b)


def differences(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str]:
    """The names whose answers differ (or exist in one only)."""
    return [
        name
        for name in dict.fromkeys([*first, *second])
        if name not in first or name not in second or not same(first[name], second[name])
    ]
