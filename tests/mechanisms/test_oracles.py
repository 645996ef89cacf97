"""Every frequency oracle: exact and empirical privacy audits, the implemented channel,
unbiasedness, closed-form variance and post-processing.

Statistical checks use fixed seeds and tolerances of Z standard errors derived from the
number of draws, and each asserts that a plausible mistake falls outside its tolerance.
"""

import math

import numpy as np
import pytest
from scipy.stats import beta

from dp2pub.audit import privacy_loss, satisfies_ldp
from dp2pub.mechanisms import GRR, OLH, OUE, RAPPOR, SUE, bits
from dp2pub.validation import ConfigError

Z = 4.5

FACTORIES = {
    "grr": lambda eps, k: GRR(epsilon=eps, k=k),
    "sue": lambda eps, k: SUE(epsilon=eps, k=k),
    "oue": lambda eps, k: OUE(epsilon=eps, k=k),
    "olh": lambda eps, k: OLH(epsilon=eps, k=k),
    "rappor": lambda eps, k: full_rank_rappor(eps, k),
}
SUPPORT_BASED = ["grr", "sue", "oue", "olh"]


def full_rank_rappor(epsilon, k):
    """RAPPOR whose Bloom design identifies every value (so least squares is unbiased)."""
    for seed in range(100):
        oracle = RAPPOR(epsilon=epsilon, k=k, num_bits=4 * k, num_hashes=2, hash_seed=seed)
        if oracle.full_rank:
            return oracle
    raise AssertionError("no full-rank design")


# ---------------------------------------------------------------- exact privacy audits
@pytest.mark.parametrize("name", ["sue", "oue", "olh"])
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
def test_exact_channel_is_epsilon_ldp_and_tight(name, epsilon):
    oracle = FACTORIES[name](epsilon, 4)
    channel = oracle.transition_matrix()
    assert np.allclose(channel.sum(axis=1), 1.0)
    assert privacy_loss(channel) == pytest.approx(oracle.privacy_loss(), rel=1e-9)
    assert satisfies_ldp(channel, epsilon)
    assert not satisfies_ldp(channel, epsilon - 1e-3)


def disjoint_rappor(epsilon, **kwargs):
    """A RAPPOR instance whose Bloom filters include two disjoint full sets (worst case)."""
    for seed in range(100):
        oracle = RAPPOR(epsilon=epsilon, k=4, num_bits=10, num_hashes=2, hash_seed=seed, **kwargs)
        sets = [set(np.flatnonzero(oracle.design[:, v])) for v in range(4)]
        if any(len(a) == 2 == len(b) and not a & b for a in sets for b in sets):
            return oracle
    raise AssertionError("no hash seed gives disjoint Bloom filters")


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 6.0])
def test_rappor_permanent_response_meets_epsilon_inf_tightly(epsilon):
    oracle = disjoint_rappor(epsilon)
    assert oracle.epsilon_inf == pytest.approx(epsilon, rel=1e-6) and oracle.epsilon_inf <= epsilon
    channel = oracle.permanent_matrix()
    assert satisfies_ldp(channel, epsilon)
    assert not satisfies_ldp(channel, epsilon - 1e-3)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_rappor_one_report_with_irr_meets_epsilon_one_tightly(epsilon):
    oracle = disjoint_rappor(epsilon, p=0.5, q=0.75, guarantee="one_report")
    assert oracle.epsilon_one == pytest.approx(epsilon, rel=1e-6) and oracle.epsilon_one <= epsilon
    assert oracle.epsilon_inf > epsilon  # the permanent loss is larger, and is logged too
    channel = oracle.transition_matrix()
    assert satisfies_ldp(channel, epsilon)
    assert not satisfies_ldp(channel, epsilon - 1e-3)


def test_rappor_refuses_a_configuration_over_budget():
    with pytest.raises(ConfigError, match=r"f=0.1 .*permanent epsilon"):
        RAPPOR(epsilon=1.0, k=8, f=0.1)
    with pytest.raises(ConfigError, match="q=None"):
        RAPPOR(epsilon=1.0, k=8, p=0.5)
    with pytest.raises(ConfigError, match="q=0.4"):
        RAPPOR(epsilon=1.0, k=8, p=0.5, q=0.4)


