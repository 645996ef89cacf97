"""``mechanism=hdg`` (Yang et al., PVLDB 2020): the guideline's granularities, nested bins,
disjoint groups reporting at the whole epsilon (an exact ledger), unbiased grids with OUE's
variance for their group, the post-processing, the weighted update and the k-way fit on
exact inputs, and answers that are distributions.

Statistical checks are z-tests at ``Z = 4.5`` per cell (two-sided level 6.8e-6, below 1e-3
over all the cells of a test) on fixed seeds: they cannot flake, and each is shown to fail on
an estimator broken on purpose, so none passes vacuously."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dp2pub.data.dataset import Dataset
from dp2pub.data.domain import Domain
from dp2pub.data.marginals import marginal_counts
from dp2pub.mechanisms.accounting import epsilon_spent
from dp2pub.mechanisms.adaptive import build_oracle
from dp2pub.publish import hdg
from dp2pub.publish.hdg import (
    Binning,
    Grids,
    HDGPublisher,
    Measured,
    consistency_step,
    fit_cells,
    fit_pairs,
    grid_cells,
    guideline,
    measure,
    post_process,
    response_matrix,
)
from dp2pub.testing import PublisherCase
from dp2pub.testing.memory import check_memory
from dp2pub.validation import ConfigError
from tests.synthesis.test_consistency import chain
from tests.synthesis.test_gum import sampling_tvd

Z = 4.5


def table(codes: np.ndarray, sizes: tuple[int, ...]) -> Dataset:
    return Dataset(np.asarray(codes, dtype=np.int64), Domain.from_sizes(list(sizes)))


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    return 0.5 * float(np.abs(np.asarray(a) - np.asarray(b)).sum())


def exact_grids(data: Dataset, g1: int, g2: int) -> Grids:
    """Every grid of ``data`` without noise, from all its records (equal groups)."""
    binnings = {a: Binning.of(int(k), g1, g2) for a, k in enumerate(data.domain.sizes)}
    every = np.arange(data.n)
    one = {a: np.bincount(grid_cells(data, a, every, binnings), minlength=b.f) / data.n for a, b in binnings.items()}
    two = {}
    for a, b in itertools.combinations(sorted(binnings), 2):
        shape = (binnings[a].h, binnings[b].h)
        cells = grid_cells(data, (a, b), every, binnings)
        two[(a, b)] = np.bincount(cells, minlength=math.prod(shape)).reshape(shape) / data.n
    users = {key: data.n for key in [*one, *two]}
    return Grids(binnings, one, two, users)


# ---------------------------------------------------------------- granularities and bins
def test_the_guideline_is_the_papers_formula_rounded_capped_and_never_below_two():
    n, m, eps = 17_259, 16 + 120, 1.6  # nltcs's training part: 16 attributes, 136 grids
    x = n * (math.exp(eps) - 1) ** 2 / (m * math.exp(eps))
    g1, g2 = guideline(n, m, eps)
    assert g1 == pytest.approx((0.7**2 * x / 2) ** (1 / 3), rel=1e-12)
    assert g2 == pytest.approx(
        math.sqrt(2 * 0.03 * (math.exp(eps) - 1) * math.sqrt(n / (m * math.exp(eps)))), rel=1e-12
    )
    assert (round(g1, 2), round(g2, 2)) == (4.61, 1.1)
    assert HDGPublisher().granularities(n, [2] * 16, eps) == (5, 2)  # g2 = 1.1 -> 2, never one cell
    assert HDGPublisher(alpha1=2.0, alpha2=0.5).granularities(n, [2] * 16, eps) == (9, 4)
    # any finite budget: no overflow at 1000, the domain caps the grid
    assert all(math.isfinite(g) for g in guideline(100, 3, 1e3)) and guideline(100, 3, 1e3)[0] > 1e100
    assert HDGPublisher().granularities(100, [3, 4], 1e3)[0] >= 4
    assert HDGPublisher().granularities(100, [3, 4], 1e-3) == (2, 2)
    # a given g1 below the guideline's g2 is raised to it: the 1-D grid refines the 2-D bins
    assert (
        HDGPublisher(g1=2).granularities(10**9, [50, 50], 4.0)
        == (HDGPublisher().granularities(10**9, [50, 50], 4.0)[1],) * 2
    )


@pytest.mark.parametrize("size", [2, 3, 7, 10, 16, 41])
@pytest.mark.parametrize(("g1", "g2"), [(2, 2), (3, 2), (5, 3), (8, 4), (13, 5), (64, 8)])
def test_bins_are_contiguous_balanced_and_every_2d_bin_is_a_union_of_1d_bins(size, g1, g2):
    binning = Binning.of(size, g1, g2)
    assert binning.f == min(g1, size) and binning.h == min(g2, g1, size)
    fine, coarse = binning.fine, binning.coarse
    assert fine[0] == 0 and set(np.diff(fine)) <= {0, 1} and fine[-1] == binning.f - 1  # contiguous, none empty
    assert set(np.diff(coarse)) <= {0, 1} and coarse[-1] == binning.h - 1
    widths = binning.fine_widths
    assert widths.sum() == size and widths.max() - widths.min() <= 1  # 1-D bins differ by one value at most
    per = binning.fine_per_coarse
    assert per.sum() == binning.f and per.max() - per.min() <= 1
    assert np.array_equal(binning.coarse_of_value, coarse[fine])  # each value's 2-D bin through its 1-D bin
    if size == 2:
        assert np.array_equal(fine, [0, 1]) and np.array_equal(coarse, [0, 1])  # a binary attribute: never binned


# ---------------------------------------------------------------- collection and the ledger
@pytest.mark.parametrize("epsilon", [0.7, 3.1, 3.9, 1e-3])
def test_every_user_reports_once_in_disjoint_groups_and_the_ledger_spends_epsilon_exactly(epsilon):
    sizes = (2, 3, 4, 3, 2)
    data = table(chain(3_001, sizes, np.random.default_rng(0)), sizes)
    publisher = HDGPublisher(iterations=5)
    survey = publisher.survey(data, epsilon, np.random.default_rng(1))
    keys = [key for key, _ in survey.groups]
    assert keys == [0, 1, 2, 3, 4, *itertools.combinations(range(5), 2)]  # m = d + d(d-1)/2 = 15 grids
    users = np.concatenate([group for _, group in survey.groups])
    assert np.array_equal(np.sort(users), np.arange(data.n))  # each user in exactly one group
    assert {group.size for _, group in survey.groups} == {200, 201}  # 3,001 users in 15 groups
    outcome = publisher.publish(data, epsilon, np.random.default_rng(1))
    names = data.domain.names
    assert [item.attribute for item in outcome.ledger] == [
        names[k] if isinstance(k, int) else f"{names[k[0]]}+{names[k[1]]}" for k in keys
    ]
    assert [item.users for item in outcome.ledger] == [f"group {i}" for i in range(15)]
    assert {item.epsilon for item in outcome.ledger} == {epsilon}
    assert outcome.epsilon_spent == epsilon  # parallel composition over disjoint groups: no slack
    assert epsilon_spent([*outcome.ledger[:1], outcome.ledger[0]]) == 2 * epsilon  # the same group: in sequence


def test_every_grid_reports_through_oue_at_the_whole_epsilon(monkeypatch):
    built = []

    def spy(cells: np.ndarray, k: int, epsilon: float, rng: np.random.Generator) -> Measured:
        measured = measure(cells, k, epsilon, rng)
        built.append((type(measured.oracle).__name__, measured.oracle.epsilon, k, measured.users))
        return measured

    monkeypatch.setattr(hdg, "measure", spy)
    sizes = (5, 2, 9)
    data = table(np.random.default_rng(2).integers(0, sizes, size=(600, 3)), sizes)
    HDGPublisher(g1=4, g2=3).publish(data, 1.3, np.random.default_rng(3))
    # 1-D grids of min(4, c) cells, 2-D grids of min(3, c_a) x min(3, c_b) cells, 100 users each
    assert built == [("OUE", 1.3, k, 100) for k in (4, 2, 4, 3 * 2, 3 * 3, 2 * 3)]


def oue_variance(truth: np.ndarray, epsilon: float, k: int, users: int) -> np.ndarray:
    """Wang et al. 2017, Theorem 2, with the oracle's realized p* and q*."""
    oracle = build_oracle("oue", epsilon, k)
    p, q = oracle.p_star, oracle.q_star
    return (truth * p * (1 - p) + (1 - truth) * q * (1 - q)) / (users * (p - q) ** 2)


