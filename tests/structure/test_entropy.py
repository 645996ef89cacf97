"""Entropy and mutual information against hand-computed values and scikit-learn."""

import itertools
import math

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from dp2pub.data.marginals import joint_codes, marginal_counts
from dp2pub.structure import (
    conditional_entropy,
    entropy,
    entropy_from_counts,
    entropy_of_distribution,
    mutual_information,
    mutual_information_of_distribution,
)
from dp2pub.structure.information import count_keys, dense_codes

LOG2 = math.log(2)


def test_entropy_by_hand():
    assert entropy(np.array([0, 0, 0]), [1]) == 0.0
    assert entropy(np.array([0, 0, 1, 1]), [2]) == pytest.approx(LOG2)
    assert entropy(np.array([0, 0, 0, 1]), [2]) == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    both = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    assert entropy(both, [2, 2]) == pytest.approx(math.log(4))
    assert entropy(both[:, :0], []) == 0.0  # no columns


def test_mutual_information_by_hand():
    x = np.array([0, 0, 1, 1])
    y = np.array([0, 0, 0, 1])
    h_y = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    # cells (0,0):2, (1,0):1, (1,1):1 -> H(X, Y) = 1.5 log 2
    assert mutual_information(x, 2, y, [2]) == pytest.approx(LOG2 + h_y - 1.5 * LOG2)
    assert conditional_entropy(x, 2, y, [2]) == pytest.approx(1.5 * LOG2 - h_y)
    assert mutual_information(x, 2, x, [2]) == pytest.approx(LOG2)  # I(X; X) = H(X)
    independent = np.array([0, 1, 0, 1])
    assert mutual_information(x, 2, independent, [2]) == 0.0
    assert mutual_information(x, 2, np.column_stack([x, independent]), [2, 2]) == pytest.approx(LOG2)
    assert mutual_information(x, 2, np.zeros((4, 0), dtype=int), []) == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mutual_information_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n, sizes = 3000, [3, 7, 5, 11]
    codes = np.column_stack([rng.integers(0, k, n) for k in sizes])
    codes[:, 0] = np.where(rng.random(n) < 0.4, codes[:, 1] % 3, codes[:, 0])  # some dependence
    for parents in ([1], [2, 3], [1, 2, 3]):
        labels = joint_codes(codes[:, parents], [sizes[p] for p in parents])
        ours = mutual_information(codes[:, 0], sizes[0], codes[:, parents], [sizes[p] for p in parents])
        assert ours == pytest.approx(mutual_info_score(codes[:, 0], labels), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_bincount_and_sort_paths_agree(seed):
    rng = np.random.default_rng(seed)
    sizes = [40, 90, 60]
    codes = np.column_stack([rng.integers(0, k, 2000) for k in sizes])
    for cols in ([0], [0, 1], [0, 1, 2]):
        sub = [sizes[c] for c in cols]
        by_count = entropy(codes[:, cols], sub, method="bincount")
        by_sort = entropy(codes[:, cols], sub, method="sort")
        assert by_count == pytest.approx(by_sort, abs=1e-12)
        key, bound = dense_codes(codes[:, cols], sub)
        assert sorted(count_keys(key, bound, "bincount")) == sorted(count_keys(key, bound, "sort"))
    with pytest.raises(ValueError, match="method"):
        entropy(codes, sizes, method="hash")


def test_joint_domains_beyond_int64():
    rng = np.random.default_rng(3)
    sizes = [150] * 10  # 150**10 > 2**62: keys are relabelled on the way
    codes = np.column_stack([rng.integers(0, 3, 500) for _ in sizes])  # few distinct rows
    key, _ = dense_codes(codes, sizes)
    _, expected_ids = np.unique(codes, axis=0, return_inverse=True)
    assert len(np.unique(key)) == len(np.unique(expected_ids))
    _, counts = np.unique(codes, axis=0, return_counts=True)
    assert entropy(codes, sizes) == pytest.approx(entropy_from_counts(counts))


def test_entropy_of_distribution_is_the_full_sum():
    for k in (1, 2, 5, 100):
        assert entropy_of_distribution(np.full(k, 1 / k)) == pytest.approx(math.log(k))
    values = [entropy_of_distribution(np.ones(k)) for k in range(1, 30)]
    assert all(b > a for a, b in itertools.pairwise(values))  # a one-term "entropy" would fall
    assert entropy_of_distribution([0.5, 0.5, 0.0]) == pytest.approx(LOG2)  # zeros add nothing
    assert entropy_of_distribution([3, 1]) == pytest.approx(entropy_of_distribution([0.75, 0.25]))
    table = np.array([[0.1, 0.2], [0.3, 0.4]])
    assert entropy_of_distribution(table) == pytest.approx(entropy_of_distribution(table.ravel()))
    assert entropy_from_counts(np.array([3, 1])) == pytest.approx(entropy_of_distribution([3, 1]))
    for bad in ([0.5, -0.1], [0.0, 0.0], [np.nan, 1.0], []):
        with pytest.raises(ValueError):
            entropy_of_distribution(bad)


def test_mutual_information_of_distribution():
    independent = np.outer([0.2, 0.8], [0.1, 0.3, 0.6])
    assert mutual_information_of_distribution(independent, [0]) == pytest.approx(0.0, abs=1e-12)
    rng = np.random.default_rng(4)
    codes = np.column_stack([rng.integers(0, 3, 800), rng.integers(0, 4, 800), rng.integers(0, 2, 800)])
    codes[:, 0] = np.where(rng.random(800) < 0.5, codes[:, 2], codes[:, 0])
    table = marginal_counts(codes, [3, 4, 2])
    expected = mutual_information(codes[:, 0], 3, codes[:, 1:], [4, 2])
    assert mutual_information_of_distribution(table, [0]) == pytest.approx(expected, abs=1e-12)