def test_rounded_bit_probabilities_only_lower_the_loss():
    for epsilon in (0.01, 0.7, 3.0, 12.0):
        for oracle in (SUE(epsilon=epsilon, k=8), OUE(epsilon=epsilon, k=8)):
            assert oracle.privacy_loss() <= epsilon
            assert oracle.privacy_loss() == pytest.approx(epsilon, rel=1e-5)


# ---------------------------------------------------------------- empirical audit
def clopper_pearson(successes, trials, alpha):
    low = beta.ppf(alpha / 2, successes, trials - successes + 1) if successes else 0.0
    high = beta.ppf(1 - alpha / 2, successes + 1, trials - successes) if successes < trials else 1.0
    return low, high


def event_rates(name, oracle, trials, rng):
    """How often the most revealing event occurs under input 0 and under input 1."""
    reports = [oracle.perturb(np.full(trials, x), rng) for x in (0, 1)]
    if name == "rappor":
        a, b = (set(np.flatnonzero(oracle.design[:, v])) for v in (0, 1))
        ones, zeros = sorted(a - b), sorted(b - a)
        events = [
            np.all(oracle.reported_bits(r)[:, ones] == 1, axis=1)
            & np.all(oracle.reported_bits(r)[:, zeros] == 0, axis=1)
            for r in reports
        ]
    else:  # report supports 0 but not 1
        events = [(lambda s: (s[:, 0] == 1) & (s[:, 1] == 0))(oracle.support(r)) for r in reports]
    return [int(e.sum()) for e in events]


@pytest.mark.parametrize("name", list(FACTORIES))
def test_clopper_pearson_lower_bound_on_epsilon_stays_below_epsilon(name):
    epsilon, trials = 1.0, 200_000
    oracle = FACTORIES[name](epsilon, 4)
    if name == "rappor":
        oracle = disjoint_rappor(epsilon)
    hits_0, hits_1 = event_rates(name, oracle, trials, np.random.default_rng(17))
    low_0, _ = clopper_pearson(hits_0, trials, 1e-6)
    _, high_1 = clopper_pearson(hits_1, trials, 1e-6)
    lower_bound = math.log(low_0 / high_1)
    assert lower_bound <= epsilon
    assert lower_bound >= 0.8 * epsilon  # the audit has power: a 25% excess would show


# ---------------------------------------------------------------- implemented channel
@pytest.mark.parametrize("name", SUPPORT_BASED)
def test_support_probabilities_are_p_star_and_q_star(name):
    oracle, trials = FACTORIES[name](1.5, 6), 60_000
    values = np.arange(trials) % 6
    support = oracle.support(oracle.perturb(values, np.random.default_rng(5))).astype(bool)
    own = support[np.arange(trials), values]
    other = support[np.arange(trials), (values + 1) % 6]
    for observed, expected in ((own.mean(), oracle.p_star), (other.mean(), oracle.q_star)):
        assert abs(observed - expected) <= Z * math.sqrt(expected * (1 - expected) / trials)
    assert abs(own.mean() - other.mean()) > 0.1


def test_rappor_bits_follow_their_probabilities():
    oracle, trials = RAPPOR(epsilon=2.0, k=5, num_bits=16, num_hashes=2, p=0.25, q=0.75), 50_000
    bloom = oracle.design[:, 2].astype(bool)
    reported = oracle.reported_bits(oracle.perturb(np.full(trials, 2), np.random.default_rng(9)))
    for mask, expected in ((bloom, oracle.prob_one_if_one), (~bloom, oracle.prob_one_if_zero)):
        rate = reported[:, mask].mean(axis=0)
        assert np.all(np.abs(rate - expected) <= Z * math.sqrt(expected * (1 - expected) / trials))


