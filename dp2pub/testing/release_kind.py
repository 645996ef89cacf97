"""The release check: an outcome and its release are what their types promise
(:mod:`dp2pub.publish.base`, :mod:`dp2pub.publish.release`, docs/explanation/pipeline.md)."""

from __future__ import annotations

import json
import math
from numbers import Real

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.data.marginals import subset_cells
from dp2pub.metrics.evaluate import are_distributions
from dp2pub.publish.base import Outcome
from dp2pub.publish.release import Release, TableRelease
from dp2pub.testing.answers import predictions, subsets, true_distribution
from dp2pub.testing.cases import PublisherCase
from dp2pub.testing.runs import run, shape
from dp2pub.testing.verdicts import expect

#: How far ``marginals`` may be from ``marginal`` subset by subset (the same values,
#: computed another way).
MARGINALS_RTOL = 1e-9


def check_release(case: PublisherCase) -> None:
    """On one random table with a target: the outcome's parts have their types, and the
    release answers as its kind promises (:func:`check_outcome`, :func:`check_published`,
    :func:`check_marginals`, :func:`check_classifiers`, :func:`check_expected_mse`)."""
    rng = np.random.default_rng(case.seed)
    publisher = case.build()
    data = case.table(rng, case.rows[1])
    outcome = run(publisher, data, case.epsilon, int(rng.integers(2**32)))
    where = f"{case.id} on a table with {shape(data)}, epsilon={case.epsilon!r}"
    check_outcome(outcome, where)
    release = outcome.release
    check_published(release, data, where)
    check_marginals(release, data, case.distributions or counts_rows(release), where)
    check_classifiers(release, data, where)
    check_expected_mse(release, data, where)


def counts_rows(release: Release) -> bool:
    """Whether ``release`` answers by counting the rows of its table (then its marginals are
    distributions): a :class:`TableRelease` that keeps its ``marginal``."""
    return isinstance(release, TableRelease) and type(release).marginal is TableRelease.marginal


def numbers(values: dict, finite: bool = True) -> bool:
    """Whether ``values`` maps strings to real numbers (finite ones if ``finite``)."""
    return all(
        isinstance(key, str) and isinstance(value, Real) and not isinstance(value, bool)
        for key, value in values.items()
    ) and (not finite or all(math.isfinite(value) for value in values.values()))


def check_outcome(outcome: Outcome, where: str) -> None:
    """A :class:`Release`; timings in seconds >= 0 by phase; extra metrics and diagnostics
    numbers by name; JSON-serializable artifacts; ``max_way`` None or an integer >= 0."""
    expect(isinstance(outcome.release, Release), f"{where}: the release is a {type(outcome.release).__name__}")
    timings = outcome.timings
    expect(numbers(timings) and all(t >= 0 for t in timings.values()), f"{where}: timings {timings}")
    expect(numbers(outcome.extra_metrics, finite=False), f"{where}: extra metrics {outcome.extra_metrics}")
    try:
        json.dumps(outcome.artifacts)
    except (TypeError, ValueError) as error:
        expect(False, f"{where}: artifacts are not JSON-serializable ({error})")
    max_way = outcome.release.max_way
    expect(
        max_way is None or (isinstance(max_way, int) and not isinstance(max_way, bool) and max_way >= 0),
        f"{where}: max_way={max_way!r}, not None or an integer >= 0",
    )
    expect(
        numbers(outcome.release.diagnostics(), finite=False), f"{where}: diagnostics {outcome.release.diagnostics()}"
    )


def check_marginals(release: Release, data: Dataset, distributions: bool, where: str) -> None:
    """Unless ``max_way`` is 0: every marginal up to 3 attributes (as ``max_way`` allows) is
    a finite array shaped by the domain sizes; ``marginals`` answers the same values in one
    flat array; each is a distribution (no negative entry, total within
    :data:`~dp2pub.metrics.evaluate.SUM_TOLERANCE` of 1) when ``distributions``."""
    if release.max_way == 0:
        return
    asked = subsets(release, data)
    sizes = data.domain.sizes
    singles = []
    for columns in asked:
        answer = np.asarray(release.marginal(columns), dtype=np.float64)
        expected = tuple(int(sizes[j]) for j in columns)
        expect(answer.shape == expected, f"{where}: marginal{columns} has shape {answer.shape}, not {expected}")
        expect(np.all(np.isfinite(answer)), f"{where}: marginal{columns} is not finite")
        singles.append(answer.ravel())
    together = np.asarray(release.marginals(asked), dtype=np.float64)
    expected_flat = np.concatenate(singles)
    expect(
        together.shape == expected_flat.shape and np.allclose(together, expected_flat, rtol=MARGINALS_RTOL, atol=1e-12),
        f"{where}: marginals({asked}) differs from marginal() subset by subset",
    )
    expect(
        not distributions or are_distributions(together, subset_cells(sizes, asked)),
        f"{where}: a marginal is not a distribution (a negative entry or a total other than 1)",
    )


def check_published(release: Release, data: Dataset, where: str) -> None:
    """A published table has the input's attributes and target; on the input's domain, or,
    for a generalized :class:`TableRelease` (``covers``), one cover per attribute shaped
    (published size, original size) whose rows are distributions."""
    table = release.published
    if table is None:
        return
    expect(isinstance(table, Dataset), f"{where}: published is a {type(table).__name__}, not a Dataset")
    expect(table.domain.names == data.domain.names, f"{where}: published attributes {table.domain.names}")
    expect(table.target == data.target, f"{where}: published target {table.target!r}, not {data.target!r}")
    covers = release.covers if isinstance(release, TableRelease) else None
    if covers is None:
        same = np.array_equal(table.domain.sizes, data.domain.sizes)
        expect(same, f"{where}: published domain sizes {table.domain.sizes.tolist()}, not the input's")
        return
    expect(len(covers) == data.d, f"{where}: {len(covers)} covers for {data.d} attributes")
    for j, cover in enumerate(covers):
        cover = np.asarray(cover, dtype=np.float64)
        wanted = (int(table.domain.sizes[j]), int(data.domain.sizes[j]))
        expect(cover.shape == wanted, f"{where}: covers[{j}] has shape {cover.shape}, not {wanted}")
        rows = np.all(cover >= 0) and np.allclose(cover.sum(axis=1), 1.0)
        expect(rows, f"{where}: a row of covers[{j}] is not a distribution")


def check_classifiers(release: Release, data: Dataset, where: str) -> None:
    """Every classifier the release gives predicts one class of the target per record; the
    release gives one for each model it says it is (``models``)."""
    found = predictions(release, data)
    classes = int(data.domain.sizes[data.target_column]) if data.target is not None else 0
    for model, predicted in found.items():
        good = predicted.shape == (data.n,) and np.all((predicted >= 0) & (predicted < classes))
        expect(good, f"{where}: classifier {model!r} predicts {predicted.shape} values outside 0..{classes - 1}")
    missing = [model for model in release.models if model not in found and data.target is not None]
    expect(not missing, f"{where}: the release is the models {release.models} but gives no classifier {missing}")


def check_expected_mse(release: Release, data: Dataset, where: str) -> None:
    """``expected_mse`` of every attribute is None or a number >= 0 (NaN where no closed form
    exists)."""
    for j in range(data.d):
        value = release.expected_mse(j, true_distribution(data, j))
        good = value is None or (isinstance(value, Real) and not value < 0)
        expect(good, f"{where}: expected_mse({j}) = {value!r}, not None or a number >= 0")
