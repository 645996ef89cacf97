"""GRR: exact privacy, the implemented channel, unbiasedness and closed-form variance.

Statistical checks use fixed seeds, and tolerances of a few standard errors derived from the
number of draws; each also asserts that a plausible mistake would fall outside them.
"""

import math

import numpy as np
import pytest

from dp2pub.audit import privacy_loss, satisfies_ldp
from dp2pub.mechanisms.grr import GRR
from dp2pub.validation import ConfigError

Z = 4.5  # standard errors allowed; with a fixed seed this is a margin, not a flake rate


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 4.0, 10.0])
@pytest.mark.parametrize("k", [2, 3, 16, 150])
def test_exact_channel_is_epsilon_ldp_and_not_less(epsilon, k):
    channel = GRR(epsilon=epsilon, k=k).transition_matrix()
    assert np.allclose(channel.sum(axis=1), 1.0)
    assert privacy_loss(channel) == pytest.approx(epsilon, rel=1e-9)
    assert satisfies_ldp(channel, epsilon)
    assert not satisfies_ldp(channel, epsilon - 1e-3)


def test_p_over_q_is_e_to_the_epsilon():
    oracle = GRR(epsilon=1.3, k=7)
    assert oracle.p / oracle.q == pytest.approx(math.exp(1.3))
    assert oracle.p + (oracle.k - 1) * oracle.q == pytest.approx(1.0)


def empirical_channel(oracle, draws, rng):
    values = np.repeat(np.arange(oracle.k), draws)
    reports = oracle.perturb(values, rng)
    counts = np.bincount(values * oracle.k + reports, minlength=oracle.k**2).reshape(oracle.k, oracle.k)
    return counts / draws


@pytest.mark.parametrize("epsilon,k", [(0.5, 2), (1.0, 5), (3.0, 12)])
def test_perturb_follows_the_exact_channel(epsilon, k):
    oracle, draws = GRR(epsilon=epsilon, k=k), 40_000
    observed = empirical_channel(oracle, draws, np.random.default_rng(11))
    expected = oracle.transition_matrix()
    stderr = np.sqrt(expected * (1 - expected) / draws)
    assert np.all(np.abs(observed - expected) <= Z * stderr)
    # power: a keep rate computed with a 10% smaller epsilon would be detected
    assert np.abs(GRR(epsilon=0.9 * epsilon, k=k).p - oracle.p) > Z * stderr[0, 0]


def grid_reference(oracle, values, rng):
    """The channel as its module docstring writes it, one float uniform per user:
    keep when j < K, else other value number (j - K) // c, skipping the own value."""
    j = (rng.random(values.shape) * 2.0**53).astype(np.int64)
    other = (j - oracle.keep_count) // oracle.other_count
    other += other >= values
    return np.where(j < oracle.keep_count, values, other).astype(values.dtype)


