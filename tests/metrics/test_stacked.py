"""Batched marginals (all subsets counted together) equal the per-subset ones, bit for bit, and
releases that are not plain tables still answer subset by subset."""

import itertools

import numpy as np
import pandas as pd
import pytest

from dp2pub.data import Dataset, Domain
from dp2pub.data.marginals import distinct_rows, marginal_counts, stacked_marginal_counts, subset_cells
from dp2pub.metrics import attribute_subsets, cell_chunks, evaluate_marginals, mse, stacked_tvd, subset_tvds, tvd
from dp2pub.publish import GRRPublisher, OUEPublisher, TableRelease
from dp2pub.publish import release as release_module
from dp2pub.publish.oracle_table import GRRReportsRelease, OracleRelease

#: Mixed domain sizes, with two attributes of a single value.
SIZES = np.array([3, 1, 2, 5, 1, 4, 2, 7])


def random_table(seed: int, n: int, pool: int | None = None, sizes: np.ndarray = SIZES) -> Dataset:
    """``n`` uniform rows, or ``n`` rows drawn from ``pool`` distinct ones (many repeats)."""
    rng = np.random.default_rng(seed)
    rows = np.stack([rng.integers(0, k, size=pool or n) for k in sizes], axis=1)
    if pool is not None:
        rows = rows[rng.integers(0, pool, size=n)]
    return Dataset(rows.astype(np.uint8), Domain.from_sizes(sizes.tolist()))


def one_at_a_time(codes: np.ndarray, sizes: np.ndarray, subsets: list[tuple[int, ...]]) -> np.ndarray:
    return np.concatenate([marginal_counts(codes[:, list(s)], sizes[list(s)]).ravel() for s in subsets])


def subsets_of(way: int, seed: int) -> list[tuple[int, ...]]:
    """All way-subsets, a seeded sample, and sampled subsets with their columns shuffled."""
    d = len(SIZES)
    every = list(itertools.combinations(range(d), way))
    rng = np.random.default_rng(seed)
    shuffled = [tuple(rng.permutation(s).tolist()) for s in attribute_subsets(d, way, 6, rng)]
    return every + attribute_subsets(d, way, 5, rng) + shuffled


@pytest.mark.parametrize("way", [1, 2, 3, 4])
@pytest.mark.parametrize("pool", [None, 25], ids=["distinct", "repeated"])
def test_stacked_counts_equal_one_marginal_at_a_time(way, pool):
    data = random_table(way, 3000 if pool else 400, pool)
    # both counting paths are exercised: every row once, and distinct rows with multiplicities
    assert (distinct_rows(data.codes, SIZES)[1] is None) == (pool is None)
    subsets = subsets_of(way, seed=10 + way)
    expected = one_at_a_time(data.codes, SIZES, subsets)
    for max_keys in (2**23, 100):  # one bincount per prefix, or many blocks of rows
        got = stacked_marginal_counts(data.codes, SIZES, subsets, max_keys=max_keys)
        assert got.dtype == np.float64 and np.array_equal(got, expected)
    assert stacked_marginal_counts(data.codes, SIZES, []).shape == (0,)


def test_distinct_rows_keep_the_multiplicities():
    data = random_table(0, 1000, pool=7)
    rows, weights = distinct_rows(data.codes, SIZES)
    assert weights is not None and len(rows) == len(weights) <= 7 and weights.sum() == 1000
    for row, weight in zip(rows, weights):
        assert (data.codes == row).all(axis=1).sum() == weight


def test_stacked_tvd_is_tvd_bit_for_bit():
    rng = np.random.default_rng(3)
    cells = rng.choice([1, 2, 7, 16, 130, 1000], size=60)
    p, q = rng.random(cells.sum()), rng.random(cells.sum())
    starts = np.cumsum(cells) - cells
    expected = [tvd(p[a : a + c], q[a : a + c]) for a, c in zip(starts, cells)]
    assert stacked_tvd(p, q, cells).tolist() == expected


def test_cell_chunks_are_greedy_runs_under_the_limit():
    rng = np.random.default_rng(5)
    subsets = [(i,) for i in range(200)]
    cells = rng.integers(1, 60, size=200)
    cells[[17, 18, 90]] = 500  # alone larger than the limit: a chunk of their own
    chunks = list(cell_chunks(subsets, cells, max_cells=100))
    assert [s for chunk, _ in chunks for s in chunk] == subsets
    at = 0
    for chunk, sizes in chunks:
        assert sizes.tolist() == cells[at : at + len(chunk)].tolist()
        assert sizes.sum() <= 100 or len(chunk) == 1
        at += len(chunk)
        assert at == 200 or sizes.sum() + cells[at] > 100  # the next subset would not fit
    assert [len(c) for c, _ in chunks if c[0][0] in (17, 18, 90)] == [1, 1, 1]


