"""PrivSyn's GUM: records whose marginals match the targets."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from dp2pub.data.marginals import joint_codes, marginal_counts
from dp2pub.synthesis.gum import (
    _balance,
    _cell_codes,
    _counting_sort,
    _counts,
    _sample_spans,
    gum,
    initial_records,
    rounded_counts,
    update,
)
from tests.synthesis.test_consistency import chain, pair_tables

#: The module (``dp2pub.synthesis.gum`` as an attribute of its package is the function ``gum``).
gum_module = importlib.import_module("dp2pub.synthesis.gum")


def tvd(records: np.ndarray, key: tuple[int, int], target: np.ndarray) -> float:
    counts = marginal_counts(records[:, list(key)], target.shape)
    return 0.5 * float(np.abs(counts / len(records) - target).sum())


def sampling_tvd(target: np.ndarray, n: int) -> float:
    """The expected TVD between ``target`` and the empirical marginal of ``n`` draws from it
    (normal approximation of each cell: E|p_hat - p| = sqrt(2 p (1 - p) / (pi n)))."""
    return 0.5 * float(np.sqrt(2 * target * (1 - target) / (math.pi * n)).sum())


def test_rounded_counts_sum_to_the_total_and_round_each_cell_up_or_down():
    rng = np.random.default_rng(0)
    freq = rng.dirichlet(np.ones(7))
    counts = rounded_counts(freq, 1_001, rng)
    assert counts.sum() == 1_001
    assert np.all(np.abs(counts - freq * 1_001) < 1)


def test_initial_records_have_the_one_way_marginals_exactly_up_to_rounding():
    rng = np.random.default_rng(1)
    one_way = [rng.dirichlet(np.ones(k)) for k in (2, 5, 3)]
    records = initial_records(one_way, 999, rng)
    for j, freq in enumerate(one_way):
        assert np.all(np.abs(np.bincount(records[:, j], minlength=freq.size) - 999 * freq) < 1)


def test_gum_matches_every_pair_of_a_tree_within_sampling_error_and_the_start_does_not():
    rng = np.random.default_rng(2)
    sizes, n = (2, 3, 3, 2), 12_000
    targets = pair_tables(chain(200_000, sizes, rng), sizes)  # nearly the chain's exact marginals
    one_way = [targets[(0, 1)].sum(axis=1), targets[(0, 1)].sum(axis=0), targets[(1, 2)].sum(axis=0)]
    one_way.append(targets[(2, 3)].sum(axis=0))
    records = gum(targets, one_way, n, rng, iterations=50)
    start = gum(targets, one_way, n, np.random.default_rng(2), iterations=0)  # independent attributes
    for key, target in targets.items():
        bound = 3 * sampling_tvd(target, n)
        assert tvd(records, key, target) < bound, (key, tvd(records, key, target), bound)
    assert max(tvd(start, key, target) / (3 * sampling_tvd(target, n)) for key, target in targets.items()) > 10


def five_sigma(trials: int, p: float) -> float:
    """Five binomial standard errors of a count over ``trials`` trials of probability ``p``."""
    return 5 * math.sqrt(trials * p * (1 - p))


@pytest.mark.parametrize("shape", [(1,), (256,), (1, 256), (256, 1), (2, 128), (3, 300), (300, 300), (2, 3, 4)])
def test_cell_codes_are_the_mixed_radix_codes_in_a_small_dtype(shape):
    rng = np.random.default_rng(len(shape))
    records = np.asfortranarray(np.column_stack([rng.integers(0, size, 500) for size in shape]).astype(np.uint16))
    key = tuple(range(len(shape)))
    code = _cell_codes(records, key, shape)
    assert np.array_equal(code, joint_codes(records.astype(np.int64), shape))
    assert code.dtype.itemsize <= 4 and np.iinfo(code.dtype).max >= max(math.prod(shape), *shape)


@pytest.mark.parametrize("cells", [1, 5, 16, 17, 256, 257, 70_000])
def test_counting_sort_groups_every_cell_as_the_stable_argsort_did(cells):
    rng = np.random.default_rng(cells)
    code = rng.integers(0, cells, 20_000).astype(np.min_scalar_type(cells - 1))
    count = np.bincount(code, minlength=cells)
    old = np.argsort(code, kind="stable")  # the old definition: grouped by cell, in cell order
    order, starts = _counting_sort(code, cells), np.cumsum(count) - count
    assert np.array_equal(order, old)
    assert np.array_equal(_counts(code, cells), count)
    for cell in np.flatnonzero(count)[:50]:
        group = order[starts[cell] : starts[cell] + count[cell]]
        assert set(group.tolist()) == set(np.flatnonzero(code == cell).tolist())


def test_sample_spans_takes_each_position_of_a_span_equally_often_and_exactly_takes_of_them():
    starts, lengths = np.array([0, 20, 23, 40]), np.array([20, 3, 10, 7])
    takes = np.array([2, 0, 7, 7])  # a few (drawn one by one), none, most and all (shuffled)
    trials, hits = 3_000, np.zeros(47, dtype=np.int64)
    for seed in range(trials):
        picked = _sample_spans(starts, lengths, takes, np.random.default_rng(seed))
        assert np.unique(picked).size == picked.size == takes.sum()
        hits[picked] += 1
    for start, length, take in zip(starts, lengths, takes):
        span = hits[start : start + length]
        assert np.all(np.abs(span - trials * take / length) <= five_sigma(trials, take / length)), span
    assert hits[33:40].sum() == 0  # between the spans


@pytest.mark.parametrize(
    ("few_cells", "reject_share"), [(16, 0), (16, 10**9), (0, 0)], ids=["rejection", "scan", "counting sort"]
)
def test_update_moves_a_uniform_set_of_each_over_full_cell_and_copies_uniform_donors(
    monkeypatch, few_cells, reject_share
):
    monkeypatch.setattr(gum_module, "FEW_CELLS", few_cells)  # the records found each way
    monkeypatch.setattr(gum_module, "REJECT_SHARE", reject_share)
    # Cell 0 holds 20 records and loses 2, cell 1 holds 10 and loses 7 (most of them); cell 2
    # gains 2, copies of its 10 records; the empty cell 3 gains 7.
    cell = np.repeat([0, 1, 2], [20, 10, 10])
    records = np.column_stack([cell, np.arange(40)])  # column 1: who a copy copies
    target = np.array([0.45, 0.0, 0.3, 0.25])
    trials, left, copied = 3_000, np.zeros(40, dtype=np.int64), np.zeros(40, dtype=np.int64)
    for seed in range(trials):
        out = records.copy()
        update(out, (0,), (4,), target, 0.7, 1.0, np.random.default_rng(seed))
        moved = out[:, 0] != cell
        assert np.bincount(cell[moved], minlength=3).tolist() == [2, 7, 0]
        assert np.bincount(out[moved, 0], minlength=4).tolist() == [0, 0, 2, 7]
        into_two = moved & (out[:, 0] == 2)
        assert np.all(cell[out[into_two, 1]] == 2)  # a copy of a record of its new cell
        left += moved
        copied += np.bincount(out[into_two, 1], minlength=40)
    for records_of, p in ((slice(0, 20), 2 / 20), (slice(20, 30), 7 / 10)):
        assert np.all(np.abs(left[records_of] - trials * p) <= five_sigma(trials, p)), left[records_of]
    assert np.all(np.abs(copied[30:] - 2 * trials / 10) <= five_sigma(2 * trials, 1 / 10)), copied[30:]
    assert left[30:].sum() == copied[:30].sum() == 0


def test_balance_jumps_to_the_top_only_when_the_plain_bisection_would_end_there():
    def bisected(excess, have, arriving, n):  # the plain bisection, without the shortcut
        low, high = 0.0, 1.0
        for _ in range(50):
            beta = 0.5 * (low + high)
            leaving = np.rint(np.minimum(excess, beta * have) * n).sum()
            if abs(leaving - arriving) < 1:
                break
            low, high = (beta, high) if leaving < arriving else (low, beta)
        return np.rint(np.minimum(excess, beta * have) * n).astype(np.int64)

    rng = np.random.default_rng(3)
    for _ in range(500):
        have = rng.dirichlet(np.ones(rng.choice([1, 2, 3, 5, 40]))) * rng.uniform(0.2, 1)
        excess = have * rng.uniform(0, 1, have.size)
        n = int(rng.integers(10, 5_000))
        arriving = int(rng.integers(0, int(np.rint(excess * n).sum()) + 3))
        assert np.array_equal(_balance(excess, have, arriving, n), bisected(excess, have, arriving, n))
