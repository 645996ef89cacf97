"""A junction tree over a set of cliques, and exact marginals of a log-linear model on it.

A Markov random field ``p(x) ∝ exp(Σ_c θ_c(x_c))`` over attributes of domains ``sizes`` with
potentials on ``cliques`` has exact marginals on the maximal cliques of any triangulation of
its graph, by sum-product message passing on a junction tree of those cliques (Koller and
Friedman, *Probabilistic Graphical Models*, 2009, chapter 10). The triangulation follows
private-pgm's ``mbi.junction_tree.make_junction_tree`` (1.1.0): a graph that is a tree is
eliminated in depth-first post-order, any other by the greedy order that eliminates the
attribute whose neighbourhood has the fewest cells; so the tree, and the model size
:meth:`JunctionTree.megabytes` gives (private-pgm's ``hypothetical_model_size``), are
private-pgm's. Messages are passed in log space (private-pgm's ``message_passing_stable``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

import numpy as np

Clique = tuple[int, ...]


def logsumexp(table: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``log Σ exp(table)`` over ``axes`` (kept as axes of length 1), stable; ``-inf`` where
    every term is ``-inf``."""
    if not axes:
        return table
    top = table.max(axis=axes, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(table - top).sum(axis=axes, keepdims=True)) + top


def _adjacency(d: int, cliques: Sequence[Clique]) -> list[dict[int, None]]:
    """Each attribute's neighbours in the cliques' graph, in the order the edges appear."""
    adjacency: list[dict[int, None]] = [{} for _ in range(d)]
    for clique in cliques:
        for i, a in enumerate(clique):
            for b in clique[i + 1 :]:
                adjacency[a][b] = None
                adjacency[b][a] = None
    return adjacency


def _is_tree(adjacency: list[dict[int, None]]) -> bool:
    """Whether the graph is connected with one edge fewer than nodes (networkx's ``is_tree``)."""
    d = len(adjacency)
    if d == 0 or sum(len(n) for n in adjacency) != 2 * (d - 1):
        return False
    seen, stack = {0}, [0]
    while stack:
        for b in adjacency[stack.pop()]:
            if b not in seen:
                seen.add(b)
                stack.append(b)
    return len(seen) == d


def _post_order(adjacency: list[dict[int, None]]) -> list[int]:
    """Depth-first post-order from attribute 0, neighbours in edge order (networkx's
    ``dfs_postorder_nodes``)."""
    order: list[int] = []
    seen: set[int] = set()
    for root in range(len(adjacency)):
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(adjacency[root]))]
        while stack:
            node, children = stack[-1]
            child = next((c for c in children if c not in seen), None)
            if child is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(child)
                stack.append((child, iter(adjacency[child])))
    return order


def greedy_order(sizes: Sequence[int], cliques: Sequence[Clique]) -> list[int]:
    """Private-pgm's ``greedy_order``: eliminate, first among equals, the attribute whose
    cliques together have the fewest cells; its neighbours then form one clique."""
    remaining = list(range(len(sizes)))
    current = {frozenset(c) for c in cliques}
    order: list[int] = []
    while remaining:
        costs = [math.prod(sizes[b] for b in frozenset().union(*(c for c in current if a in c))) for a in remaining]
        a = remaining.pop(int(np.argmin(costs)))
        touching = {c for c in current if a in c}
        current = (current - touching) | {frozenset().union(*touching) - {a}}
        order.append(a)
    return order


