"""``mechanism=inpht`` (Cormode, Kulkarni & Srivastava, SIGMOD 2018): the Fourier basis and
its inverse on exact coefficients, the users' exact channel (epsilon, not less), an exact
ledger, unbiased coefficients with their closed-form variance, marginals read off one set of
coefficients that agree, and the refusals.

Statistical checks are z-tests at ``Z = 4.5`` (two-sided level 6.8e-6 a value) on fixed
seeds: they cannot flake, and each is shown to fail on an estimator or a variance broken on
purpose, so none passes vacuously."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.linalg import hadamard
from scipy.stats import chisquare

from dp2pub.data.dataset import Dataset
from dp2pub.data.domain import Domain
from dp2pub.data.marginals import marginal_counts
from dp2pub.mechanisms.grr import GRR
from dp2pub.publish.inpht import (
    Basis,
    InpHTPublisher,
    InpHTRelease,
    basis_size,
    coefficient_variance,
    parities,
    signs,
)
from dp2pub.validation import ConfigError

Z = 4.5


def table(codes: np.ndarray, sizes: list[int]) -> Dataset:
    return Dataset(np.asarray(codes, dtype=np.int64), Domain.from_sizes(sizes))


def correlated(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Binary records along a chain: each attribute copies the previous one with probability
    0.7, else a coin of bias 0.3 (every coefficient of every order is non-zero)."""
    codes = np.empty((n, d), dtype=np.int64)
    codes[:, 0] = rng.random(n) < 0.3
    for j in range(1, d):
        copy = rng.random(n) < 0.7
        codes[:, j] = np.where(copy, codes[:, j - 1], rng.random(n) < 0.3)
    return codes


def exact_coefficients(codes: np.ndarray, basis: Basis) -> np.ndarray:
    """Each set's mean character over the records, by brute force."""
    return np.array([np.mean((-1.0) ** codes[:, list(s)].sum(axis=1)) for s in basis.index])


# ---------------------------------------------------------------- the basis and its inverse
def test_the_basis_is_every_set_of_one_to_ways_attributes_in_order():
    basis = Basis.of(5, 3)
    assert basis.size == basis_size(5, 3) == 5 + 10 + 10
    assert list(basis.index)[:7] == [(0,), (1,), (2,), (3,), (4,), (0, 1), (0, 2)]
    for s, j in basis.index.items():
        assert tuple(basis.members[j][basis.valid[j]]) == s
    assert Basis.of(2, 3).size == basis_size(2, 3) == 3  # ways beyond d: every non-empty set


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5])
def test_the_sign_matrix_is_sylvesters_hadamard_matrix(k):
    assert np.array_equal(signs(k), hadamard(1 << k))


def test_the_parity_of_each_record_on_its_drawn_set_is_its_bits_sum_mod_2():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, size=(1_000, 6))
    basis = Basis.of(6, 3)
    chosen = rng.integers(basis.size, size=1_000)
    expected = [sum(bits[i, a] for a in list(basis.index)[j]) % 2 for i, j in enumerate(chosen)]
    assert parities(bits, basis, chosen).tolist() == expected


def test_exact_coefficients_give_every_marginal_exactly_in_any_column_order():
    rng = np.random.default_rng(1)
    sizes = [2, 2, 1, 2, 2]  # attribute 2 has one value: its character is 1
    codes = correlated(500, 5, rng)
    codes[:, 2] = 0
    binary = (0, 1, 3, 4)
    basis = Basis.of(len(binary), 3)
    coefficients = exact_coefficients(codes[:, binary], basis)
    release = InpHTRelease(coefficients, np.full(basis.size, 500), basis, binary, tuple(sizes), 3, "unbiased")
    for way in (1, 2, 3):
        for columns in itertools.permutations(range(5), way):
            truth = marginal_counts(codes[:, list(columns)], np.array(sizes)[list(columns)]) / 500
            assert release.marginal(columns).shape == truth.shape
            np.testing.assert_allclose(release.marginal(columns), truth, atol=1e-12)