def raw_support(cells: np.ndarray, k: int, epsilon: float, rng: np.random.Generator) -> Measured:
    """A broken estimator: the reports' support fractions, not debiased."""
    oracle = build_oracle("oue", epsilon, k)
    return Measured(oracle.estimate(oracle.perturb(cells, rng), "none"), int(cells.size), oracle)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_a_grid_estimate_is_unbiased_with_oues_variance_for_its_group(epsilon):
    rng = np.random.default_rng(4)
    sizes = (4, 6)
    codes = chain(4_000, sizes, rng)
    codes[(codes[:, 0] <= 1) & (codes[:, 1] == 5), 1] = 0  # the 2-D cell (0, 3) is empty
    data = table(codes, sizes)
    binnings = {0: Binning.of(4, 4, 3), 1: Binning.of(6, 6, 4)}  # 2-D bins [0, 0, 1, 2], [0, 0, 1, 2, 2, 3]
    group = np.arange(500)  # one group: 500 of the 4,000 users
    cells = grid_cells(data, (0, 1), group, binnings)
    k = 3 * 4
    truth = np.bincount(cells, minlength=k) / group.size
    assert truth.min() == 0.0 < truth.max()  # an empty cell too
    reps = 1_500
    estimates = np.array([measure(cells, k, epsilon, rng).estimate for _ in range(reps)])
    variance = oue_variance(truth, epsilon, k, group.size)
    standard_error = np.sqrt(variance / reps)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < Z * standard_error)
    ratio = estimates.var(axis=0, ddof=1) / variance
    tolerance = Z * math.sqrt(2 / (reps - 1))  # relative standard error of a sample variance
    assert np.all(np.abs(ratio - 1) < tolerance)
    # the same tests refuse a biased estimator (the raw support fractions) ...
    raw = np.array([raw_support(cells, k, epsilon, rng).estimate for _ in range(300)])
    assert np.any(np.abs(raw.mean(axis=0) - truth) > Z * np.sqrt(variance / 300))
    # ... and the variance of all 4,000 users instead of the group's (8 times smaller)
    assert np.all(np.abs(estimates.var(axis=0, ddof=1) / oue_variance(truth, epsilon, k, data.n) - 1) > tolerance)


