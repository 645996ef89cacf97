"""Noisy marginals made non-negative and mutually consistent: CALM's consistency step.

Zhang, Wang, Li, He, Chen, "CALM: Consistent Adaptive Local Marginal for Marginal Release under
Local Differential Privacy", CCS 2018, section 4.4 (after PriView, Qardaji, Yang, Li, SIGMOD
2014, section 4.3). For every attribute set ``A`` that two or more measured marginals share
(every intersection of their attribute sets), smaller sets first, after every table is
shifted to sum to one (the empty set):

1. each marginal ``T_S`` (``A`` within ``S``) projected onto ``A`` sums ``c_S`` cells into each
   cell of ``A``, so the projection's cells have variance ``c_S var_S``;
2. the consistent ``A``-marginal is the average of the projections weighted by the inverse of
   that variance (the minimum-variance unbiased combination);
3. each ``T_S`` is moved to it by adding ``(target - projection) / c_S`` to every cell summed
   into an ``A``-cell.

Step 3 leaves a smaller set's agreement unchanged (the added term sums to zero over any
attribute outside ``A``), so one pass makes every shared marginal agree. Negative cells are
then removed by Norm-Sub (:func:`dp2pub.mechanisms.estimators.project_simplex`; Wang, Lopuhaä,
Li et al., NDSS 2020), which breaks the agreement a little; CALM alternates the two until the
tables are non-negative. The last step here is always a consistency pass, so the shared
marginals of the result agree exactly (to float rounding); ``converged`` says whether its
cells are also non-negative (to ``tol``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dp2pub.mechanisms.estimators import project_simplex

#: A marginal's attributes (column indices, increasing) -> its estimated frequencies, an array
#: shaped by the attributes' domain sizes.
Tables = dict[tuple[int, ...], np.ndarray]


@dataclass(frozen=True)
class Consistency:
    """How :func:`make_consistent` ended: the rounds of consistency and Norm-Sub it took, and
    whether the last one left no cell below ``-tol``."""

    rounds: int
    converged: bool


def shared_sets(keys: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Every intersection of two or more of ``keys`` (the empty set included), smaller sets
    first: the attribute sets on which the marginals must agree."""
    found: set[frozenset[int]] = set()
    frontier = {frozenset(key) for key in keys}
    seen = set(frontier)
    while frontier:
        new = {a & b for a in seen for b in frontier if a != b} - found
        found |= new
        frontier = new - seen
        seen |= new
    found.add(frozenset())
    return sorted((tuple(sorted(s)) for s in found), key=lambda s: (len(s), s))


@dataclass(frozen=True)
class _Holder:
    """A marginal holding a shared set: its key, the axes summed out, and its weight."""

    key: tuple[int, ...]
    axes: tuple[int, ...]
    cells: int
    weight: float


def _plan(tables: Tables, variances: Mapping[tuple[int, ...], float]) -> list[list[_Holder]]:
    """For each shared set, the marginals that hold it, with normalized inverse-variance weights
    (exact marginals, of variance 0, share the whole weight equally)."""
    plan = []
    for shared in shared_sets(list(tables)):
        holders = []
        for key in tables:
            if set(shared) <= set(key):
                axes = tuple(i for i, a in enumerate(key) if a not in shared)
                cells = math.prod(tables[key].shape[i] for i in axes)
                holders.append(_Holder(key, axes, cells, _precision(cells * variances[key])))
        exact = [h for h in holders if math.isinf(h.weight)]
        if exact:
            plan.append([_Holder(h.key, h.axes, h.cells, float(h in exact) / len(exact)) for h in holders])
        else:
            total = math.fsum(h.weight for h in holders)
            plan.append([_Holder(h.key, h.axes, h.cells, h.weight / total) for h in holders])
    return plan


def _precision(variance: float) -> float:
    """``1 / variance``, infinite for an exact estimate."""
    return math.inf if variance == 0.0 else 1.0 / variance


def _consistency_pass(tables: Tables, plan: list[list[_Holder]]) -> None:
    """One pass of steps 1-3 over every shared set, in place."""
    for holders in plan:
        projections = [tables[h.key].sum(axis=h.axes, keepdims=True) for h in holders]
        total = len(holders[0].axes) == tables[holders[0].key].ndim  # the empty set: every table sums to one
        target = 1.0 if total else sum(h.weight * p.ravel() for h, p in zip(holders, projections))
        for h, p in zip(holders, projections):
            tables[h.key] += (np.reshape(target, p.shape) - p) / h.cells


def make_consistent(
    tables: Mapping[tuple[int, ...], np.ndarray],
    variances: Mapping[tuple[int, ...], float],
    max_rounds: int = 100,
    tol: float = 1e-9,
) -> tuple[Tables, Consistency]:
    """Consistent, (nearly) non-negative copies of ``tables``, each summing to one.

    Args:
        tables: unbiased estimates of marginals (attribute tuple -> frequency array).
        variances: each estimate's per-cell variance (:meth:`FrequencyOracle.variance`); 0 for
            an exact one, which then alone sets the marginals it shares.
        max_rounds: at most this many rounds of consistency then Norm-Sub.
        tol: cells above ``-tol`` count as non-negative (and are left as they are).

    Returns:
        The tables after a final consistency pass (shared marginals agree exactly), and how
        it ended.
    """
    out = {key: np.array(table, dtype=np.float64) for key, table in tables.items()}
    plan = _plan(out, variances)
    for rounds in range(1, max_rounds + 1):
        _consistency_pass(out, plan)
        negative = [key for key, table in out.items() if table.min() < -tol]
        if not negative:
            return out, Consistency(rounds, True)
        for key in negative:
            out[key] = project_simplex(out[key])
    _consistency_pass(out, plan)
    return out, Consistency(max_rounds, bool(min(t.min() for t in out.values()) >= -tol))
