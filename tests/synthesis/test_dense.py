"""The whole-domain fit (:mod:`dp2pub.synthesis.dense`): private-pgm's mirror descent step for
step (its fitted marginals to rounding, on noisy and on subset measurements), the model it
fits recovering a known tree-structured distribution from exact marginals, and records drawn
from the whole table with its own distribution."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from dp2pub.synthesis import dense
from dp2pub.synthesis.pgm import Measurement
from tests.synthesis.test_pgm import EDGES, SIZES, project, tree_distribution


def noisy_measurements(rng: np.random.Generator, joint: np.ndarray, total: float) -> list[Measurement]:
    """Every edge of the tree and one attribute's 1-way marginal, with Gaussian noise."""
    measured = [Measurement(edge, (total * project(joint, edge)).ravel(), 30.0) for edge in EDGES]
    one = total * project(joint, (2,))
    measured.append(Measurement((2,), one + rng.normal(0, 10.0, one.size), 10.0))
    return [Measurement(m.clique, m.values + rng.normal(0, m.stddev, m.values.size), m.stddev) for m in measured]


@pytest.mark.parametrize(("iterations", "tolerance"), [(1, 1e-12), (25, 1e-12), (200, 1e-12), (800, 1e-4)])
def test_the_fit_is_private_pgms_mirror_descent_to_rounding(iterations, tolerance):
    """Step for step to 1e-12 of the total through 200 steps; once rounding flips one
    Armijo test (between steps 200 and 300 here, 1.3e-4 of the total apart at 300), both
    descend to the same optimum (1.9e-5 apart at 400, 8.7e-6 at 800)."""
    pgm = pytest.importorskip("dp2pub.synthesis.pgm")
    pytest.importorskip("mbi")
    rng = np.random.default_rng(0)
    total = 5_000.0
    measured = noisy_measurements(rng, tree_distribution(rng), total)
    ours = dense.fit(SIZES, measured, iterations, total)
    theirs = pgm.fit(SIZES, measured, iterations, known_total=total)
    for clique in itertools.combinations(range(len(SIZES)), 2):
        got = theirs.counts(clique).reshape(project(ours, clique).shape)
        assert np.allclose(project(ours, clique), got, rtol=0, atol=tolerance * total), clique
    uniform = np.full(SIZES, total / np.prod(SIZES))
    assert not np.allclose(project(ours, (0, 1)), project(uniform, (0, 1)), atol=1.0)  # the fit moved


def test_exact_marginals_of_a_tree_recover_its_unmeasured_triples():
    rng = np.random.default_rng(1)
    joint = tree_distribution(rng)
    total = 10_000.0
    exact = [Measurement(edge, (total * project(joint, edge)).ravel(), 1.0) for edge in EDGES]
    fitted = dense.fit(SIZES, exact, 3_000, total) / total
    for triple in itertools.combinations(range(len(SIZES)), 3):
        assert 0.5 * np.abs(project(fitted, triple) - project(joint, triple)).sum() < 2e-3, triple
    independent = dense.fit(
        SIZES, [Measurement((a,), total * project(joint, (a,)), 1.0) for a in range(5)], 3_000, total
    )
    assert 0.5 * np.abs(project(independent / total, (0, 1)) - project(joint, (0, 1))).sum() > 0.05


def test_records_are_drawn_with_the_tables_distribution():
    rng = np.random.default_rng(2)
    joint = tree_distribution(rng)
    rows = 40_000
    codes = dense.sample(1_000 * joint, rows, np.random.default_rng(3))
    assert codes.shape == (rows, len(SIZES)) and codes.dtype == np.int64
    cells = np.ravel_multi_index(codes.T, SIZES)
    observed = np.bincount(cells, minlength=joint.size)
    expected = rows * joint.ravel()
    kept = expected > 5  # chi-square's rule of thumb; the rest pooled
    f_obs = np.append(observed[kept], observed[~kept].sum())
    f_exp = np.append(expected[kept], expected[~kept].sum())
    assert chisquare(f_obs, f_exp).pvalue > 1e-3
    shuffled = codes.copy()
    shuffled[:, 1] = np.random.default_rng(4).permutation(shuffled[:, 1])  # dependence lost
    broken = np.bincount(np.ravel_multi_index(shuffled.T, SIZES), minlength=joint.size)
    assert chisquare(np.append(broken[kept], broken[~kept].sum()), f_exp).pvalue < 1e-6


def test_weighted_measurements_are_refused():
    measured = [Measurement((0,), np.ones(2), 1.0, weights=np.ones((1, 2)))]
    with pytest.raises(ValueError, match="plain counts"):
        dense.fit((2, 3), measured, 10, 10.0)


def test_unsorted_cliques_are_refused_and_no_measurement_leaves_the_model_uniform():
    with pytest.raises(ValueError, match="increasing order"):
        dense.fit((2, 3), [Measurement((1, 0), np.ones(6), 1.0)], 10, 6.0)
    assert np.allclose(dense.fit((2, 3), [], 10, 6.0), 1.0)