def test_the_survey_is_unbiased_over_the_random_groups_and_the_reports(monkeypatch):
    rng = np.random.default_rng(5)
    sizes = (3, 5, 2)
    n = 1_200  # 6 grids of 200 users
    data = table(chain(n, sizes, rng), sizes)
    publisher = HDGPublisher(g1=4, g2=3)
    truth = exact_grids(data, 4, 3)

    def run(reps: int) -> tuple[dict, dict]:
        draws: dict = {}
        for seed in range(reps):
            grids = publisher.survey(data, 1.0, np.random.default_rng(seed)).grids
            for key, grid in [*grids.one.items(), *grids.two.items()]:
                draws.setdefault(key, []).append(grid.ravel())
        exact = {key: g.ravel() for key, g in [*truth.one.items(), *truth.two.items()]}
        return {key: np.array(v) for key, v in draws.items()}, exact

    def biased_cells(draws: dict, exact: dict, reps: int) -> int:
        """Cells whose mean is beyond Z standard errors: OUE's variance for a group of 200
        users plus the group's sampling variance (drawn without replacement from n)."""
        beyond = 0
        for key, values in draws.items():
            f, users = exact[key], 200
            variance = oue_variance(f, 1.0, f.size, users) + f * (1 - f) / users * (n - users) / (n - 1)
            beyond += int(np.sum(np.abs(values.mean(axis=0) - f) > Z * np.sqrt(variance / reps)))
        return beyond

    draws, exact = run(600)
    assert set(draws) == set(exact) and biased_cells(draws, exact, 600) == 0
    monkeypatch.setattr(hdg, "measure", raw_support)  # a biased estimator is seen by the same test
    draws, exact = run(200)
    assert biased_cells(draws, exact, 200) > 5


