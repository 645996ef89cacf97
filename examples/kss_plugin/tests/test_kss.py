"""The k-subset plugin: exact channel, implemented channel, estimator statistics, and the
plugin running through dp2pub's door as a whole-table mechanism.

Statistical checks use fixed seeds and tolerances of Z standard errors derived from the
number of draws, and each asserts that a plausible mistake falls outside its tolerance.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from dp2pub import ConfigError, run_job
from dp2pub.audit import privacy_loss, satisfies_ldp
from dp2pub.registry import build_dataset, build_publisher
from dp2pub.testing import OracleCase, PublisherCase, parametrize_with_checks
from scipy.stats import chi2

from kss_plugin import KSSPublisher, KSubset, load_survey
from kss_plugin.oracle import optimal_subset_size

Z = 4.5
TARGET = {"_target_": "kss_plugin.mechanism.KSSPublisher"}


def paper_p_q(epsilon: float, k: int, m: int) -> tuple[float, float]:
    """p* and q* of the unrounded mechanism, from Ye and Barg's normalizer Z."""
    z = math.comb(k - 1, m - 1) * math.exp(epsilon) + math.comb(k - 1, m)
    return math.comb(k - 1, m - 1) * math.exp(epsilon) / z, (
        math.comb(k - 2, m - 2) * math.exp(epsilon) if m >= 2 else 0.0
    ) / z + math.comb(k - 2, m - 1) / z


