"""The grr publisher: budget split, and unbiased joint (2-way) estimates from its reports."""

import numpy as np
import pytest

from dp2pub.data import Dataset, Domain
from dp2pub.publish import GRRPublisher, OUEPublisher, RAPPORPublisher


def correlated(n, rng):
    a = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 4, size=n))
    return Dataset(np.stack([a, b], axis=1).astype(np.uint8), Domain.from_sizes([3, 4]))


def test_budget_is_split_evenly_and_spent_exactly():
    data = correlated(100, np.random.default_rng(0))
    outcome = GRRPublisher().publish(data, 3.0, np.random.default_rng(1))
    assert [item.epsilon for item in outcome.ledger] == [1.5, 1.5]
    assert outcome.epsilon_spent == pytest.approx(3.0)
    assert outcome.published.codes.shape == data.codes.shape


def test_two_way_estimate_is_unbiased_and_raw_reports_are_not():
    data = correlated(3000, np.random.default_rng(0))
    truth = np.histogram2d(data.codes[:, 0], data.codes[:, 1], bins=[3, 4], range=[[0, 3], [0, 4]])[0] / data.n
    reps, rng = 400, np.random.default_rng(2)
    unbiased, raw = [], []
    for _ in range(reps):
        outcome = GRRPublisher(estimator="unbiased").publish(data, 4.0, rng)
        unbiased.append(outcome.release.marginal((0, 1)))
        raw.append(GRRPublisher(estimator="none").publish(data, 4.0, rng).release.marginal((0, 1)))
    unbiased, raw = np.array(unbiased), np.array(raw)
    stderr = unbiased.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(unbiased.mean(axis=0) - truth) <= 4.5 * stderr)
    assert np.max(np.abs(raw.mean(axis=0) - truth) / stderr) > 20


def test_joint_estimate_of_unary_reports_is_unbiased():
    data = correlated(2000, np.random.default_rng(0))
    truth = np.histogram2d(data.codes[:, 0], data.codes[:, 1], bins=[3, 4], range=[[0, 3], [0, 4]])[0] / data.n
    reps, rng = 300, np.random.default_rng(3)
    joint = np.array(
        [OUEPublisher(estimator="unbiased").publish(data, 4.0, rng).release.marginal((0, 1)) for _ in range(reps)]
    )
    stderr = joint.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(joint.mean(axis=0) - truth) <= 4.5 * stderr)
    # power: the product of the two 1-way marginals (independence) is far off
    independent = np.outer(truth.sum(axis=1), truth.sum(axis=0))
    assert np.max(np.abs(independent - truth) / stderr) > 20


def test_sample_strategy_spends_epsilon_once_and_estimates_from_each_attributes_users():
    data = correlated(20_000, np.random.default_rng(0))
    outcome = GRRPublisher(estimator="unbiased", strategy="sample").publish(data, 2.0, np.random.default_rng(1))
    assert outcome.epsilon_spent == pytest.approx(2.0) and len(outcome.ledger) == 1
    assert outcome.published is None and outcome.release.max_way == 1
    sizes = [len(r) for r in outcome.release.reports]
    assert sum(sizes) == data.n and min(sizes) > 9000
    assert outcome.release.oracles[0].epsilon == 2.0
    with pytest.raises(ValueError, match="no joint marginals"):
        outcome.release.marginal((0, 1))


def test_rappor_logs_both_guarantees_and_spends_the_promised_one():
    data = correlated(500, np.random.default_rng(0))
    outcome = RAPPORPublisher(options={"p": 0.5, "q": 0.75, "guarantee": "one_report"}).publish(
        data, 2.0, np.random.default_rng(1)
    )
    assert outcome.epsilon_spent == pytest.approx(outcome.extra_metrics["epsilon_one"])
    assert outcome.epsilon_spent <= 2.0 + 1e-9
    assert outcome.extra_metrics["epsilon_inf"] > outcome.extra_metrics["epsilon_one"]
