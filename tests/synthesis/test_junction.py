"""The junction tree: private-pgm's triangulation (the same cliques and model size on random
graphs), a valid junction tree (running intersection), and beliefs equal to the marginals of
the whole table summed by brute force, on trees, graphs with cycles and disconnected ones."""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
import pytest

from dp2pub.synthesis.junction import JunctionTree
from dp2pub.synthesis.pgm import Model


def random_cliques(rng: np.random.Generator, d: int, count: int) -> list[tuple[int, ...]]:
    """``count`` random pairs and triples over d attributes (a graph that may have cycles and
    need not be connected)."""
    return [tuple(sorted(rng.choice(d, size=int(rng.integers(2, 4)), replace=False))) for _ in range(count)]


CASES = [(d, count, seed) for seed, (d, count) in enumerate([(4, 2), (5, 4), (6, 3), (7, 6), (8, 9), (9, 5)])]


@pytest.mark.parametrize(("d", "count", "seed"), CASES)
def test_the_tree_is_private_pgms(d, count, seed):
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    mbi = pytest.importorskip("mbi")
    rng = np.random.default_rng(seed)
    sizes = [int(k) for k in rng.integers(1, 5, size=d)]
    cliques = random_cliques(rng, d, count)
    ours = JunctionTree(sizes, cliques)
    domain = mbi.Domain([str(a) for a in range(d)], sizes)
    named = [tuple(str(a) for a in c) for c in cliques]
    tree, order = mbi.junction_tree.make_junction_tree(domain, named)
    assert ours.order == [int(a) for a in order]
    assert sorted(ours.nodes) == sorted(tuple(sorted(int(a) for a in node)) for node in tree.nodes)
    assert ours.megabytes() == pytest.approx(mbi.junction_tree.hypothetical_model_size(domain, named), rel=1e-12)


@pytest.mark.parametrize(("d", "count", "seed"), CASES)
def test_the_tree_has_the_running_intersection_property(d, count, seed):
    """Every attribute's nodes form one connected subtree, and every clique is within a node."""
    rng = np.random.default_rng(seed)
    cliques = random_cliques(rng, d, count)
    tree = JunctionTree([2] * d, cliques)
    assert all(any(set(c) <= set(node) for node in tree.nodes) for c in cliques)
    assert len(tree.edges) < len(tree.nodes)
    for a in range(d):
        holding = {i for i, node in enumerate(tree.nodes) if a in node}
        reached, frontier = set(), [min(holding)]
        while frontier:
            i = frontier.pop()
            reached.add(i)
            frontier += [j for e in tree.edges for j in e if i in e and j != i and j in holding and j not in reached]
        assert reached == holding, a


def random_field(
    d: int, count: int, seed: int
) -> tuple[list[int], list[tuple[int, ...]], list[np.ndarray], np.ndarray]:
    """Random domains (1-4 values), cliques (:func:`random_cliques`) and potentials, and the
    whole table's distribution they define, summed by brute force."""
    rng = np.random.default_rng(seed)
    sizes = [int(k) for k in rng.integers(1, 5, size=d)]
    cliques = random_cliques(rng, d, count)
    theta = [rng.normal(0, 2, size=[sizes[a] for a in c]) for c in cliques]
    logp = np.zeros(sizes)
    for clique, potential in zip(cliques, theta):
        logp = logp + potential.reshape([sizes[a] if a in clique else 1 for a in range(d)])
    joint = np.exp(logp - logp.max())
    return sizes, cliques, theta, joint / joint.sum()


