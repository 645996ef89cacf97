"""AIM (McKenna et al. PVLDB 2022): its ledger spends the whole rho and converts to at most
epsilon (with or without its time limit binding); its candidates and weights are the
paper's; the bias it subtracts is the expected L1 norm of the noise; at a large budget its
choice is the worst-approximated candidate and its table recovers a tree-structured one."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dp2pub.data.marginals import marginal_counts
from dp2pub.mechanisms.accounting import ADD_REMOVE
from dp2pub.publish.aim import AIMPublisher, Budget, bias, candidate_weights, downward_closure
from dp2pub.publish.mst import measure
from dp2pub.synthesis.pgm import fit
from dp2pub.validation import ConfigError
from tests.publish.test_mst import tree_table


@pytest.mark.parametrize(("epsilon", "time_limit"), [(0.1, None), (1.6, None), (3.1, None), (1.0, 0.0)])
def test_the_ledger_spends_all_of_rho_and_converts_to_at_most_epsilon(epsilon, time_limit):
    data = tree_table(np.random.default_rng(0), 2_000)
    publisher = AIMPublisher(rounds=6, iterations=30, time_limit=time_limit)
    outcome = publisher.publish(data, epsilon, np.random.default_rng(1))
    assert all(item.neighbours == ADD_REMOVE and item.epsilon == 0.0 and item.delta == 1e-9 for item in outcome.ledger)
    spent = outcome.epsilon_spent
    assert spent <= epsilon
    assert spent > epsilon * (1 - 1e-6)  # the last round spends what remains
    assert outcome.extra_metrics["rounds"] == len(outcome.ledger) - 1
    if time_limit == 0.0:  # bound at once: one round, which spends everything
        assert outcome.extra_metrics["time_limit_bound"] == 1.0
        assert outcome.extra_metrics["rounds"] == 1.0
        assert outcome.extra_metrics["fits_cut"] == 3.0  # the first, the last round's, the final: a step each
    else:
        assert outcome.extra_metrics["time_limit_bound"] == outcome.extra_metrics["fits_cut"] == 0.0


def test_candidates_are_the_workloads_downward_closure_weighted_by_overlap():
    workload = [(0, 1, 2), (1, 2, 3)]
    closure = downward_closure(workload)
    assert closure[:4] == [(0,), (1,), (2,), (3,)]
    assert set(closure) == {(0,), (1,), (2,), (3,), (0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (0, 1, 2), (1, 2, 3)}
    weights = candidate_weights(workload)
    assert weights[(1, 2)] == 4.0  # two attributes shared with each workload marginal
    assert weights[(0,)] == 1.0
    assert weights[(0, 1, 2)] == 3.0 + 2.0


def test_the_bias_is_the_expected_l1_norm_of_the_noise():
    """Mean L1 norm of 20,000 draws of 12 cells of N(0, 3^2) within 4 standard errors of
    sqrt(2/pi) sigma cells."""
    rng = np.random.default_rng(2)
    norms = np.abs(rng.normal(0.0, 3.0, size=(20_000, 12))).sum(axis=1)
    assert abs(norms.mean() - bias(3.0, 12)) < 4 * norms.std() / math.sqrt(norms.size)


def test_at_a_huge_budget_the_choice_is_the_worst_approximated_candidate():
    """Against a model of the 1-way marginals only (a product distribution), the candidate
    with the largest weighted L1 error is chosen: the noise on the choice is negligible."""
    rng = np.random.default_rng(3)
    data = tree_table(rng, 5_000)
    codes, sizes = data.codes.astype(np.int64), [int(k) for k in data.domain.sizes]
    publisher = AIMPublisher(workload_degree=2)
    weights = candidate_weights(publisher.workload(4))
    answers = {r: marginal_counts(codes[:, list(r)], [sizes[a] for a in r]).ravel().astype(float) for r in weights}
    model = fit(sizes, measure(codes, sizes, [(a,) for a in range(4)], 1e-3, rng), iterations=300)
    budget = Budget(1.0, 1.0, 1e-9, sigma=1e-3, epsilon=1e9, spent=[])
    chosen = publisher.choose(model, weights, answers, sizes, budget, size_limit=80.0, rng=rng)
    errors = {r: weights[r] * np.abs(answers[r] - model.counts(r)).sum() for r in weights}
    assert chosen == max(errors, key=errors.get)
    assert len(chosen) == 2


def test_at_a_large_budget_aim_recovers_a_tree_structured_table():
    data = tree_table(np.random.default_rng(6), 20_000)
    outcome = AIMPublisher(rounds=8, iterations=300).publish(data, 20.0, np.random.default_rng(7))
    published = outcome.published
    for columns in itertools.combinations(range(4), 3):
        sizes = [int(data.domain.sizes[a]) for a in columns]
        truth = marginal_counts(data.codes[:, list(columns)], sizes) / data.n
        synthetic = marginal_counts(published.codes[:, list(columns)], sizes) / published.n
        assert 0.5 * np.abs(truth - synthetic).sum() < 0.03, columns


def test_bad_settings_are_refused_naming_the_key():
    for key, value in [("delta", 1.0), ("workload_degree", 0), ("rounds", 0), ("max_model_size", 0.0),
                       ("iterations", 0), ("time_limit", -1.0)]:  # fmt: skip
        with pytest.raises(ConfigError, match=key):
            AIMPublisher(**{key: value})
    with pytest.raises(ConfigError, match="rounds=4"):  # the 1-way measurements alone would overspend
        AIMPublisher(rounds=4).check_shape(100, [2, 2, 2, 2])
