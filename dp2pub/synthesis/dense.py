"""Private-pgm's estimation on a model small enough to hold whole, in numpy.

When the table's whole domain fits in memory, the graphical model of a set of measurements
(potentials on the measurements' maximal cliques, ``p(x) ∝ exp(Σ_c θ_c(x_c))``) can be held as
one table over the domain, and its marginals summed from it, instead of passing messages in
a junction tree. :func:`fit` then runs the same algorithm as private-pgm's
``mbi.estimation.mirror_descent`` (McKenna, Sheldon, Miklau, "Graphical-model based
estimation and inference for differential privacy", ICML 2019, Algorithm 1; mbi 1.1.0): the
loss ``Σ_m ½ ||(μ_m − y_m) / σ_m||²`` of every measurement's marginal, the first step
``2 / (L total)`` with ``L`` the loss's Lipschitz constant by 50 steps of power iteration, and
the step grown by 1.01 when Armijo's condition holds and halved (the step undone) when it
does not. It is the same model and the same steps, with no compilation: on nltcs's 16
attributes (65,536 cells) and its 120 pairs, a fit through private-pgm took 275 s at 100
steps, 213 s of them compiling JAX functions (docs/design.md, 6.9).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dp2pub.synthesis.pgm import Measurement

#: Steps of power iteration for the loss's Lipschitz constant (private-pgm's).
POWER_STEPS = 50


def maximal_cliques(cliques: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The cliques not contained in another, the largest first (private-pgm's ``maximal_subset``)."""
    result: list[tuple[int, ...]] = []
    for clique in sorted(cliques, key=len, reverse=True):
        if not any(set(clique) <= set(other) for other in result):
            result.append(clique)
    return result


class Dense:
    """The model over ``sizes`` with potentials on ``cliques`` (sorted columns), held whole."""

    def __init__(self, sizes: Sequence[int], cliques: Sequence[tuple[int, ...]]) -> None:
        self.sizes = tuple(int(k) for k in sizes)
        self.cliques = list(cliques)

    def shape(self, clique: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of a clique's table broadcast over the domain (1 on other axes)."""
        return tuple(self.sizes[a] if a in clique else 1 for a in range(len(self.sizes)))

    def joint(self, theta: list[np.ndarray], total: float) -> np.ndarray:
        """The model's counts on the whole domain: ``total · exp(Σ θ_c) / Z``."""
        logp = np.zeros(self.sizes)
        for clique, potential in zip(self.cliques, theta):
            logp += potential.reshape(self.shape(clique))
        logp -= logp.max()
        p = np.exp(logp)
        return p * (total / p.sum())

    def project(self, clique: tuple[int, ...], m: Measurement, table: np.ndarray) -> np.ndarray:
        """``table`` over ``clique`` summed to the measurement's columns, flattened."""
        return table.sum(axis=tuple(j for j, a in enumerate(clique) if a not in m.clique)).ravel()

    def spread(self, clique: tuple[int, ...], m: Measurement, values: np.ndarray) -> np.ndarray:
        """``values`` over the measurement's columns as a table over ``clique`` (1 on the
        others' axes, broadcast on adding): the adjoint of :meth:`project`."""
        return values.reshape(tuple(self.sizes[a] if a in m.clique else 1 for a in clique))

    def marginals(self, joint: np.ndarray) -> list[np.ndarray]:
        """The joint's marginal on every clique, in its columns' order."""
        d = len(self.sizes)
        return [joint.sum(axis=tuple(a for a in range(d) if a not in clique)) for clique in self.cliques]


def fit(sizes: Sequence[int], measurements: Sequence[Measurement], iterations: int, known_total: float) -> np.ndarray:
    """Mirror descent (module docstring) of ``iterations`` steps from zero potentials on the
    measurements' maximal cliques; the fitted model's counts on the whole domain, of
    ``known_total`` records. Measurements of plain counts only (``weights`` None)."""
    if any(m.weights is not None for m in measurements):
        raise ValueError("the dense fit takes measurements of plain counts only")
    if any(list(m.clique) != sorted(set(m.clique)) for m in measurements):
        raise ValueError("a measurement's clique must list its columns in increasing order")
    model = Dense(sizes, maximal_cliques([m.clique for m in measurements]))
    parent = [next(i for i, c in enumerate(model.cliques) if set(m.clique) <= set(c)) for m in measurements]

    def loss_grad(mu: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        loss, grad = 0.0, [np.zeros_like(x) for x in mu]
        for m, i in zip(measurements, parent):
            sigma = max(m.stddev, 1e-12)
            diff = (model.project(model.cliques[i], m, mu[i]) - m.values) / sigma
            loss += 0.5 * float(diff @ diff)
            grad[i] = grad[i] + model.spread(model.cliques[i], m, diff / sigma)
        return loss, grad

    alpha = 2.0 / ((lipschitz(model, measurements, parent) or 1.0) * known_total)  # as private-pgm
    theta = [np.zeros([model.sizes[a] for a in c]) for c in model.cliques]
    mu = model.marginals(model.joint(theta, known_total))
    loss, grad = loss_grad(mu)
    for _ in range(iterations):
        trial = [t - alpha * g for t, g in zip(theta, grad)]
        mu2 = model.marginals(model.joint(trial, known_total))
        loss2, grad2 = loss_grad(mu2)
        step = math.fsum(float((g * (a - b)).sum()) for g, a, b in zip(grad, mu, mu2))
        if loss - loss2 >= 0.5 * alpha * step:
            theta, mu, loss, grad, alpha = trial, mu2, loss2, grad2, 1.01 * alpha
        else:
            alpha *= 0.5
    return model.joint(theta, known_total)


def lipschitz(model: Dense, measurements: Sequence[Measurement], parent: Sequence[int]) -> float:
    """The largest eigenvalue of the loss's Hessian ``Σ_m A_mᵀ A_m / σ_m²`` (over the cliques'
    marginals), by :data:`POWER_STEPS` steps of power iteration from the vector of ones, as
    private-pgm's ``calculate_l2_lipschitz``."""
    v = [np.ones([model.sizes[a] for a in c]) for c in model.cliques]
    if not v:
        return 0.0
    norm = math.sqrt(sum(float((x * x).sum()) for x in v))
    v = [x / norm for x in v]
    estimate = 0.0
    for _ in range(POWER_STEPS):
        hv = [np.zeros_like(x) for x in v]
        for m, i in zip(measurements, parent):
            sigma2 = max(m.stddev, 1e-12) ** 2
            hv[i] = hv[i] + model.spread(model.cliques[i], m, model.project(model.cliques[i], m, v[i]) / sigma2)
        estimate = math.sqrt(sum(float((x * x).sum()) for x in hv))
        v = [x / (estimate + 1e-12) for x in hv]
    return estimate


def sample(joint: np.ndarray, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` records drawn independently from the counts ``joint`` over the whole domain,
    as an (rows, d) int64 array of codes (inverse transform sampling on the cells)."""
    cumulative = np.cumsum(joint.ravel())
    cells = np.searchsorted(cumulative, rng.random(rows) * cumulative[-1], side="right")
    cells = np.minimum(cells, cumulative.size - 1)
    return np.stack(np.unravel_index(cells, joint.shape), axis=1).astype(np.int64)
