"""PrivSyn's greedy selection of pairs, on estimated dependence and the noise of measuring."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dp2pub.synthesis.selection import dependence, expected_l1, population_variance, select_pairs


def test_expected_l1_is_the_mean_absolute_value_of_gaussian_noise():
    rng = np.random.default_rng(0)
    draws = np.abs(rng.normal(0.0, 0.3, size=(20_000, 5))).sum(axis=1)
    standard_error = draws.std() / math.sqrt(draws.size)
    assert abs(draws.mean() - expected_l1(5, 0.09)) < 4 * standard_error


def test_dependence_is_the_distance_to_independence_less_the_noise():
    first, second = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    assert dependence(np.outer(first, second), 0.0, first, second) == 0.0
    tied = np.array([[0.25, 0.25], [0.0, 0.5]])  # rows and columns as above, tied
    assert dependence(tied, 0.0, first, second) == pytest.approx(0.5)
    v = 1e-3
    assert dependence(tied, v, first, second) == pytest.approx(0.5 - 4 * math.sqrt(2 * v / math.pi))
    assert dependence(tied, 1.0, first, second) == 0.0  # all of it could be noise
    assert dependence(np.full((2, 2), 5.0), 0.0, first, second) == 2.0  # an L1 distance of distributions


PAIRS = [(0, 1), (0, 2), (1, 2), (2, 3)]


def choose(dependency, user_variance=1.0, first=100, second=10_000):
    n = len(PAIRS)
    return select_pairs(
        PAIRS, np.array(dependency, dtype=float), np.full(n, 4), np.full(n, user_variance), np.full(n, first), second
    )


def test_a_dependent_pair_is_chosen_and_independent_ones_are_not():
    assert choose([0.0, 0.0, 0.0, 0.0]) == []
    assert choose([0.0, 0.6, 0.0, 0.0]) == [1]
    assert choose([0.3, 0.6, 0.0, 0.4]) == [1, 3, 0]  # most dependent first


def test_nothing_is_chosen_when_measuring_costs_more_than_the_dependence_it_would_capture():
    assert choose([0.0, 0.6, 0.0, 0.0], user_variance=1e4) == []


def test_the_second_phase_users_are_shared_by_pairs_and_uncovered_attributes():
    # 4 attributes; choosing (0, 1) leaves 2 and 3 to be measured alone: 3 groups share the users.
    # The pair is worth it exactly when its dependence beats its noise with a third of the users.
    v, first, second = 1.0, 100, 10_000
    cost = float(expected_l1(4, population_variance(v, 4, first + second / 3)))
    assert choose([cost * 1.01, 0, 0, 0], v, first, second) == [0]
    assert choose([cost * 0.99, 0, 0, 0], v, first, second) == []
    # a mistake that ignored the uncovered attributes (the pair alone: all users) would choose it
    assert float(expected_l1(4, population_variance(v, 4, first + second))) < cost * 0.99


def test_at_large_budgets_the_groups_sampling_error_keeps_pairs_out():
    # an oracle of almost no noise: only the sampling error of a group of the users is left
    assert choose([0.1, 0, 0, 0], user_variance=1e-9, first=10, second=300) == []
    assert float(expected_l1(4, 1e-9 / (10 + 300 / 3))) < 0.1  # without the sampling term: chosen


def test_population_variance_is_the_oracles_plus_the_groups_sampling_variance():
    rng = np.random.default_rng(3)
    population = rng.integers(0, 4, size=200_000)  # p near 1/4 in each cell
    groups = np.array(
        [np.bincount(rng.choice(population, 500, replace=False), minlength=4) / 500 for _ in range(4_000)]
    )
    measured = groups.var(axis=0, ddof=1).mean()
    tolerance = 4.5 * math.sqrt(2 / (4_000 - 1))
    assert abs(measured / population_variance(0.0, 4, 500) - 1) < tolerance
    assert population_variance(2.0, 4, 500) == pytest.approx((2.0 + 3 / 16) / 500)
