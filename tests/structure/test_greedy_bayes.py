"""GreedyBayes (PrivBayes Algorithm 4) against a brute-force oracle and planted structure."""

import importlib
import itertools

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from dp2pub.data import Dataset, Domain, make_synthetic
from dp2pub.structure import (
    BayesianNetwork,
    argmax_select,
    greedy_bayes,
    mutual_information,
    total_mutual_information,
)
from dp2pub.validation import ConfigError

# the package re-exports the function greedy_bayes under the module's name
gb = importlib.import_module("dp2pub.structure.bayes_net")


def brute_force_greedy(codes: np.ndarray, degree: int, root: int) -> BayesianNetwork:
    """The naive way: sklearn's mutual_info_score on every candidate (X, Pi) of every step,
    candidates in the documented order (X ascending, then Pi lexicographically), first of
    the maxima (within 1e-10) wins."""
    d = codes.shape[1]
    labels: dict[tuple[int, ...], np.ndarray] = {}
    order, parents = [root], {root: ()}
    while len(order) < d:
        size = min(degree, len(order))
        candidates = []
        for x in sorted(set(range(d)) - set(order)):
            for ps in itertools.combinations(sorted(order), size):
                if ps not in labels:
                    labels[ps] = np.unique(codes[:, ps], axis=0, return_inverse=True)[1].ravel()
                candidates.append((mutual_info_score(codes[:, x], labels[ps]), x, ps))
        top = max(score for score, _, _ in candidates)
        _, x, ps = next(c for c in candidates if c[0] >= top - 1e-10)
        order.append(x)
        parents[x] = ps
    return BayesianNetwork(order, parents)


def random_codes(rng: np.random.Generator, n: int, sizes: list[int], dependence: float = 0.3) -> np.ndarray:
    """Columns where each depends a little on an earlier one, so MI scores differ."""
    codes = np.column_stack([rng.integers(0, k, n) for k in sizes])
    for j in range(1, len(sizes)):
        source = rng.integers(0, j)
        copy = rng.random(n) < dependence
        codes[copy, j] = codes[copy, source] % sizes[j]
    return codes


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_equals_brute_force_small_domains(degree, seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 6, size=6).tolist()
    codes = random_codes(rng, 2000, sizes)
    root = int(rng.integers(6))
    ours = greedy_bayes(codes, degree, sizes=sizes, root=root)
    oracle = brute_force_greedy(codes, degree, root)
    assert total_mutual_information(ours, codes, sizes) == pytest.approx(
        total_mutual_information(oracle, codes, sizes), abs=1e-9
    )
    assert ours == oracle


@pytest.mark.parametrize("seed", [3, 4])
def test_greedy_equals_brute_force_large_domains_and_ties(seed):
    # n=400 rows, domains 20-60: most parent sets of 2-3 attributes are almost all-distinct
    # (few collision rows, many exactly tied scores): the sort paths and tie-breaking.
    rng = np.random.default_rng(seed)
    sizes = rng.integers(20, 60, size=6).tolist()
    codes = random_codes(rng, 400, sizes, dependence=0.2)
    ours = greedy_bayes(codes, 3, sizes=sizes, root=0)
    assert ours == brute_force_greedy(codes, 3, 0)


def test_all_rows_distinct_scores_are_entropies():
    rng = np.random.default_rng(5)
    codes = np.column_stack([rng.permutation(50) for _ in range(5)])  # every column a key
    network = greedy_bayes(codes, 2, root=0)
    assert network == brute_force_greedy(codes, 2, 0)
    assert network.order == [0, 1, 2, 3, 4]  # all tied: the first candidate each time


@pytest.mark.parametrize("bincount", [True, False])
def test_counting_paths_give_the_same_network(monkeypatch, bincount):
    rng = np.random.default_rng(6)
    sizes = rng.integers(3, 40, size=7).tolist()
    codes = random_codes(rng, 1500, sizes)
    expected = greedy_bayes(codes, 3, sizes=sizes, root=2)
    assert expected == brute_force_greedy(codes, 3, 2)
    monkeypatch.setattr(gb, "use_bincount", lambda n_items, n_cells: bincount)
    assert greedy_bayes(codes, 3, sizes=sizes, root=2) == expected


def planted_chain(rng: np.random.Generator, n: int = 5000) -> np.ndarray:
    """Columns A=0 -> B=1 -> C=2 (each copies its parent w.p. 0.85), and 3 noise columns."""
    a = rng.integers(0, 6, n)
    b = np.where(rng.random(n) < 0.85, a, rng.integers(0, 6, n))
    c = np.where(rng.random(n) < 0.85, b, rng.integers(0, 6, n))
    noise = [rng.integers(0, 6, n) for _ in range(3)]
    return np.column_stack([a, b, c, *noise])


def test_recovers_a_planted_chain():
    codes = planted_chain(np.random.default_rng(7))
    forward = greedy_bayes(codes, 1, root=0)
    assert forward.order[:3] == [0, 1, 2]
    assert forward.parents[1] == (0,) and forward.parents[2] == (1,)
    backward = greedy_bayes(codes, 1, root=2)
    assert backward.parents[1] == (2,) and backward.parents[0] == (1,)
    assert set(forward.markov_blanket(1)) >= {0, 2}


def test_markov_blanket_on_a_hand_made_network():
    net = BayesianNetwork([0, 1, 2, 3, 4], {0: (), 1: (0,), 2: (1, 0), 3: (2,), 4: (3, 1)})
    assert net.parents[2] == (0, 1)  # parents are kept sorted
    assert net.children(0) == (1, 2) and net.children(1) == (2, 4) and net.children(4) == ()
    assert net.markov_blanket(0) == (1, 2)
    assert net.markov_blanket(1) == (0, 2, 3, 4)
    assert net.markov_blanket(2) == (0, 1, 3)
    assert net.markov_blanket(3) == (1, 2, 4)
    assert net.markov_blanket(4) == (1, 3)
    assert net.root == 0 and net.degree == 2
    assert net.pairs()[2] == (2, (0, 1))