# ---------------------------------------------------------------- post-processing
def test_exact_grids_are_a_fixed_point_of_the_post_processing():
    sizes = (2, 5, 7, 4)
    data = table(chain(5_000, sizes, np.random.default_rng(6)), sizes)
    grids = exact_grids(data, 5, 3)
    processed = grids.copy()
    assert post_process(processed, 100) == 1  # consistent and non-negative: one round changes nothing
    for key in grids.one:
        assert np.allclose(processed.one[key], grids.one[key], atol=1e-15)
    for key in grids.two:
        assert np.allclose(processed.two[key], grids.two[key], atol=1e-15)


def test_the_consistency_step_is_the_inverse_variance_average_spread_evenly():
    # attribute 0: 4 values, a 1-D grid of 4 bins in 2 bins of 2; pairs with 1 (3 bins) and 2 (2 bins)
    binnings = {0: Binning.of(4, 4, 2), 1: Binning.of(3, 3, 3), 2: Binning.of(2, 2, 2)}
    one = {0: np.array([0.1, 0.2, 0.3, 0.4]), 1: np.full(3, 1 / 3), 2: np.full(2, 0.5)}
    two = {(0, 1): np.full((2, 3), 1 / 6), (0, 2): np.array([[0.5, 0.2], [0.1, 0.2]]), (1, 2): np.full((3, 2), 1 / 6)}
    users = {0: 100, 1: 100, 2: 100, (0, 1): 90, (0, 2): 110, (1, 2): 100}
    grids = Grids(binnings, {k: v.copy() for k, v in one.items()}, {k: v.copy() for k, v in two.items()}, users)
    consistency_step(grids, 0)
    sums = {0: np.array([0.3, 0.7]), (0, 1): np.array([0.5, 0.5]), (0, 2): np.array([0.7, 0.3])}
    cells = {0: 2, (0, 1): 3, (0, 2): 2}  # each grid's cells in one bin of attribute 0
    weights = {key: users[key] / cells[key] for key in sums}  # the inverse of each sum's variance
    average = sum(weights[key] * sums[key] for key in sums) / sum(weights.values())
    assert np.allclose(np.bincount(binnings[0].coarse, grids.one[0]), average)
    assert np.allclose(grids.two[(0, 1)].sum(axis=1), average) and np.allclose(grids.two[(0, 2)].sum(axis=1), average)
    # the difference spread evenly over a bin's cells
    assert np.allclose(grids.one[0] - one[0], np.repeat((average - sums[0]) / 2, 2))
    assert np.allclose(grids.two[(0, 2)] - two[(0, 2)], ((average - sums[(0, 2)]) / 2)[:, None])
    assert np.array_equal(grids.two[(1, 2)], two[(1, 2)])  # a grid without attribute 0: untouched


def test_noisy_grids_end_non_negative_and_agreeing_on_every_shared_bin():
    sizes = (2, 5, 7, 3)
    data = table(np.random.default_rng(7).integers(0, sizes, size=(6_000, 4)), sizes)
    grids = HDGPublisher(g1=6, g2=3).survey(data, 0.5, np.random.default_rng(8)).grids
    assert min(g.min() for g in [*grids.one.values(), *grids.two.values()]) < 0  # the raw estimates
    rounds = post_process(grids, 100)
    assert 1 < rounds < 100
    for grid in [*grids.one.values(), *grids.two.values()]:
        assert grid.min() >= 0 and abs(grid.sum() - 1) < 1e-12
    for a, binning in grids.binnings.items():
        shared = np.bincount(binning.coarse, grids.one[a], binning.h)
        for pair, grid in grids.two.items():
            if a in pair:
                assert np.allclose(grid.sum(axis=1 - pair.index(a)), shared, atol=1e-9)


