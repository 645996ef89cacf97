"""DP2-Pub's clusters and budget weights on hand-made networks."""

import numpy as np
import pytest

from dp2pub.structure.bayes_net import BayesianNetwork
from dp2pub.structure.budget import attribute_budgets, cluster_weights
from dp2pub.structure.clustering import blanket_by_priority, cluster_attributes
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
