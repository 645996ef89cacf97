"""Graphical-model inference from noisy marginals (private-pgm), and exact sampling of the model.

McKenna, Sheldon, Miklau, "Graphical-model based estimation and inference for differential
privacy", ICML 2019: given noisy linear measurements of marginals, find the distribution
that fits them best (least squares, weighted by each measurement's noise) among those of a
Markov random field over the measured cliques; it is found by mirror descent (Algorithm 1)
over the marginal polytope. dp2pub calls private-pgm's own implementation (the ``mbi``
package, the ``pgm`` extra); attributes are named by their column index.

:func:`sample` draws records from the fitted model *exactly*: attribute by attribute in the
reverse of the junction tree's elimination order, each from its conditional distribution
given the attributes already drawn that share a clique of the triangulated graph with it
(they form one clique, so the model's clique marginal gives that conditional exactly).
``mbi.MarkovRandomField.synthetic_data`` (1.1.0) is not used: it conditions on neighbours in
the measured cliques rather than the triangulated ones and, within a group of equal parent
values, assigns values in record order (its "round" method), which correlates a column with
columns drawn before it beyond the model (tests/synthesis/test_pgm.py; with private-pgm's MST
script on acs at epsilon 0.4, 5 seeds: its model's 2-way AVD 0.013, the tables that sampler
drew from it 0.068).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dp2pub.data.marginals import joint_codes
from dp2pub.validation import ConfigError

#: The Python objects JAX keeps while a fit is compiled and run (jaxprs, traced by
#: tracemalloc beside the arrays), a base and a part per measurement of the fit: measured
#: 0.8-4 MiB for fits of 5-13 measurements, varying by what JAX has cached already (the
#: memory checks allow MST and AIM a slack of :data:`JAX_SLACK` for it).
JAX_TRACE_BYTES = 9 << 18
JAX_BYTES_PER_MEASUREMENT = 1 << 17
JAX_SLACK = 3 << 19


def jax_bytes(measurements: int) -> int:
    """The Python objects of JAX's compiled fit of ``measurements`` measurements."""
    return JAX_TRACE_BYTES + JAX_BYTES_PER_MEASUREMENT * measurements


#: numpy's einsum names at most this many axes.
EINSUM_AXES = 52
#: How to get the extra when private-pgm is missing.
INSTALL_HINT = "private-pgm (pip install 'dp2pub[pgm]')"


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


def require_pgm(key: str, value: object) -> Any:
    """The ``mbi`` package, imported here only (JAX on the CPU; a second to import).

    Raises:
        ConfigError: naming ``key`` when the ``pgm`` extra is not installed.
    """
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # no probing for accelerators
    try:
        import mbi
    except ImportError as error:
        raise ConfigError(key, value, f"a setting whose library is installed: it needs {INSTALL_HINT}") from error
    return mbi


def _domain(mbi: Any, sizes: Sequence[int]) -> Any:
    return mbi.Domain([str(a) for a in range(len(sizes))], [int(k) for k in sizes])


def _clique(columns: Sequence[int]) -> tuple[str, ...]:
    return tuple(str(a) for a in columns)


def _array(factor: Any, columns: Sequence[int]) -> np.ndarray:
    """A factor's values as float64, axes in the order of ``columns``."""
    return np.asarray(factor.transpose(_clique(columns)).datavector(flatten=False), dtype=np.float64)


