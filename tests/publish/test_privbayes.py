"""PrivBayes: Lemma 1's sensitivities, the exponential mechanism's distribution, Algorithm 1's
noisy conditionals (which joints get noise, at which scale, and what is derived), budget and
utility."""

import itertools
import math

import numpy as np
import pytest

from dp2pub.data import make_synthetic
from dp2pub.data.marginals import joint_codes, marginal_counts
from dp2pub.data.synthetic_bn import make_synthetic_bn
from dp2pub.mechanisms.exponential import exponential_draw
from dp2pub.metrics import evaluate_marginals
from dp2pub.publish.privbayes import (
    PrivBayesPublisher,
    mi_sensitivity,
    noisy_conditionals,
    pair_sensitivities,
    privbayes_selector,
)
from dp2pub.structure.bayes_net import greedy_bayes
from dp2pub.validation import ConfigError


def test_mi_sensitivity_is_lemma_1():
    n = 1000
    assert mi_sensitivity(n) == pytest.approx(0.002 * math.log(500.5) + 0.999 * math.log(1001 / 999))
    assert mi_sensitivity(n, binary=True) == pytest.approx(math.log(1000) / 1000 + 0.999 * math.log(1000 / 999))
    assert mi_sensitivity(10_000) < mi_sensitivity(1000)
    assert mi_sensitivity(n, binary=True) < 0.6 * mi_sensitivity(n)  # the binary bound is about half


def mutual_information_of_tables(counts: np.ndarray) -> np.ndarray:
    """I(X; Y) in nats of each count table counts[i] (rows X, columns Y), all of the same total."""
    p = counts / counts[0].sum()
    outer = p.sum(axis=2, keepdims=True) * p.sum(axis=1, keepdims=True)
    terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1) / np.where(outer > 0, outer, 1)), 0.0)
    return terms.sum(axis=(1, 2))


def largest_replace_one_change(n: int, rows: int, columns: int) -> float:
    """max |I(D) - I(D')| over every table D of n records on a rows x columns domain and every
    D' that replaces one record of D (moves one count to another cell)."""
    cells, best = rows * columns, 0.0
    moves = np.array([(i, j) for i in range(cells) for j in range(cells) if i != j])
    for bars in itertools.combinations(range(n + cells - 1), cells - 1):
        counts = (np.diff([-1, *bars, n + cells - 1]) - 1).astype(float)
        valid = moves[counts[moves[:, 0]] > 0]
        moved = np.repeat(counts[None, :], len(valid), axis=0)
        moved[np.arange(len(valid)), valid[:, 0]] -= 1
        moved[np.arange(len(valid)), valid[:, 1]] += 1
        infos = mutual_information_of_tables(np.vstack([counts[None, :], moved]).reshape(-1, rows, columns))
        best = max(best, float(np.abs(infos[1:] - infos[0]).max()))
    return best


def test_lemma_1_bounds_hold_for_replace_one_neighbours_by_enumeration():
    # binary X (2 x 3): the binary bound holds and is attained
    assert largest_replace_one_change(5, 2, 3) == pytest.approx(mi_sensitivity(5, binary=True), rel=1e-9)
    # neither binary (3 x 3): the general bound holds, the binary one would not
    largest = largest_replace_one_change(4, 3, 3)
    assert mi_sensitivity(4, binary=True) < largest <= mi_sensitivity(4) + 1e-12


def test_pair_sensitivities_use_the_binary_bound_only_for_a_binary_child_or_parent_set():
    sizes = np.array([2, 3, 4, 1, 2])
    children = np.array([0, 1, 1, 1, 2])
    parent_sets = np.array([[1, 2], [2, 4], [3, 4], [2, 3], [1, 3]])
    binary, general = mi_sensitivity(500, binary=True), mi_sensitivity(500)
    # X binary | |dom Pi| = 8 | |dom Pi| = 1 * 2 | |dom Pi| = 4 * 1 | |dom Pi| = 3 * 1
    expected = [binary, general, binary, general, general]
    assert pair_sensitivities(500, sizes, children, parent_sets).tolist() == expected


