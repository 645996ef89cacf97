"""PrivSyn's greedy selection of pairs, on estimated dependence and the error of measuring."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dp2pub.mechanisms import GRR, OUE
from dp2pub.synthesis.selection import (
    cell_variances,
    dependence,
    dependence_margin,
    expected_l1,
    l1_spread,
    select_pairs,
)


def test_expected_l1_is_the_mean_absolute_value_of_gaussian_noise():
    rng = np.random.default_rng(0)
    variances = np.array([0.09, 0.04, 0.01, 0.25, 0.09])
    draws = np.abs(rng.normal(0.0, np.sqrt(variances / 50), size=(20_000, 5))).sum(axis=1)
    standard_error = draws.std() / math.sqrt(draws.size)
    assert abs(draws.mean() - expected_l1(variances, 50)) < 4 * standard_error
    assert abs(draws.mean() - expected_l1(variances, 1) / math.sqrt(50)) < 4 * standard_error


def test_a_groups_error_against_the_population_is_the_sampling_error_for_exact_reports():
    rng = np.random.default_rng(3)
    population = rng.choice(4, size=200_000, p=[0.1, 0.2, 0.3, 0.4])
    freq = np.bincount(population) / population.size
    groups = np.array(
        [np.bincount(rng.choice(population, 500, replace=False), minlength=4) / 500 for _ in range(4_000)]
    )
    tolerance = 4.5 * math.sqrt(2 / (4_000 - 1))  # relative standard error of a sample variance
    ratios = groups.var(axis=0, ddof=1) / (cell_variances(freq, 1.0, 0.0) / 500)
    assert np.all(np.abs(ratios - 1) < tolerance)
    np.testing.assert_allclose(cell_variances(freq, 1.0, 0.0), freq * (1 - freq))


@pytest.mark.parametrize("oracle", [GRR(epsilon=1.0, k=6), OUE(epsilon=4.0, k=6)])  # where the two differ
def test_a_groups_error_against_the_population_is_exactly_the_cell_variance(oracle):
    rng = np.random.default_rng(4)
    population = rng.choice(6, size=100_000, p=[0.02, 0.08, 0.1, 0.2, 0.25, 0.35])
    freq = np.bincount(population, minlength=6) / population.size
    users, repeats = 300, 3_000
    estimates = np.array(
        [oracle.estimate(oracle.perturb(rng.choice(population, users, replace=False), rng)) for _ in range(repeats)]
    )
    tolerance = 4.5 * math.sqrt(2 / (repeats - 1))
    ratios = estimates.var(axis=0, ddof=1) / (cell_variances(freq, oracle.p_star, oracle.q_star) / users)
    assert np.all(np.abs(ratios - 1) < tolerance), ratios
    # the oracle's variance plus the sampling variance, the approximation this replaced, is off
    # by p (1 - p* - q*) / (p* - q*) per cell: beyond the tolerance at the most frequent cell
    approximate = oracle.variance(1) + freq * (1 - freq)
    assert abs(estimates.var(axis=0, ddof=1)[-1] / (approximate[-1] / users) - 1) > tolerance


def test_the_margin_is_the_gaussian_concentration_bound_at_the_bonferroni_level():
    assert dependence_margin(1, 0.05) == pytest.approx(math.sqrt(2 * math.log(20)))
    assert dependence_margin(100, 0.05) == pytest.approx(math.sqrt(2 * math.log(2_000)))
    assert l1_spread(4, 100, 1.0, 0.0) == pytest.approx(0.1)  # exact reports: sqrt(1 / users)
    oracle = GRR(epsilon=1.0, k=4)
    expected = math.sqrt((4 * oracle.q + oracle.p - oracle.q) / (100 * (oracle.p - oracle.q) ** 2))
    assert l1_spread(4, 100, oracle.p_star, oracle.q_star) == pytest.approx(expected)


EXACT = (1.0, 0.0)  # an oracle that reports the truth: only the sampling of the users is noise


def test_dependence_is_the_distance_to_independence_less_the_noise_when_beyond_it():
    first, second = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    product = np.outer(first, second)
    assert dependence(product, first, second, 10**15, EXACT, 3.0) == 0.0
    tied = np.array([[0.25, 0.25], [0.0, 0.5]])  # rows and columns as above, tied
    assert dependence(tied, first, second, 10**15, EXACT, 3.0) == pytest.approx(0.5, abs=1e-6)
    noise = math.sqrt(2 / (math.pi * 1_000)) * np.sqrt(product * (1 - product)).sum()
    assert dependence(tied, first, second, 1_000, EXACT, 3.0) == pytest.approx(0.5 - noise)
    # the same distance is not taken for dependence when the noise could make it
    margin = (0.5 - noise) / l1_spread(4, 1_000, *EXACT)
    assert dependence(tied, first, second, 1_000, EXACT, margin * 1.001) == 0.0
    assert dependence(tied, first, second, 1_000, EXACT, margin * 0.999) == pytest.approx(0.5 - noise)
    assert dependence(tied, first, second, 10, (0.6, 0.4), 0.0) == 0.0  # all of it could be noise
    big = np.full((2, 2), 5.0)
    assert dependence(big, first, second, 10**15, EXACT, 3.0) == 2.0  # an L1 distance of distributions


def group_estimates(oracle, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each row's (a group's) unbiased estimate through ``oracle``, all groups perturbed at once."""
    groups, users = values.shape
    support = oracle.support(oracle.perturb(values.ravel(), rng)).reshape(groups, users, oracle.k).sum(axis=1)
    return (support / users - oracle.q_star) / (oracle.p_star - oracle.q_star)