@dataclass
class Model:
    """A Markov random field fitted by private-pgm over attributes of domains ``sizes``;
    ``total`` the number of records it estimates."""

    sizes: tuple[int, ...]
    fitted: Any = field(repr=False)

    @property
    def total(self) -> float:
        """The number of records the model estimates (private-pgm's minimum-variance estimate
        from the measurements of all cells, or the known total)."""
        return float(self.fitted.total)

    @property
    def cliques(self) -> list[tuple[int, ...]]:
        """The cliques of the model's potentials (its measured marginals' attribute sets)."""
        return [tuple(int(a) for a in clique) for clique in self.fitted.cliques]

    def counts(self, columns: Sequence[int]) -> np.ndarray:
        """The model's counts over ``columns`` (its total times its distribution), flattened
        in C order over the columns in the order given."""
        return _array(self.fitted.project(_clique(columns)), columns).ravel()

    def counts_of(self, cliques: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """:meth:`counts` of each of ``cliques``, contracted in numpy from the model's
        potentials (``np.einsum`` with a greedy contraction order over the factors
        ``exp(theta_C - max theta_C)``): the same distribution as private-pgm's variable
        elimination, without compiling it for every query. A query whose contraction
        under- or overflows is answered by private-pgm."""
        factors: list[Any] = []
        seen: set[int] = set()
        for clique in self.fitted.potentials.cliques:
            log = np.asarray(self.fitted.potentials[clique].values, dtype=np.float64)
            factors += [np.exp(log - log.max()), [int(a) for a in clique]]
            seen.update(int(a) for a in clique)
        for a in sorted(set(range(len(self.sizes))) - seen):
            factors += [np.ones(self.sizes[a]), [a]]
        if len(self.sizes) > EINSUM_AXES:
            return [self.counts(c) for c in cliques]
        answers = []
        for clique in cliques:
            table = np.einsum(*factors, list(clique), optimize="greedy").ravel()
            mass = table.sum()
            ok = np.finfo(np.float64).tiny <= mass < math.inf
            answers.append(table * (self.total / mass) if ok else self.counts(clique))
        return answers

    def marginal(self, columns: Sequence[int]) -> np.ndarray:
        """The model's distribution over ``columns`` (probabilities, axes in the order given)."""
        table = np.clip(_array(self.fitted.project(_clique(columns)), columns), 0.0, None)
        return table / table.sum()


def fit(
    sizes: Sequence[int],
    measurements: Sequence[Measurement],
    iterations: int,
    key: str = "mechanism",
    value: object = None,
    warm: Model | None = None,
    known_total: float | None = None,
) -> Model:
    """Private-pgm's mirror descent (``mbi.estimation.mirror_descent``, ``iterations`` steps)
    on ``measurements``, started from ``warm``'s potentials if given (AIM's warm start), with
    ``known_total`` records (None: private-pgm estimates it from the measurements of plain
    counts); ``key`` and ``value`` name the config entry if the extra is missing."""
    mbi = require_pgm(key, value)
    domain = _domain(mbi, sizes)
    linear = [_linear(mbi, m) for m in measurements]
    potentials = None
    if warm is not None:
        potentials = warm.fitted.potentials.expand(sorted({m.clique for m in linear}))
    fitted = mbi.estimation.mirror_descent(
        domain, linear, iters=iterations, potentials=potentials, known_total=known_total
    )
    return Model(tuple(int(k) for k in sizes), fitted)


def total_estimate(measurements: Sequence[Measurement]) -> float:
    """The minimum-variance unbiased number of records from measurements of plain counts
    (each one's sum, of variance ``stddev^2 * cells``, weighted by inverse variance), at
    least 1; 1 if there are none."""
    plain = [m for m in measurements if m.weights is None]
    if not plain:
        return 1.0
    weights = np.array([1.0 / (m.stddev**2 * m.values.size) for m in plain])
    sums = np.array([float(np.sum(m.values)) for m in plain])
    return max(1.0, float((weights * sums).sum() / weights.sum()))


def model_megabytes(sizes: Sequence[int], cliques: Sequence[Sequence[int]]) -> float:
    """The size of the junction tree's clique tables of a model over ``cliques``, in
    megabytes (private-pgm's ``hypothetical_model_size``: 8 bytes a cell)."""
    mbi = require_pgm("mechanism", None)
    return float(mbi.junction_tree.hypothetical_model_size(_domain(mbi, sizes), [_clique(sorted(c)) for c in cliques]))


def _linear(mbi: Any, m: Measurement) -> Any:
    if list(m.clique) != sorted(m.clique):
        raise ValueError(f"a measurement's clique in increasing column order, not {m.clique}")
    query: Callable[[Any], Any] = mbi.Factor.datavector
    if m.weights is not None:
        weights = np.asarray(m.weights, dtype=np.float64)

        def query(factor: Any) -> Any:
            return factor.datavector() * weights

    return mbi.LinearMeasurement(np.asarray(m.values, dtype=np.float64), _clique(m.clique), m.stddev, query)


def sample(model: Model, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` records drawn independently from ``model``, exactly (module docstring), as an
    (rows, d) int64 array of codes."""
    mbi = require_pgm("mechanism", None)
    domain = _domain(mbi, model.sizes)
    tree, elimination = mbi.junction_tree.make_junction_tree(domain, model.fitted.cliques)
    cliques = [tuple(int(a) for a in clique) for clique in tree.nodes]
    marginals = mbi.marginal_oracles.message_passing_stable(model.fitted.potentials.expand(list(tree.nodes)))
    codes = np.zeros((rows, len(model.sizes)), dtype=np.int64)
    drawn: list[int] = []
    for column in (int(a) for a in reversed(elimination)):
        parents = sorted({a for clique in cliques if column in clique for a in clique} & set(drawn))
        joint = _array(marginals.project(_clique([*parents, column])), [*parents, column])
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
    cumulative = np.cumsum(table, axis=1)
    cumulative[:, -1] = 1.0  # rounding: every row ends at exactly 1
    shifted = (cumulative + np.arange(table.shape[0])[:, None]).ravel()
    found = np.searchsorted(shifted, row + rng.random(row.size), side="right")
    return np.minimum(found - row * k, k - 1)