class JunctionTree:
    """The junction tree of ``cliques`` over attributes of domains ``sizes`` (module docstring).

    Attributes:
        order: the elimination order.
        nodes: the triangulated graph's maximal cliques, columns in increasing order.
        edges: the tree's edges (pairs of node indices), a forest where the graph is not connected.
    """

    def __init__(self, sizes: Sequence[int], cliques: Sequence[Sequence[int]]) -> None:
        self.sizes = tuple(int(k) for k in sizes)
        given = [tuple(int(a) for a in c) for c in cliques]
        adjacency = _adjacency(len(self.sizes), given)
        self.order = _post_order(adjacency) if _is_tree(adjacency) else greedy_order(self.sizes, given)
        self.nodes = self._eliminate(adjacency)
        self.edges = self._spanning_tree()
        self._homes: dict[frozenset[int], int] = {}
        self._sets = [set(node) for node in self.nodes]
        self._adjacent: list[set[int]] = [set() for _ in self.nodes]
        for i, j in self.edges:
            self._adjacent[i].add(j)
            self._adjacent[j].add(i)

    def _eliminate(self, adjacency: list[dict[int, None]]) -> list[Clique]:
        """The maximal cliques of the graph triangulated by eliminating in :attr:`order`: each
        attribute with its neighbours not yet eliminated, those not within another."""
        neighbours = [set(n) for n in adjacency]
        formed: list[frozenset[int]] = []
        for a in self.order:
            formed.append(frozenset(neighbours[a] | {a}))
            for b in neighbours[a]:
                neighbours[b] |= neighbours[a] - {b}
                neighbours[b].discard(a)
        maximal = [c for c in formed if not any(c < other for other in formed)]
        return sorted({tuple(sorted(c)) for c in maximal})

    def _spanning_tree(self) -> list[tuple[int, int]]:
        """A maximum spanning tree of the nodes weighted by their separators' sizes (Kruskal;
        no edge across an empty separator)."""
        weights = [
            (len(set(a) & set(b)), i, j)
            for i, a in enumerate(self.nodes)
            for j, b in enumerate(self.nodes[i + 1 :], start=i + 1)
            if set(a) & set(b)
        ]
        parent = list(range(len(self.nodes)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        edges = []
        for _, i, j in sorted(weights, key=lambda w: -w[0]):
            if root(i) != root(j):
                parent[root(i)] = root(j)
                edges.append((i, j))
        return edges

    def subtree(self, columns: Sequence[int]) -> tuple[list[int], list[tuple[int, int]]]:
        """A subtree (nodes, edges) of the forest whose nodes hold every one of ``columns``,
        found by pruning leaves: a leaf goes when its neighbour holds every column it holds
        (an isolated node when it holds none), until none can. Its nodes' joint distribution
        is the product of their beliefs over the product of their edges' separator beliefs."""
        wanted = set(columns)
        adjacent = {i: set(near) for i, near in enumerate(self._adjacent)}
        leaves = [i for i, near in adjacent.items() if len(near) <= 1]
        while leaves:
            i = leaves.pop()
            if i not in adjacent or len(adjacent[i]) > 1:
                continue
            held = wanted & self._sets[i]
            if not adjacent[i]:
                if not held:
                    del adjacent[i]
                continue
            (other,) = adjacent[i]
            if held <= self._sets[other]:
                adjacent[other].discard(i)
                del adjacent[i]
                leaves.append(other)
        edges = sorted((i, j) for i in adjacent for j in adjacent[i] if i < j)
        return sorted(adjacent), edges

    def megabytes(self) -> float:
        """The size of the nodes' tables, 8 bytes a cell (private-pgm's ``hypothetical_model_size``)."""
        return sum(math.prod(self.sizes[a] for a in c) for c in self.nodes) * 8 / 2**20

    def shape(self, node: Clique, columns: Sequence[int]) -> tuple[int, ...]:
        """A table over ``columns`` (a subset of ``node``, increasing) broadcast over ``node``'s axes."""
        return tuple(self.sizes[a] if a in columns else 1 for a in node)

    def home(self, columns: Sequence[int]) -> int:
        """The smallest node that contains ``columns`` (the cheapest to sum a marginal from).

        Raises:
            ValueError: if none does.
        """
        key = frozenset(columns)
        if key not in self._homes:
            holding = [i for i, node in enumerate(self.nodes) if key <= set(node)]
            if not holding:
                raise ValueError(f"no clique of the junction tree contains the columns {tuple(columns)}")
            self._homes[key] = min(holding, key=lambda i: math.prod(self.sizes[a] for a in self.nodes[i]))
        return self._homes[key]

    def log_beliefs(self, cliques: Sequence[Clique], theta: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Each node's normalised log marginal under ``Σ θ_c`` (``theta[i]`` over ``cliques[i]``,
        axes in increasing column order), by two passes of messages over every tree of the
        forest; in place where it can, so that at most about three tables of a node's size
        are held beside the nodes' own."""
        log = [np.zeros([self.sizes[a] for a in node]) for node in self.nodes]
        for clique, potential in zip(cliques, theta):
            i = self.home(clique)
            log[i] += potential.reshape(self.shape(self.nodes[i], clique))
        inbox: dict[tuple[int, int], np.ndarray] = {}
        for sender, receiver, incoming, axes, shape in self._messages:
            table = log[sender] + sum(inbox[k] for k in incoming) if incoming else log[sender]
            inbox[(sender, receiver)] = logsumexp(table, axes).reshape(shape)
        for i, table in enumerate(log):
            for k in self._neighbours[i]:
                table += inbox.pop((k, i))
            table -= logsumexp(table, tuple(range(table.ndim)))
        return log

    @cached_property
    def _neighbours(self) -> list[list[int]]:
        neighbours: list[list[int]] = [[] for _ in self.nodes]
        for i, j in self.edges:
            neighbours[i].append(j)
            neighbours[j].append(i)
        return neighbours

    @cached_property
    def _messages(self) -> list[tuple[int, int, list[tuple[int, int]], tuple[int, ...], tuple[int, ...]]]:
        """Each message in the order it is sent: sender, receiver, the messages the sender
        adds first, the sender's axes summed out, and the shape the receiver adds it in."""
        plan = []
        for sender, receiver in self._schedule(self._neighbours):
            node, other = self.nodes[sender], set(self.nodes[receiver])
            incoming = [(k, sender) for k in self._neighbours[sender] if k != receiver]
            axes = tuple(x for x, a in enumerate(node) if a not in other)
            shape = self.shape(self.nodes[receiver], [a for a in node if a in other])
            plan.append((sender, receiver, incoming, axes, shape))
        return plan

    def _schedule(self, neighbours: list[list[int]]) -> list[tuple[int, int]]:
        """Messages leaves to root then root to leaves, for every tree of the forest."""
        upward: list[tuple[int, int]] = []
        downward: list[tuple[int, int]] = []
        seen: set[int] = set()
        for root in range(len(self.nodes)):
            if root in seen:
                continue
            seen.add(root)
            stack, visit = [root], []
            while stack:
                node = stack.pop()
                visit.append(node)
                for child in neighbours[node]:
                    if child not in seen:
                        seen.add(child)
                        stack.append(child)
                        downward.append((node, child))
            depth_first = {node: k for k, node in enumerate(visit)}
            upward += sorted(((c, p) for p, c in downward if p in depth_first), key=lambda e: -depth_first[e[0]])
        return upward + downward
