"""Publisher ``hdg``: Hybrid-Dimensional Grids under LDP (Yang, Wang, Li, Cheng & Su,
"Answering Multi-Dimensional Range Queries under Local Differential Privacy", PVLDB 14(3),
2020, arXiv 2009.06538; the paper's section 5, which builds on TDG, section 4).

The release answers marginals, not range queries, but a marginal is the set of all point
queries of its attributes, and HDG answers those the way the paper answers range queries:

1. **Grids** (sections 4-5). Each attribute ``a`` (its codes ``0 .. c_a - 1`` in their code
   order are the ordinal order that is binned) gets a 1-D grid of ``f_a = min(g1, c_a)``
   contiguous bins; each pair of attributes a 2-D grid of ``h_a x h_b`` cells,
   ``h_a = min(g2, c_a)`` bins along ``a``. ``g1`` and ``g2`` follow the paper's guideline
   (section 5, the granularity analysis: the noise error of a grid against its
   non-uniformity error) with the number of grids ``m = d + d(d-1)/2`` and the ``n`` users::

       X  = n (e^eps - 1)^2 / (m e^eps)
       g1 = (alpha1^2 X / 2)^(1/3)                 alpha1 = 0.7
       g2 = sqrt(2 alpha2 sqrt(X))                  alpha2 = 0.03

   (the same formulas as the authors' code, ``choose_granularity.py``; evaluated in logs, so
   any finite epsilon works).
2. **Collect** (section 4, TDG's user partition, kept by HDG). The users are split uniformly
   at random into ``m`` disjoint groups, one per grid; each user reports the cell of their
   group's grid that holds their record with OUE (Wang et al., USENIX Security 2017) at the
   whole epsilon, so ``epsilon_spent = epsilon`` by parallel composition. Each grid's estimate
   is unbiased with OUE's variance for its group's size (:func:`measure`).
3. **Post-process** (section 4, TDG's post-processing, kept by HDG). Norm-Sub (Wang et
   al., NDSS 2020: the projection onto the probability simplex) on every grid, then the
   consistency step on every attribute (the weighted average of the grids' sums over each
   bin they share, weights the inverse of their variances, the difference spread evenly over
   each grid's cells), alternated up to ``consistency_rounds`` times (the authors' code: 100;
   here stopped early once consistency moves no cell) and ended by Norm-Sub
   (:func:`post_process`).
4. **Response matrices** (section 5, HDG's "weighted update"). Each pair's ``c_a x c_b``
   matrix at the full resolution of both domains starts uniform and is scaled, in turn, so
   that its sums over the bins of the 1-D grid of ``a``, of the 1-D grid of ``b`` and over
   the cells of the pair's 2-D grid equal the grids' frequencies, until an iteration moves
   less than ``threshold`` users or after ``iterations`` (:func:`response_matrix`).
5. **Answers** (:class:`HDGRelease`). One attribute: its 1-D grid after post-processing,
   each bin's frequency spread evenly over its values (the grids' uniformity assumption,
   which the response matrices share). Two attributes: their response matrix. ``k >= 3``
   attributes: the paper estimates a lambda-D query from its ``lambda (lambda - 1) / 2`` 2-D
   answers by the weighted update over the ``2^lambda`` combinations of satisfying or not
   each predicate (TDG, section 4); a marginal asks every cell of the k attributes at once,
   so the same weighted update runs over the ``prod c`` cells of the k-way table, fitted in
   turn to every pair's response matrix from the uniform table (iterative proportional
   fitting, :func:`fit_pairs`; ``kway: table``). ``kway: cells`` instead answers each cell
   as its own lambda-D point query with the paper's ``2^lambda`` update over its pairs'
   answers, as the authors' code answers a range query, and normalizes the cells
   (:func:`fit_cells`). Every answer is a distribution.

Choices where the paper is silent (its experiments and the authors' code take every domain
``c`` and both granularities to be powers of two, so bins have equal sizes and the 2-D bins
are unions of 1-D bins):

- **Bins** of ``c`` values that ``f`` or ``h`` does not divide: the 1-D bin of value ``v``
  is ``floor(v f / c)`` (contiguous, sizes differing by at most one) and the 2-D bin of 1-D
  bin ``j`` is ``floor(j h / f)``, so every 2-D bin is a union of whole 1-D bins, as in the
  paper; that nesting is what the consistency step and the weighted update need.
- **Rounding** of the guideline: to the nearest integer, at least 2 (a one-cell grid carries
  nothing; the authors' code never goes below 2 either), at most ``c_a`` (a binary attribute
  is never binned), and ``g1`` at least ``g2`` (the 1-D grid refines the 2-D bins). The
  authors round to the nearest power of two, which only means something when ``c`` is one.
- **Groups**: a uniform random permutation of the users cut into ``m`` groups whose sizes
  differ by at most one (``np.array_split``); the paper divides the users into ``m`` groups
  of equal size. An attribute of one value is known from the public domain: it gets no
  grid, and ``d`` counts the others; a table with fewer records than grids is refused,
  naming ``dataset.n``.
- **Consistency weights**: the paper weighs a grid's sum over ``C`` cells by ``1 / C`` (its
  variance over equal groups); here ``users / C``, the inverse of the variance with each
  group's own size (the same up to the groups' differences of one user).
- **Weighted update**: the paper rescales one grid cell at a time; the cells of one grid are
  disjoint, so all of them are rescaled at once here (one grid per step: iterative
  proportional fitting, each step matching its grid exactly), with the stopping rule of the
  authors' code: at most ``iterations`` (100) rounds, stopped once a round changes the
  matrix by less than ``threshold`` (1) user in L1 (frequencies times ``n``).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.mechanisms.accounting import Spend
from dp2pub.mechanisms.adaptive import build_oracle
from dp2pub.mechanisms.estimators import project_simplex
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.mechanisms.unary import OUE
from dp2pub.products import capped_product
from dp2pub.publish.base import Outcome, Publisher, reports_bytes
from dp2pub.publish.release import Release
from dp2pub.validation import ConfigError, check_choice, check_epsilon, check_float, check_int

#: The guideline's constants (the paper's experiments and the authors' code).
ALPHA1 = 0.7
ALPHA2 = 0.03
#: How a marginal of k >= 3 attributes is answered (:class:`HDGRelease`).
KWAY: tuple[str, ...] = ("table", "cells")
#: The smallest granularity the guideline gives (a one-cell grid carries no information).
MIN_GRANULARITY = 2
#: Bytes of the Python objects of one grid while publishing (its group's view of the users,
#: its estimate, its ledger item and label, its response matrix's array; measured at 1.0-1.3 KiB).
GRID_OBJECTS = 1536
#: A consistency round that moves no cell by more than this has converged.
CONSISTENT = 1e-12
#: The most cells of k-way marginals answered cell by cell in one batch (beyond a single
#: marginal's): each cell holds a vector of 2^k and a few copies (:meth:`HDGPublisher.answer_bytes`).
BATCH_CELLS = 1 << 14

Pair = tuple[int, int]


# ---------------------------------------------------------------- granularities and bins
def log_signal(n: int, grids: int, epsilon: float) -> float:
    """``log X`` with ``X = n (e^eps - 1)^2 / (m e^eps)``, the guideline's ratio of users per
    grid to OUE's variance factor ``e^eps / (e^eps - 1)^2``, computed without overflow."""
    return math.log(n / grids) + 2 * math.log(-math.expm1(-epsilon)) + epsilon


