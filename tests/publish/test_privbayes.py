"""PrivBayes: the exponential mechanism's distribution, noisy conditionals, budget and utility."""

import math

import numpy as np
import pytest

from dp2pub.data.synthetic_bn import make_synthetic_bn
from dp2pub.metrics import evaluate_marginals
from dp2pub.publish.privbayes import PrivBayesPublisher, exponential_selector, mi_sensitivity, noisy_conditionals
from dp2pub.structure.bayes_net import greedy_bayes
from dp2pub.validation import ConfigError


def test_mi_sensitivity_is_lemma_1():
    n = 1000
    assert mi_sensitivity(n) == pytest.approx(0.002 * math.log(500.5) + 0.999 * math.log(1001 / 999))
    assert mi_sensitivity(10_000) < mi_sensitivity(1000)


def test_exponential_mechanism_draws_the_softmax():
    scores = np.array([0.0, 0.5, 1.0, 1.0])
    epsilon, delta, draws = 2.0, 0.5, 100_000
    select, rng = exponential_selector(epsilon, delta), np.random.default_rng(0)
    picks = np.bincount([select(scores, rng) for _ in range(draws)], minlength=4) / draws
    expected = np.exp(scores * epsilon / (2 * delta))
    expected /= expected.sum()
    assert np.all(np.abs(picks - expected) <= 4.5 * np.sqrt(expected * (1 - expected) / draws))
    # the privacy ratio between any two candidates is exp(epsilon |s_i - s_j| / (2 delta)) at most
    assert expected[2] / expected[0] == pytest.approx(math.exp(epsilon * 1.0 / (2 * delta)))


@pytest.fixture(scope="module")
def data():
    return make_synthetic_bn(n=20_000, d=6, degree=2, k_min=2, k_max=5, strength=0.8, rng=np.random.default_rng(0))


def test_noisy_conditionals_are_distributions(data):
    network = greedy_bayes(data, 2, rng=np.random.default_rng(1))
    tables = noisy_conditionals(data, network, 0.5, np.random.default_rng(2))
    for child, table in tables.items():
        assert table.shape[1] == data.domain.sizes[child]
        assert np.all(table >= 0) and np.allclose(table.sum(axis=1), 1.0)


def test_budget_is_epsilon_and_large_budgets_reproduce_the_table(data):
    outcome = PrivBayesPublisher().publish(data, 1000.0, np.random.default_rng(3))
    assert outcome.epsilon_spent == pytest.approx(1000.0)
    assert outcome.published.n == data.n
    metrics = evaluate_marginals(data, outcome.release, np.random.default_rng(4)).metrics
    assert metrics["tvd_1way"] < 0.02
    small = PrivBayesPublisher().publish(data, 0.05, np.random.default_rng(3))
    worse = evaluate_marginals(data, small.release, np.random.default_rng(4)).metrics
    assert worse["tvd_2way"] > metrics["tvd_2way"] + 0.05  # the noise is real


@pytest.mark.parametrize(
    "kwargs,key",
    [
        ({"beta": 0}, "beta=0"),
        ({"beta": 1}, "beta=1"),
        ({"theta": 0}, "theta=0"),
        ({"degree": 0}, "degree=0"),
        ({"degree": None}, "degree=None"),
    ],
)
def test_bad_settings_name_the_key(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        PrivBayesPublisher(**kwargs)


def test_theta_chooses_a_degree_below_d(data):
    k = PrivBayesPublisher(degree=None, theta=4).choose_degree(data, 0.7)
    assert 1 <= k < data.d
    with pytest.raises(ConfigError, match="mechanism.degree=6"):
        PrivBayesPublisher(degree=6).publish(data, 1.0, np.random.default_rng(0))
