"""Rare values merged and drawn back (dp2pub.synthesis.compression)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dp2pub.data.domain import Domain
from dp2pub.data.marginals import marginal_counts
from dp2pub.synthesis.compression import Compression, compress


def test_values_below_the_threshold_merge_into_one_value_after_the_kept_ones():
    estimates = [np.array([0.5, 0.3, 0.01, 0.02, 0.17]), np.array([0.6, 0.4])]
    compression = compress(estimates, [0.01, 0.01], 3.0)
    assert compression.maps[0].tolist() == [0, 1, 3, 3, 2]
    assert compression.maps[1].tolist() == [0, 1]
    assert compression.sizes == [4, 2] and compression.merged == 1


@pytest.mark.parametrize(
    ("estimate", "expected"),
    [
        ([0.9, 0.08, 0.02], [0, 1, 2]),  # one rare value: merging it would change nothing
        ([0.01, -0.02, 0.015, 0.0], [1, 1, 0, 1]),  # all rare: the largest estimate stays apart
        ([0.02, 0.01], [0, 1]),  # two values: never a constant
    ],
)
def test_an_attribute_keeps_its_largest_value_and_a_single_rare_one(estimate, expected):
    assert compress([np.array(estimate)], [0.01], 3.0).maps[0].tolist() == expected


def test_codes_and_marginals_compress_alike():
    rng = np.random.default_rng(0)
    sizes = (5, 4, 3)
    codes = np.column_stack([rng.integers(0, k, 2_000) for k in sizes])
    compression = Compression((np.array([0, 2, 1, 2, 2]), np.array([0, 1, 2, 3]), np.array([1, 0, 1])))
    small = compression.codes(codes)
    for key in [(0,), (0, 1), (2, 0), (0, 1, 2)]:
        full = marginal_counts(codes[:, key], [sizes[a] for a in key])
        direct = marginal_counts(small[:, key], [compression.sizes[a] for a in key])
        np.testing.assert_array_equal(compression.table(full, key), direct)


def test_the_compressed_domain_labels_the_merged_value_by_its_values():
    domain = Domain(("a", "b"), (("x", "y", "z", "w"), ("u", "v")))
    compression = Compression((np.array([2, 0, 2, 1]), np.array([0, 1])))
    small = compression.domain(domain)
    assert small.names == ("a", "b") and small.labels == (("y", "w", "x|z"), ("u", "v"))


def test_expanding_keeps_kept_values_and_draws_merged_ones_uniformly():
    rng = np.random.default_rng(1)
    m = np.array([0, 2, 1, 2, 2, 2])  # values 1, 3, 4, 5 merged into 2
    codes = rng.integers(0, 6, (30_000, 1))
    compression = Compression((m,))
    back = compression.expand(compression.codes(codes), np.random.default_rng(2))
    kept = np.isin(codes[:, 0], [0, 2])
    np.testing.assert_array_equal(back[kept, 0], codes[kept, 0])
    drawn = back[~kept, 0]
    assert set(np.unique(drawn)) == {1, 3, 4, 5}
    counts = np.bincount(drawn, minlength=6)[[1, 3, 4, 5]]
    assert stats.chisquare(counts).pvalue > 1e-4
