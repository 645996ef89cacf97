"""DP2-Pub's attribute clustering by Markov blanket (Jiang et al., IEEE TKDE 2023, section 4.3,
Algorithm 2).

Repeatedly take a cluster head x among the unclustered attributes and make it a cluster with
its Markov blanket ``MB(x) = Pa(x) ∪ Ch(x) ∪ Pa(Ch(x))`` restricted to the unclustered
attributes, until none is left; clusters are disjoint. Which attribute is the next head is a
rule (:data:`HEAD_RULES`, :func:`head_order`): the paper's Algorithm 2 picks it at random
(trusted server); its semi-honest-server version suggests the attribute of largest entropy;
``network_order`` takes the first unclustered attribute of the network's order.

The paper caps nothing. A cluster's joint domain is estimated and resampled as one variable,
so its size is bounded here by two optional caps: ``max_cluster_size`` attributes and
``max_cells`` cells (the product of its domain sizes). Blanket members are admitted parents
first, then children, then co-parents, while the caps hold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dp2pub.structure.bayes_net import BayesianNetwork
from dp2pub.validation import check_choice, check_int

#: How the next cluster head is chosen among the unclustered attributes.
HEAD_RULES: tuple[str, ...] = ("random", "max_entropy", "network_order")


def blanket_by_priority(network: BayesianNetwork, x: int) -> list[int]:
    """``MB(x)`` ordered parents, children, then the children's other parents."""
    parents, children = list(network.parents.get(x, ())), list(network.children(x))
    rest = [a for a in network.markov_blanket(x) if a not in parents and a not in children]
    return parents + children + rest


def head_order(
    rule: str, network: BayesianNetwork, entropies: Sequence[float] | np.ndarray, rng: np.random.Generator
) -> list[int]:
    """Every attribute, in the order in which they are tried as cluster heads.

    ``random``: a uniformly random permutation (Algorithm 2, line 5: a random unclustered
    attribute); ``max_entropy``: decreasing entropy, ties by position (the semi-honest
    server's variant); ``network_order``: the order in which the network added them. Taking
    the first unclustered attribute of such an order is the same as drawing the head anew
    from the unclustered ones each time.
    """
    check_choice(rule, "cluster_head", HEAD_RULES)
    if rule == "random":
        return [int(a) for a in rng.permutation(len(network.order))]
    if rule == "max_entropy":
        return [int(a) for a in np.argsort(-np.asarray(entropies, dtype=np.float64), kind="stable")]
    return list(network.order)


def cluster_attributes(
    network: BayesianNetwork,
    sizes: Sequence[int] | np.ndarray,
    max_cluster_size: int | None = 4,
    max_cells: int | None = 100_000,
    heads: Sequence[int] | None = None,
) -> list[list[int]]:
    """Disjoint clusters covering every attribute of the network (see module docstring).

    Args:
        network: the learned network.
        sizes: domain size of every attribute.
        max_cluster_size: at most this many attributes per cluster (None: no cap).
        max_cells: at most this many cells in a cluster's joint domain (None: no cap); a
            head alone may exceed it.
        heads: the order in which attributes become heads (:func:`head_order`); default the
            network's order.
    """
    size_cap = math.inf if max_cluster_size is None else check_int(max_cluster_size, "max_cluster_size", 1)
    cell_cap = math.inf if max_cells is None else check_int(max_cells, "max_cells", 1)
    unclustered = list(network.order if heads is None else heads)
    if sorted(unclustered) != sorted(network.order):
        raise ValueError("heads must list every attribute of the network once")
    clusters: list[list[int]] = []
    while unclustered:
        x = unclustered[0]
        cluster, cells = [x], int(sizes[x])
        for a in blanket_by_priority(network, x):
            if a in unclustered and a not in cluster and len(cluster) < size_cap and cells * int(sizes[a]) <= cell_cap:
                cluster.append(a)
                cells *= int(sizes[a])
        clusters.append(sorted(cluster))
        unclustered = [a for a in unclustered if a not in cluster]
    return clusters
