"""CALM's consistency step: shared marginals agree exactly, weighted by inverse variance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dp2pub.data.marginals import marginal_counts
from dp2pub.synthesis.consistency import make_consistent, shared_sets


def chain(n: int, sizes: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """``n`` records of a Markov chain over attributes of ``sizes`` (each strongly tied to the last)."""
    codes = np.empty((n, len(sizes)), dtype=np.int64)
    codes[:, 0] = rng.integers(0, sizes[0], n)
    for j in range(1, len(sizes)):
        keep = rng.random(n) < 0.8
        codes[:, j] = np.where(keep, codes[:, j - 1] % sizes[j], rng.integers(0, sizes[j], n))
    return codes


def pair_tables(codes: np.ndarray, sizes: tuple[int, ...]) -> dict[tuple[int, ...], np.ndarray]:
    """The exact 2-way marginals (frequencies) of every pair."""
    return {
        (a, b): marginal_counts(codes[:, [a, b]], [sizes[a], sizes[b]]) / len(codes)
        for a, b in itertools.combinations(range(len(sizes)), 2)
    }


def one_way(table: np.ndarray, key: tuple[int, ...], attribute: int) -> np.ndarray:
    return table.sum(axis=tuple(i for i, a in enumerate(key) if a != attribute))


def test_shared_sets_are_every_intersection_smaller_first():
    assert shared_sets([(0, 1), (1, 2), (0, 2), (3,)]) == [(), (0,), (1,), (2,)]
    assert shared_sets([(0, 1, 2), (1, 2, 3), (2, 4)]) == [(), (2,), (1, 2)]
    assert shared_sets([(0, 1)]) == [()]


def test_shared_one_way_marginals_agree_exactly_and_every_table_sums_to_one():
    rng = np.random.default_rng(5)
    sizes = (2, 3, 4, 3)
    truth = pair_tables(chain(5_000, sizes, rng), sizes)
    noisy = {key: table + rng.normal(0.0, 0.05, table.shape) for key, table in truth.items()}
    variances = {key: 0.0025 * (1 + i) for i, key in enumerate(noisy)}
    before = max(np.abs(one_way(noisy[(0, 1)], (0, 1), 1) - one_way(noisy[(1, 2)], (1, 2), 1)))
    assert before > 1e-3  # the noisy tables disagree, so agreement below is the step's doing
    tables, result = make_consistent(noisy, variances)
    for attribute in range(len(sizes)):
        holders = [key for key in tables if attribute in key]
        projections = [one_way(tables[key], key, attribute) for key in holders]
        for projection in projections[1:]:
            np.testing.assert_allclose(projection, projections[0], rtol=0, atol=1e-12)
    for table in tables.values():
        assert table.sum() == pytest.approx(1.0, abs=1e-12)
    assert result.converged and min(t.min() for t in tables.values()) >= -1e-9
    assert any(noisy[key].min() < 0 for key in noisy)  # Norm-Sub had work to do


def test_the_shared_marginal_is_the_inverse_variance_average_of_the_projections():
    rng = np.random.default_rng(1)
    a = rng.dirichlet(np.full(6, 50.0)).reshape(2, 3)  # attributes (0, 1)
    b = rng.dirichlet(np.full(12, 50.0)).reshape(3, 4)  # attributes (1, 2)
    va, vb = 0.01, 0.04
    tables, result = make_consistent({(0, 1): a, (1, 2): b}, {(0, 1): va, (1, 2): vb}, max_rounds=1)
    wa, wb = 1 / (2 * va), 1 / (4 * vb)  # a projected cell sums 2 (resp. 4) cells of variance va (vb)
    expected = (wa * a.sum(axis=0) + wb * b.sum(axis=1)) / (wa + wb)
    assert result.rounds == 1 and result.converged  # non-negative after the pass: no Norm-Sub
    np.testing.assert_allclose(tables[(0, 1)].sum(axis=0), expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(tables[(1, 2)].sum(axis=1), expected, rtol=0, atol=1e-15)
    # an unweighted average (a plausible mistake) is far from it
    assert np.abs((a.sum(axis=0) + b.sum(axis=1)) / 2 - expected).max() > 1e-3


def test_consistent_tables_come_back_unchanged():
    rng = np.random.default_rng(2)
    sizes = (3, 2, 4)
    truth = pair_tables(chain(1_000, sizes, rng), sizes)
    tables, result = make_consistent(truth, {key: 1.0 for key in truth})
    assert result.rounds == 1 and result.converged
    for key in truth:
        np.testing.assert_allclose(tables[key], truth[key], rtol=0, atol=1e-15)


def test_exact_marginals_set_what_they_share_however_many_there_are():
    rng = np.random.default_rng(3)
    # five constant attributes (one value each, known exactly) and a noisy pair holding one
    exact = {(a,): np.ones(1) for a in range(5)}
    noisy = rng.dirichlet(np.ones(4)).reshape(1, 4) * 1.3  # attributes (0, 5), off its total
    tables, result = make_consistent({**exact, (0, 5): noisy}, {**{k: 0.0 for k in exact}, (0, 5): 0.5})
    assert result.converged
    np.testing.assert_allclose(tables[(0, 5)].sum(), 1.0, rtol=0, atol=1e-12)
    for key in exact:
        np.testing.assert_array_equal(tables[key], np.ones(1))
    # two exact tables that disagree on attribute 0 meet halfway, and a noisy one follows them
    tables, _ = make_consistent(
        {(0,): np.array([0.2, 0.8]), (0, 1): np.array([[0.1, 0.2], [0.3, 0.4]]), (0, 2): np.full((2, 2), 0.25)},
        {(0,): 0.0, (0, 1): 0.0, (0, 2): 1e-6},
        max_rounds=1,
    )
    for key, axes in (((0,), ()), ((0, 1), 1), ((0, 2), 1)):
        np.testing.assert_allclose(tables[key].sum(axis=axes), [0.25, 0.75], rtol=0, atol=1e-15)
