"""Aggregate-level simulation (``simulate_counts``) against the records path, oracle by oracle.

The counts drawn from their closed-form distribution must be distributed exactly as
``report_counts(perturb(values))``: same means, same covariance matrix (the exact one, which
for GRR is a sum of multinomial covariances, for unary encoding and RAPPOR's bit sums
diagonal), and the same
distribution of the estimate's squared error (a two-sample test), over many seeds. Each test
is also shown to fail against a channel off by 15% in epsilon, so it does not pass vacuously.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy import stats

from dp2pub.mechanisms import GRR, OLH, OUE, RAPPOR, SUE, FrequencyOracle

TRUE = np.array([900, 600, 300, 150, 50, 0])  # a skewed histogram with an empty value
REPS = 2000
#: Bonferroni-safe z for the ~(k + k^2) comparisons of one test (two-sided 1e-5 each).
Z = 4.5
#: Two-sample test level: a pass needs p above it.
ALPHA = 1e-3
#: RAPPOR also with its instantaneous response (IRR), which changes both bit probabilities.
ORACLES = [(GRR, 1.0), (SUE, 1.0), (OUE, 1.0), (RAPPOR, 2.0), (functools.partial(RAPPOR, p=0.25, q=0.75), 2.0)]
IDS = ["grr", "sue", "oue", "rappor", "rappor_irr"]


def records_counts(oracle: FrequencyOracle, rng: np.random.Generator) -> np.ndarray:
    values = rng.permutation(np.repeat(np.arange(TRUE.size), TRUE))
    return np.stack([oracle.report_counts(oracle.perturb(values, rng)) for _ in range(REPS)])


def aggregate_counts(oracle: FrequencyOracle, rng: np.random.Generator) -> np.ndarray:
    return np.stack([oracle.simulate_counts(TRUE, rng) for _ in range(REPS)])


def exact_moments(oracle: FrequencyOracle) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of the support counts given TRUE, from the realized channel."""
    if isinstance(oracle, GRR):
        q = oracle.channel_matrix()
        mean = TRUE @ q
        cov = np.diag(mean) - np.einsum("u,uv,uw->vw", TRUE, q, q)
        return mean, cov
    if isinstance(oracle, RAPPOR):  # bit j is set in the Bloom filters of N_j users
        ones, one, zero = oracle.design.astype(np.int64) @ TRUE, oracle.prob_one_if_one, oracle.prob_one_if_zero
        mean = ones * one + (TRUE.sum() - ones) * zero
        return mean, np.diag(ones * one * (1 - one) + (TRUE.sum() - ones) * zero * (1 - zero))
    p, qq, n = oracle.p_star, oracle.q_star, TRUE.sum()
    mean = TRUE * p + (n - TRUE) * qq
    return mean, np.diag(TRUE * p * (1 - p) + (n - TRUE) * qq * (1 - qq))


def moments_agree(samples: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> bool:
    """Sample mean and covariance within Z standard errors of the exact ones, entry by entry."""
    sd = np.sqrt(np.diag(cov))
    mean_ok = np.all(np.abs(samples.mean(axis=0) - mean) <= Z * sd / np.sqrt(REPS) + 1e-12)
    se_cov = np.sqrt((np.outer(sd**2, sd**2) + cov**2) / (REPS - 1))
    cov_ok = np.all(np.abs(np.cov(samples, rowvar=False) - cov) <= Z * se_cov + 1e-12)
    return bool(mean_ok and cov_ok)


def squared_errors(oracle: FrequencyOracle, samples: np.ndarray) -> np.ndarray:
    truth = TRUE / TRUE.sum()
    return np.array([np.mean((oracle.estimate_counts(c, TRUE.sum()) - truth) ** 2) for c in samples])


@pytest.mark.parametrize("kind,epsilon", ORACLES, ids=IDS)
def test_both_paths_have_the_exact_mean_and_covariance_of_the_counts(kind, epsilon):
    oracle = kind(epsilon=epsilon, k=TRUE.size)
    mean, cov = exact_moments(oracle)
    assert moments_agree(records_counts(oracle, np.random.default_rng(1)), mean, cov)
    assert moments_agree(aggregate_counts(oracle, np.random.default_rng(2)), mean, cov)
    off = kind(epsilon=1.15 * epsilon, k=TRUE.size)  # the check can fail: a wrong channel does
    assert not moments_agree(aggregate_counts(off, np.random.default_rng(2)), mean, cov)


@pytest.mark.parametrize("kind,epsilon", ORACLES, ids=IDS)
def test_the_estimates_squared_error_has_one_distribution_on_both_paths(kind, epsilon):
    oracle = kind(epsilon=epsilon, k=TRUE.size)
    records = squared_errors(oracle, records_counts(oracle, np.random.default_rng(3)))
    aggregates = squared_errors(oracle, aggregate_counts(oracle, np.random.default_rng(4)))
    assert stats.ks_2samp(records, aggregates).pvalue > ALPHA
    expected = oracle.expected_mse(TRUE.sum())  # and both have the closed-form mean
    for errors in (records, aggregates):
        assert abs(errors.mean() - expected) <= Z * errors.std(ddof=1) / np.sqrt(REPS)
    off = kind(epsilon=1.15 * epsilon, k=TRUE.size)
    shifted = squared_errors(oracle, aggregate_counts(off, np.random.default_rng(4)))
    assert stats.ks_2samp(records, shifted).pvalue < ALPHA  # the test has the power to tell


def test_grr_ibu_from_the_histogram_is_the_records_estimate():
    oracle, rng = GRR(epsilon=1.0, k=TRUE.size), np.random.default_rng(5)
    reports = oracle.perturb(np.repeat(np.arange(TRUE.size), TRUE), rng)
    from_counts = oracle.estimate_counts(oracle.support_counts(reports), reports.size, "ibu")
    np.testing.assert_array_equal(from_counts, oracle.estimate(reports, "ibu"))


def test_ibu_but_grr_s_and_olh_have_no_aggregate_form():
    for oracle in (SUE(epsilon=1.0, k=6), RAPPOR(epsilon=1.0, k=6, num_bits=16, num_hashes=2)):
        with pytest.raises(ValueError, match="ibu needs the reports"):
            oracle.estimate_counts(oracle.simulate_counts(TRUE, np.random.default_rng(0)), TRUE.sum(), "ibu")
    olh = OLH(epsilon=1.0, k=6)
    assert not olh.simulates_counts
    with pytest.raises(NotImplementedError, match="no exact aggregate form"):
        olh.simulate_counts(TRUE, np.random.default_rng(0))


@pytest.mark.parametrize("bad", [np.array([1, 2]), np.array([1, -1, 0, 0, 0, 0]), np.full(6, 1.5)])
def test_simulate_counts_refuses_what_is_not_a_histogram_of_the_domain(bad):
    with pytest.raises(ValueError, match="must be 6 non-negative integers"):
        GRR(epsilon=1.0, k=6).simulate_counts(bad, np.random.default_rng(0))


def test_a_billion_users_are_simulated_from_their_histogram_and_keep_their_total():
    rng = np.random.default_rng(6)
    true = rng.multinomial(10**9, np.full(16, 1 / 16))
    for oracle in (GRR(epsilon=1.0, k=16), OUE(epsilon=1.0, k=16)):
        counts = oracle.simulate_counts(true, rng)
        assert counts.shape == (16,) and counts.dtype.kind == "i"
        if isinstance(oracle, GRR):
            assert counts.sum() == 10**9  # one report per user
