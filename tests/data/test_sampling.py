"""The one inverse-CDF sampler: exact inversion, zero rows, draw count, frequencies."""

import numpy as np
import pytest

from dp2pub.data.sampling import cumulative_rows, inverse_cdf, sample_rows


def brute_force(cdf: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Count the entries of cdf[row, :-1] that are <= u, one (draws x k) comparison."""
    return (cdf[rows, :-1] <= u[:, None]).sum(axis=1)


@pytest.mark.parametrize("k", [1, 2, 3, 7, 8, 9, 64, 100, 257])
def test_inverse_cdf_equals_the_brute_force_count(k):
    rng = np.random.default_rng(k)
    table = rng.random((40, k)) ** 3
    table[rng.random((40, k)) < 0.4] = 0  # runs of equal cumulative values
    cdf = cumulative_rows(table)
    rows = rng.integers(0, 40, 5000)
    u = rng.random(5000)
    u[:40] = cdf[rows[:40], rng.integers(0, k, 40)]  # exact ties: u equal to a cdf entry
    assert np.array_equal(inverse_cdf(cdf, rows, u), brute_force(cdf, rows, u))


def test_rows_with_no_weight_give_column_zero_and_one_draw_per_record():
    table = np.array([[0.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    rng = np.random.default_rng(0)
    drawn = sample_rows(table, np.array([0, 1, 0, 1]), rng)
    assert drawn.tolist() == [0, 1, 0, 1]
    after = np.random.default_rng(0)
    after.random(4)
    assert rng.random() == after.random()  # exactly one rng.random(rows.size)


def test_frequencies_follow_the_weights():
    table = np.array([[1.0, 3.0, 0.0, 4.0], [5.0, 0.0, 5.0, 0.0]])
    rows = np.repeat([0, 1], 100_000)
    drawn = sample_rows(table, rows, np.random.default_rng(1))
    for r in range(2):
        p = table[r] / table[r].sum()
        freq = np.bincount(drawn[rows == r], minlength=4) / 100_000
        assert np.all(np.abs(freq - p) <= 4.5 * np.sqrt(p * (1 - p) / 100_000) + 1e-12)
