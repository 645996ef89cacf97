"""Invariant PRAM: the posterior is a channel, leaves the prior invariant, is sampled
exactly, and makes published marginals unbiased where the raw reports are not."""

import math

import numpy as np
import pytest

from dp2pub.data import Dataset, Domain
from dp2pub.data.marginals import marginal_counts
from dp2pub.mechanisms import GRR
from dp2pub.publish.invariant_pram import (
    channel_matrix,
    estimate_prior,
    invariant_pram,
    posterior_matrix,
    pram_clusters,
    resample,
)
from dp2pub.publish.pram import PRAMPublisher

Z = 4.5


@pytest.fixture
def cluster():
    rng = np.random.default_rng(0)
    oracles = [GRR(epsilon=1.0, k=3), GRR(epsilon=0.5, k=4), GRR(epsilon=2.0, k=2)]
    prior = rng.dirichlet(np.ones(24)).reshape(3, 4, 2)
    return oracles, prior


def test_posterior_rows_are_distributions_and_the_prior_is_invariant(cluster):
    oracles, prior = cluster
    posterior = posterior_matrix(prior, oracles)
    assert np.all(posterior >= 0) and np.allclose(posterior.sum(axis=1), 1.0)
    pi = prior.ravel()
    assert np.allclose(pi @ channel_matrix(oracles) @ posterior, pi)
    # power: a posterior built from another prior is not invariant for this one
    other = posterior_matrix(np.full(prior.shape, 1 / prior.size), oracles)
    assert not np.allclose(pi @ channel_matrix(oracles) @ other, pi, atol=1e-3)


@pytest.mark.parametrize("z", [(0, 0, 0), (2, 3, 1), (1, 2, 0)])
def test_the_sampler_draws_from_the_posterior_row(cluster, z):
    oracles, prior = cluster
    draws = 200_000
    out = resample(np.tile(np.array(z), (draws, 1)), prior, oracles, np.random.default_rng(1))
    codes = (out[:, 0] * 4 + out[:, 1]) * 2 + out[:, 2]
    observed = np.bincount(codes, minlength=24) / draws
    expected = posterior_matrix(prior, oracles)[(z[0] * 4 + z[1]) * 2 + z[2]]
    stderr = np.sqrt(expected * (1 - expected) / draws)
    assert np.all(np.abs(observed - expected) <= Z * stderr + 1e-12)


def test_prior_estimate_inverts_the_channel_then_projects():
    oracle = GRR(epsilon=1.0, k=3)
    reports = oracle.perturb(np.repeat([0, 1, 2], [7000, 2000, 1000]), np.random.default_rng(2))
    prior = estimate_prior(reports[:, None], [oracle])
    assert prior.sum() == pytest.approx(1.0) and prior.min() >= 0
    assert np.allclose(prior, [0.7, 0.2, 0.1], atol=0.05)


def skewed(n, rng):
    a = rng.choice(4, size=n, p=[0.55, 0.25, 0.15, 0.05])
    b = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    return Dataset(np.stack([a, b], axis=1).astype(np.uint8), Domain.from_sizes([4, 3]))


def test_published_marginals_are_unbiased_and_raw_reports_are_not():
    data = skewed(5000, np.random.default_rng(3))
    truth = np.bincount(data.codes[:, 0], minlength=4) / data.n
    rng, reps = np.random.default_rng(4), 300
    published, raw = [], []
    for _ in range(reps):
        outcome = PRAMPublisher().publish(data, 4.0, rng)
        published.append(np.bincount(outcome.published.codes[:, 0], minlength=4) / data.n)
        raw.append(GRR(epsilon=2.0, k=4).estimate(GRR(epsilon=2.0, k=4).perturb(data.codes[:, 0], rng), "none"))
    published, raw = np.array(published), np.array(raw)
    stderr = published.std(axis=0, ddof=1) / math.sqrt(reps)
    # the projection onto the simplex adds a small bias where the estimate touches 0; none here
    assert np.all(np.abs(published.mean(axis=0) - truth) <= Z * stderr)
    assert np.max(np.abs(raw.mean(axis=0) - truth) / stderr) > 20


def test_pram_spends_epsilon_once_and_times_its_phases():
    data = skewed(1000, np.random.default_rng(5))
    outcome = PRAMPublisher().publish(data, 2.0, np.random.default_rng(6))
    assert outcome.epsilon_spent == pytest.approx(2.0)
    assert set(outcome.timings) == {"perturb", "pram"}
    assert outcome.published.codes.shape == data.codes.shape