# ---------------------------------------------------------------- exact channel
@pytest.mark.parametrize("epsilon", [0.05, 0.3, 1.0, 4.0])
@pytest.mark.parametrize(("k", "subset_size"), [(2, None), (4, None), (7, None), (7, 3), (9, 2)])
def test_exact_channel_meets_epsilon_and_fails_just_below(epsilon, k, subset_size):
    oracle = KSubset(epsilon=epsilon, k=k, subset_size=subset_size)
    channel = oracle.transition_matrix()
    assert channel.shape == (k, math.comb(k, oracle.subset_size))
    assert np.allclose(channel.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert privacy_loss(channel) == pytest.approx(oracle.privacy_loss(), rel=1e-9)
    assert oracle.privacy_loss() <= epsilon
    assert satisfies_ldp(channel, epsilon)
    assert not satisfies_ldp(channel, epsilon * (1 - 1e-6))


@pytest.mark.parametrize("epsilon", [12.0, 40.0, 700.0])
def test_a_huge_budget_keeps_the_realized_loss_below_it(epsilon):
    oracle = KSubset(epsilon=epsilon, k=6)
    assert oracle.subset_size == 1
    assert oracle.privacy_loss() <= epsilon
    assert satisfies_ldp(oracle.transition_matrix(), epsilon)


def test_transition_matrix_is_the_papers_channel_up_to_the_grid():
    oracle = KSubset(epsilon=1.3, k=6, subset_size=2)
    z = math.comb(5, 1) * math.exp(1.3) + math.comb(5, 2)
    holds = oracle.subsets().T  # (x, S)
    channel = oracle.transition_matrix()
    assert np.allclose(channel[holds], math.exp(1.3) / z, rtol=1e-8)
    assert np.allclose(channel[~holds], 1 / z, rtol=1e-8)


@pytest.mark.parametrize(("epsilon", "k", "subset_size"), [(0.5, 5, 2), (1.0, 8, None), (2.0, 6, 3), (1.0, 4, 1)])
def test_p_star_and_q_star_match_the_transition_matrix(epsilon, k, subset_size):
    oracle = KSubset(epsilon=epsilon, k=k, subset_size=subset_size)
    channel, holds = oracle.transition_matrix(), oracle.subsets()  # (x, S), (S, v)
    support = channel @ holds  # [x, v] = Pr[v in S | x]
    assert np.allclose(np.diag(support), oracle.p_star, rtol=1e-12)
    assert np.allclose(support[~np.eye(k, dtype=bool)], oracle.q_star, rtol=1e-12)
    p, q = paper_p_q(epsilon, k, oracle.subset_size)  # closed form (2), (3) before rounding
    assert oracle.p_star == pytest.approx(p, rel=1e-8) and oracle.p_star <= p
    assert oracle.q_star == pytest.approx(q, rel=1e-8)
    assert oracle.ratio == pytest.approx(math.exp(oracle.privacy_loss()), rel=1e-12)


def test_default_subset_size_is_the_nearest_integer_to_k_over_e_eps_plus_one():
    assert optimal_subset_size(1.0, 10) == 3  # 10 / 3.718 = 2.69
    assert optimal_subset_size(0.01, 4) == 2  # 1.99
    assert optimal_subset_size(0.01, 3) == 1  # 1.49
    assert optimal_subset_size(5.0, 100) == 1  # 0.67
    assert optimal_subset_size(8.0, 100) == 1  # 0.03: at least 1
    for k in range(2, 40):
        for epsilon in (1e-6, 0.1, 1.0):
            assert 1 <= optimal_subset_size(epsilon, k) <= k - 1


@pytest.mark.parametrize("bad", [0, 4, -1, 2.5, True, "2"])
def test_a_subset_size_outside_1_to_k_minus_1_is_refused(bad):
    with pytest.raises(ConfigError, match="subset_size"):
        KSubset(epsilon=1.0, k=4, subset_size=bad)


# ---------------------------------------------------------------- implemented channel
def subset_frequencies(oracle: KSubset, value: int, trials: int, seed: int) -> np.ndarray:
    """How often ``perturb`` reports each subset of :meth:`KSubset.subsets` for ``value``."""
    support = oracle.support(oracle.perturb(np.full(trials, value), np.random.default_rng(seed)))
    assert np.all(support.sum(axis=1) == oracle.subset_size)
    powers = 1 << np.arange(oracle.k)
    codes, outputs = support.astype(np.int64) @ powers, oracle.subsets().astype(np.int64) @ powers
    order = np.argsort(outputs)
    return np.bincount(order[np.searchsorted(outputs[order], codes)], minlength=len(outputs))


def g_statistic(observed: np.ndarray, expected_probs: np.ndarray) -> float:
    expected = observed.sum() * expected_probs
    seen = observed > 0
    return 2.0 * float(np.sum(observed[seen] * np.log(observed[seen] / expected[seen])))


@pytest.mark.parametrize("value", [0, 3])
def test_perturb_draws_every_subset_with_its_channel_probability(value):
    oracle, trials = KSubset(epsilon=1.5, k=5, subset_size=2), 200_000
    counts = subset_frequencies(oracle, value, trials, seed=11 + value)
    row = oracle.transition_matrix()[value]
    critical = chi2.ppf(1 - 1e-6, len(row) - 1)
    assert g_statistic(counts, row) <= critical
    uniform = np.full(len(row), 1 / len(row))  # a plausible mistake: ignoring the value
    assert g_statistic(counts, uniform) > critical


def test_perturb_is_reproducible_and_refuses_values_outside_the_domain():
    oracle, values = KSubset(epsilon=1.0, k=11), np.arange(1000) % 11
    first = oracle.perturb(values, np.random.default_rng(3))
    assert first.shape == (1000, 2) and first.dtype == np.uint8
    assert np.array_equal(first, oracle.perturb(values, np.random.default_rng(3)))
    assert np.array_equal(oracle.support_counts(first), oracle.support(first).sum(axis=0))
    with pytest.raises(ConfigError, match="value"):
        oracle.perturb(np.array([0, 11]), np.random.default_rng(0))


# ---------------------------------------------------------------- estimator statistics
def simulated_estimates(oracle: KSubset, users: int, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``replicates`` unbiased estimates, each from ``users`` users of one fixed column whose
    frequencies are proportional to 1, 1/2, 1/4, ... (the last value absent), and the truth."""
    weights = np.append(0.5 ** np.arange(oracle.k - 1), 0.0)
    column = np.repeat(np.arange(oracle.k), np.floor(weights / weights.sum() * users).astype(int))
    column = np.append(column, np.zeros(users - column.size, dtype=int))
    truth = np.bincount(column, minlength=oracle.k) / users
    reports = oracle.perturb(np.tile(column, replicates), np.random.default_rng(seed))
    support = oracle.support(reports).reshape(replicates, users, oracle.k).sum(axis=1)
    estimates = np.array([oracle.estimate_counts(c, users, "unbiased") for c in support])
    return estimates, truth


@pytest.fixture(scope="module")
def simulation() -> tuple[KSubset, np.ndarray, np.ndarray, int]:
    oracle, users = KSubset(epsilon=1.0, k=6), 2000
    estimates, truth = simulated_estimates(oracle, users, replicates=2000, seed=7)
    return oracle, estimates, truth, users


def test_unbiased_estimate_has_mean_the_truth(simulation):
    oracle, estimates, truth, _ = simulation
    tolerance = Z * estimates.std(axis=0, ddof=1) / math.sqrt(len(estimates))
    assert np.all(np.abs(estimates.mean(axis=0) - truth) <= tolerance)
    assert tolerance.max() < 0.01  # power: a bias of 1% would show
    raw = estimates * (oracle.p_star - oracle.q_star) + oracle.q_star  # the raw support fractions C / n
    assert np.any(np.abs(raw.mean(axis=0) - truth) > tolerance)


def test_closed_form_expected_mse_matches_monte_carlo(simulation):
    oracle, estimates, truth, users = simulation
    per_replicate = ((estimates - truth) ** 2).mean(axis=1)  # the squared error averaged over values
    observed, standard_error = per_replicate.mean(), per_replicate.std(ddof=1) / math.sqrt(len(per_replicate))
    expected = oracle.expected_mse(users, truth)
    assert abs(observed - expected) <= Z * standard_error
    assert Z * standard_error < 0.1 * expected  # power: a 10% error in the closed form would show
    grr = KSubset(epsilon=1.0, k=oracle.k, subset_size=1).expected_mse(users)  # m = 1 (GRR) is worse here
    assert grr > observed + Z * standard_error


# ---------------------------------------------------------------- dp2pub's conformance suite
@parametrize_with_checks(
    publishers=[
        PublisherCase(KSSPublisher, settings={"estimator": "unbiased"}, bad={"strategy": "both"}),
        PublisherCase(KSSPublisher.config_builder(), settings={"subset_size": 1}, bad={"subset_size": 0}),
    ],
    oracles=[KSubset, OracleCase(KSubset, options={"subset_size": 2}, k=5, bad={"subset_size": 5})],
)
def test_conformance(check):
    check()


# ---------------------------------------------------------------- through dp2pub's door
def test_build_publisher_by_target_gives_a_kss_publisher_with_its_own_key():
    publisher = build_publisher(TARGET)
    assert isinstance(publisher, KSSPublisher) and publisher.name == "kss"
    assert build_publisher({**TARGET, "subset_size": 2}).options == {"subset_size": 2}
    with pytest.raises(ConfigError, match=r"mechanism\.subset\b"):
        build_publisher({**TARGET, "subset": 2})
    with pytest.raises(ConfigError, match=r"mechanism\.simulate"):
        build_publisher({**TARGET, "simulate": "aggregates"})


def job(**overrides: object) -> dict:
    cfg = {
        "epsilon": 1.0,
        "seed": 0,
        "dataset": {"name": "synthetic", "n": 2000, "d": 3, "k_min": 4, "k_max": 6},
        "mechanism": dict(TARGET),
        "metrics": {"models": []},
    }
    return {**cfg, **overrides}


def test_run_job_publishes_a_table_within_the_budget():
    result = run_job(job())
    assert result.metrics["epsilon_spent"] <= 1.0
    assert len(result.ledger) == 3
    assert 0.0 <= result.metrics["tvd_1way"] <= 1.0
    again = run_job(job())
    assert again.metrics["tvd_1way"] == result.metrics["tvd_1way"]


def test_run_job_refuses_a_subset_size_too_large_for_an_attribute():
    with pytest.raises(ConfigError, match=r"mechanism\.subset_size"):
        run_job(job(mechanism={**TARGET, "subset_size": 3}, dataset={"name": "car"}))  # car has 3-value attributes


def test_load_survey_reads_the_packaged_table():
    data = load_survey()
    assert (data.n, data.d, data.name, data.target) == (2000, 6, "survey", "health")
    assert list(data.domain.names) == ["age", "sex", "region", "education", "smoker", "health"]
    assert list(data.domain.sizes) == [5, 2, 5, 3, 2, 3]
    sample = load_survey(np.random.default_rng(1), n=500)
    assert sample.n == 500
    with pytest.raises(ConfigError, match="n"):
        load_survey(n=5000)
    by_target = build_dataset({"_target_": "kss_plugin.data.load_survey", "n": 300}, np.random.default_rng(0))
    assert by_target.n == 300


def test_run_job_on_the_survey_with_every_estimator_path():
    survey = {"_target_": "kss_plugin.data.load_survey"}
    for mechanism in ({}, {"strategy": "sample"}, {"estimator": "ibu"}, {"subset_size": 1}):
        result = run_job(job(dataset=survey, mechanism={**TARGET, **mechanism}))
        assert result.metrics["epsilon_spent"] <= 1.0


def test_every_subset_of_the_exact_channel_is_reachable():
    oracle = KSubset(epsilon=0.7, k=6, subset_size=3)
    expected = {frozenset(s) for s in itertools.combinations(range(6), 3)}
    reports = oracle.support(oracle.perturb(np.zeros(20_000, dtype=int), np.random.default_rng(2)))
    assert {frozenset(np.flatnonzero(r)) for r in np.unique(reports, axis=0)} == expected