def test_network_validation_and_from_pairs():
    with pytest.raises(ValueError, match="after it"):
        BayesianNetwork([0, 1], {0: (1,), 1: ()})
    with pytest.raises(ValueError, match="same attributes"):
        BayesianNetwork([0, 1], {0: ()})
    # DataSynthesizer's form: (child, [parents]) without an entry for the root
    net = BayesianNetwork.from_pairs([(1, [0]), (2, [1, 0])])
    assert net.order == [0, 1, 2] and net.parents == {0: (), 1: (0,), 2: (0, 1)}


def test_total_mutual_information_sums_the_families():
    codes = planted_chain(np.random.default_rng(8), 2000)
    net = greedy_bayes(codes, 2, root=0)
    expected = sum(mutual_information(codes[:, x], 6, codes[:, list(ps)], [6] * len(ps)) for x, ps in net.pairs() if ps)
    assert total_mutual_information(net, codes) == pytest.approx(expected)


def test_deterministic_for_a_fixed_rng_and_dataset_input():
    data = make_synthetic(n=800, d=7, k_min=3, k_max=9, rng=np.random.default_rng(9))
    first = greedy_bayes(data, 2, rng=np.random.default_rng(10))
    again = greedy_bayes(data, 2, rng=np.random.default_rng(10))
    assert first == again
    drawn_root = int(np.random.default_rng(10).integers(7))
    assert first.root == drawn_root
    assert greedy_bayes(data, 2, root=data.domain.names[drawn_root]) == first
    assert greedy_bayes(data.codes, 2, sizes=data.domain.sizes, root=drawn_root) == first


def test_select_hook_sees_every_candidate_and_can_sample():
    rng = np.random.default_rng(11)
    codes = random_codes(rng, 500, [3, 4, 5, 3, 4])
    seen = []

    def first(scores, rng):
        seen.append(scores.size)
        return 0

    net = greedy_bayes(codes, 2, root=0, select=first)
    # |V| = 1, 2, 3, 4 -> (d - |V|) children x C(|V|, min(2, |V|)) parent sets
    assert seen == [4 * 1, 3 * 1, 2 * 3, 1 * 6]
    assert net.order == [0, 1, 2, 3, 4] and net.parents[4] == (0, 1)

    def exponential(scores, rng, epsilon=1.0, sensitivity=0.01):
        weights = np.exp(epsilon * (scores - scores.max()) / (2 * sensitivity))
        return int(rng.choice(scores.size, p=weights / weights.sum()))

    sampled = greedy_bayes(codes, 2, root=0, rng=np.random.default_rng(12), select=exponential)
    assert sampled == greedy_bayes(codes, 2, root=0, rng=np.random.default_rng(12), select=exponential)
    with pytest.raises(ValueError, match="select returned"):
        greedy_bayes(codes, 2, root=0, select=lambda scores, rng: scores.size)


def test_select_pair_is_told_the_candidate_of_every_score():
    rng = np.random.default_rng(14)
    codes, sizes = random_codes(rng, 400, [3, 2, 4, 3, 2]), np.array([3, 2, 4, 3, 2])
    steps = []

    def check(scores, children, parent_sets, rng):
        steps.append((children.copy(), parent_sets.copy()))
        for score, child, parents in zip(scores, children, parent_sets, strict=True):
            assert score == pytest.approx(
                mutual_information(codes[:, child], sizes[child], codes[:, parents], sizes[parents])
            )
        # canonical order: child ascending, then parent set lexicographically
        keys = [(int(c), tuple(int(p) for p in ps)) for c, ps in zip(children, parent_sets, strict=True)]
        assert keys == sorted(keys)
        return int(np.argmax(scores))

    paired = greedy_bayes(codes, 2, sizes=sizes, root=0, select_pair=check)
    assert paired == greedy_bayes(codes, 2, sizes=sizes, root=0)  # the same choices as argmax
    assert [len(children) for children, _ in steps] == [4 * 1, 3 * 1, 2 * 3, 1 * 6]
    assert [parent_sets.shape[1] for _, parent_sets in steps] == [1, 2, 2, 2]
    with pytest.raises(ValueError, match="not both"):
        greedy_bayes(codes, 2, root=0, select=argmax_select, select_pair=check)


def test_argmax_select_breaks_ties_by_first_index():
    assert argmax_select(np.array([0.1, 0.5, 0.5 + 1e-13, 0.2])) == 1
    assert argmax_select(np.array([0.1, 0.5, 0.6])) == 2


def test_invalid_parameters():
    codes = np.random.default_rng(13).integers(0, 3, size=(100, 4))
    for degree in (0, -1, 4, 5, 2.0, True):
        with pytest.raises(ConfigError, match="degree"):
            greedy_bayes(codes, degree, root=0)
    with pytest.raises(ConfigError, match="root"):
        greedy_bayes(codes, 2, root=4)
    with pytest.raises(ValueError, match="root attribute or an rng"):
        greedy_bayes(codes, 2)
    with pytest.raises(ConfigError, match="d=1"):
        greedy_bayes(codes[:, :1], 1, root=0)
    with pytest.raises(ValueError, match="sizes"):
        greedy_bayes(codes, 2, sizes=[2, 3, 3, 3], root=0)
    data = Dataset(codes, Domain.from_sizes([3, 3, 3, 3]))
    with pytest.raises(KeyError, match="unknown attribute"):
        greedy_bayes(data, 2, root="nope")
