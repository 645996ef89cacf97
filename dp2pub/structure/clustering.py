"""DP2-Pub's attribute clustering by Markov blanket (Jiang et al., IEEE TKDE 2023, section 4.2).

Repeatedly take the first unclustered attribute (in the network's order) and its Markov
blanket ``MB(x) = Pa(x) ∪ Ch(x) ∪ Pa(Ch(x))`` among the unclustered attributes, until none is
left. Clusters are disjoint; each is capped at ``max_cluster_size`` attributes and at
``max_cells`` cells in its joint domain (the product of its domain sizes), blanket members
being admitted parents first, then children, then co-parents, while the caps hold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dp2pub.structure.bayes_net import BayesianNetwork
from dp2pub.validation import check_int


def blanket_by_priority(network: BayesianNetwork, x: int) -> list[int]:
    """``MB(x)`` ordered parents, children, then the children's other parents."""
    parents, children = list(network.parents.get(x, ())), list(network.children(x))
    rest = [a for a in network.markov_blanket(x) if a not in parents and a not in children]
    return parents + children + rest


def cluster_attributes(
    network: BayesianNetwork,
    sizes: Sequence[int] | np.ndarray,
    max_cluster_size: int = 4,
    max_cells: int = 100_000,
) -> list[list[int]]:
    """Disjoint clusters covering every attribute of the network (see module docstring)."""
    max_cluster_size = check_int(max_cluster_size, "max_cluster_size", 1)
    max_cells = check_int(max_cells, "max_cells", 1)
    unclustered = list(network.order)
    clusters: list[list[int]] = []
    while unclustered:
        x = unclustered[0]
        cluster = [x]
        for a in blanket_by_priority(network, x):
            if a not in unclustered or a in cluster or len(cluster) >= max_cluster_size:
                continue
            if math.prod(int(sizes[b]) for b in cluster) * int(sizes[a]) <= max_cells:
                cluster.append(a)
        clusters.append(sorted(cluster))
        unclustered = [a for a in unclustered if a not in cluster]
    return clusters