@pytest.mark.parametrize(("d", "count", "seed"), CASES)
def test_beliefs_are_the_whole_tables_marginals(d, count, seed):
    sizes, cliques, theta, joint = random_field(d, count, seed)
    tree = JunctionTree(sizes, cliques)
    for node, belief in zip(tree.nodes, tree.log_beliefs(cliques, theta)):
        exact = joint.sum(axis=tuple(a for a in range(d) if a not in node))
        np.testing.assert_allclose(np.exp(belief), exact, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize(("d", "count", "seed"), CASES)
def test_every_query_of_up_to_three_columns_is_the_whole_tables_marginal(d, count, seed):
    """``Model.counts_of`` (a node's belief, or the beliefs of the subtree that holds the
    query over its separators'), against the whole table, on graphs with cycles, forests and
    attributes in no clique; and each query's subtree holds it and is connected."""
    sizes, cliques, theta, joint = random_field(d, count, seed)
    model = Model(tuple(sizes), cliques, theta, 1_000.0)
    queries = [q for r in (1, 2, 3) for q in itertools.combinations(range(d), r)] + [(d - 1, 0)]
    for query, answer in zip(queries, model.counts_of(queries)):
        exact = joint.sum(axis=tuple(a for a in range(d) if a not in query))
        exact = np.transpose(exact, np.argsort(np.argsort(query))).ravel() * 1_000.0
        np.testing.assert_allclose(answer, exact, rtol=1e-9, atol=1e-12, err_msg=str(query))
        nodes, edges = model.tree.subtree(query)
        assert set(query) <= {a for i in nodes for a in model.tree.nodes[i]}
        assert len(edges) <= len(nodes) - 1  # no cycle: a tree, or trees of a forest's components
        assert all(i in nodes and j in nodes for i, j in edges)


def test_queries_across_nodes_of_a_wide_table_are_answered():
    """Columns numbered beyond einsum's 52 labels: a chain over 60 binary attributes, every
    pair's marginal the product of its path's conditionals (checked against a chain of
    transfer matrices)."""
    rng = np.random.default_rng(7)
    d = 60
    cliques = [(a, a + 1) for a in range(d - 1)]
    theta = [rng.normal(0, 1, size=(2, 2)) for _ in cliques]
    model = Model((2,) * d, cliques, theta, 1.0)
    beliefs = model.counts_of([(a,) for a in range(d)] + [(0, 59), (55, 58)])
    for (a, b), answer in zip([(0, 59), (55, 58)], beliefs[d:]):
        pairs = [model.counts((x, x + 1)).reshape(2, 2) for x in range(a, b)]
        joint = pairs[0]
        for pair in pairs[1:]:  # p(x_a, x_{k+1}) = sum_k p(x_a, x_k) p(x_k, x_{k+1}) / p(x_k)
            joint = joint @ (pair / pair.sum(axis=1, keepdims=True))
        np.testing.assert_allclose(answer, joint.ravel(), rtol=1e-9)


def test_a_tree_needs_no_fill_and_a_cycle_does():
    chain = JunctionTree([3] * 5, [(0, 1), (1, 2), (2, 3), (3, 4)])
    assert sorted(chain.nodes) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert chain.megabytes() == 4 * 9 * 8 / 2**20
    cycle = JunctionTree([3] * 4, [(0, 1), (1, 2), (2, 3), (0, 3)])
    assert max(len(node) for node in cycle.nodes) == 3  # a chord
    assert math.isclose(cycle.megabytes(), 2 * 27 * 8 / 2**20)
    with pytest.raises(ValueError, match="no clique"):
        cycle.home((0, 1, 2, 3))


def test_extreme_potentials_stay_finite():
    """Log-space messages: potentials of ±700 (exp overflows float64) still give beliefs
    that are distributions."""
    cliques = [(0, 1), (1, 2), (2, 0)]
    theta = [np.array([[700.0, -700.0], [0.0, 650.0]])] * 3
    for belief in JunctionTree([2, 2, 2], cliques).log_beliefs(cliques, theta):
        p = np.exp(belief)
        assert np.all(np.isfinite(p)) and math.isclose(p.sum(), 1.0)
    assert not any(
        itertools.chain.from_iterable(np.isnan(b).ravel() for b in JunctionTree([2], []).log_beliefs([], []))
    )
