"""The grr publisher: budget split, and unbiased joint (2-way) estimates from its reports."""

import numpy as np
import pytest

from dp2pub.data import Dataset, Domain
from dp2pub.publish import GRRTable


def correlated(n, rng):
    a = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 4, size=n))
    return Dataset(np.stack([a, b], axis=1).astype(np.uint8), Domain.from_sizes([3, 4]))


def test_budget_is_split_evenly_and_spent_exactly():
    data = correlated(100, np.random.default_rng(0))
    outcome = GRRTable().publish(data, 3.0, np.random.default_rng(1))
    assert [row["epsilon"] for row in outcome.ledger] == [1.5, 1.5]
    assert outcome.epsilon_spent == pytest.approx(3.0)
    assert outcome.published.codes.shape == data.codes.shape


def test_two_way_estimate_is_unbiased_and_raw_reports_are_not():
    data = correlated(3000, np.random.default_rng(0))
    truth = np.histogram2d(data.codes[:, 0], data.codes[:, 1], bins=[3, 4], range=[[0, 3], [0, 4]])[0] / data.n
    reps, rng = 400, np.random.default_rng(2)
    unbiased, raw = [], []
    for _ in range(reps):
        outcome = GRRTable("unbiased").publish(data, 4.0, rng)
        unbiased.append(outcome.release.marginal((0, 1)))
        raw.append(GRRTable("none").publish(data, 4.0, rng).release.marginal((0, 1)))
    unbiased, raw = np.array(unbiased), np.array(raw)
    stderr = unbiased.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(unbiased.mean(axis=0) - truth) <= 4.5 * stderr)
    assert np.max(np.abs(raw.mean(axis=0) - truth) / stderr) > 20
