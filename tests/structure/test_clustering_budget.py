"""DP2-Pub's clusters and budget weights on hand-made networks."""

import itertools

import numpy as np
import pytest

from dp2pub.structure.bayes_net import BayesianNetwork
from dp2pub.structure.budget import attribute_budgets, cluster_weights, entropy_sensitivity, noisy_entropies
from dp2pub.structure.clustering import blanket_by_priority, cluster_attributes, head_order
from dp2pub.structure.information import entropy, entropy_from_counts
from dp2pub.validation import ConfigError

# 0 -> 1 -> 2, 3 -> 2, 4 -> 5
NETWORK = BayesianNetwork(order=[0, 1, 3, 2, 4, 5], parents={0: (), 1: (0,), 3: (), 2: (1, 3), 4: (), 5: (4,)})


def test_blanket_lists_parents_children_then_co_parents():
    assert blanket_by_priority(NETWORK, 1) == [0, 2, 3]
    assert blanket_by_priority(NETWORK, 0) == [1]


def test_clusters_are_disjoint_cover_the_attributes_and_respect_the_caps():
    sizes = [2, 3, 4, 5, 2, 2]
    assert cluster_attributes(NETWORK, sizes, max_cluster_size=10, max_cells=10**6) == [[0, 1], [2, 3], [4, 5]]
    capped = cluster_attributes(NETWORK, sizes, max_cluster_size=1)
    assert capped == [[0], [1], [3], [2], [4], [5]]
    by_cells = cluster_attributes(NETWORK, sizes, max_cluster_size=4, max_cells=5)
    assert sorted(a for c in by_cells for a in c) == list(range(6))
    assert all(np.prod([sizes[a] for a in c]) <= 5 or len(c) == 1 for c in by_cells)
    with pytest.raises(ConfigError, match="max_cluster_size=0"):
        cluster_attributes(NETWORK, sizes, max_cluster_size=0)


def test_lower_information_gets_more_budget_and_the_user_total_is_exact():
    clusters = [[0, 1], [2], [3, 4, 5]]
    entropies = [1.0, 1.0, 0.5, 1.0, 1.0, 2.0]  # CIF = 2/6.5, 0.5/6.5, 4/6.5
    weights = cluster_weights(clusters, entropies)
    assert weights.sum() == pytest.approx(1.0)
    inverse = np.array([6.5 / 2, 6.5 / 0.5, 6.5 / 4])
    assert np.allclose(weights, inverse / inverse.sum())
    budgets = attribute_budgets(clusters, weights, 3.0, 6)
    assert budgets.sum() == pytest.approx(3.0)
    assert budgets[0] == pytest.approx(3.0 * weights[0] / 2)


def test_head_rules_order_every_attribute():
    entropies = [0.1, 0.9, 0.5, 0.9, 0.0, 0.3]
    assert head_order("max_entropy", NETWORK, entropies, np.random.default_rng(0)) == [1, 3, 2, 5, 0, 4]
    assert head_order("network_order", NETWORK, entropies, np.random.default_rng(0)) == NETWORK.order
    draws = {tuple(head_order("random", NETWORK, entropies, np.random.default_rng(s))) for s in range(50)}
    assert all(sorted(d) == list(range(6)) for d in draws) and len(draws) > 40
    with pytest.raises(ConfigError, match="cluster_head='first'"):
        head_order("first", NETWORK, entropies, np.random.default_rng(0))


def test_heads_change_the_clusters_and_no_cap_keeps_whole_blankets():
    sizes = [2] * 6
    # head 2 first: its blanket {1, 3} (parents) joins it; then 0 alone (1 is taken), then 4 with 5
    assert cluster_attributes(NETWORK, sizes, None, None, heads=[2, 0, 1, 3, 4, 5]) == [[1, 2, 3], [0], [4, 5]]
    with pytest.raises(ValueError, match="every attribute"):
        cluster_attributes(NETWORK, sizes, heads=[0, 1, 2])


def test_entropy_sensitivity_is_the_largest_change_of_one_record():
    for n in range(2, 9):
        worst = 0.0
        for k in (2, 3):
            for counts in itertools.product(range(n + 1), repeat=k):
                if sum(counts) != n:
                    continue
                for a, b in itertools.permutations(range(k), 2):
                    if counts[a] == 0:
                        continue
                    moved = list(counts)
                    moved[a] -= 1
                    moved[b] += 1
                    change = abs(entropy_from_counts(np.array(counts)) - entropy_from_counts(np.array(moved)))
                    worst = max(worst, change)
        assert worst == pytest.approx(entropy_sensitivity(n), rel=1e-12), n


def test_noisy_entropies_are_laplace_around_the_truth_and_clipped_to_their_range():
    rng = np.random.default_rng(1)
    codes = np.column_stack([rng.choice(4, 500, p=[0.7, 0.2, 0.1, 0.0]), np.zeros(500, dtype=np.int64)])
    truth = np.array([entropy(codes[:, 0], [4]), 0.0])
    draws = np.array([noisy_entropies(codes, [4, 2], 0.5, rng) for _ in range(4000)])
    assert draws.min() >= 0 and np.all(draws.max(axis=0) <= np.log([4, 2]) + 1e-15)
    scale = entropy_sensitivity(500) / 0.5  # ~0.03; column 0's H ~ 0.8 is far from 0 and ln 4
    assert abs(np.median(draws[:, 0]) - truth[0]) < 4 * 1.3 * scale / np.sqrt(4000)
    assert np.mean(np.abs(draws[:, 0] - truth[0])) == pytest.approx(scale, rel=0.06)  # E|Laplace(b)| = b
    assert np.mean(draws[:, 1] == 0) == pytest.approx(0.5, abs=0.03)  # H = 0 is clipped half the time
