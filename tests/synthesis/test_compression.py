"""Rare values merged and drawn back (dp2pub.synthesis.compression); MST's own rule is tested
in tests/publish/test_mst.py."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dp2pub.data.marginals import marginal_counts
from dp2pub.synthesis.compression import Compression, compress


def kept(*values: list[int]) -> tuple[np.ndarray, ...]:
    return tuple(np.array(v, dtype=np.int64) for v in values)


def test_values_below_the_threshold_merge_into_one_value_after_the_kept_ones():
    estimates = [np.array([0.5, 0.3, 0.01, 0.02, 0.17]), np.array([0.6, 0.4])]
    compression = compress(estimates, [0.01, 0.01], 3.0)
    assert [k.tolist() for k in compression.kept] == [[0, 1, 4], [0, 1]]
    assert compression.sizes == (4, 2) and compression.merged == 2


@pytest.mark.parametrize(
    ("estimate", "expected"),
    [
        ([0.9, 0.08, 0.02], [0, 1, 2]),  # one rare value: merging it would change nothing
        ([0.01, -0.02, 0.015, 0.0], [2]),  # all rare: the largest estimate stays apart
        ([0.02, 0.01], [0, 1]),  # two values: never a constant
    ],
)
def test_an_attribute_keeps_its_largest_value_and_a_single_rare_one(estimate, expected):
    assert compress([np.array(estimate)], [0.01], 3.0).kept[0].tolist() == expected


def test_codes_and_marginals_compress_alike():
    rng = np.random.default_rng(0)
    sizes = (5, 4, 3)
    codes = np.column_stack([rng.integers(0, k, 2_000) for k in sizes])
    compression = Compression(kept([0, 2], [0, 1, 2, 3], [1]), sizes)
    small = compression.encode(codes)
    assert compression.sizes == (3, 4, 2)
    for key in [(0,), (0, 1), (2, 0), (0, 1, 2)]:
        full = marginal_counts(codes[:, key], [sizes[a] for a in key])
        direct = marginal_counts(small[:, key], [compression.sizes[a] for a in key])
        np.testing.assert_array_equal(compression.table(full, key), direct)


def test_decoding_keeps_kept_values_and_draws_merged_ones_uniformly():
    rng = np.random.default_rng(1)
    compression = Compression(kept([0, 2]), (6,))  # values 1, 3, 4, 5 merged
    codes = rng.integers(0, 6, (30_000, 1))
    back = compression.decode(compression.encode(codes), np.random.default_rng(2))
    inside = np.isin(codes[:, 0], [0, 2])
    np.testing.assert_array_equal(back[inside, 0], codes[inside, 0])
    counts = np.bincount(back[~inside, 0], minlength=6)
    assert counts[[0, 2]].sum() == 0
    assert stats.chisquare(counts[[1, 3, 4, 5]]).pvalue > 1e-4


def test_decoding_small_codes_gives_values_beyond_their_type():
    """300 values, 250 kept: the compressed codes fit in uint8, the decoded ones do not."""
    compression = Compression(kept(list(range(250))), (300,))
    codes = np.array([[0], [249], [250]], dtype=np.uint8)
    back = compression.decode(codes, np.random.default_rng(3))
    assert back.dtype == np.int64 and back[:2, 0].tolist() == [0, 249] and 250 <= back[2, 0] < 300
