"""Graphical-model inference (private-pgm's, in numpy) and the exact sampler: the fit is
private-pgm's mirror descent step for step (where the ``pgm`` extra is installed), on exact
marginals of a known tree-structured distribution the fitted model recovers it (its 3-way
marginals too, which were never measured), and records sampled from a model have the model's
own marginals, where a sampler that ignores the parents, or private-pgm 1.1.0's own, does not."""

from __future__ import annotations

import itertools
import math
import os
import time

import numpy as np
import pytest
from scipy.stats import chisquare

from dp2pub.data.marginals import marginal_counts
from dp2pub.synthesis.pgm import Measurement, Model, draw_conditional, fit, sample

#: A tree over 5 attributes: 0-1, 1-2, 1-3, 3-4.
SIZES = (2, 3, 4, 2, 3)
EDGES = ((0, 1), (1, 2), (1, 3), (3, 4))


def tree_distribution(rng: np.random.Generator) -> np.ndarray:
    """The joint distribution p(a0) p(a1|a0) p(a2|a1) p(a3|a1) p(a4|a3), conditionals drawn
    from a Dirichlet(0.5): strong dependence."""
    joint = rng.dirichlet(np.full(SIZES[0], 0.5)).reshape(SIZES[0], 1, 1, 1, 1)
    for parent, child in EDGES:
        table = rng.dirichlet(np.full(SIZES[child], 0.5), size=SIZES[parent])  # (parent, child)
        shape = [1] * 5
        shape[parent], shape[child] = SIZES[parent], SIZES[child]
        joint = joint * table.reshape(shape)
    return joint


def project(joint: np.ndarray, columns: tuple[int, ...]) -> np.ndarray:
    return joint.sum(axis=tuple(a for a in range(joint.ndim) if a not in columns))


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    return 0.5 * float(np.abs(a - b).sum())


@pytest.fixture(scope="module")
def fitted() -> tuple[np.ndarray, Model]:
    """The model fitted to the tree's exact edge marginals (counts of a million records, noise
    deviation 1: almost exact)."""
    joint = tree_distribution(np.random.default_rng(7))
    total = 1_000_000
    measured = [Measurement(edge, project(joint, edge).ravel() * total, 1.0) for edge in EDGES]
    return joint, fit(SIZES, measured, iterations=3000)


def test_inference_on_exact_marginals_recovers_the_tree(fitted):
    joint, model = fitted
    assert model.total == pytest.approx(1_000_000, rel=1e-4)
    for columns in itertools.combinations(range(5), 3):  # never measured: implied by the tree
        assert tvd(model.marginal(columns), project(joint, columns)) < 2e-3, columns
    # a marginal asked with its axes in another order comes back in that order
    np.testing.assert_allclose(model.marginal((3, 1)), model.marginal((1, 3)).T)


def test_counts_of_equals_counts_on_every_query(fitted):
    _, model = fitted
    queries = [c for r in (1, 2, 3) for c in itertools.combinations(range(5), r)] + [(4, 0, 2)]
    for query, answer in zip(queries, model.counts_of(queries)):
        np.testing.assert_allclose(answer, model.counts(query), rtol=1e-6, atol=1e-6 * model.total)


def test_sampled_records_have_the_models_own_marginals(fitted):
    """Every 2- and 3-way marginal of 200,000 sampled records is within twice the bound
    ``0.5 sqrt(cells / n)`` on the expected sampling TVD of the model's own marginal."""
    _, model = fitted
    rows = 200_000
    codes = sample(model, rows, np.random.default_rng(1))
    assert codes.shape == (rows, 5)
    for way in (2, 3):
        for columns in itertools.combinations(range(5), way):
            cells = math.prod(SIZES[a] for a in columns)
            empirical = marginal_counts(codes[:, list(columns)], [SIZES[a] for a in columns]) / rows
            assert tvd(empirical, model.marginal(columns)) < 2 * 0.5 * math.sqrt(cells / rows), columns


def test_a_sampler_that_loses_dependence_fails_that_check(fitted):
    """The check above is not vacuous: independent columns drawn from the model's exact 1-way
    marginals miss the pairs of the tree by far more than the tolerance."""
    _, model = fitted
    rng = np.random.default_rng(1)
    rows = 200_000
    codes = np.stack([rng.choice(SIZES[a], size=rows, p=model.marginal((a,))) for a in range(5)], axis=1)
    empirical = marginal_counts(codes[:, [0, 1]], [2, 3]) / rows
    assert tvd(empirical, model.marginal((0, 1))) > 2 * 0.5 * math.sqrt(6 / rows) * 5


