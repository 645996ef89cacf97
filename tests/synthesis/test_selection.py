"""PrivSyn's greedy selection of pairs, on estimated dependence and the error of measuring."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dp2pub.synthesis.selection import cell_variances, dependence, expected_l1, select_pairs


def test_expected_l1_is_the_mean_absolute_value_of_gaussian_noise():
    rng = np.random.default_rng(0)
    variances = np.array([0.09, 0.04, 0.01, 0.25, 0.09])
    draws = np.abs(rng.normal(0.0, np.sqrt(variances / 50), size=(20_000, 5))).sum(axis=1)
    standard_error = draws.std() / math.sqrt(draws.size)
    assert abs(draws.mean() - expected_l1(variances, 50)) < 4 * standard_error
    assert abs(draws.mean() - expected_l1(variances, 1) / math.sqrt(50)) < 4 * standard_error


def test_a_groups_error_against_the_population_is_the_oracles_plus_sampling():
    rng = np.random.default_rng(3)
    population = rng.choice(4, size=200_000, p=[0.1, 0.2, 0.3, 0.4])
    freq = np.bincount(population) / population.size
    groups = np.array(
        [np.bincount(rng.choice(population, 500, replace=False), minlength=4) / 500 for _ in range(4_000)]
    )
    tolerance = 4.5 * math.sqrt(2 / (4_000 - 1))  # relative standard error of a sample variance
    ratios = groups.var(axis=0, ddof=1) / (cell_variances(0.0, freq) / 500)
    assert np.all(np.abs(ratios - 1) < tolerance)
    np.testing.assert_allclose(cell_variances(2.0, freq), 2.0 + freq * (1 - freq))


def test_dependence_is_the_distance_to_independence_less_the_noise():
    first, second = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    product = np.outer(first, second)
    assert dependence(product, 0.0, 10**15, first, second) == 0.0
    tied = np.array([[0.25, 0.25], [0.0, 0.5]])  # rows and columns as above, tied
    assert dependence(tied, 0.0, 10**15, first, second) == pytest.approx(0.5, abs=1e-6)
    noise = math.sqrt(2 / (math.pi * 1_000)) * np.sqrt(1e-3 + product * (1 - product)).sum()
    assert dependence(tied, 1e-3, 1_000, first, second) == pytest.approx(0.5 - noise)
    assert dependence(tied, 1.0, 10, first, second) == 0.0  # all of it could be noise
    assert dependence(np.full((2, 2), 5.0), 0.0, 10**15, first, second) == 2.0  # an L1 distance of distributions


PAIRS = [(0, 1), (0, 2), (1, 2), (2, 3)]


def choose(dependency, scale=4.0, first=100, second=10_000):
    n = len(PAIRS)
    return select_pairs(PAIRS, np.array(dependency, dtype=float), np.full(n, scale), np.full(n, first), second)


def test_a_dependent_pair_is_chosen_and_independent_ones_are_not():
    assert choose([0.0, 0.0, 0.0, 0.0]) == []
    assert choose([0.0, 0.6, 0.0, 0.0]) == [1]
    assert choose([0.3, 0.6, 0.0, 0.4]) == [1, 3, 0]  # most dependent first


def test_nothing_is_chosen_when_measuring_costs_more_than_the_dependence_it_would_capture():
    assert choose([0.0, 0.6, 0.0, 0.0], scale=400.0) == []


def test_the_second_phase_users_are_shared_by_pairs_and_uncovered_attributes():
    # 4 attributes; choosing (0, 1) leaves 2 and 3 to be measured alone: 3 groups share the users.
    # The pair is worth it exactly when its dependence beats its error with a third of the users.
    scale, first, second = 4.0, 100, 10_000
    cost = math.sqrt(2 / (math.pi * (first + second / 3))) * scale
    assert choose([cost * 1.01, 0, 0, 0], scale, first, second) == [0]
    assert choose([cost * 0.99, 0, 0, 0], scale, first, second) == []
    # a mistake that ignored the uncovered attributes (the pair alone: all users) would choose it
    assert math.sqrt(2 / (math.pi * (first + second))) * scale < cost * 0.99


def test_attributes_in_no_candidate_pair_still_take_their_share_of_the_users():
    # as above, with 2 more attributes in no candidate pair (too many cells): 5 groups
    scale, first, second = 4.0, 100, 10_000
    cost = math.sqrt(2 / (math.pi * (first + second / 5))) * scale
    n = len(PAIRS)

    def pick(dependency: float) -> list[int]:
        return select_pairs(
            PAIRS, np.array([dependency, 0, 0, 0]), np.full(n, scale), np.full(n, first), second, lone=2
        )

    assert pick(cost * 1.01) == [0]
    assert pick(cost * 0.99) == []
    assert choose([cost * 0.99, 0, 0, 0], scale, first, second) == [0]  # without them: 3 groups, chosen


def test_at_large_budgets_the_groups_sampling_error_keeps_pairs_out():
    # an oracle of almost no noise: the sampling error of a group of 110 users is what is left
    scale = float(np.sqrt(cell_variances(1e-9, np.full(4, 0.25))).sum())
    assert choose([0.1, 0, 0, 0], scale, first=10, second=300) == []
    assert choose([0.1, 0, 0, 0], 4 * math.sqrt(1e-9), first=10, second=300) == [0]  # oracle alone: chosen