# ---------------------------------------------------------------- privacy
def user_channel(d: int, ways: int, epsilon: float) -> np.ndarray:
    """``P[x, (j, r)]``: a record ``x`` of ``d`` bits draws set ``j`` uniformly and reports
    its parity ``r`` through the publisher's binary GRR (the parities by :func:`parities`)."""
    basis = Basis.of(d, ways)
    records = np.array(list(itertools.product((0, 1), repeat=d)))
    grr = GRR(epsilon=epsilon, k=2).channel_matrix()
    channel = np.empty((len(records), basis.size, 2))
    for j in range(basis.size):
        parity = parities(records, basis, np.full(len(records), j))
        channel[:, j, :] = grr[parity] / basis.size
    return channel.reshape(len(records), -1)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_the_users_channel_meets_epsilon_exactly_and_not_less(epsilon):
    channel = user_channel(4, 3, epsilon)
    np.testing.assert_allclose(channel.sum(axis=1), 1.0, rtol=1e-12)
    loss = float(np.max(np.log(channel[:, None, :] / channel[None, :, :])))
    assert loss <= epsilon
    assert loss > epsilon * (1 - 1e-9)  # the whole budget is used: every set separates some records


def test_the_draw_of_a_coefficient_does_not_depend_on_the_record():
    """The channel above assumes a uniform draw independent of the record: two tables of the
    same shape published with the same seed draw the same coefficients (the same users behind
    each), and their counts are uniform over the coefficients (chi-square at the 1e-4 level)."""
    rng = np.random.default_rng(10)
    first = table(correlated(20_000, 5, rng), [2] * 5)
    second = table(1 - first.codes, [2] * 5)  # every record changed
    users = [InpHTPublisher().publish(t, 1.0, np.random.default_rng(11)).release.users for t in (first, second)]
    assert np.array_equal(users[0], users[1])
    expected = 20_000 / users[0].size
    assert chisquare(users[0], np.full(users[0].size, expected)).pvalue > 1e-4


def test_every_user_reports_once_and_the_ledger_spends_epsilon_exactly():
    data = table(correlated(300, 4, np.random.default_rng(2)), [2] * 4)
    outcome = InpHTPublisher(ways=2).publish(data, 0.7, np.random.default_rng(3))
    assert [(item.phase, item.epsilon, item.users) for item in outcome.ledger] == [("report", 0.7, "all")]
    assert outcome.epsilon_spent == 0.7
    assert outcome.extra_metrics["coefficients"] == 4 + 6


# ---------------------------------------------------------------- estimation
def draws(data: Dataset, epsilon: float, reps: int, ways: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """The coefficients' estimates and the users who drew each, over ``reps`` seeds."""
    estimates, users = [], []
    publisher = InpHTPublisher(ways=ways, estimator="unbiased")
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        release = publisher.publish(data, epsilon, rng).release
        estimates.append(release.coefficients)
        users.append(release.users)
    return np.array(estimates), np.array(users)


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_a_coefficient_is_unbiased_with_its_closed_form_variance(epsilon):
    n, d, reps = 600, 3, 3_000
    data = table(correlated(n, d, np.random.default_rng(4)), [2] * d)
    basis = Basis.of(d, 2)
    truth = exact_coefficients(data.codes, basis)
    estimates, users = draws(data, epsilon, reps)
    oracle = GRR(epsilon=epsilon, k=2)
    variance = coefficient_variance(truth, users, n, oracle).mean(axis=0)  # E over the draws
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < Z * np.sqrt(variance / reps))
    ratio = estimates.var(axis=0, ddof=1) / variance
    tolerance = Z * math.sqrt(2 / (reps - 1))  # relative standard error of a sample variance
    assert np.all(np.abs(ratio - 1) < tolerance)
    # the same test refuses the variance of all n users instead of the drawers (T = 6 times
    # smaller), and, where randomized response adds little (epsilon 4), the variance without
    # the sampling of the drawers
    all_users = coefficient_variance(truth, np.full_like(users, n), n, oracle).mean(axis=0)
    assert np.all(np.abs(estimates.var(axis=0, ddof=1) / all_users - 1) > tolerance)
    if epsilon > 1:
        noise_only = (4 * oracle.p * oracle.q / (oracle.p - oracle.q) ** 2 / users).mean(axis=0)
        assert np.all(np.abs(estimates.var(axis=0, ddof=1) / noise_only - 1) > tolerance)