def empirical_picks(select, draws: int, size: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.bincount([select(rng) for _ in range(draws)], minlength=size) / draws


def assert_matches(picks: np.ndarray, expected: np.ndarray, draws: int) -> None:
    assert np.all(np.abs(picks - expected) <= 4.5 * np.sqrt(expected * (1 - expected) / draws))


def test_exponential_mechanism_draws_the_softmax():
    scores = np.array([0.0, 0.5, 1.0, 1.0])
    epsilon, delta, draws = 2.0, 0.5, 100_000
    picks = empirical_picks(lambda rng: exponential_draw(scores, delta, epsilon, rng), draws, 4)
    expected = np.exp(scores * epsilon / (2 * delta))
    expected /= expected.sum()
    assert_matches(picks, expected, draws)
    # the privacy ratio between any two candidates is exp(epsilon |s_i - s_j| / (2 delta)) at most
    assert expected[2] / expected[0] == pytest.approx(math.exp(epsilon * 1.0 / (2 * delta)))


def test_exponential_mechanism_normalizes_each_score_by_its_own_sensitivity():
    n, epsilon, draws = 20, 1.5, 30_000
    sizes = np.array([2, 3, 3, 4])
    children, parent_sets = np.array([0, 1, 1, 1]), np.array([[2], [0], [2], [3]])  # binary, binary, 3x3, 3x4
    scores = np.array([0.2, 0.3, 0.3, 0.6])
    select = privbayes_selector(epsilon, n, sizes)
    picks = empirical_picks(lambda rng: select(scores, children, parent_sets, rng), draws, 4)
    deltas = np.array([mi_sensitivity(n, binary=True)] * 2 + [mi_sensitivity(n)] * 2)
    expected = np.exp(epsilon * scores / (2 * deltas))
    expected /= expected.sum()
    assert_matches(picks, expected, draws)
    assert expected[1] > expected[2]  # equal scores: the binary pair's smaller sensitivity counts
    # a shared sensitivity would give a visibly different distribution
    shared = np.exp(epsilon * scores / (2 * mi_sensitivity(n)))
    assert np.abs(shared / shared.sum() - expected).max() > 0.05


@pytest.fixture(scope="module")
def data():
    return make_synthetic_bn(n=20_000, d=6, degree=2, k_min=2, k_max=5, strength=0.8, rng=np.random.default_rng(0))


class RecordingRng:
    """A Generator that records every Laplace draw (its scale and the noise) and passes the
    rest through."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.laplace_draws: list[tuple[float, np.ndarray]] = []

    def laplace(self, loc, scale, size):
        noise = self.rng.laplace(loc, scale, size=size)
        self.laplace_draws.append((scale, noise))
        return noise

    def __getattr__(self, name):
        return getattr(self.rng, name)


def test_noisy_conditionals_are_distributions(data):
    network = greedy_bayes(data, 2, rng=np.random.default_rng(1))
    tables = noisy_conditionals(data, network, 0.5, np.random.default_rng(2))
    for child, table in tables.items():
        assert table.shape == (np.prod(data.domain.sizes[list(network.parents[child])]), data.domain.sizes[child])
        assert np.all(table >= 0) and np.allclose(table.sum(axis=1), 1.0)


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_only_the_d_minus_k_joints_get_noise_at_the_papers_scale(data, degree):
    network = greedy_bayes(data, degree, rng=np.random.default_rng(1))
    rng, epsilon2 = RecordingRng(2), 0.7
    noisy_conditionals(data, network, epsilon2, rng)
    d, n, sizes = data.d, data.n, data.domain.sizes
    assert len(rng.laplace_draws) == d - degree
    for (scale, noise), child in zip(rng.laplace_draws, network.order[degree:], strict=True):
        assert scale == pytest.approx(2 * (d - degree) / (n * epsilon2), rel=1e-15)
        assert noise.shape == tuple(sizes[[*network.parents[child], child]])


def model_joint(tables: dict, parents: dict, attributes: list[int], sizes: np.ndarray) -> np.ndarray:
    """P(attributes) = the product of the attributes' conditionals (parents among them), on the
    grid of ``attributes`` in that axis order."""
    grid = np.indices(tuple(sizes[attributes])).reshape(len(attributes), -1).T
    codes = np.zeros((grid.shape[0], len(sizes)), dtype=np.int64)
    codes[:, attributes] = grid
    joint = np.ones(grid.shape[0])
    for x in attributes:
        ps = list(parents[x])
        rows = joint_codes(codes[:, ps], sizes[ps]) if ps else np.zeros(grid.shape[0], dtype=np.int64)
        joint *= tables[x][rows, codes[:, x]]
    return joint.reshape(tuple(sizes[attributes]))


@pytest.mark.parametrize("degree", [2, 3])
def test_the_first_k_conditionals_are_those_of_the_noisy_k_plus_1_way_joint(data, degree):
    network = greedy_bayes(data, degree, rng=np.random.default_rng(1))
    rng, sizes = RecordingRng(3), data.domain.sizes
    tables = noisy_conditionals(data, network, 0.3, rng)
    first = network.order[degree]
    axes = [*network.parents[first], first]  # the first k+1 attributes
    assert sorted(axes) == sorted(network.order[: degree + 1])
    noisy = np.clip(marginal_counts(data.codes[:, axes], sizes[axes]) / data.n + rng.laplace_draws[0][1], 0, None)
    noisy /= noisy.sum()
    # the conditionals of X_1 .. X_{k+1} multiply back to the noisy (k+1)-way joint
    np.testing.assert_allclose(model_joint(tables, network.parents, axes, sizes), noisy, atol=1e-12)
    # every later conditional comes from its own noisy joint
    for (_, noise), child in zip(rng.laplace_draws[1:], network.order[degree + 1 :], strict=True):
        columns = [*network.parents[child], child]
        own = np.clip(marginal_counts(data.codes[:, columns], sizes[columns]) / data.n + noise, 0, None)
        rows = own.reshape(-1, sizes[child])
        totals = rows.sum(axis=1, keepdims=True)
        expected = np.where(totals > 0, rows / np.where(totals > 0, totals, 1), 1 / sizes[child])
        np.testing.assert_allclose(tables[child], expected, atol=1e-12)


def max_tvd(original, published, subsets) -> float:
    sizes = original.domain.sizes
    worst = 0.0
    for columns in subsets:
        p = marginal_counts(original.codes[:, columns], sizes[columns]) / original.n
        q = marginal_counts(published.codes[:, columns], sizes[columns]) / published.n
        worst = max(worst, 0.5 * float(np.abs(p - q).sum()))
    return worst


def sampling_tolerance(cells: int, n: int) -> float:
    """A bound on the TVD between n draws from p and p: E <= sqrt(cells / n) / 2
    (Cauchy-Schwarz), plus 0.02, exceeded with probability <= exp(-2 n 0.02^2) (McDiarmid)."""
    return 0.5 * math.sqrt(cells / n) + 0.02


def test_a_huge_budget_publishes_the_table_up_to_sampling_error():
    # degree d-1: the network is the full joint, so every marginal is exact up to sampling
    table = make_synthetic_bn(n=20_000, d=4, degree=2, k_min=2, k_max=4, strength=0.8, rng=np.random.default_rng(5))
    outcome = PrivBayesPublisher(degree=3).publish(table, 1e9, np.random.default_rng(6))
    cells = int(np.prod(table.domain.sizes))
    for way in (1, 2, 3, 4):
        subsets = [list(c) for c in itertools.combinations(range(4), way)]
        assert max_tvd(table, outcome.published, subsets) <= sampling_tolerance(cells, table.n)


def test_a_huge_budget_keeps_the_first_k_plus_1_attributes_joint(data):
    outcome = PrivBayesPublisher(degree=2).publish(data, 1e9, np.random.default_rng(7))
    prefix = [data.domain.index(row["child"]) for row in outcome.artifacts["network"][:3]]
    cells = int(np.prod(data.domain.sizes[prefix]))
    assert max_tvd(data, outcome.published, [prefix]) <= sampling_tolerance(cells, data.n)


def test_budget_is_epsilon_and_large_budgets_reproduce_the_table(data):
    outcome = PrivBayesPublisher().publish(data, 1000.0, np.random.default_rng(3))
    assert outcome.epsilon_spent == 1000.0
    assert outcome.published.n == data.n
    metrics = evaluate_marginals(data, outcome.release, np.random.default_rng(4)).metrics
    assert metrics["tvd_1way"] < 0.02
    small = PrivBayesPublisher().publish(data, 0.05, np.random.default_rng(3))
    worse = evaluate_marginals(data, small.release, np.random.default_rng(4)).metrics
    assert worse["tvd_2way"] > metrics["tvd_2way"] + 0.05  # the noise is real


def test_a_published_ledger_sums_to_exactly_epsilon(data):
    for epsilon in (0.4, 1.6, 1 / 3):
        outcome = PrivBayesPublisher(beta=0.2).publish(data, epsilon, np.random.default_rng(8))
        assert [item.phase for item in outcome.ledger] == ["network", "conditionals"]
        assert outcome.epsilon_spent == epsilon


@pytest.mark.parametrize(
    "kwargs,key",
    [
        ({"beta": 0}, "beta=0"),
        ({"beta": 1}, "beta=1"),
        ({"theta": 0}, "theta=0"),
        ({"degree": 0}, "degree=0"),
        ({"degree": None}, "degree=None"),
    ],
)
def test_bad_settings_name_the_key(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        PrivBayesPublisher(**kwargs)


def test_theta_chooses_a_degree_below_d(data):
    k = PrivBayesPublisher(degree=None, theta=4).choose_degree(data, 0.7)
    assert 1 <= k < data.d
    with pytest.raises(ConfigError, match="mechanism.degree=6"):
        PrivBayesPublisher(degree=6).publish(data, 1.0, np.random.default_rng(0))


@pytest.mark.parametrize("theta,expected", [(40, 3), (4, 9), (1e6, 1)])
def test_theta_on_binary_domains_is_the_papers_criterion(theta, expected):
    binary = make_synthetic(n=20_000, d=10, k_min=2, k_max=2, rng=np.random.default_rng(9))
    n, d, epsilon2 = binary.n, binary.d, 0.7
    useful = [k for k in range(1, d) if n * epsilon2 / ((d - k) * 2 ** (k + 2)) >= theta]
    assert max(useful, default=1) == expected
    assert PrivBayesPublisher(degree=None, theta=theta).choose_degree(binary, epsilon2) == expected