def guideline(
    n: int, grids: int, epsilon: float, alpha1: float = ALPHA1, alpha2: float = ALPHA2
) -> tuple[float, float]:
    """The paper's granularities ``(g1, g2)`` (section 5) for ``n`` users over ``grids`` grids
    at ``epsilon``, before rounding: ``g1 = (alpha1^2 X / 2)^(1/3)``, ``g2 = sqrt(2 alpha2 sqrt(X))``."""
    log_x = log_signal(n, grids, epsilon)
    g1 = math.exp(min((2 * math.log(alpha1) - math.log(2) + log_x) / 3, 700.0))
    g2 = math.exp(min(0.5 * math.log(2 * alpha2) + log_x / 4, 700.0))
    return g1, g2


def rounded(value: float) -> int:
    """A guideline granularity as a grid has it: the nearest integer, at least 2 (capped at
    each domain later); huge values (large epsilon) stay finite."""
    return max(MIN_GRANULARITY, math.floor(min(value, 2.0**62) + 0.5))


@dataclass(frozen=True)
class Binning:
    """An attribute's bins: ``fine[v]`` is the 1-D grid's bin of value ``v`` (``f`` bins),
    ``coarse[j]`` the 2-D grids' bin of 1-D bin ``j`` (``h`` bins), both contiguous, every
    2-D bin a union of 1-D bins."""

    fine: np.ndarray
    coarse: np.ndarray

    @classmethod
    def of(cls, size: int, g1: int, g2: int) -> Binning:
        """``size`` values in ``min(g1, size)`` 1-D bins grouped into ``min(g2, g1, size)``
        2-D bins: value ``v`` in 1-D bin ``floor(v f / size)``, 1-D bin ``j`` in 2-D bin
        ``floor(j h / f)``."""
        f = min(g1, size)
        h = min(g2, f)
        return cls(np.arange(size) * f // size, np.arange(f) * h // f)

    @property
    def size(self) -> int:
        return int(self.fine.size)

    @property
    def f(self) -> int:
        """Cells of the 1-D grid."""
        return int(self.coarse.size)

    @property
    def h(self) -> int:
        """Bins along this attribute in its 2-D grids."""
        return int(self.coarse[-1]) + 1

    @property
    def coarse_of_value(self) -> np.ndarray:
        """The 2-D bin of each value."""
        return self.coarse[self.fine]

    @property
    def fine_widths(self) -> np.ndarray:
        """The number of values of each 1-D bin."""
        return np.bincount(self.fine, minlength=self.f)

    @property
    def fine_per_coarse(self) -> np.ndarray:
        """The number of 1-D bins in each 2-D bin."""
        return np.bincount(self.coarse, minlength=self.h)


# ---------------------------------------------------------------- collection
@dataclass(frozen=True)
class Measured:
    """One grid's unbiased estimate (cell frequencies of its group), its group's size and the
    oracle its users reported through."""

    estimate: np.ndarray
    users: int
    oracle: FrequencyOracle


def measure(cells: np.ndarray, k: int, epsilon: float, rng: np.random.Generator) -> Measured:
    """The users whose grid cells are ``cells`` (codes ``0 .. k-1``) report them with OUE at
    ``epsilon``; the unbiased estimate of their cell frequencies, whose variance for a cell
    of frequency ``f`` is ``(f p(1-p) + (1-f) q(1-q)) / (users (p-q)^2)`` (Wang et al. 2017,
    Theorem 2)."""
    oracle = build_oracle("oue", epsilon, k)
    estimate = oracle.estimate(oracle.perturb(cells, rng), "unbiased")
    return Measured(estimate, int(cells.size), oracle)


@dataclass
class Grids:
    """The grids of the attributes ``attributes`` (those of more than one value): 1-D grids
    by attribute, 2-D grids by pair ``(a, b)``, ``a < b``, shaped ``(h_a, h_b)``; the users
    behind each grid."""

    binnings: dict[int, Binning]
    one: dict[int, np.ndarray]
    two: dict[Pair, np.ndarray]
    users: dict[int | Pair, int]

    @property
    def attributes(self) -> list[int]:
        return sorted(self.binnings)

    def copy(self) -> Grids:
        return Grids(
            self.binnings,
            {a: g.copy() for a, g in self.one.items()},
            {p: g.copy() for p, g in self.two.items()},
            dict(self.users),
        )


def grid_keys(attributes: Sequence[int]) -> list[int | Pair]:
    """The grids in the order their groups are formed: every 1-D grid, then every pair."""
    return [*attributes, *itertools.combinations(attributes, 2)]


def grid_cells(data: Dataset, key: int | Pair, users: np.ndarray, binnings: Mapping[int, Binning]) -> np.ndarray:
    """The cell of grid ``key`` that holds each of ``users``' records (int64)."""
    if isinstance(key, int):
        return binnings[key].fine[data.codes[users, key]]
    a, b = key
    cells = binnings[a].coarse_of_value[data.codes[users, a]]
    cells *= binnings[b].h
    cells += binnings[b].coarse_of_value[data.codes[users, b]]
    return cells


# ---------------------------------------------------------------- post-processing
def consistency_step(grids: Grids, attribute: int) -> float:
    """Make every grid of ``attribute`` agree on its sums over the attribute's 2-D bins: each
    grid's sum over a bin is replaced by the weighted average of all of them, weights
    ``users / C`` for a sum over ``C`` cells (the inverse of its variance), the difference
    spread evenly over the ``C`` cells (section 4). Returns the largest change of a cell."""
    binning = grids.binnings[attribute]
    counts = binning.fine_per_coarse.astype(np.float64)
    sums = [np.bincount(binning.coarse, grids.one[attribute], binning.h)]
    cells = [counts]
    keys: list[int | Pair] = [attribute]
    for pair in grids.two:
        if attribute in pair:
            axis = pair.index(attribute)
            table = grids.two[pair]
            sums.append(table.sum(axis=1 - axis))
            cells.append(np.full(binning.h, float(table.shape[1 - axis])))
            keys.append(pair)
    weights = [grids.users[key] / c for key, c in zip(keys, cells)]
    average = sum(w * s for w, s in zip(weights, sums)) / sum(weights)
    moved = 0.0
    for key, total, c in zip(keys, sums, cells):
        shift = (average - total) / c
        moved = max(moved, float(np.abs(shift).max()))
        if isinstance(key, int):
            grids.one[key] += shift[binning.coarse]
        elif key[0] == attribute:
            grids.two[key] += shift[:, None]
        else:
            grids.two[key] += shift[None, :]
    return moved


def norm_sub(grids: Grids) -> None:
    """Norm-Sub on every grid: the projection onto the probability simplex (non-negative,
    summing to one)."""
    for a in grids.one:
        grids.one[a] = project_simplex(grids.one[a])
    for pair in grids.two:
        grids.two[pair] = project_simplex(grids.two[pair])


def post_process(grids: Grids, rounds: int) -> int:
    """Section 4's post-processing, in place: Norm-Sub and the consistency step on every
    attribute, alternated up to ``rounds`` times (stopped once consistency moves no cell by
    more than :data:`CONSISTENT`), then Norm-Sub. Returns the rounds run."""
    for done in range(1, rounds + 1):
        norm_sub(grids)
        moved = max((consistency_step(grids, a) for a in grids.attributes), default=0.0)
        if moved <= CONSISTENT:
            norm_sub(grids)
            return done
    norm_sub(grids)
    return rounds


# ---------------------------------------------------------------- weighted update
def rescale(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """``target / current`` where ``current > 0``, else 0 (an empty part stays empty)."""
    return np.divide(target, current, out=np.zeros_like(target, dtype=np.float64), where=current > 0)


def response_matrix(
    one_a: np.ndarray,
    one_b: np.ndarray,
    two: np.ndarray,
    binning_a: Binning,
    binning_b: Binning,
    iterations: int,
    tolerance: float,
) -> tuple[np.ndarray, int]:
    """The pair's ``c_a x c_b`` response matrix by HDG's weighted update (section 5): from the
    uniform matrix, scaled in turn to the 1-D grid of ``a`` (``one_a``, by its bins), of ``b``
    and to the 2-D grid ``two``, renormalized, until a round changes it by less than
    ``tolerance`` in L1 or after ``iterations`` rounds. Returns it and the rounds run."""
    ca, cb = binning_a.size, binning_b.size
    fine_a, fine_b = binning_a.fine, binning_b.fine
    blocks = (binning_a.coarse_of_value * binning_b.h)[:, None] + binning_b.coarse_of_value[None, :]
    matrix = np.full((ca, cb), 1.0 / (ca * cb))
    done = 0
    for done in range(1, iterations + 1):
        before = matrix.copy()
        matrix *= rescale(one_a, np.bincount(fine_a, matrix.sum(axis=1), binning_a.f))[fine_a][:, None]
        matrix *= rescale(one_b, np.bincount(fine_b, matrix.sum(axis=0), binning_b.f))[fine_b][None, :]
        sums = np.bincount(blocks.ravel(), matrix.ravel(), two.size)
        matrix *= rescale(two.ravel(), sums)[blocks]
        total = matrix.sum()
        if not total > 0:  # grids that exclude each other: nothing left to scale
            return np.outer(
                one_a[fine_a] / binning_a.fine_widths[fine_a], one_b[fine_b] / binning_b.fine_widths[fine_b]
            ), done
        matrix /= total
        before -= matrix
        if np.abs(before).sum() < tolerance:
            break
    return matrix, done


def fit_pairs(
    shape: tuple[int, ...], pairs: Mapping[Pair, np.ndarray], iterations: int, tolerance: float
) -> tuple[np.ndarray, int, bool]:
    """The weighted update over the cells of a k-way table of ``shape``: from the uniform
    table, scaled in turn so that its marginal on each pair of axes ``(i, j)``, ``i < j``,
    equals ``pairs[(i, j)]``, renormalized, until a round changes it by less than
    ``tolerance`` in L1 or after ``iterations`` rounds (iterative proportional fitting).
    Returns it, the rounds run and whether it converged."""
    table = np.full(shape, 1.0 / math.prod(shape))
    axes = range(len(shape))
    for done in range(1, iterations + 1):
        before = table.copy()
        for (i, j), target in pairs.items():
            current = table.sum(axis=tuple(k for k in axes if k not in (i, j)))
            factor = rescale(target, current)
            table *= factor.reshape([shape[k] if k in (i, j) else 1 for k in axes])
        total = table.sum()
        if not total > 0:
            return np.full(shape, 1.0 / math.prod(shape)), done, False
        table /= total
        before -= table
        if np.abs(before).sum() < tolerance:
            return table, done, True
    return table, iterations, False


def fit_cells(
    shape: tuple[int, ...], pairs: Mapping[Pair, np.ndarray], iterations: int, tolerance: float
) -> tuple[np.ndarray, int, bool]:
    """Each cell of a k-way table of ``shape`` answered as its own lambda-D point query, as
    the paper answers a range query (TDG, section 4) and the authors' code implements it:
    over the ``2^k`` combinations of satisfying (index 0) or not (1) each attribute's
    predicate ``x_i = v_i``, from the uniform vector, the part satisfying both predicates of
    each pair ``(i, j)`` is scaled to the pair's answer ``pairs[(i, j)][v_i, v_j]`` and the
    vector renormalized, until no cell's vector changes by ``tolerance`` in L1 in a round or
    after ``iterations`` rounds; every cell's vector at once. The cells' answers (the part
    satisfying every predicate) are then normalized to a distribution. Returns it, the rounds
    run and whether it converged."""
    return fit_cells_batch(shape, [pairs], iterations, tolerance)[0]


def fit_cells_batch(
    shape: tuple[int, ...], tables: Sequence[Mapping[Pair, np.ndarray]], iterations: int, tolerance: float
) -> list[tuple[np.ndarray, int, bool]]:
    """:func:`fit_cells` of several marginals of the same ``shape`` (each one's pairs in
    ``tables``) in the same arrays: a marginal stops when its own cells have converged, as
    alone, so each answer is the one :func:`fit_cells` gives it."""
    k, cells, count = len(shape), math.prod(shape), len(tables)
    values = np.indices(shape).reshape(k, cells)
    keys = list(tables[0])
    answers = {
        key: np.concatenate([np.asarray(t[key])[values[key[0]], values[key[1]]] for t in tables]) for key in keys
    }
    vectors = np.full((count * cells,) + (2,) * k, 0.5**k)
    running = np.arange(count)  # the marginals in the arrays, in order
    results: list[tuple[np.ndarray, int, bool]] = [None] * count  # type: ignore[list-item]
    satisfied = (slice(None),) + (0,) * k

    def settle(finished: np.ndarray, done: int, converged: bool) -> None:
        for position in np.flatnonzero(finished):
            table = vectors[position * cells : (position + 1) * cells][satisfied].reshape(shape)
            results[running[position]] = (_normalized(table), done, converged)

    for done in range(1, iterations + 1):
        size = vectors.shape[0]
        before = vectors.copy()
        for i, j in keys:
            both = (slice(None), *(0 if axis in (i, j) else slice(None) for axis in range(k)))
            current = vectors[both].reshape(size, -1).sum(axis=1)
            vectors[both] *= rescale(answers[(i, j)], current).reshape((size,) + (1,) * (k - 2))
            vectors /= (
                vectors.reshape(size, -1).sum(axis=1).reshape((size,) + (1,) * k)
            )  # never 0: all-unsatisfied stays
        before -= vectors
        finished = np.abs(before).reshape(size, -1).sum(axis=1).reshape(running.size, cells).max(axis=1) < tolerance
        if finished.any():  # settled as alone; the others go on in smaller arrays
            settle(finished, done, True)
            kept = np.repeat(~finished, cells)
            vectors, running = vectors[kept], running[~finished]
            answers = {key: answer[kept] for key, answer in answers.items()}
            if not running.size:
                break
    settle(np.ones(running.size, dtype=bool), iterations, False)
    return results


def subsets_cells(sizes: Sequence[int], way: int) -> int:
    """The cells of all marginals of ``way`` of the attributes of domains ``sizes``: the
    elementary symmetric polynomial of degree ``way`` of the sizes."""
    totals = [1] + [0] * way
    for k in sizes:
        for j in range(way, 0, -1):
            totals[j] += totals[j - 1] * k
    return totals[way]


def _normalized(table: np.ndarray) -> np.ndarray:
    """``table`` divided by its sum (uniform if nothing is left)."""
    total = table.sum()
    return table / total if total > 0 else np.full(table.shape, 1.0 / table.size)


# ---------------------------------------------------------------- the release
@dataclass
class FitTrace:
    """The k-way fits a release ran: their rounds and how many stopped at the cap."""

    rounds: list[int] = field(default_factory=list)
    capped: int = 0

    def metrics(self) -> dict[str, float]:
        if not self.rounds:
            return {}
        return {
            "fit_estimates": float(len(self.rounds)),
            "fit_rounds_max": float(max(self.rounds)),
            "fit_capped": float(self.capped),
        }


@dataclass(frozen=True)
class HDGRelease(Release):
    """Marginal estimates from HDG's post-processed grids (see the module): ``one_way[a]``
    each attribute's distribution, ``matrices[(a, b)]`` (``a < b``) each pair's response
    matrix; a pair without one (an attribute of one value) is the product of its 1-way
    answers. ``k >= 3`` attributes are fitted to their pairs' matrices (``kway`` ``table``:
    :func:`fit_pairs`) or answered cell by cell (``cells``: :func:`fit_cells`)."""

    one_way: tuple[np.ndarray, ...]
    matrices: Mapping[Pair, np.ndarray]
    iterations: int
    tolerance: float
    kway: str
    trace: FitTrace = field(default_factory=FitTrace, compare=False)

    def pair(self, a: int, b: int) -> np.ndarray:
        """The response matrix of attributes ``a`` and ``b`` (in that order)."""
        if a > b:
            return self.pair(b, a).T
        found = self.matrices.get((a, b))
        return np.outer(self.one_way[a], self.one_way[b]) if found is None else found

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        cols = [int(c) for c in columns]
        if len(set(cols)) != len(cols):
            raise ValueError(f"a marginal of distinct columns, not {columns}")
        if len(cols) == 1:
            return self.one_way[cols[0]].copy()
        if len(cols) == 2:
            return self.pair(*cols).copy()
        order = sorted(cols)  # fitted in the attributes' order: the same answer in any column order
        shape = tuple(self.one_way[c].size for c in order)
        pairs = {(i, j): self.pair(order[i], order[j]) for i, j in itertools.combinations(range(len(order)), 2)}
        fit = fit_pairs if self.kway == "table" else fit_cells
        table, rounds, converged = fit(shape, pairs, self.iterations, self.tolerance)
        self.trace.rounds.append(rounds)
        self.trace.capped += not converged
        return table.transpose([order.index(c) for c in cols])

    def marginals(self, subsets: Sequence[tuple[int, ...]]) -> np.ndarray:
        """The batch, with the k-way marginals answered cell by cell (``kway: cells``) fitted
        together, those of one shape at a time, at most :data:`BATCH_CELLS` cells (or one
        marginal) at once (:func:`fit_cells_batch`: the same answers)."""
        if self.kway != "cells":
            return super().marginals(subsets)
        answers: dict[int, np.ndarray] = {}
        by_shape: dict[tuple[int, ...], list[int]] = {}
        for index, columns in enumerate(subsets):
            if len(columns) < 3 or len(set(columns)) != len(columns):
                answers[index] = np.asarray(self.marginal(columns), dtype=np.float64)
            else:
                by_shape.setdefault(tuple(self.one_way[c].size for c in sorted(columns)), []).append(index)
        for shape, indices in by_shape.items():
            step = max(1, BATCH_CELLS // math.prod(shape))
            for start in range(0, len(indices), step):
                chunk = indices[start : start + step]
                orders = [sorted(int(c) for c in subsets[i]) for i in chunk]
                tables = [
                    {(i, j): self.pair(o[i], o[j]) for i, j in itertools.combinations(range(len(o)), 2)} for o in orders
                ]
                for index, order, (table, rounds, converged) in zip(
                    chunk, orders, fit_cells_batch(shape, tables, self.iterations, self.tolerance)
                ):
                    self.trace.rounds.append(rounds)
                    self.trace.capped += not converged
                    answers[index] = table.transpose([order.index(int(c)) for c in subsets[index]])
        if not subsets:
            return np.zeros(0)
        return np.concatenate([answers[i].ravel() for i in range(len(subsets))])

    def diagnostics(self) -> dict[str, float]:
        return self.trace.metrics()


# ---------------------------------------------------------------- the publisher
@dataclass(frozen=True)
class Survey:
    """What the users reported: each grid's group (row indices, disjoint), the grids' raw
    unbiased estimates, and the granularities used (before each domain's cap)."""

    groups: list[tuple[int | Pair, np.ndarray]]
    grids: Grids
    g1: int
    g2: int


@dataclass(frozen=True, kw_only=True)
class HDGPublisher(Publisher):
    """``mechanism=hdg``: Hybrid-Dimensional Grids (see the module).

    Args:
        g1, g2: the 1-D and 2-D granularities (integers >= 2, capped at each domain), or None
            for the paper's guideline with ``alpha1``, ``alpha2``.
        alpha1, alpha2: the guideline's constants (paper: 0.7 and 0.03).
        consistency_rounds: rounds of Norm-Sub and consistency (authors' code: 100).
        iterations: most rounds of each weighted update (authors' code: 100).
        threshold: a weighted update stops once a round moves fewer users than this (L1 of
            the change times n; authors' code: 1).
        kway: a marginal of ``k >= 3`` attributes as the k-way table fitted to every pair's
            response matrix (``table``) or cell by cell, each cell a lambda-D point query
            answered by the paper's ``2^k`` weighted update (``cells``, the default: the
            paper's estimator of a query, as the authors' code answers a range query), the
            cells normalized.
    """

    name: ClassVar[str] = "hdg"
    g1: int | None = None
    g2: int | None = None
    alpha1: float = ALPHA1
    alpha2: float = ALPHA2
    consistency_rounds: int = 100
    iterations: int = 100
    threshold: float = 1.0
    kway: str = "cells"

    def __post_init__(self) -> None:
        if self.g1 is not None:
            check_int(self.g1, "g1", MIN_GRANULARITY)
        if self.g2 is not None:
            check_int(self.g2, "g2", MIN_GRANULARITY)
        if self.g1 is not None and self.g2 is not None and self.g1 < self.g2:
            raise ConfigError("g1", self.g1, f"an integer >= g2={self.g2} (the 1-D grids refine the 2-D grids' bins)")
        check_float(self.alpha1, "alpha1", 0.0)
        check_float(self.alpha2, "alpha2", 0.0)
        check_int(self.consistency_rounds, "consistency_rounds", 0)
        check_int(self.iterations, "iterations", 1)
        check_float(self.threshold, "threshold", 0.0, open_low=False)
        check_choice(self.kway, "kway", KWAY)

    # ----- shape
    @staticmethod
    def varying(sizes: Sequence[int] | np.ndarray) -> list[int]:
        """The attributes that get grids: those of more than one value."""
        return [a for a, k in enumerate(sizes) if int(k) > 1]

    def granularities(self, n: int, sizes: Sequence[int] | np.ndarray, epsilon: float) -> tuple[int, int]:
        """``(g1, g2)``: the configured ones, or the guideline's rounded (:func:`rounded`),
        ``g1`` at least ``g2``."""
        d = len(self.varying(sizes))
        grids = max(d + d * (d - 1) // 2, 1)
        guide1, guide2 = guideline(max(int(n), 1), grids, epsilon, self.alpha1, self.alpha2)
        g2 = self.g2 if self.g2 is not None else rounded(guide2)
        g1 = self.g1 if self.g1 is not None else rounded(guide1)
        return max(g1, g2), g2

    def check_shape(self, n: int, sizes: Sequence[int] | np.ndarray) -> None:
        """A group of users per grid: at least ``m = d + d(d-1)/2`` records; and at least one
        attribute of two or more values (constant ones get no grid: nothing to report)."""
        d = len(self.varying(sizes))
        if d == 0:
            raise ConfigError("dataset", [int(k) for k in sizes], "a table with an attribute of two or more values")
        grids = d + d * (d - 1) // 2
        if int(n) < grids:
            raise ConfigError(
                "dataset.n", int(n), f"at least {grids} records, one group of users for each of {grids} grids"
            )

    # ----- publishing
    def survey(self, data: Dataset, epsilon: float, rng: np.random.Generator) -> Survey:
        """Steps 1-2: the grids, the users split into one disjoint group per grid, and each
        group's unbiased estimate of its grid."""
        sizes = data.domain.sizes
        g1, g2 = self.granularities(data.n, sizes, epsilon)
        binnings = {a: Binning.of(int(sizes[a]), g1, g2) for a in self.varying(sizes)}
        keys = grid_keys(sorted(binnings))
        groups = list(zip(keys, np.array_split(rng.permutation(data.n), len(keys)))) if keys else []
        grids = Grids(binnings, {}, {}, {})
        for key, users in groups:
            k = binnings[key].f if isinstance(key, int) else binnings[key[0]].h * binnings[key[1]].h
            measured = measure(grid_cells(data, key, users, binnings), k, epsilon, rng)
            grids.users[key] = measured.users
            if isinstance(key, int):
                grids.one[key] = measured.estimate
            else:
                grids.two[key] = measured.estimate.reshape(binnings[key[0]].h, binnings[key[1]].h)
        return Survey(groups, grids, g1, g2)

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        self.check_shape(data.n, data.domain.sizes)
        start = time.perf_counter()
        survey = self.survey(data, epsilon, rng)
        timed = {"collect": time.perf_counter() - start}
        grids = survey.grids
        rounds = post_process(grids, self.consistency_rounds)
        timed["post_process"] = time.perf_counter() - start - timed["collect"]
        tolerance = self.threshold / data.n
        matrices: dict[Pair, np.ndarray] = {}
        updates = [0]
        for a, b in grids.two:
            ba, bb = grids.binnings[a], grids.binnings[b]
            matrix, done = response_matrix(
                grids.one[a], grids.one[b], grids.two[(a, b)], ba, bb, self.iterations, tolerance
            )
            matrices[(a, b)] = matrix
            updates.append(done)
        timed["weighted_update"] = time.perf_counter() - start - sum(timed.values())
        one_way = tuple(
            grids.one[a][grids.binnings[a].fine] / grids.binnings[a].fine_widths[grids.binnings[a].fine]
            if a in grids.one
            else np.ones(int(k))
            for a, k in enumerate(data.domain.sizes)
        )
        release = HDGRelease(one_way, matrices, self.iterations, tolerance, self.kway)
        names = data.domain.names
        ledger = [
            Spend(
                "report",
                names[key] if isinstance(key, int) else f"{names[key[0]]}+{names[key[1]]}",
                epsilon,
                f"group {i}",
            )
            for i, (key, _) in enumerate(survey.groups)
        ]
        extra = {
            "g1": float(survey.g1),
            "g2": float(survey.g2),
            "grids": float(len(survey.groups)),
            "consistency_rounds": float(rounds),
            "weighted_update_rounds_max": float(max(updates)),
        }
        cells = {names[a]: [b.f, b.h] for a, b in grids.binnings.items()}
        return Outcome(release, ledger, timed, extra, {"grids": {"g1": survey.g1, "g2": survey.g2, "cells": cells}})

    # ----- memory
    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """From the shape alone, with the finest grids any epsilon may give (the configured
        ``g1``, ``g2``, else the domains): the users' permutation (int64); for the largest
        group (``ceil(n / m)`` users), its records' codes of two attributes, their cells
        (int64, and one more while they are made) and OUE's reports and work on the largest
        grid (:func:`~dp2pub.publish.base.reports_bytes`); every grid's estimate and its
        Norm-Sub (four float64 a cell); every pair's response matrix (float64, kept) and,
        for the largest, the weighted update's work (the previous matrix, the cells' block
        index (int64), a row of factors and the change: 32 bytes a cell); the 1-way answers;
        and :data:`GRID_OBJECTS` bytes of Python objects a grid."""
        n, sizes = int(n), [int(k) for k in sizes]
        varying = [sizes[a] for a in self.varying(sizes)]
        grids = len(varying) + len(varying) * (len(varying) - 1) // 2
        if not grids:
            return 8 * n + 8 * sum(sizes)
        users = -(-n // grids)
        fixed = self.g1 is not None and self.g2 is not None  # else a guideline's may reach the domain
        fine = [min(k, self.g1) if fixed and self.g1 else k for k in varying]
        coarse = [min(k, self.g2) if self.g2 else k for k in varying]
        cells = [a * b for a, b in itertools.combinations(coarse, 2)]
        pairs = [a * b for a, b in itertools.combinations(varying, 2)]
        itemsize = code_dtype(max(sizes)).itemsize
        group = users * (2 * itemsize + 24) + reports_bytes((OUE,), users, max([*fine, *cells]), itemsize=8)
        estimates = 32 * (sum(fine) + sum(cells))
        update = 32 * max(pairs, default=0)
        objects = GRID_OBJECTS * grids
        return 8 * n + group + estimates + 8 * sum(pairs) + update + 8 * sum(sizes) + objects

    def answer_bytes(self, n: int, sizes: Sequence[int] | np.ndarray, way: int) -> int:
        """A marginal of ``way`` attributes: a copy of a 1-way answer or a response matrix; a
        k-way fit holds the table, its previous round and the change (float64) and a pair's
        sum over the other axes, 32 bytes a cell of the ``way`` largest domains; answered
        cell by cell (``kway=cells``), every cell's ``2^way`` vector, its previous round, the
        change, a scaled part and the cells' values (int64): 40 bytes a cell and combination,
        for a batch of :data:`BATCH_CELLS` cells (fewer if all the marginals of ``way`` have
        fewer; more if one marginal has more)."""
        largest = sorted((int(k) for k in sizes), reverse=True)[:way]
        cells = capped_product(largest)
        if way <= 2:
            return 8 * cells
        if self.kway == "table":
            return 32 * cells
        batch = max(cells, min(BATCH_CELLS, subsets_cells([int(k) for k in sizes], way)))
        return 40 * capped_product([batch, 2**way])
