"""Metrics against small hand-computed cases."""

import math

import numpy as np
import pytest

from dp2pub.data import Dataset, Domain
from dp2pub.data.marginals import joint_codes, marginal_counts
from dp2pub.metrics import attribute_subsets, evaluate_marginals, mse, tvd
from dp2pub.metrics.evaluate import SUM_TOLERANCE, are_distributions
from dp2pub.publish import GRRPublisher, TableRelease
from dp2pub.validation import ConfigError


def test_tvd_and_mse_by_hand():
    assert tvd([0.5, 0.5], [1.0, 0.0]) == pytest.approx(0.5)
    assert tvd([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]) == 0.0
    assert mse([0.5, 0.5], [1.0, 0.0]) == pytest.approx(0.25)
    assert mse([2, 2], [1, 3]) == pytest.approx(1.0)


def test_joint_codes_are_mixed_radix():
    codes = np.array([[0, 0], [0, 2], [1, 0], [1, 2]])
    assert joint_codes(codes, [2, 3]).tolist() == [0, 2, 3, 5]


def test_marginal_counts_by_hand():
    codes = np.array([[0, 1], [1, 2], [0, 1]], dtype=np.uint8)
    assert marginal_counts(codes, [2, 3]).tolist() == [[0, 2, 0], [0, 0, 1]]
    assert marginal_counts(codes[:, [1]], [3]).tolist() == [0, 2, 1]


def test_attribute_subsets_all_or_a_seeded_sample():
    assert attribute_subsets(4, 2, None, np.random.default_rng(0)) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    sample = attribute_subsets(10, 3, 7, np.random.default_rng(1))
    assert len(sample) == 7 == len(set(sample))
    assert all(len(s) == 3 and list(s) == sorted(s) for s in sample)
    assert sample == attribute_subsets(10, 3, 7, np.random.default_rng(1))
    big = attribute_subsets(200, 3, 5, np.random.default_rng(2))  # C(200, 3) > 10**6
    assert len(set(big)) == 5 and math.comb(200, 3) > 10**6


def table(columns, sizes):
    return Dataset(np.array(columns).T, Domain.from_sizes(sizes))


def test_evaluate_by_hand():
    original = table([[0, 0, 1, 1], [0, 1, 0, 1]], [2, 2])
    published = table([[0, 1, 1, 1], [0, 1, 0, 1]], [2, 2])
    result = evaluate_marginals(original, TableRelease(published), np.random.default_rng(0), ways=(1, 2))
    # attribute a0: (0.5, 0.5) vs (0.25, 0.75): tvd 0.25, mse 0.0625; counts (2, 2) vs (1, 3): 1
    # attribute a1: identical
    assert result.metrics["tvd_1way"] == pytest.approx(0.125)
    assert result.metrics["mse_freq"] == pytest.approx(0.03125)
    assert result.metrics["mse_count"] == pytest.approx(0.5)
    # joint (a0, a1): original 1/4 each; published (0,0) 1/4, (1,0) 1/4, (1,1) 1/2, (0,1) 0
    assert result.metrics["tvd_2way"] == pytest.approx(0.25)
    assert "mse_theory" not in result.metrics
    assert result.per_attribute["tvd"].tolist() == pytest.approx([0.25, 0.0])


def test_a_table_is_at_distance_zero_from_itself():
    rng = np.random.default_rng(4)
    original = table(rng.integers(0, 3, size=(3, 500)), [3, 3, 3])
    result = evaluate_marginals(original, TableRelease(original), rng, ways=(1, 2, 3))
    assert all(result.metrics[m] == 0 for m in ("tvd_1way", "tvd_2way", "tvd_3way", "mse_freq", "mse_count"))


def test_bad_metric_options_name_the_key():
    original = table([[0, 1]], [2])
    with pytest.raises(ConfigError, match="ways=2"):
        evaluate_marginals(original, TableRelease(original), np.random.default_rng(0), ways=(1, 2))
    with pytest.raises(ConfigError, match="max_subsets=0"):
        evaluate_marginals(original, TableRelease(original), np.random.default_rng(0), max_subsets=0, ways=(1,))


def test_are_distributions_checks_every_marginal_for_negatives_and_its_total():
    assert are_distributions(np.array([0.5, 0.5, 1.0]), np.array([2, 1]))
    assert not are_distributions(np.array([-0.1, 1.1, 1.0]), np.array([2, 1]))  # total 1, a negative entry
    assert not are_distributions(np.array([0.5, 0.5, 0.9]), np.array([2, 1]))  # the second sums to 0.9
    assert are_distributions(np.array([0.5, 0.5 + SUM_TOLERANCE / 2]), np.array([2]))
    assert are_distributions(np.zeros(0), np.zeros(0, dtype=np.int64))


@pytest.mark.parametrize("estimator", ["unbiased", "norm_sub", "clip", "ibu", "none"])
def test_evaluation_says_whether_the_tvds_compare_distributions(estimator):
    rng = np.random.default_rng(5)
    original = table(rng.integers(0, 6, size=(4, 2000)), [6, 6, 6, 6])
    release = GRRPublisher(estimator=estimator).publish(original, 1.0, rng).release
    result = evaluate_marginals(original, release, rng, ways=(1, 2))
    assert result.distributions == (estimator != "unbiased")
    if estimator == "unbiased":  # eps 1/4 per attribute: joint estimates far outside the simplex
        assert result.metrics["tvd_2way"] > 1
    else:
        assert 0 <= result.metrics["tvd_1way"] <= 1 and 0 <= result.metrics["tvd_2way"] <= 1