def mbi_measurement(mbi, m: Measurement):
    query = mbi.Factor.datavector
    if m.weights is not None:
        weights = m.weights

        def query(factor):
            return factor.datavector() * weights

    return mbi.LinearMeasurement(m.values, tuple(str(a) for a in m.clique), m.stddev, query)


def mbi_fit(sizes, measured, iterations, total):
    """private-pgm's own fit of the same measurements."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    mbi = pytest.importorskip("mbi")
    domain = mbi.Domain([str(a) for a in range(len(sizes))], list(sizes))
    measurements = [mbi_measurement(mbi, m) for m in measured]
    return mbi, mbi.estimation.mirror_descent(domain, measurements, iters=iterations, known_total=total)


def test_private_pgms_own_sampler_loses_dependence_the_model_has(fitted):
    """Why :func:`sample` is ours: ``synthetic_data`` of mbi 1.1.0, on private-pgm's own fit
    of the same measurements, draws records whose pairs off the tree miss the model's own
    marginals by more than ten times the tolerance our sampler meets (measured: TVD
    0.05-0.28 on the six pairs that are not edges; its edges it matches)."""
    joint, model = fitted
    measured = [Measurement(edge, project(joint, edge).ravel() * 1_000_000, 1.0) for edge in EDGES]
    _, theirs = mbi_fit(SIZES, measured, 3000, None)
    rows = 200_000
    drawn = theirs.synthetic_data(rows)
    codes = np.stack([np.asarray(drawn.df[str(a)]) for a in range(5)], axis=1)
    misses = []
    for columns in itertools.combinations(range(5), 2):
        if columns in EDGES:
            continue
        empirical = marginal_counts(codes[:, list(columns)], [SIZES[a] for a in columns]) / rows
        misses.append(tvd(empirical, model.marginal(columns)) / (2 * 0.5 * math.sqrt(6 * 4 / rows)))
    assert max(misses) > 10


#: A model whose graph has cycles (0-1-3-0 and more), triangulated into 3-way nodes.
CYCLIC_SIZES = (2, 3, 4, 2, 3, 2)
CYCLIC = ((0, 1), (1, 2), (2, 3), (0, 3), (3, 4, 5), (1, 5), (2,))


def noisy(rng: np.random.Generator, joint: np.ndarray, cliques, total: float, sigma: float) -> list[Measurement]:
    """Each clique's counts in ``joint`` with Gaussian noise, and attribute 4's weighted as
    MST weights a compressed value (its last cell by 1/sqrt(2))."""
    measured = []
    for clique in cliques:
        counts = total * project(joint, clique).ravel()
        measured.append(Measurement(clique, counts + rng.normal(0, sigma, counts.size), sigma))
    weights = np.array([1.0, 1.0, 1.0 / math.sqrt(2)])
    counts = total * project(joint, (4,)) * weights
    measured.append(Measurement((4,), counts + rng.normal(0, 5.0, 3), 5.0, weights))
    return measured


@pytest.mark.parametrize(("iterations", "tolerance"), [(1, 1e-12), (25, 1e-12), (200, 1e-12)])
def test_the_fit_is_private_pgms_mirror_descent_to_rounding(iterations, tolerance):
    """The same model as mbi 1.1.0's mirror descent, step for step: every pair's counts to
    1e-12 of the total, on a graph with cycles, noisy measurements and a weighted one."""
    rng = np.random.default_rng(0)
    joint = rng.dirichlet(np.full(math.prod(CYCLIC_SIZES), 0.3)).reshape(CYCLIC_SIZES)
    total = 5_000.0
    measured = noisy(rng, joint, CYCLIC, total, 20.0)
    ours = fit(CYCLIC_SIZES, measured, iterations, known_total=total)
    _, theirs = mbi_fit(CYCLIC_SIZES, measured, iterations, total)
    for clique in itertools.combinations(range(len(CYCLIC_SIZES)), 2):
        got = np.asarray(theirs.project(tuple(str(a) for a in clique)).datavector())
        np.testing.assert_allclose(ours.counts(clique), got, rtol=0, atol=tolerance * total, err_msg=str(clique))
    uniform = total / math.prod(CYCLIC_SIZES[:2])
    assert np.abs(ours.counts((0, 1)) - uniform).max() > 1.0  # the fit moved


def test_a_warm_start_continues_from_the_same_model():
    """AIM's refit: a model warm-started on more measurements starts where the smaller one
    ended (no step taken: the same distribution, its potentials on the new cliques), and a
    warm model whose clique no new clique contains is refused."""
    rng = np.random.default_rng(1)
    joint = rng.dirichlet(np.full(math.prod(CYCLIC_SIZES), 0.3)).reshape(CYCLIC_SIZES)
    first = noisy(rng, joint, CYCLIC[:3], 5_000.0, 20.0)[:-1]
    small = fit(CYCLIC_SIZES, first, 100, known_total=5_000.0)
    wider = [*first, Measurement((0, 1, 2), np.zeros(24), 1e12)]  # a measurement of no weight
    warm = fit(CYCLIC_SIZES, wider, 0, warm=small, known_total=5_000.0)
    assert warm.cliques != small.cliques
    for clique in itertools.combinations(range(6), 3):
        np.testing.assert_allclose(warm.counts(clique), small.counts(clique), rtol=1e-12)
    moved = fit(CYCLIC_SIZES, [*first, Measurement((0, 1, 2), np.zeros(24), 1.0)], 50, warm=small, known_total=5e3)
    assert np.abs(moved.counts((0, 1, 2)) - small.counts((0, 1, 2))).max() > 1.0  # a step does move it
    with pytest.raises(ValueError, match="within none"):
        fit(CYCLIC_SIZES, first[:1], 1, warm=small)


def test_a_deadline_stops_the_descent_before_the_first_step_after_it(monkeypatch):
    """On a clock that advances one second a reading, a deadline lets exactly the steps that
    start before it run (the first always), and the model equals the one fitted to that many
    steps; without a deadline every step runs."""
    rng = np.random.default_rng(4)
    joint = rng.dirichlet(np.full(math.prod(CYCLIC_SIZES), 0.3)).reshape(CYCLIC_SIZES)
    measured = noisy(rng, joint, CYCLIC[:3], 5_000.0, 20.0)
    assert fit(CYCLIC_SIZES, measured, 40).steps == 40
    ticks = itertools.count()
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(ticks)))
    assert fit(CYCLIC_SIZES, measured, 40, deadline=-1.0).steps == 1  # already past: one step
    cut = fit(CYCLIC_SIZES, measured, 40, deadline=10.0)  # steps 2 .. 11 read 1 .. 10; step 12 reads 11
    assert cut.steps == 11
    monkeypatch.undo()
    np.testing.assert_array_equal(cut.counts((0, 1)), fit(CYCLIC_SIZES, measured, 11).counts((0, 1)))


def test_exact_marginals_of_a_tree_recover_its_unmeasured_triples_and_the_product_does_not():
    rng = np.random.default_rng(1)
    joint = tree_distribution(rng)
    total = 10_000.0
    exact = [Measurement(edge, (total * project(joint, edge)).ravel(), 1.0) for edge in EDGES]
    model = fit(SIZES, exact, 3_000, known_total=total)
    for triple in itertools.combinations(range(len(SIZES)), 3):
        assert tvd(model.marginal(triple), project(joint, triple)) < 2e-3, triple
    singles = [Measurement((a,), total * project(joint, (a,)), 1.0) for a in range(5)]
    independent = fit(SIZES, singles, 3_000, known_total=total)
    assert tvd(independent.marginal((0, 1)), project(joint, (0, 1))) > 0.05


def test_unsorted_cliques_are_refused_and_no_measurement_leaves_the_model_uniform():
    with pytest.raises(ValueError, match="increasing column order"):
        fit((2, 3), [Measurement((1, 0), np.ones(6), 1.0)], 10)
    model = fit((2, 3), [], 10, known_total=6.0)
    np.testing.assert_allclose(model.counts((0, 1)), 1.0)


def test_draw_conditional_follows_each_rows_conditional():
    """Chi-square goodness of fit per parent value (Bonferroni over the rows at level 1e-3),
    zero-probability cells never drawn, and a row of zero mass drawn uniformly."""
    rng = np.random.default_rng(5)
    joint = rng.dirichlet(np.ones(12), size=6).reshape(2, 3, 12)  # parents (2, 3), child 12
    joint[0, 0, :5] = 0.0
    joint[1, 2, :] = 0.0
    parents = np.stack([rng.integers(2, size=120_000), rng.integers(3, size=120_000)], axis=1)
    drawn = draw_conditional(joint, parents, rng)
    assert drawn.min() >= 0 and drawn.max() < 12
    for p0, p1 in itertools.product(range(2), range(3)):
        values = drawn[(parents[:, 0] == p0) & (parents[:, 1] == p1)]
        counts = np.bincount(values, minlength=12)
        row = joint[p0, p1]
        expected = row / row.sum() if row.sum() > 0 else np.full(12, 1 / 12)
        if (p0, p1) == (0, 0):
            assert counts[:5].sum() == 0
        support = expected > 0
        stat = chisquare(counts[support], counts.sum() * expected[support])
        assert stat.pvalue > 1e-3 / 6, (p0, p1, stat)
