"""Graphical-model inference from noisy marginals (private-pgm's estimation, in numpy), and
exact sampling of the model.

McKenna, Sheldon, Miklau, "Graphical-model based estimation and inference for differential
privacy", ICML 2019: given noisy linear measurements of marginals, find the distribution
that fits them best (least squares, weighted by each measurement's noise) among those of a
Markov random field ``p(x) ∝ exp(Σ_c θ_c(x_c))`` over the measured cliques; it is found by
mirror descent over the marginal polytope (Algorithm 1). :func:`fit` runs the algorithm of
private-pgm's ``mbi.estimation.mirror_descent`` (mbi 1.1.0) step for step: the loss
``Σ_m ½ ||(w_m μ_m − y_m) / σ_m||²``, the first step ``2 / (L total)`` with ``L`` the loss's
Lipschitz constant by 50 steps of power iteration, the step grown by 1.01 when Armijo's
condition holds and halved (the step undone) when it does not; the model's marginals by
message passing on private-pgm's junction tree (:mod:`dp2pub.synthesis.junction`).

Why not private-pgm itself: it compiles every fit's functions with JAX, and compiling is most
of its time here (on nltcs's 120 pairs, 213 of 275 s at 100 steps; on acs a fit was still
compiling after 11 minutes; AIM compiles anew each round as its model grows). The numpy fit
needs no compiling and is tested against ``mbi`` to rounding (tests/synthesis/test_pgm.py,
where the ``pgm`` extra is installed).

:func:`sample` draws records from the fitted model *exactly*: attribute by attribute in the
reverse of the junction tree's elimination order, each from its conditional distribution
given the attributes already drawn that share a clique of the triangulated graph with it
(they form one clique, so the model's clique marginal gives that conditional exactly).
``mbi.MarkovRandomField.synthetic_data`` (1.1.0) conditions on neighbours in the measured
cliques rather than the triangulated ones and, within a group of equal parent values,
assigns values in record order (its "round" method), which correlates a column with columns
drawn before it beyond the model (tests/synthesis/test_pgm.py; with private-pgm's MST script
on acs at epsilon 0.4, 5 seeds: its model's 2-way AVD 0.013, the tables that sampler drew
from it 0.068).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from dp2pub.data.marginals import joint_codes
from dp2pub.products import capped_product
from dp2pub.synthesis.junction import Clique, JunctionTree

#: Steps of power iteration for the loss's Lipschitz constant (private-pgm's).
POWER_STEPS = 50
#: numpy's einsum names at most this many axes.
EINSUM_AXES = 52
#: Float64 copies of a model's junction-tree tables that a fit, a query or the sampler holds
#: at once: a fit, the potentials, gradients and marginals of the current and the trial step,
#: and the messages' temporaries; a query contracted by einsum, its factors and
#: intermediates; the sampler, its conditionals over the largest node (measured with
#: tracemalloc: 2.1-5.6 times the tables in a fit, up to 8.9 with the sampler, for models of
#: 0.05-0.8 MB).
MODEL_COPIES = 10


@dataclass(frozen=True)
class Measurement:
    """A noisy measurement of the counts of one marginal: ``values = weights * counts + noise``
    (counts of the clique's cells, flattened in C order over ``clique``'s axes in increasing
    column order; ``weights`` None: all 1), the noise Gaussian with standard deviation
    ``stddev`` on every entry."""

    clique: tuple[int, ...]
    values: np.ndarray
    stddev: float
    weights: np.ndarray | None = None


def maximal_cliques(cliques: Sequence[Clique]) -> list[Clique]:
    """The cliques not contained in another, the largest first (private-pgm's ``maximal_subset``)."""
    result: list[Clique] = []
    for clique in sorted(cliques, key=len, reverse=True):
        if not any(set(clique) <= set(other) for other in result):
            result.append(clique)
    return result


@dataclass
class Model:
    """A Markov random field over attributes of domains ``sizes``: potentials ``theta`` (log
    space, axes in increasing column order) on ``cliques``, scaled to ``total`` records."""

    sizes: tuple[int, ...]
    cliques: list[Clique]
    theta: list[np.ndarray] = field(repr=False)
    total: float
    #: The mirror-descent steps its :func:`fit` took (fewer than asked when a deadline cut it).
    steps: int = 0

    @cached_property
    def tree(self) -> JunctionTree:
        """The junction tree of the model's cliques."""
        return JunctionTree(self.sizes, self.cliques)

    @cached_property
    def beliefs(self) -> list[np.ndarray]:
        """The model's distribution on each node of :attr:`tree` (probabilities)."""
        return [np.exp(log, out=log) for log in self.tree.log_beliefs(self.cliques, self.theta)]

    def clique_counts(self, clique: Clique, beliefs: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """The counts over ``clique`` (increasing columns, within a node of the tree), from
        ``beliefs`` (default: the model's own), as a table with the clique's axes."""
        beliefs = self.beliefs if beliefs is None else beliefs
        i = self.tree.home(clique)
        node = self.tree.nodes[i]
        if len(node) > EINSUM_AXES:
            return self.total * beliefs[i].sum(axis=tuple(x for x, a in enumerate(node) if a not in clique))
        return self.total * np.einsum(beliefs[i], list(range(len(node))), [node.index(a) for a in clique])

    def counts(self, columns: Sequence[int]) -> np.ndarray:
        """The model's counts over ``columns`` (its total times its distribution), flattened
        in C order over the columns in the order given."""
        columns = [int(a) for a in columns]
        ordered = tuple(sorted(columns))
        try:
            table = self.clique_counts(ordered)
        except ValueError:  # across nodes: a tree with the query as one more clique
            wider = Model(
                self.sizes, [*self.cliques, ordered], [*self.theta, np.zeros(self.shape(ordered))], self.total
            )
            table = wider.clique_counts(ordered)
        return np.transpose(table, [ordered.index(a) for a in columns]).ravel()

    def shape(self, columns: Sequence[int]) -> list[int]:
        """The domain sizes of ``columns``."""
        return [self.sizes[a] for a in columns]

    def counts_of(self, cliques: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """:meth:`counts` of each of ``cliques``, from the beliefs of one message passing: a
        query within a node of the junction tree summed from that node's belief; one across
        nodes contracted with ``np.einsum`` (a greedy order) over the beliefs of the subtree
        that holds it divided by the beliefs of its separators
        (:meth:`~dp2pub.synthesis.junction.JunctionTree.subtree`), no tree built for it."""
        tree, answers = self.tree, []
        for query in cliques:
            query = [int(a) for a in query]
            nodes, edges = tree.subtree(query)
            held = sorted(set().union(*(tree.nodes[i] for i in nodes)))
            if len(nodes) == 1 or len(held) > EINSUM_AXES:
                answers.append(self.counts(query))
                continue
            axis = {a: x for x, a in enumerate(held)}  # einsum's labels: 0 .. 51, not column numbers
            factors: list[Any] = []
            for i in nodes:
                factors += [self.beliefs[i], [axis[a] for a in tree.nodes[i]]]
            for i, j in edges:
                separator = sorted(set(tree.nodes[i]) & set(tree.nodes[j]))
                node = tree.nodes[i]
                marginal = self.beliefs[i].sum(axis=tuple(x for x, a in enumerate(node) if a not in separator))
                inverse = np.divide(1.0, marginal, out=np.zeros_like(marginal), where=marginal > 0)
                factors += [inverse, [axis[a] for a in separator]]
            table = np.einsum(*factors, [axis[a] for a in query], optimize="greedy").ravel()
            answers.append(table * self.total)
        return answers

    def marginal(self, columns: Sequence[int]) -> np.ndarray:
        """The model's distribution over ``columns`` (probabilities, axes in the order given)."""
        table = np.clip(self.counts(columns), 0.0, None)
        return (table / table.sum()).reshape(self.shape(columns))


def fit(
    sizes: Sequence[int],
    measurements: Sequence[Measurement],
    iterations: int,
    warm: Model | None = None,
    known_total: float | None = None,
    deadline: float | None = None,
) -> Model:
    """Private-pgm's mirror descent (module docstring), ``iterations`` steps on
    ``measurements``, started from ``warm``'s potentials if given (AIM's warm start: each
    put on a clique of the new model that contains it) or from zero, with ``known_total``
    records (None: :func:`total_estimate`). With a ``deadline`` (a ``time.perf_counter()``
    value) no step starts after it, the first excepted; :attr:`Model.steps` says how many ran.

    Raises:
        ValueError: a measurement's clique not in increasing column order, or a warm model's
            clique within none of the new model's.
    """
    for m in measurements:
        if list(m.clique) != sorted(set(m.clique)):
            raise ValueError(f"a measurement's clique in increasing column order, not {m.clique}")
    sizes = tuple(int(k) for k in sizes)
    total = total_estimate(measurements) if known_total is None else float(known_total)
    cliques = maximal_cliques([m.clique for m in measurements])
    model = Model(sizes, cliques, [np.zeros([sizes[a] for a in c]) for c in cliques], total)
    if warm is not None:
        for clique, potential in zip(warm.cliques, warm.theta):
            i = next((i for i, c in enumerate(cliques) if set(clique) <= set(c)), None)
            if i is None:
                raise ValueError(f"the warm model's clique {clique} is within none of the new model's")
            model.theta[i] = model.theta[i] + potential.reshape(model.tree.shape(cliques[i], clique))
    parent = [next(i for i, c in enumerate(cliques) if set(m.clique) <= set(c)) for m in measurements]
    return _descend(model, measurements, parent, iterations, deadline)


def _project(clique: Clique, m: Measurement, table: np.ndarray) -> np.ndarray:
    """``table`` over ``clique`` summed to the measurement's columns, flattened and weighted."""
    values = table.sum(axis=tuple(j for j, a in enumerate(clique) if a not in m.clique)).ravel()
    return values if m.weights is None else values * m.weights


def _spread(sizes: Sequence[int], clique: Clique, m: Measurement, values: np.ndarray) -> np.ndarray:
    """The adjoint of :func:`_project`: ``values`` over the measurement's cells as a table
    over ``clique`` (1 on the other axes, broadcast on adding)."""
    values = values if m.weights is None else values * m.weights
    return values.reshape(tuple(sizes[a] if a in m.clique else 1 for a in clique))


def _descend(
    model: Model, measurements: Sequence[Measurement], parent: Sequence[int], iterations: int, deadline: float | None
) -> Model:
    """The mirror descent itself, from ``model``'s potentials (module docstring), stopped
    before a step that would start after ``deadline``."""
    cliques, sizes = model.cliques, model.sizes

    def marginals(theta: list[np.ndarray]) -> list[np.ndarray]:
        trial = Model(sizes, cliques, theta, model.total)
        trial.tree = model.tree  # same cliques, same tree
        return [trial.clique_counts(c) for c in cliques]

    def loss_grad(mu: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        loss, grad = 0.0, [np.zeros_like(x) for x in mu]
        for m, i in zip(measurements, parent):
            sigma = max(m.stddev, 1e-12)
            diff = (_project(cliques[i], m, mu[i]) - m.values) / sigma
            loss += 0.5 * float(diff @ diff)
            grad[i] = grad[i] + _spread(sizes, cliques[i], m, diff / sigma)
        return loss, grad

    alpha = 2.0 / ((lipschitz(model, measurements, parent) or 1.0) * model.total)  # as private-pgm
    theta = model.theta
    mu = marginals(theta)
    loss, grad = loss_grad(mu)
    steps = 0
    for steps in range(1, iterations + 1):
        if steps > 1 and deadline is not None and time.perf_counter() > deadline:
            steps -= 1
            break
        trial = [t - alpha * g for t, g in zip(theta, grad)]
        mu2 = marginals(trial)
        loss2, grad2 = loss_grad(mu2)
        step = math.fsum(float((g * (a - b)).sum()) for g, a, b in zip(grad, mu, mu2))
        if loss - loss2 >= 0.5 * alpha * step:
            theta, mu, loss, grad, alpha = trial, mu2, loss2, grad2, 1.01 * alpha
        else:
            alpha *= 0.5
    fitted = Model(sizes, cliques, theta, model.total, steps)
    fitted.tree = model.tree
    return fitted


def lipschitz(model: Model, measurements: Sequence[Measurement], parent: Sequence[int]) -> float:
    """The largest eigenvalue of the loss's Hessian ``Σ_m A_mᵀ A_m / σ_m²`` (over the cliques'
    marginals), by :data:`POWER_STEPS` steps of power iteration from the vector of ones, as
    private-pgm's ``calculate_l2_lipschitz``."""
    v = [np.ones(model.shape(c)) for c in model.cliques]
    if not v:
        return 0.0
    norm = math.sqrt(sum(float((x * x).sum()) for x in v))
    v = [x / norm for x in v]
    estimate = 0.0
    for _ in range(POWER_STEPS):
        hv = [np.zeros_like(x) for x in v]
        for m, i in zip(measurements, parent):
            sigma2 = max(m.stddev, 1e-12) ** 2
            clique = model.cliques[i]
            hv[i] = hv[i] + _spread(model.sizes, clique, m, _project(clique, m, v[i]) / sigma2)
        estimate = math.sqrt(sum(float((x * x).sum()) for x in hv))
        v = [x / (estimate + 1e-12) for x in hv]
    return estimate


def total_estimate(measurements: Sequence[Measurement]) -> float:
    """The minimum-variance unbiased number of records from measurements of plain counts
    (each one's sum, of variance ``stddev^2 * cells``, weighted by inverse variance), at
    least 1; 1 if there are none (private-pgm's ``minimum_variance_unbiased_total``)."""
    plain = [m for m in measurements if m.weights is None]
    if not plain:
        return 1.0
    weights = np.array([1.0 / (m.stddev**2 * m.values.size) for m in plain])
    sums = np.array([float(np.sum(m.values)) for m in plain])
    return max(1.0, float((weights * sums).sum() / weights.sum()))


def model_megabytes(sizes: Sequence[int], cliques: Sequence[Sequence[int]]) -> float:
    """The size of the junction tree's clique tables of a model over ``cliques``, in
    megabytes (private-pgm's ``hypothetical_model_size``: 8 bytes a cell)."""
    return JunctionTree(sizes, [tuple(sorted(c)) for c in cliques]).megabytes()


def model_memory(max_model_size: float, sizes: Sequence[int]) -> int:
    """The bytes a fit, its queries and the sampler may hold for a model within
    ``max_model_size`` megabytes: :data:`MODEL_COPIES` copies of its tables, each copy never
    less than the 1-way tables nor more than d tables of the whole domain."""
    sizes = [int(k) for k in sizes]
    cap = max(int(max_model_size * 2**20), 8 * sum(sizes))
    return MODEL_COPIES * capped_product([8 * max(len(sizes), 1), *sizes], cap)


def sample(model: Model, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` records drawn independently from ``model``, exactly (module docstring), as an
    (rows, d) int64 array of codes."""
    tree = model.tree
    codes = np.zeros((rows, len(model.sizes)), dtype=np.int64)
    drawn: list[int] = []
    for column in reversed(tree.order):
        parents = sorted({a for node in tree.nodes if column in node for a in node} & set(drawn))
        clique = tuple(sorted([*parents, column]))
        table = model.clique_counts(clique)
        joint = np.transpose(table, [clique.index(a) for a in [*parents, column]])
        codes[:, column] = draw_conditional(joint, codes[:, parents], rng)
        drawn.append(column)
    return codes


def draw_conditional(joint: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One value per row of ``parents`` (their codes, columns in the joint's order), drawn
    from ``joint`` (axes: the parents', then the child's) conditioned on them, by inverse
    transform sampling on one sorted array: row ``s`` of the conditionals' cumulative sums
    shifted by ``s``, searched at ``s + u``. A row of zero mass is taken as uniform."""
    k = joint.shape[-1]
    table = np.clip(joint.reshape(-1, k), 0.0, None)
    mass = table.sum(axis=1, keepdims=True)
    table = np.where(mass > 0, table / np.where(mass > 0, mass, 1.0), 1.0 / k)
    row = joint_codes(parents, joint.shape[:-1]) if parents.shape[1] else np.zeros(parents.shape[0], np.int64)
    cumulative = np.minimum(np.cumsum(table, axis=1), 1.0)  # rounding: within [0, 1], sorted
    cumulative[:, -1] = 1.0  # and every row ends at exactly 1
    shifted = (cumulative + np.arange(table.shape[0])[:, None]).ravel()
    found = np.searchsorted(shifted, row + rng.random(row.size), side="right")
    return np.clip(found - row * k, 0, k - 1)