def reference_evaluation(original, release, rng, ways, max_subsets) -> dict[str, float]:
    """The metrics as evaluate_marginals computed them before batching: one marginal at a time."""
    sizes, n = original.domain.sizes, original.n
    rows = []
    for j in range(original.d):
        counts = marginal_counts(original.codes[:, [j]], sizes[[j]])
        estimate = release.marginal((j,))
        rows.append((tvd(counts / n, estimate), mse(counts / n, estimate), mse(counts, estimate * n)))
    names = ("tvd_1way", "mse_freq", "mse_count")
    metrics = {name: float(column.mean()) for name, column in pd.DataFrame(rows, columns=names).items()}
    for way in sorted(set(ways) - {1}):
        distances = [
            tvd(marginal_counts(original.codes[:, list(c)], sizes[list(c)]) / n, release.marginal(c))
            for c in attribute_subsets(original.d, way, max_subsets, rng)
        ]
        metrics[f"tvd_{way}way"] = float(np.mean(distances))
    return metrics


def generalized(data: Dataset) -> TableRelease:
    """Column 3 (5 values) published as 3 groups {0, 1}, {2, 3}, {4}; the others as they are."""
    cover = np.zeros((3, 5))
    for group, values in enumerate([(0, 1), (2, 3), (4,)]):
        cover[group, list(values)] = 1 / len(values)
    sizes = data.domain.sizes
    covers = tuple(cover if j == 3 else np.eye(k) for j, k in enumerate(sizes))
    codes = data.codes.copy()
    codes[:, 3] = np.array([0, 0, 1, 1, 2])[codes[:, 3]]
    published = Domain.from_sizes([3 if j == 3 else int(k) for j, k in enumerate(sizes)])
    return TableRelease(Dataset(codes, published), covers)


#: Kinds of release: plain tables (one batch), and those answered subset by subset.
KINDS = ["table", "repeated", "generalized", "grr reports", "oue estimates"]


def original_and_release(kind: str, seed: int, n: int = 400, pool: int | None = None) -> tuple[Dataset, object]:
    """An original table and a release of ``kind`` of it (the oracles need domains of 2 or more)."""
    sizes = np.maximum(SIZES, 2) if kind in ("grr reports", "oue estimates") else SIZES
    original = random_table(seed, n, pool, sizes)
    rng = np.random.default_rng(seed + 100)
    release = {
        "table": lambda: TableRelease(random_table(seed + 1, 350, sizes=sizes)),
        "repeated": lambda: TableRelease(random_table(seed + 2, 3000, pool=30, sizes=sizes)),
        "generalized": lambda: generalized(random_table(seed + 3, 300, sizes=sizes)),
        "grr reports": lambda: GRRPublisher(estimator="unbiased").publish(original, 2.0, rng).release,
        "oue estimates": lambda: OUEPublisher(estimator="unbiased").publish(original, 2.0, rng).release,
    }[kind]()
    return original, release


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("max_subsets", [None, 9])
def test_evaluate_marginals_equals_the_per_subset_metrics(kind, max_subsets):
    original, release = original_and_release(kind, seed=1)
    got = evaluate_marginals(original, release, np.random.default_rng(4), (1, 2, 3, 4), max_subsets)
    expected = reference_evaluation(original, release, np.random.default_rng(4), (1, 2, 3, 4), max_subsets)
    assert {k: v for k, v in got.metrics.items() if k != "mse_theory"} == expected


@pytest.mark.parametrize("kind", KINDS)
def test_subset_tvds_in_small_runs_equal_one_subset_at_a_time(kind):
    original, release = original_and_release(kind, seed=2, n=500, pool=40)
    sizes = original.domain.sizes
    subsets = subsets_of(3, seed=6)
    expected = [
        tvd(marginal_counts(original.codes[:, list(c)], sizes[list(c)]) / original.n, release.marginal(c))
        for c in subsets
    ]
    assert len(list(cell_chunks(subsets, subset_cells(sizes, subsets), 50))) > 10
    assert subset_tvds(original, subsets, release.marginals, max_cells=50).tolist() == expected


def test_only_a_plain_table_is_counted_in_one_batch(monkeypatch):
    subsets = subsets_of(2, seed=7)
    answers = {kind: original_and_release(kind, seed=3)[1] for kind in KINDS}
    calls = []
    counted = stacked_marginal_counts
    monkeypatch.setattr(release_module, "stacked_marginal_counts", lambda *a, **k: calls.append(1) or counted(*a, **k))
    for kind, release in answers.items():
        per_subset = np.concatenate([np.ravel(release.marginal(c)) for c in subsets])
        before = len(calls)
        assert np.array_equal(release.marginals(subsets), per_subset), kind
        assert len(calls) - before == (kind in ("table", "repeated")), kind
    assert isinstance(answers["grr reports"], GRRReportsRelease) and isinstance(answers["oue estimates"], OracleRelease)
    # a batch of the reports' own counts would be wrong: their marginals are unbiased through the channel
    reports = answers["grr reports"].table
    plain = stacked_marginal_counts(reports.codes, reports.domain.sizes, subsets) / reports.n
    assert not np.allclose(answers["grr reports"].marginals(subsets), plain)