# ---------------------------------------------------------------- the weighted update and the fit
@pytest.mark.parametrize(("g1", "g2"), [(7, 3), (4, 2), (3, 3)])
def test_the_weighted_update_recovers_a_matrix_its_grids_determine(g1, g2):
    # P(x, y) = u(x) v(y) phi(2-D cell), uniform within each 1-D bin: the grids' maximum-
    # entropy matrix, which the weighted update (from the uniform matrix) converges to
    rng = np.random.default_rng(9)
    ba, bb = Binning.of(7, g1, g2), Binning.of(5, g1, g2)
    u = rng.uniform(0.2, 1.0, ba.f)[ba.fine] / ba.fine_widths[ba.fine]
    v = rng.uniform(0.2, 1.0, bb.f)[bb.fine] / bb.fine_widths[bb.fine]
    phi = rng.uniform(0.1, 2.0, (ba.h, bb.h))
    truth = np.outer(u, v) * phi[ba.coarse_of_value][:, bb.coarse_of_value]
    truth /= truth.sum()
    one_a = np.bincount(ba.fine, truth.sum(axis=1), ba.f)
    one_b = np.bincount(bb.fine, truth.sum(axis=0), bb.f)
    blocks = (ba.coarse_of_value * bb.h)[:, None] + bb.coarse_of_value[None, :]
    two = np.bincount(blocks.ravel(), truth.ravel(), ba.h * bb.h).reshape(ba.h, bb.h)
    matrix, rounds = response_matrix(one_a, one_b, two, ba, bb, 2_000, 1e-14)
    assert rounds < 2_000 and matrix.min() >= 0 and matrix.sum() == pytest.approx(1.0)
    assert tvd(matrix, truth) < 1e-9
    # with the default stopping rule (a change of less than 1 user of 10,000) it is close too
    matrix, _ = response_matrix(one_a, one_b, two, ba, bb, 100, 1e-4)
    assert tvd(matrix, truth) < 1e-3
    # and a matrix the grids do not determine (not uniform within a 1-D bin) is not recovered
    if g1 < 7:
        skewed = truth * np.linspace(0.5, 1.5, 7)[:, None]
        skewed /= skewed.sum()
        sk_a = np.bincount(ba.fine, skewed.sum(axis=1), ba.f)
        sk_two = np.bincount(blocks.ravel(), skewed.ravel(), ba.h * bb.h).reshape(ba.h, bb.h)
        sk_b = np.bincount(bb.fine, skewed.sum(axis=0), bb.f)
        assert tvd(response_matrix(sk_a, sk_b, sk_two, ba, bb, 2_000, 1e-14)[0], skewed) > 1e-3


