"""PrivSyn's GUM: records whose marginals match the targets."""

from __future__ import annotations

import math

import numpy as np

from dp2pub.data.marginals import marginal_counts
from dp2pub.synthesis.gum import gum, initial_records, rounded_counts
from tests.synthesis.test_consistency import chain, pair_tables


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