def test_ibu_prior_is_a_distribution_close_to_the_inverse_on_a_large_sample():
    oracle = GRR(epsilon=2.0, k=3)
    reports = oracle.perturb(np.repeat([0, 1, 2], [70_000, 20_000, 10_000]), np.random.default_rng(7))[:, None]
    inverse = estimate_prior(reports, [oracle], "inverse")
    mle = estimate_prior(reports, [oracle], "ibu")
    assert mle.min() >= 0 and mle.sum() == pytest.approx(1.0)
    assert np.abs(mle - inverse).max() < 0.01  # no clipping needed here: both are the same estimate
    with pytest.raises(Exception, match="prior='mode'"):
        estimate_prior(reports, [oracle], "mode")


def test_a_clusters_published_joint_is_unbiased_when_the_prior_is_exact(cluster):
    oracles, _ = cluster
    rng = np.random.default_rng(11)
    table = np.column_stack([rng.choice(3, 3000, p=[0.6, 0.3, 0.1]), rng.integers(0, 4, 3000), np.zeros(3000, int)])
    table[:, 2] = (table[:, 0] + table[:, 1]) % 2  # a correlated cluster
    exact = marginal_counts(table, (3, 4, 2)) / len(table)  # the prior: the table's own joint
    reps = 300
    joints, raws = [], []
    for _ in range(reps):
        reports = np.column_stack([o.perturb(table[:, j], rng) for j, o in enumerate(oracles)])
        joints.append(marginal_counts(resample(reports, exact, oracles, rng), (3, 4, 2)).ravel() / len(table))
        raws.append(marginal_counts(reports, (3, 4, 2)).ravel() / len(table))
    joints, raws = np.array(joints), np.array(raws)
    stderr = joints.std(axis=0, ddof=1) / math.sqrt(reps)
    assert np.all(np.abs(joints.mean(axis=0) - exact.ravel()) <= Z * stderr + 1e-12)
    assert np.max(np.abs(raws.mean(axis=0) - exact.ravel()) / stderr.clip(1e-9)) > 20  # the reports are biased


def test_users_in_chunks_draw_from_their_own_posterior_rows(cluster, monkeypatch):
    oracles, prior = cluster
    rng = np.random.default_rng(12)
    reports = np.column_stack([rng.integers(0, o.k, 20_000) for o in oracles])
    monkeypatch.setattr("dp2pub.mechanisms.chunks.CHUNK_CELLS", 8 * 1000)  # 1000 users per chunk (2^3 subsets)
    z = marginal_counts(reports, (3, 4, 2)).ravel()
    codes = reports @ np.array([8, 2, 1])
    pairs = np.zeros((24, 24))
    for _ in range(3):  # (report, published) pairs: a chunk written to other users' rows breaks them
        published = resample(reports, prior, oracles, rng) @ np.array([8, 2, 1])
        pairs += np.bincount(codes * 24 + published, minlength=24 * 24).reshape(24, 24)
    expected = 3 * z[:, None] * posterior_matrix(prior, oracles)
    assert np.all(np.abs(pairs - expected) <= Z * np.sqrt(expected) + 1)


def test_kronecker_resamples_each_attribute_alone_and_joint_the_cluster():
    oracles = [GRR(epsilon=1.0, k=3), GRR(epsilon=1.0, k=2)]
    rng = np.random.default_rng(13)
    reports = np.column_stack([rng.integers(0, 3, 500), rng.integers(0, 2, 500)])
    kron = pram_clusters(reports, oracles, [[0, 1]], np.random.default_rng(14), compound="kronecker")
    alone_rng = np.random.default_rng(14)
    alone = [invariant_pram(reports[:, [j]], [oracles[j]], alone_rng)[0][:, 0] for j in range(2)]
    assert np.array_equal(kron, np.column_stack(alone))
    joint = pram_clusters(reports, oracles, [[0, 1]], np.random.default_rng(14), compound="joint")
    assert np.array_equal(joint, invariant_pram(reports, oracles, np.random.default_rng(14))[0])
    with pytest.raises(Exception, match="compound='product'"):
        pram_clusters(reports, oracles, [[0, 1]], rng, compound="product")