@pytest.mark.parametrize("generator", ["PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int64])
def test_perturb_is_the_grid_channel_bit_for_bit_in_blocks_on_every_bit_generator(generator, dtype):
    """The blocked, word-reading perturb gives exactly the reports of the plain formula on
    rng.random() (several blocks and a partial one, 2-d input) and leaves the generator in
    the same state."""
    oracle = GRR(epsilon=0.8, k=130)
    values = np.random.default_rng(0).integers(0, 130, size=(3, 40_000)).astype(dtype)
    fast_rng, plain_rng = (np.random.Generator(getattr(np.random, generator)(7)) for _ in range(2))
    reports = oracle.perturb(values, fast_rng)
    np.testing.assert_array_equal(reports, grid_reference(oracle, values, plain_rng))
    assert reports.dtype == dtype and fast_rng.random() == plain_rng.random()
    assert not np.array_equal(
        reports, grid_reference(oracle, values, np.random.Generator(getattr(np.random, generator)(8)))
    )


def test_perturb_keeps_dtype_and_shape_and_never_reports_out_of_domain():
    oracle = GRR(epsilon=0.7, k=9)
    values = np.random.default_rng(0).integers(0, 9, size=(3, 1000)).astype(np.uint8)
    reports = oracle.perturb(values, np.random.default_rng(1))
    assert reports.dtype == np.uint8 and reports.shape == values.shape
    assert reports.min() >= 0 and reports.max() <= 8


@pytest.mark.parametrize("bad", [-1, 9])
def test_values_outside_the_domain_are_refused(bad):
    with pytest.raises(ConfigError, match=f"value={bad}.*0..8"):
        GRR(epsilon=1.0, k=9).perturb(np.array([0, bad, 3]), np.random.default_rng(0))


@pytest.mark.parametrize("epsilon", [0, -1, math.nan, math.inf, "1", None])
def test_bad_epsilon_is_refused(epsilon):
    with pytest.raises(ConfigError, match="epsilon"):
        GRR(epsilon=epsilon, k=4)


def test_domain_of_one_value_is_refused():
    with pytest.raises(ConfigError, match="k=1"):
        GRR(epsilon=1.0, k=1)


def repeated_estimates(oracle, freq, n, reps, estimator, seed):
    """``reps`` independent estimates from ``n`` users whose values have frequencies ``freq``."""
    rng = np.random.default_rng(seed)
    values = np.repeat(np.arange(oracle.k), np.round(np.asarray(freq) * n).astype(int))
    reports = oracle.perturb(np.broadcast_to(values, (reps, values.size)), rng)
    estimates = [oracle.estimate(row, estimator) for row in reports]
    return np.array(estimates), np.bincount(values, minlength=oracle.k) / values.size


FREQ = [0.5, 0.25, 0.15, 0.1, 0.0]


def test_unbiased_estimator_is_unbiased_and_the_raw_histogram_is_not():
    oracle, n, reps = GRR(epsilon=1.0, k=5), 2000, 3000
    estimates, truth = repeated_estimates(oracle, FREQ, n, reps, "unbiased", seed=5)
    exact_var = (
        oracle.q * (1 - oracle.q) / (oracle.p - oracle.q) ** 2
        + truth * (1 - oracle.p - oracle.q) / (oracle.p - oracle.q)
    ) / n
    stderr = np.sqrt(exact_var / reps)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) <= Z * stderr)
    raw, _ = repeated_estimates(oracle, FREQ, n, reps, "none", seed=5)
    assert np.max(np.abs(raw.mean(axis=0) - truth)) > 20 * stderr.max()


def test_empirical_mse_matches_the_closed_form():
    oracle, n, reps = GRR(epsilon=1.0, k=5), 2000, 4000
    estimates, truth = repeated_estimates(oracle, FREQ, n, reps, "unbiased", seed=6)
    empirical = np.mean((estimates - truth) ** 2)
    theory = oracle.expected_mse(n)
    # the mean of reps squared near-normal errors has relative sd <= sqrt(2 / reps)
    tolerance = Z * math.sqrt(2 / reps)
    assert abs(empirical / theory - 1) <= tolerance
    # power: the f -> 0 approximation (variance()) is distinguishable here
    assert abs(oracle.variance(n) / theory - 1) > tolerance


@pytest.mark.parametrize("epsilon,k", [(0.5, 3), (2.0, 10), (6.0, 100)])
def test_design_table_variance_is_the_exact_variance_at_zero_frequency(epsilon, k):
    oracle, n = GRR(epsilon=epsilon, k=k), 1000
    p, q = oracle.p, oracle.q
    assert oracle.variance(n) == pytest.approx(q * (1 - q) / ((p - q) ** 2 * n))


@pytest.mark.parametrize("estimator", ["clip", "norm_sub"])
def test_post_processed_estimates_are_distributions(estimator):
    estimates, _ = repeated_estimates(GRR(epsilon=0.5, k=5), FREQ, 500, 200, estimator, seed=7)
    assert np.all(estimates >= 0)
    assert np.allclose(estimates.sum(axis=1), 1.0)


def test_unknown_estimator_lists_the_choices():
    with pytest.raises(ConfigError, match="none, unbiased, clip, norm_sub"):
        GRR(epsilon=1.0, k=3).estimate(np.array([0, 1]), "mle")


def test_huge_budgets_keep_every_value_without_numeric_warnings():
    import warnings

    values = np.arange(10) % 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for epsilon in (30.0, 200.0, 1000.0):
            for k in (4, 16, 1000):
                assert np.array_equal(GRR(epsilon=epsilon, k=k).perturb(values, np.random.default_rng(0)), values)