def markov_chain(sizes: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """The joint distribution of a Markov chain over ``sizes`` (random start and transitions)."""
    joint = rng.dirichlet(np.ones(sizes[0]))
    for before, size in itertools.pairwise(sizes):
        step = rng.dirichlet(np.ones(size), size=before)  # P(next | previous)
        joint = joint[..., None] * step.reshape((1,) * (joint.ndim - 1) + step.shape)
    return joint


def pair_marginals(joint: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    axes = range(joint.ndim)
    return {
        (i, j): joint.sum(axis=tuple(k for k in axes if k not in (i, j))) for i, j in itertools.combinations(axes, 2)
    }


@pytest.mark.parametrize("sizes", [(2, 3, 4), (2, 3, 4, 3), (3, 2, 2, 2, 3)])
def test_the_k_way_fit_recovers_a_tree_distribution_and_a_product_from_their_pairs(sizes):
    rng = np.random.default_rng(10)
    chain_joint = markov_chain(sizes, rng)  # a tree: the maximum-entropy table of its pairs
    fitted, rounds, converged = fit_pairs(sizes, pair_marginals(chain_joint), 1_000, 1e-13)
    assert converged and rounds < 1_000 and tvd(fitted, chain_joint) < 1e-9
    product = np.ones(())
    for size in sizes:
        product = product[..., None] * rng.dirichlet(np.ones(size))
    fitted, _, converged = fit_pairs(sizes, pair_marginals(product), 1_000, 1e-13)
    assert converged and tvd(fitted, product) < 1e-12
    # a distribution its pairs do not determine is not recovered: three parity bits
    parity = np.zeros((2, 2, 2))
    parity[(0, 0, 1, 1), (0, 1, 0, 1), (0, 1, 1, 0)] = 0.25
    fitted, _, _ = fit_pairs((2, 2, 2), pair_marginals(parity), 1_000, 1e-13)
    assert np.allclose(fitted, 1 / 8) and tvd(fitted, parity) == pytest.approx(0.5)


def one_point_query(answers: dict[tuple[int, int], float], k: int, iterations: int, tolerance: float) -> float:
    """The paper's 2^k weighted update for one point query, cell by cell as the authors'
    code runs it (a reference for the vectorized :func:`fit_cells`)."""
    vector = np.full((2,) * k, 0.5**k)
    for _ in range(iterations):
        before = vector.copy()
        for (i, j), answer in answers.items():
            both = tuple(0 if axis in (i, j) else slice(None) for axis in range(k))
            total = vector[both].sum()
            if total > 0:
                vector[both] = vector[both] / total * answer
            vector = vector / vector.sum()
        if np.abs(vector - before).sum() < tolerance:
            break
    return float(vector[(0,) * k])


@pytest.mark.parametrize("sizes", [(2, 2, 2), (3, 2, 4), (2, 3, 2, 2)])
def test_the_cell_by_cell_answer_is_the_papers_point_query_update_for_every_cell(sizes):
    rng = np.random.default_rng(17)
    joint = rng.dirichlet(np.ones(math.prod(sizes))).reshape(sizes)  # pairs from one table: consistent
    pairs = pair_marginals(joint)
    pairs[(0, 1)] = 0.7 * pairs[(0, 1)] + 0.3 / pairs[(0, 1)].size  # and one noisy pair: inconsistent
    fitted, rounds, _ = fit_cells(sizes, pairs, 100, 1e-6)
    assert fitted.min() >= 0 and fitted.sum() == pytest.approx(1.0)
    reference = np.zeros(sizes)
    for cell in itertools.product(*map(range, sizes)):
        answers = {(i, j): float(pairs[(i, j)][cell[i], cell[j]]) for i, j in pairs}
        reference[cell] = one_point_query(answers, len(sizes), rounds, 0.0)
    assert np.allclose(fitted, reference / reference.sum(), rtol=1e-9, atol=1e-12)
    # it is not the k-way fit: a tree distribution its pairs determine is only approximated
    tree = markov_chain(sizes, rng)
    assert tvd(fit_cells(sizes, pair_marginals(tree), 1_000, 1e-13)[0], tree) > 1e-3


# ---------------------------------------------------------------- the release
@pytest.mark.parametrize("kway", ["table", "cells"])
def test_every_answer_is_a_distribution_in_the_order_of_its_columns(kway):
    sizes = (2, 6, 3, 5, 4)
    data = table(np.random.default_rng(11).integers(0, sizes, size=(2_000, 5)), sizes)
    outcome = HDGPublisher(iterations=30, kway=kway).publish(data, 0.3, np.random.default_rng(12))
    release = outcome.release
    assert release.published is None and release.max_way is None
    for way in (1, 2, 3, 4, 5):
        for columns in itertools.combinations(range(5), way):
            answer = release.marginal(columns)
            assert answer.shape == tuple(sizes[c] for c in columns)
            assert answer.min() >= 0 and answer.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.array_equal(release.marginal((3, 1)), release.marginal((1, 3)).T)
    assert np.array_equal(release.marginal((4, 0, 2)), release.marginal((0, 2, 4)).transpose(2, 0, 1))
    diagnostics = release.diagnostics()
    assert diagnostics["fit_estimates"] > 0 and diagnostics["fit_rounds_max"] <= 30
    # the 1-way answers are the margins of the response matrices (the same 1-D grids)
    for a, b in itertools.combinations(range(5), 2):
        pair = release.marginal((a, b))
        assert np.allclose(pair.sum(axis=1), release.marginal((a,)), atol=1e-3)


@pytest.mark.parametrize("batch", [1 << 14, 40])
def test_a_batch_answers_each_marginal_as_alone_with_the_same_rounds(monkeypatch, batch):
    """The metrics' batch (several shapes, columns in any order, chunks of ``BATCH_CELLS``
    cells) gives every k-way marginal the exact answer and round count of its own fit, where
    some marginals stop rounds before others (a tolerance that binds)."""
    monkeypatch.setattr(hdg, "BATCH_CELLS", batch)
    sizes = (2, 6, 3, 5, 2, 3)
    data = table(np.random.default_rng(13).integers(0, sizes, size=(3_000, 6)), sizes)
    release = HDGPublisher(iterations=200, threshold=0.003).publish(data, 1.0, np.random.default_rng(14)).release
    subsets = [(0,), (4, 2), *itertools.combinations(range(6), 3), (5, 1, 3), *itertools.combinations(range(6), 4)]
    batched = release.marginals(subsets)
    rounds = list(release.trace.rounds)
    release.trace.rounds.clear()
    alone = np.concatenate([release.marginal(c).ravel() for c in subsets])
    assert np.array_equal(batched, alone)
    assert sorted(rounds) == sorted(release.trace.rounds) and len(set(rounds)) > 1


def test_near_noise_free_answers_are_the_tables_marginals_within_sampling_error():
    sizes = (2, 3, 4, 3)
    n = 30_000  # 10 grids of 3,000 users
    data = table(chain(n, sizes, np.random.default_rng(13)), sizes)
    # epsilon = 40: OUE flips a bit with probability 2^-32 at most; the grids at full resolution
    # kway=table: the k-way fit is exact on exact pairs of a chain (the default, cells, answers
    # each cell by the paper's capped 2^k update, an approximation even without noise)
    outcome = HDGPublisher(g1=4, g2=4, threshold=0.01, kway="table").publish(data, 40.0, np.random.default_rng(14))
    release = outcome.release
    independent = 0.0
    for way in (1, 2, 3):
        for columns in itertools.combinations(range(4), way):
            truth = marginal_counts(data.codes[:, list(columns)], [sizes[c] for c in columns]) / n
            bound = 3 * sampling_tvd(truth, 3_000)  # each grid is estimated from a group of 3,000
            assert tvd(release.marginal(columns), truth) < bound, columns
            if way == 3:
                product = np.einsum("i,j,k->ijk", *(release.marginal((c,)) for c in columns))
                independent = max(independent, tvd(product, truth) / bound)
    assert independent > 5  # the attributes are tied: the product of the 1-way answers is far outside


def test_constant_attributes_get_no_grid_and_answer_their_only_value():
    rng = np.random.default_rng(15)
    sizes = (1, 3, 1, 2)
    codes = np.zeros((900, 4), dtype=np.int64)
    codes[:, 1], codes[:, 3] = rng.integers(0, 3, 900), rng.integers(0, 2, 900)
    outcome = HDGPublisher(kway="table").publish(table(codes, sizes), 1.0, np.random.default_rng(16))
    assert [item.attribute for item in outcome.ledger] == ["a1", "a3", "a1+a3"]  # 2 + 1 grids
    assert outcome.epsilon_spent == 1.0
    release = outcome.release
    assert np.array_equal(release.marginal((0,)), [1.0])
    assert np.allclose(release.marginal((0, 1)), release.marginal((1,))[None, :])
    assert np.allclose(release.marginal((2, 1, 0)).reshape(3), release.marginal((1,)), atol=1e-9)


def test_bad_settings_and_too_few_users_are_refused_naming_the_key():
    for key, value in [
        ("g1", 1),
        ("g1", 2.5),
        ("g2", 0),
        ("g2", "fine"),
        ("alpha1", 0.0),
        ("alpha2", -0.1),
        ("alpha2", math.nan),
        ("consistency_rounds", -1),
        ("iterations", 0),
        ("threshold", -1.0),
        ("threshold", math.inf),
        ("kway", "pairs"),
    ]:
        with pytest.raises(ConfigError) as refused:
            HDGPublisher(**{key: value})
        assert refused.value.key == key
    with pytest.raises(ConfigError, match=r"g1=3 is invalid: expected an integer >= g2=4"):
        HDGPublisher(g1=3, g2=4)
    data = table(np.zeros((20, 6), dtype=np.int64) + np.arange(20)[:, None] % 2, (2,) * 6)  # 21 grids
    with pytest.raises(ConfigError, match=r"dataset\.n=20 .*at least 21 records, one group of users for each of 21"):
        HDGPublisher().publish(data, 1.0, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="epsilon"):
        HDGPublisher().publish(data, 0.0, np.random.default_rng(0))


WIDE = {"dims": (3, 10), "sizes": (2, 20), "memory_rows": 20_000}


@pytest.mark.parametrize(
    "case",
    [
        PublisherCase(HDGPublisher, **WIDE),
        PublisherCase(HDGPublisher, {"g1": 20, "g2": 20}, **WIDE),
        PublisherCase(HDGPublisher, {"g1": 8, "g2": 3}, **WIDE),
        PublisherCase(HDGPublisher, dims=(16, 16), sizes=(2, 2), memory_rows=50_000),
    ],
    ids=lambda case: case.id,
)
def test_memory_bytes_bounds_the_traced_peak_on_wide_tables(case):
    check_memory(case)
