"""``mechanism=ldp_marginals``: disjoint groups, one report a user at the whole epsilon, unbiased
marginals with the oracle's variance for the group's size, and a table that keeps the pairs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dp2pub.audit import satisfies_ldp
from dp2pub.data.dataset import Dataset
from dp2pub.data.domain import Domain
from dp2pub.data.marginals import marginal_counts
from dp2pub.mechanisms import GRR, OUE
from dp2pub.mechanisms.adaptive import build_oracle
from dp2pub.publish import ldp_marginals
from dp2pub.publish.base import MemoryAllowance, allowance
from dp2pub.publish.ldp_marginals import LDPMarginalsPublisher, measure
from dp2pub.synthesis.compression import Compression
from dp2pub.synthesis.selection import dependence_margin
from dp2pub.validation import ConfigError
from tests.synthesis.test_consistency import chain
from tests.synthesis.test_gum import sampling_tvd

Z = 4.5


def table(codes: np.ndarray, sizes: tuple[int, ...]) -> Dataset:
    return Dataset(codes.astype(np.int64), Domain.from_sizes(list(sizes)))


@pytest.mark.parametrize("marginals", ["adaptive", "all_pairs"])
@pytest.mark.parametrize("epsilon", [0.7, 3.1])
def test_every_user_reports_once_in_disjoint_groups_at_the_whole_epsilon(marginals, epsilon):
    rng = np.random.default_rng(0)
    data = table(chain(3_000, (2, 3, 4, 3, 2), rng), (2, 3, 4, 3, 2))
    publisher = LDPMarginalsPublisher(marginals=marginals, iterations=2)
    survey = publisher.survey(data, epsilon, np.random.default_rng(1))
    users = np.concatenate([group for _, group in survey.groups])
    assert np.array_equal(np.sort(users), np.arange(data.n))  # each user in exactly one group
    outcome = publisher.publish(data, epsilon, np.random.default_rng(1))
    assert len(outcome.ledger) == len(survey.groups)
    assert {item.epsilon for item in outcome.ledger} == {epsilon}
    assert [item.attribute for item in outcome.ledger] == [
        "+".join(data.domain.names[a] for a in key) for key, _ in survey.groups
    ]  # one spend per group, on the marginal its users reported
    assert outcome.epsilon_spent == epsilon  # parallel composition, exactly
    assert outcome.published is not None and outcome.published.codes.shape == data.codes.shape


@pytest.mark.parametrize("oracle", ["adaptive", "grr", "oue", "olh"])
@pytest.mark.parametrize(("epsilon", "k"), [(0.5, 6), (1.0, 12), (2.0, 4)])
def test_every_oracle_a_group_uses_meets_epsilon_exactly(oracle, epsilon, k):
    channel = build_oracle(oracle, epsilon, k).transition_matrix()
    assert satisfies_ldp(channel, epsilon)
    assert not satisfies_ldp(channel, epsilon - 1e-3)


def test_the_adaptive_oracle_follows_the_variance_rule_on_the_joint_domain():
    assert isinstance(build_oracle("adaptive", 1.0, 10), GRR)  # 10 < 3e + 2 = 10.15
    assert isinstance(build_oracle("adaptive", 1.0, 11), OUE)


@pytest.mark.parametrize(("sizes", "epsilon", "kind"), [((2, 3), 1.0, GRR), ((5, 4), 1.0, OUE)])
def test_a_marginal_estimate_is_unbiased_with_the_oracles_variance_for_its_group(sizes, epsilon, kind):
    rng = np.random.default_rng(3)
    codes = chain(4_000, sizes, rng)
    codes[(codes[:, 0] == 1) & (codes[:, 1] == 0), 1] = 1  # the cell (1, 0) is empty
    data = table(codes, sizes)
    group = np.arange(500)  # the group: 500 of the 4,000 users
    truth = marginal_counts(codes[group], sizes) / group.size
    reps = 1_500
    draws = [measure(data, (0, 1), group, epsilon, "adaptive", rng) for _ in range(reps)]
    estimates = np.array([m.table for m in draws])
    oracle = build_oracle("adaptive", epsilon, math.prod(sizes))
    assert isinstance(oracle, kind)
    p, q, n = oracle.p_star, oracle.q_star, group.size
    exact_var = (truth * p * (1 - p) + (1 - truth) * q * (1 - q)) / (n * (p - q) ** 2)  # Wang et al., Thm 2
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < Z * np.sqrt(exact_var / reps))
    # the empty cell's variance is the closed form of the group's size ...
    assert draws[0].variance == oracle.variance(n)
    tolerance = Z * math.sqrt(2 / (reps - 1))  # relative standard error of a sample variance
    assert abs(estimates[:, 1, 0].var(ddof=1) / draws[0].variance - 1) < tolerance
    # ... not of all users' (a plausible mistake, 8x smaller)
    assert abs(estimates[:, 1, 0].var(ddof=1) / oracle.variance(data.n) - 1) > tolerance


def test_noise_free_marginals_give_a_table_with_the_same_pairs_within_sampling_error():
    rng = np.random.default_rng(4)
    sizes = (2, 3, 3, 2)
    data = table(chain(12_000, sizes, rng), sizes)
    publisher = LDPMarginalsPublisher(marginals="all_pairs")  # 6 groups of 2,000 users
    outcome = publisher.publish(data, 60.0, np.random.default_rng(5))  # GRR: no report is changed
    start = LDPMarginalsPublisher(marginals="all_pairs", iterations=0).publish(data, 60.0, np.random.default_rng(5))
    assert outcome.published is not None and start.published is not None
    worst, worst_start = 0.0, 0.0
    for a, b in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]:
        truth = marginal_counts(data.codes[:, [a, b]], [sizes[a], sizes[b]]) / data.n
        bound = 3 * sampling_tvd(truth, 2_000)  # each pair is measured from a group of 2,000
        for published, name in ((outcome.published, "gum"), (start.published, "start")):
            got = marginal_counts(published.codes[:, [a, b]], [sizes[a], sizes[b]]) / data.n
            ratio = 0.5 * np.abs(got - truth).sum() / bound
            worst, worst_start = (max(worst, ratio), worst_start) if name == "gum" else (worst, max(worst_start, ratio))
    assert worst < 1  # every pair of the synthetic table within 3x sampling error
    assert worst_start > 5  # independent attributes (no GUM rounds) are far outside it


def test_adaptive_selection_measures_the_dependent_pair_again_first():
    rng = np.random.default_rng(6)
    n, sizes = 20_000, (3, 3, 2, 2)
    codes = rng.integers(0, sizes, size=(n, 4))
    codes[:, 1] = np.where(rng.random(n) < 0.9, codes[:, 0], codes[:, 1])  # only 0 and 1 are tied
    data = table(codes, sizes)
    untested = LDPMarginalsPublisher(iterations=0).survey(data, 2.0, np.random.default_rng(7))
    assert untested.chosen[0] == (0, 1)
    tested = LDPMarginalsPublisher(iterations=0, select_level=0.05).survey(data, 2.0, np.random.default_rng(7))
    assert tested.chosen == [(0, 1)]  # and no independent pair


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 4.0, 8.0])
def test_independent_attributes_give_no_pair_to_measure_again(epsilon):
    # 253 candidate pairs of independent binary attributes: at the family-wise level 0.05 none
    # is taken for dependent; without the test (select_level=null, the default) 40 to 60 are
    codes = np.random.default_rng(10).integers(0, 2, size=(38_000, 23))
    data = table(codes, (2,) * 23)
    tested = LDPMarginalsPublisher(iterations=0, select_level=0.05)
    for seed in range(3):
        assert tested.survey(data, epsilon, np.random.default_rng(seed)).chosen == []
    untested = LDPMarginalsPublisher(iterations=0).survey(data, epsilon, np.random.default_rng(0))
    assert len(untested.chosen) > 25


def test_the_selection_level_sets_the_margin_over_all_candidate_pairs(monkeypatch):
    asked = []

    def margin(candidates: int, level: float) -> float:
        asked.append((candidates, level))
        return dependence_margin(candidates, level)

    monkeypatch.setattr(ldp_marginals, "dependence_margin", margin)
    codes = np.random.default_rng(11).integers(0, 2, size=(5_000, 5))
    LDPMarginalsPublisher(iterations=0, select_level=0.2).survey(table(codes, (2,) * 5), 1.0, np.random.default_rng(0))
    assert asked == [(10, 0.2)]


def test_bad_settings_and_too_few_users_are_refused_naming_the_key():
    with pytest.raises(ConfigError, match="marginals"):
        LDPMarginalsPublisher(marginals="all_triples")
    with pytest.raises(ConfigError, match="oracle"):
        LDPMarginalsPublisher(oracle="rappor")
    with pytest.raises(ConfigError, match="select_fraction"):
        LDPMarginalsPublisher(select_fraction=1.0)
    with pytest.raises(ConfigError, match=r"select_level=0 .*\(0, 1\)"):
        LDPMarginalsPublisher(select_level=0)
    data = table(chain(40, (2, 2, 2, 2, 2, 2, 2), np.random.default_rng(0)), (2,) * 7)  # 21 pairs
    with pytest.raises(
        ConfigError, match=r"mechanism\.select_fraction=0\.2 .*leaves at least 21 users for 21 marginals \(not 8\)"
    ):
        LDPMarginalsPublisher().publish(data, 1.0, np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"dataset\.n=20 .*leaves at least 21 users for 21 marginals \(not 20\)"):
        LDPMarginalsPublisher(marginals="all_pairs").publish(
            data.rows(np.arange(40) < 20), 1.0, np.random.default_rng(0)
        )


def test_constant_attributes_are_measured_alone_exactly_and_kept_out_of_pairs():
    rng = np.random.default_rng(8)
    sizes = (1, 3, 1, 1, 2, 1, 1)  # five constant attributes: five exact marginals share nothing
    codes = np.zeros((4_000, len(sizes)), dtype=np.int64)
    codes[:, 1], codes[:, 4] = rng.integers(0, 3, 4_000), rng.integers(0, 2, 4_000)
    publisher = LDPMarginalsPublisher(iterations=3)
    assert publisher.candidates(np.array(sizes)) == [(1, 4), (0,), (2,), (3,), (5,), (6,)]
    outcome = publisher.publish(table(codes, sizes), 1.0, np.random.default_rng(9))
    assert outcome.epsilon_spent == 1.0 and outcome.published is not None
    assert np.all(outcome.published.codes[:, [0, 2, 3, 5, 6]] == 0)


def test_the_memory_estimate_holds_an_attribute_wider_than_any_pair_measured():
    publisher = LDPMarginalsPublisher(max_cells=100)
    narrow, wide = publisher.memory_bytes(1_000, [2, 50, 3]), publisher.memory_bytes(1_000, [2, 500, 3])
    users = publisher.group_users(1_000, [2, 500, 3])  # the most users one group measures
    assert 0 < users < 1_000
    assert wide - narrow >= users * (500 - 50)  # OUE's bit of each of the 450 more values, for each user


# ---------------------------------------------------------------- allocation: cells
@pytest.mark.parametrize("users", [7, 100, 9_999])
def test_a_split_by_cells_gives_each_marginal_its_share_within_one_user(users):
    cells = [4, 6, 1_681, 2, 36, 4, 100]
    sizes = ldp_marginals.group_sizes(users, ldp_marginals.allocation_weights(cells))
    assert sizes.sum() == users and sizes.min() >= 1
    share = 1 + (users - len(cells)) * np.asarray(cells) ** (2 / 3) / sum(k ** (2 / 3) for k in cells)
    assert np.all(np.abs(sizes - share) < 1)
    groups = ldp_marginals.split_users(np.arange(users), cells, "cells", "dataset.n", users)
    assert [g.size for g in groups] == sizes.tolist()
    assert np.array_equal(np.concatenate(groups), np.arange(users))
    uniform = ldp_marginals.split_users(np.arange(users), cells, "uniform", "dataset.n", users)
    assert max(g.size for g in uniform) - min(g.size for g in uniform) <= 1  # equal, whatever the cells


@pytest.mark.parametrize("marginals", ["adaptive", "all_pairs"])
def test_the_groups_follow_their_marginals_cells_and_the_memory_bound_holds(marginals):
    sizes = (2, 7, 4, 12, 3)
    data = table(chain(6_000, sizes, np.random.default_rng(12)), sizes)
    publisher = LDPMarginalsPublisher(marginals=marginals, allocation="cells", iterations=2)
    survey = publisher.survey(data, 1.0, np.random.default_rng(13))
    users = np.concatenate([group for _, group in survey.groups])
    assert np.array_equal(np.sort(users), np.arange(data.n))
    first = len(publisher.candidates(np.array(sizes)))
    for phase in (survey.groups[:first], survey.groups[first:]):
        if not phase:
            continue
        cells = [math.prod(sizes[a] for a in key) for key, _ in phase]
        expected = ldp_marginals.group_sizes(sum(g.size for _, g in phase), ldp_marginals.allocation_weights(cells))
        assert [g.size for _, g in phase] == expected.tolist()
    largest = max(g.size for _, g in survey.groups)
    assert largest <= publisher.group_users(data.n, sizes)
    uniform = LDPMarginalsPublisher(marginals=marginals).survey(data, 1.0, np.random.default_rng(13))
    assert largest > max(g.size for _, g in uniform.groups)  # the 84-cell pair gets more than an equal share


# ---------------------------------------------------------------- inference: pgm
def pgm_publisher(**settings) -> LDPMarginalsPublisher:
    return LDPMarginalsPublisher(inference="pgm", **settings)


def tvd(published: np.ndarray, truth: np.ndarray, key: tuple[int, ...], sizes: tuple[int, ...]) -> float:
    got = marginal_counts(published[:, list(key)], [sizes[a] for a in key]) / len(published)
    return 0.5 * float(np.abs(got - truth).sum())


def test_noise_free_marginals_fitted_by_a_graphical_model_give_the_chains_pairs_and_triples():
    rng = np.random.default_rng(4)
    sizes = (2, 3, 3, 2)
    data = table(chain(12_000, sizes, rng), sizes)
    outcome = pgm_publisher(marginals="all_pairs", pgm_iterations=500).publish(data, 60.0, np.random.default_rng(5))
    assert outcome.published is not None and outcome.published.n == data.n
    assert outcome.epsilon_spent == 60.0 and outcome.extra_metrics["pairs_modelled"] == 6
    assert outcome.extra_metrics["model_whole"] == 1.0  # 36 cells: fitted whole, in numpy
    for key in [*itertools.combinations(range(4), 2), *itertools.combinations(range(4), 3)]:
        truth = marginal_counts(data.codes[:, list(key)], [sizes[a] for a in key]) / data.n
        # each pair measured from a group of 2,000; the table is 12,000 draws from the model
        bound = 3 * (sampling_tvd(truth, 2_000) + sampling_tvd(truth, data.n))
        assert tvd(outcome.published.codes, truth, key, sizes) < bound, key


def test_pairs_beyond_the_model_size_are_measured_on_their_attributes_only():
    rng = np.random.default_rng(4)
    sizes = (2, 3, 3, 2)
    data = table(chain(12_000, sizes, rng), sizes)
    outcome = pgm_publisher(marginals="all_pairs", pgm_iterations=500, max_model_size=1e-9).publish(
        data, 60.0, np.random.default_rng(5)
    )
    assert outcome.published is not None and outcome.extra_metrics["pairs_modelled"] == 0
    assert outcome.extra_metrics["model_whole"] == 0.0  # private-pgm's junction tree
    for a in range(4):  # each attribute from three pairs' sums
        truth = marginal_counts(data.codes[:, [a]], [sizes[a]]) / data.n
        assert tvd(outcome.published.codes, truth, (a,), sizes) < 3 * (
            sampling_tvd(truth, 2_000) + sampling_tvd(truth, data.n)
        )
    truth = marginal_counts(data.codes[:, [0, 1]], [2, 3]) / data.n
    assert tvd(outcome.published.codes, truth, (0, 1), sizes) > 10 * sampling_tvd(truth, 2_000)  # independent


def test_the_graphical_model_is_claimed_before_it_is_fitted(monkeypatch):
    sizes = (2, 3, 3, 2)
    data = table(chain(2_000, sizes, np.random.default_rng(4)), sizes)
    granted = MemoryAllowance()
    fit = ldp_marginals.fit

    def claimed_first(*args, **kwargs):
        assert "max_model_size" in granted.claimed
        return fit(*args, **kwargs)

    monkeypatch.setattr(ldp_marginals, "fit", claimed_first)
    with allowance(granted):
        pgm_publisher(pgm_iterations=20).publish(data, 1.0, np.random.default_rng(5))
    assert granted.claimed["max_model_size"] == ldp_marginals.MODEL_COPIES * 8 * 36  # the whole domain's cells


def test_new_settings_are_refused_naming_the_key():
    for key, value in [
        ("allocation", "optimal"),
        ("inference", "exact"),
        ("pgm_iterations", 0),
        ("max_model_size", 0.0),
    ]:
        with pytest.raises(ConfigError, match=key):
            LDPMarginalsPublisher(**{key: value})


@pytest.mark.parametrize("max_model_size", [1.0, 1e-9])
def test_constant_attributes_leave_the_graphical_model_as_they_are(max_model_size):
    rng = np.random.default_rng(8)
    sizes = (1, 3, 1, 1, 2, 1, 1)
    codes = np.zeros((4_000, len(sizes)), dtype=np.int64)
    codes[:, 1], codes[:, 4] = rng.integers(0, 3, 4_000), rng.integers(0, 2, 4_000)
    publisher = pgm_publisher(pgm_iterations=50, max_model_size=max_model_size)
    outcome = publisher.publish(table(codes, sizes), 1.0, np.random.default_rng(9))
    assert outcome.published is not None and outcome.extra_metrics["model_whole"] == (max_model_size == 1.0)
    assert np.all(outcome.published.codes[:, [0, 2, 3, 5, 6]] == 0)
    for a in (1, 4):  # the varying attributes still follow their reports, not the uniform start
        truth = marginal_counts(codes[:, [a]], [sizes[a]]) / len(codes)
        got = marginal_counts(outcome.published.codes[:, [a]], [sizes[a]]) / len(codes)
        assert np.abs(got - truth).max() < 0.1


@pytest.mark.parametrize(("oracle", "exclusive"), [("grr", True), ("oue", False)])
def test_a_pairs_row_and_column_sums_have_the_variance_given_to_them(oracle, exclusive):
    rng = np.random.default_rng(10)
    sizes = (2, 3)
    population = chain(200_000, sizes, rng)
    data = table(population, sizes)
    truth = marginal_counts(population, sizes) / len(population)
    users, reps, epsilon = 400, 2_000, 1.0
    sums = {0: [], 1: []}
    for _ in range(reps):  # a new group drawn from the population each time
        m = measure(data, (0, 1), rng.choice(len(population), users, replace=False), epsilon, oracle, rng)
        assert m.exclusive == exclusive
        sums[0].append(m.table.sum(axis=1))
        sums[1].append(m.table.sum(axis=0))
    exact = ldp_marginals.Measured(truth, 0.0, users, (m.support[0], m.support[1]), exclusive)
    tolerance = Z * math.sqrt(2 / (reps - 1))
    for keep in (0, 1):
        observed = np.asarray(sums[keep]).var(axis=0, ddof=1).mean()
        assert abs(observed / exact.sums_variance(keep) - 1) < tolerance, keep
        cells = (1 - keep) * 3 + keep * 2  # what the sum adds: independent cells would give this much
        independent = cells * exact.population_variance
        if exclusive:
            assert abs(observed / independent - 1) > tolerance  # GRR's cells are not independent


@pytest.mark.parametrize(("oracle", "exclusive"), [("grr", True), ("oue", False)])
def test_an_estimate_summed_onto_merged_values_has_the_variance_given_to_it(oracle, exclusive):
    rng = np.random.default_rng(11)
    sizes = (2, 4)
    population = chain(200_000, sizes, rng)
    data = table(population, sizes)
    truth = marginal_counts(population, sizes) / len(population)
    compression = Compression((np.array([0, 1]), np.array([0])), sizes)  # values 1-3 of the second merged
    users, reps, epsilon = 400, 2_000, 1.0
    cells = []
    for _ in range(reps):
        m = measure(data, (0, 1), rng.choice(len(population), users, replace=False), epsilon, oracle, rng)
        cells.append(m.compressed(compression, (0, 1)).table)
    support = (m.support[0], m.support[1])
    exact = ldp_marginals.Measured(truth, 0.0, users, support, exclusive).compressed(compression, (0, 1))
    observed = np.asarray(cells).var(axis=0, ddof=1).mean()
    tolerance = Z * math.sqrt(2 / (reps - 1))
    assert abs(observed / exact.population_variance - 1) < tolerance
    as_reported = ldp_marginals.Measured(exact.table, 0.0, users, support, exclusive)  # one reported cell each
    assert abs(observed / as_reported.population_variance - 1) > tolerance


def test_rare_values_are_merged_after_the_survey_and_drawn_back():
    rng = np.random.default_rng(12)
    n, sizes = 20_000, (12, 2)
    shares = np.array([0.45, 0.45] + [0.01] * 10)
    codes = np.column_stack([rng.choice(12, n, p=shares), rng.integers(0, 2, n)])
    data = table(codes, sizes)
    plain, merging = LDPMarginalsPublisher(), LDPMarginalsPublisher(rare_sd=3.0)
    assert "values_merged" not in plain.publish(data, 2.0, np.random.default_rng(13)).extra_metrics
    # the same users report the same way: merging is post-processing of their reports
    before, after = (
        plain.survey(data, 2.0, np.random.default_rng(13)),
        merging.survey(data, 2.0, np.random.default_rng(13)),
    )
    assert before.compression is None and after.compression is not None
    assert all(k1 == k2 and np.array_equal(g1, g2) for (k1, g1), (k2, g2) in zip(before.groups, after.groups))
    rare = after.compression.rare(0)
    assert rare.size >= 5 and set(rare.tolist()) <= set(range(2, 12)) and after.compression.kept[1].size == 2
    outcome = merging.publish(data, 2.0, np.random.default_rng(13))
    assert outcome.extra_metrics["values_merged"] == rare.size
    assert outcome.ledger == plain.publish(data, 2.0, np.random.default_rng(13)).ledger
    published = outcome.published.codes[:, 0]
    counts = np.bincount(published, minlength=12)[rare]
    assert counts.sum() > 0 and stats.chisquare(counts).pvalue > 1e-4  # drawn uniformly among them


def test_rare_values_through_the_graphical_model_come_back_beyond_eight_bits():
    """300 values, most of them rare: the model's records are on at most a few dozen, and the
    value 299 (kept, 39% of the records) must come back as itself, not wrapped into a byte."""
    rng = np.random.default_rng(14)
    n, sizes = 20_000, (300, 2)
    first = np.where(rng.random(n) < 0.6, 0, np.where(rng.random(n) < 0.975, 299, rng.integers(1, 299, n)))
    codes = np.column_stack([first, (first == 0) | (rng.random(n) < 0.5)]).astype(np.int64)
    publisher = pgm_publisher(pgm_iterations=50, rare_sd=3.0)
    outcome = publisher.publish(table(codes, sizes), 2.0, np.random.default_rng(15))
    assert outcome.extra_metrics["values_merged"] >= 200
    published = outcome.published.codes[:, 0]
    truth = np.mean(first == 299)
    assert abs(np.mean(published == 299) - truth) < 0.1 and published.max() <= 299
