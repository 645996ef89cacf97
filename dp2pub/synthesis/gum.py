"""Records that match a set of marginals: PrivSyn's Gradually Update Method (GUM).

Zhang, Wang, Li, Honorio, Backes, He, Chen, Zhang, "PrivSyn: Differentially Private Data
Synthesis", USENIX Security 2021, section 6 and its published code (defaults kept here):

- start from ``n`` records whose attributes are drawn independently from their 1-way
  marginals (the "singleton" initialization, counts rounded to sum to ``n``);
- each of ``iterations`` rounds visits the marginals from the worst matched (largest L1
  distance) to the best; for a marginal, a cell holding too few records gains
  ``min(target - have, alpha have)`` of them (``alpha target`` if it holds none), and the cells
  holding too many lose ``min(have - target, beta have)``, ``beta`` found by bisection so that
  as many records leave as arrive;
- a record that moves either takes the marginal's values of its new cell (replacement) or
  becomes a copy of a record already in that cell (duplication, which keeps that record's
  other attributes together); the share of duplication alternates 0.5 and 1 between rounds
  (the code's ``S5``), and ``alpha`` decays as ``0.84^(round // 20)`` (``U4``).

Everything is post-processing of the marginals: it never sees the original records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from dp2pub.data.marginals import joint_codes

#: PrivSyn's decay of the step size: ``alpha_t = alpha * DECAY ** (t // DECAY_EVERY)``.
DECAY, DECAY_EVERY = 0.84, 20


def distribution(table: np.ndarray) -> np.ndarray:
    """``table`` flattened, negative cells set to zero, rescaled to sum to one (uniform if
    nothing is left)."""
    flat = np.clip(np.ravel(table).astype(np.float64), 0.0, None)
    total = flat.sum()
    return flat / total if total > 0 else np.full(flat.size, 1.0 / flat.size)


def rounded_counts(freq: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Integer counts summing to ``total`` in the proportions ``freq`` (a distribution): the
    floors, plus one for a random set of cells drawn in proportion to their remainders."""
    raw = distribution(freq) * total
    counts = np.floor(raw).astype(np.int64)
    short = total - int(counts.sum())
    if short > 0:
        remainder = raw - counts
        p = remainder / remainder.sum() if remainder.sum() > 0 else None
        counts[rng.choice(counts.size, size=short, replace=False, p=p)] += 1
    return counts


def initial_records(one_way: Sequence[np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records (n, d int64, column-major) whose attribute j follows ``one_way[j]``,
    the attributes independent."""
    records = np.empty((n, len(one_way)), dtype=np.int64, order="F")
    for j, freq in enumerate(one_way):
        records[:, j] = rng.permutation(np.repeat(np.arange(np.size(freq)), rounded_counts(freq, n, rng)))
    return records


def _spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + l)`` over ``zip(starts, lengths)``."""
    total = int(lengths.sum())
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return offsets + np.arange(total, dtype=np.int64)


def _by_cell(code: np.ndarray, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The records in ``cells`` (a mask over cells), grouped by cell in increasing order, in
    random order within a cell."""
    members = np.flatnonzero(cells[code])
    members = members[rng.permutation(members.size)]
    return members[np.argsort(code[members], kind="stable")]


def _balance(excess: np.ndarray, have: np.ndarray, arriving: int, n: int) -> np.ndarray:
    """Records leaving each over-full cell: ``rint(min(excess, beta have) n)`` with ``beta``
    bisected so that about ``arriving`` records leave in all."""
    low, high = 0.0, 1.0
    for _ in range(50):
        beta = 0.5 * (low + high)
        leaving = np.rint(np.minimum(excess, beta * have) * n).sum()
        if abs(leaving - arriving) < 1:
            break
        low, high = (beta, high) if leaving < arriving else (low, beta)
    return np.rint(np.minimum(excess, beta * have) * n).astype(np.int64)


def update(
    records: np.ndarray,
    key: tuple[int, ...],
    shape: tuple[int, ...],
    target: np.ndarray,
    alpha: float,
    duplicate: float,
    rng: np.random.Generator,
) -> None:
    """One GUM step moving the records' marginal on ``key`` towards ``target`` (a flat
    distribution over ``shape``), in place."""
    n = records.shape[0]
    code = joint_codes(records[:, list(key)], shape)
    count = np.bincount(code, minlength=target.size)
    have = count / n
    arrive = np.zeros(target.size, dtype=np.int64)
    under = (have < target) & (have > 0)
    arrive[under] = np.rint(np.minimum(target[under] - have[under], alpha * have[under]) * n)
    empty = (have == 0) & (target > 0)
    arrive[empty] = np.rint(alpha * target[empty] * n)
    over = have > target
    if arrive.sum() == 0 or not over.any():
        return
    leave = np.zeros(target.size, dtype=np.int64)
    leave[over] = np.minimum(_balance(have[over] - target[over], have[over], int(arrive.sum()), n), count[over])
    full = np.flatnonzero(leave)
    grouped = _by_cell(code, leave > 0, rng)
    starts = np.cumsum(count[full]) - count[full]
    leaving = rng.permutation(grouped[_spans(starts, leave[full])])
    cells = rng.permutation(np.repeat(np.arange(target.size), arrive))
    moved = min(leaving.size, cells.size)
    slots, cells = leaving[:moved], cells[:moved]
    copy = (count[cells] > 0) & (rng.random(moved) < duplicate)
    if copy.any():
        donors_by_cell = _by_cell(code, arrive > 0, rng)
        first = np.cumsum(count * (arrive > 0)) - count * (arrive > 0)
        picks = first[cells[copy]] + (rng.random(int(copy.sum())) * count[cells[copy]]).astype(np.int64)
        records[slots[copy]] = records[donors_by_cell[picks]]
    values = np.unravel_index(cells[~copy], shape)
    for attribute, value in zip(key, values):
        records[slots[~copy], attribute] = value


def gum(
    targets: Mapping[tuple[int, ...], np.ndarray],
    one_way: Sequence[np.ndarray],
    n: int,
    rng: np.random.Generator,
    iterations: int = 50,
    alpha: float = 1.0,
) -> np.ndarray:
    """``n`` synthetic records (n, d int64 codes) whose marginals on ``targets``' keys approach
    the targets' (arrays shaped by the attributes' domain sizes; clipped at zero and
    normalized), starting from independent attributes with the 1-way marginals ``one_way``."""
    sizes = [int(np.size(freq)) for freq in one_way]
    records = initial_records(one_way, n, rng)
    flat = {key: distribution(table) for key, table in targets.items()}
    shapes = {key: tuple(sizes[a] for a in key) for key in targets}
    for t in range(iterations):
        step = alpha * DECAY ** (t // DECAY_EVERY)
        duplicate = 0.5 if t % 2 == 0 else 1.0
        for key in sorted(flat, key=lambda k: -_l1(records, k, shapes[k], flat[k])):
            update(records, key, shapes[key], flat[key], step, duplicate, rng)
    return records


def _l1(records: np.ndarray, key: tuple[int, ...], shape: tuple[int, ...], target: np.ndarray) -> float:
    """L1 distance between the records' marginal on ``key`` and ``target``."""
    count = np.bincount(joint_codes(records[:, list(key)], shape), minlength=math.prod(shape))
    return float(np.abs(count / records.shape[0] - target).sum())