def test_the_reports_raw_parities_are_biased_towards_zero():
    """The debiasing is needed: the reports' mean character, not divided by ``p - q``, misses
    the coefficients by more than the test's tolerance (the unbiasedness test is not vacuous)."""
    n, d, reps, epsilon = 600, 3, 3_000, 0.5
    data = table(correlated(n, d, np.random.default_rng(4)), [2] * d)
    truth = exact_coefficients(data.codes, Basis.of(d, 2))
    estimates, users = draws(data, epsilon, reps)
    oracle = GRR(epsilon=epsilon, k=2)
    raw = estimates * (oracle.p - oracle.q)  # the reports' mean character
    variance = coefficient_variance(truth, users, n, oracle).mean(axis=0)
    assert np.all(np.abs(raw.mean(axis=0) - truth) > Z * np.sqrt(variance / reps))


def test_unbiased_marginals_sum_to_one_and_agree_on_every_shared_attribute():
    data = table(correlated(2_000, 5, np.random.default_rng(5)), [2] * 5)
    release = InpHTPublisher(ways=3, estimator="unbiased").publish(data, 0.3, np.random.default_rng(6)).release
    triples = list(itertools.combinations(range(5), 3))
    tables = {c: release.marginal(c) for c in triples}
    assert any(t.min() < 0 for t in tables.values())  # noisy enough to go negative
    for c, t in tables.items():
        assert abs(t.sum() - 1) < 1e-12
        for axis, pair in ((2, c[:2]), (0, c[1:])):
            np.testing.assert_allclose(t.sum(axis=axis), release.marginal(pair), atol=1e-12)


@pytest.mark.parametrize("estimator", ["norm_sub", "clip"])
def test_post_processed_marginals_are_distributions(estimator):
    data = table(correlated(2_000, 5, np.random.default_rng(5)), [2] * 5)
    release = InpHTPublisher(ways=3, estimator=estimator).publish(data, 0.3, np.random.default_rng(6)).release
    for columns in itertools.combinations(range(5), 3):
        answer = release.marginal(columns)
        assert answer.min() >= 0 and abs(answer.sum() - 1) < 1e-12


def test_a_coefficient_nobody_drew_is_zero_and_counted():
    data = table(correlated(5, 4, np.random.default_rng(7)), [2] * 4)
    outcome = InpHTPublisher(ways=2).publish(data, 1.0, np.random.default_rng(8))
    users = outcome.release.users
    assert users.sum() == 5 and users.size == 10  # every user drew one of the 4 + 6 coefficients
    assert outcome.extra_metrics["coefficients_unmeasured"] == np.count_nonzero(users == 0) > 0
    assert np.all(outcome.release.coefficients[users == 0] == 0.0)


# ---------------------------------------------------------------- refusals
def test_wide_tables_bad_settings_and_marginals_beyond_ways_are_refused():
    with pytest.raises(ConfigError, match=r"^dataset=\[2, 3\] is invalid: expected a binary table"):
        InpHTPublisher().publish(table(np.zeros((10, 2)), [2, 3]), 1.0, np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"^dataset=\[1, 1\] is invalid"):
        InpHTPublisher().publish(table(np.zeros((10, 2)), [1, 1]), 1.0, np.random.default_rng(0))
    with pytest.raises(ConfigError, match=r"^ways=0 is invalid"):
        InpHTPublisher(ways=0)
    with pytest.raises(ConfigError, match=r"^estimator='ibu' is invalid: expected one of norm_sub, clip, unbiased"):
        InpHTPublisher(estimator="ibu")
    data = table(correlated(100, 4, np.random.default_rng(9)), [2] * 4)
    release = InpHTPublisher(ways=2).publish(data, 1.0, np.random.default_rng(0)).release
    assert release.max_way == InpHTPublisher(ways=2).max_way == 2
    with pytest.raises(ValueError, match="at most 2 attributes, not 3"):
        release.marginal((0, 1, 2))
    with pytest.raises(ValueError, match="distinct columns"):
        release.marginal((1, 1))