def test_exact_bernoulli_bits():
    for probability in (1e-6, 0.2689414213699951, 0.5, 0.9):
        up, down = bits.threshold(probability, "up"), bits.threshold(probability, "down")
        assert bits.realized(down) <= probability <= bits.realized(up)
        assert up - down <= 1
    t, draws = bits.threshold(0.3, "down"), 2_000_000
    rate = bits.bernoulli(np.random.default_rng(2), draws, t).mean()
    assert abs(rate - 0.3) <= Z * math.sqrt(0.21 / draws)
    # the refinement step decides the ties: a threshold whose top byte is 0 still works
    small = bits.bernoulli(np.random.default_rng(3), draws, bits.threshold(1e-3, "up")).mean()
    assert abs(small - 1e-3) <= Z * math.sqrt(1e-3 / draws)


# ---------------------------------------------------------------- estimators
FREQ = np.array([0.4, 0.3, 0.2, 0.1, 0.0])


def repeated(oracle, n, reps, estimator, seed):
    rng = np.random.default_rng(seed)
    values = np.repeat(np.arange(oracle.k), np.round(FREQ * n).astype(int))
    return np.array([oracle.estimate(oracle.perturb(values, rng), estimator) for _ in range(reps)])


def exact_variance(oracle, n):
    p, q = oracle.p_star, oracle.q_star
    return (FREQ * p * (1 - p) + (1 - FREQ) * q * (1 - q)) / (n * (p - q) ** 2)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_unbiased_estimator_is_unbiased_and_raw_support_is_not(name):
    oracle, n, reps = FACTORIES[name](1.0, 5), 2000, 1500
    estimates = repeated(oracle, n, reps, "unbiased", seed=21)
    stderr = estimates.std(axis=0, ddof=1) / math.sqrt(reps)
    if name in SUPPORT_BASED:
        assert stderr == pytest.approx(np.sqrt(exact_variance(oracle, n) / reps), rel=0.15)
    assert np.all(np.abs(estimates.mean(axis=0) - FREQ) <= Z * stderr)
    raw = repeated(oracle, n, 50, "none", seed=22)
    assert np.max(np.abs(raw.mean(axis=0) - FREQ)) > 20 * stderr.max()


@pytest.mark.parametrize("name", list(FACTORIES))
def test_empirical_mse_matches_the_closed_form(name):
    oracle, n, reps = FACTORIES[name](2.0, 5), 2000, 2000
    estimates = repeated(oracle, n, reps, "unbiased", seed=31)
    empirical = np.mean((estimates - FREQ) ** 2)
    theory = oracle.expected_mse(n, FREQ)
    tolerance = Z * math.sqrt(2 / reps)
    assert abs(empirical / theory - 1) <= tolerance
    assert abs(oracle.expected_mse(n / 1.5, FREQ) / theory - 1) > tolerance  # power


@pytest.mark.parametrize("name", list(FACTORIES))
@pytest.mark.parametrize("estimator", ["clip", "norm_sub", "ibu"])
def test_post_processed_estimates_are_distributions(name, estimator):
    estimates = repeated(FACTORIES[name](0.5, 5), 500, 5, estimator, seed=41)
    assert np.all(estimates >= 0)
    assert np.allclose(estimates.sum(axis=1), 1.0)


@pytest.mark.parametrize("name", ["grr", "oue", "olh"])
def test_ibu_is_close_to_the_truth_on_a_large_sample(name):
    estimate = repeated(FACTORIES[name](3.0, 5), 50_000, 1, "ibu", seed=51)[0]
    assert 0.5 * np.abs(estimate - FREQ).sum() < 0.02


def test_variance_matches_the_design_table():
    n, k = 1000, 10
    for epsilon in (0.5, 1.0, 3.0):
        e = math.exp(epsilon)
        assert GRR(epsilon=epsilon, k=k).variance(n) == pytest.approx((e + k - 2) / (e - 1) ** 2 / n)
        assert SUE(epsilon=epsilon, k=k).variance(n) == pytest.approx(
            math.exp(epsilon / 2) / (math.exp(epsilon / 2) - 1) ** 2 / n, rel=1e-6
        )
        assert OUE(epsilon=epsilon, k=k).variance(n) == pytest.approx(4 * e / (e - 1) ** 2 / n, rel=1e-6)
    # OLH meets the table exactly when g = e^eps + 1 is an integer
    epsilon = math.log(3)
    assert OLH(epsilon=epsilon, k=k).variance(n) == pytest.approx(4 * 3 / (3 - 1) ** 2 / n)