@pytest.mark.parametrize("oracle", [GRR(epsilon=1.0, k=4), OUE(epsilon=1.0, k=4), GRR(epsilon=6.0, k=4)])
def test_independent_pairs_are_taken_for_dependent_at_most_at_the_level(oracle):
    # first-phase estimates of independent pairs: how often the test says dependent
    rng = np.random.default_rng(6)
    first, second = np.array([0.3, 0.7]), np.array([0.6, 0.4])
    truth, users, trials = np.outer(first, second).ravel(), 200, 20_000
    tables = group_estimates(oracle, rng.choice(4, size=(trials, users), p=truth), rng).reshape(trials, 2, 2)
    support = (oracle.p_star, oracle.q_star)

    def passed(margin: float) -> float:
        return float(np.mean([dependence(t, first, second, users, support, margin) > 0 for t in tables]))

    level = 0.05
    assert passed(dependence_margin(1, level)) <= level  # a bound: at most the level (here far below it)
    assert passed(0.0) > 0.3  # without the margin about half of them pass
    assert passed(dependence_margin(1, 0.9)) > 0.0  # the bound is not vacuous: a loose one lets some in


def test_a_dependence_beyond_the_margin_is_found():
    # a tied pair whose distance from independence is twice the margin's worth, through GRR
    rng = np.random.default_rng(7)
    oracle, users = GRR(epsilon=1.0, k=4), 2_000
    first = second = np.array([0.5, 0.5])
    support = (oracle.p_star, oracle.q_star)
    product = np.outer(first, second)
    need = expected_l1(cell_variances(product, *support).ravel(), users)
    need += dependence_margin(1, 0.05) * l1_spread(4, users, *support)
    shift = need / 4 * 2  # L1 of +-shift on the four cells is 4 shift = twice what is needed
    truth = product + shift * np.array([[1, -1], [-1, 1]])
    tables = group_estimates(oracle, rng.choice(4, size=(200, users), p=truth.ravel()), rng).reshape(200, 2, 2)
    found = [dependence(t, first, second, users, support, dependence_margin(1, 0.05)) for t in tables]
    assert np.mean(np.array(found) > 0) > 0.95


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
    scale = float(np.sqrt(cell_variances(np.full(4, 0.25), 1.0, 0.0)).sum())
    assert choose([0.1, 0, 0, 0], scale, first=10, second=300) == []
    assert choose([0.1, 0, 0, 0], 4 * math.sqrt(1e-9), first=10, second=300) == [0]  # oracle alone: chosen
