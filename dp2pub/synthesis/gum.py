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

from dp2pub.data.dataset import code_dtype

#: PrivSyn's decay of the step size: ``alpha_t = alpha * DECAY ** (t // DECAY_EVERY)``.
DECAY, DECAY_EVERY = 0.84, 20

#: Up to this many cells, one numpy call a cell beats one over all cells at once: the records
#: are counted by a comparison a cell (``bincount`` first casts the codes to intp), and those that
#: move drawn a cell at a time (:func:`_draw_cell`) rather than from a counting sort of all of
#: them (:func:`_draw_by_sort`).
FEW_CELLS = 16

#: A cell's records are drawn by rejection (:func:`_draw_by_rejection`), ``SLACK`` times the
#: draws expected at once and ``MIN_BATCH`` more, when it expects at most ``n / REJECT_SHARE``
#: draws; else found by a scan of all ``n`` records.
SLACK, MIN_BATCH, REJECT_SHARE = 1.25, 16, 16

#: Among many cells, a cell of which at most ``1 / FEW_TAKEN`` leaves has its leaving records
#: drawn one by one (few draws repeat), a cell losing more by a shuffle of all its records.
FEW_TAKEN = 8


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


def _cell_codes(records: np.ndarray, key: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Each record's cell in the marginal on ``key`` (mixed-radix code over ``shape``), in the
    smallest unsigned dtype that holds every cell and every size in ``shape`` (int64 beyond 32
    bits), without copying the key's columns out first."""
    cells = math.prod(shape)
    code = records[:, key[0]].astype(code_dtype(cells + 1) if cells < 2**32 else np.int64)
    for attribute, size in zip(key[1:], shape[1:]):
        code *= size
        np.add(code, records[:, attribute], out=code, casting="unsafe")
    return code


def _digit_type(largest: int) -> np.dtype:
    """The smallest unsigned dtype holding ``0 .. min(largest, 2^16 - 1)``: a 16-bit digit at most."""
    return np.min_scalar_type(min(largest, 0xFFFF))


def _counting_sort(code: np.ndarray, cells: int) -> np.ndarray:
    """The records grouped by cell in increasing order, in increasing order within a cell: a
    counting sort of ``code`` (values below ``cells``), as numpy's stable argsort is a radix
    sort on keys of at most 16 bits (one pass per 16 bits of the codes, least significant
    first; a cast to a narrower dtype keeps the low bits)."""
    largest = cells - 1
    order = np.argsort(code.astype(_digit_type(largest), copy=False), kind="stable")
    for shift in range(16, largest.bit_length(), 16):
        order = order[np.argsort((code[order] >> shift).astype(_digit_type(largest >> shift)), kind="stable")]
    return order


def _counts(code: np.ndarray, cells: int) -> np.ndarray:
    """How many records are in each of the ``cells`` cells: one comparison a cell for a few
    cells (no cast of the codes to intp, as ``bincount`` makes), else ``bincount``."""
    if cells <= FEW_CELLS:
        return np.array([np.count_nonzero(code == cell) for cell in range(cells)], dtype=np.int64)
    return np.bincount(code, minlength=cells)


def _distinct(starts: np.ndarray, lengths: np.ndarray, takes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random set of ``takes[i]`` distinct positions of each span
    ``[starts[i], starts[i] + lengths[i])`` (increasing, disjoint, not empty), all sorted:
    positions drawn uniformly in their span, the repeats dropped and the missing ones drawn
    again, i.e. the first ``takes[i]`` distinct values of a uniform sequence, a uniform set by
    symmetry. Quick when ``takes`` is a small share of ``lengths`` (few repeats)."""
    span = np.repeat(np.arange(starts.size), takes)
    picked = np.sort(starts[span] + rng.integers(0, lengths[span]))
    while picked.size > 1 and not (new := picked[1:] != picked[:-1]).all():
        picked = picked[np.concatenate(([True], new))]
        have = np.bincount(np.searchsorted(starts, picked, side="right") - 1, minlength=starts.size)
        span = np.repeat(np.arange(starts.size), takes - have)
        picked = np.sort(np.concatenate((picked, starts[span] + rng.integers(0, lengths[span]))))
    return picked


def _shuffled(starts: np.ndarray, lengths: np.ndarray, takes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random set of ``takes[i]`` distinct positions of each span
    ``[starts[i], starts[i] + lengths[i])``: the first ``takes[i]`` of the span's positions in
    a random order (sorted by span, then by distinct random keys: a random permutation)."""
    total = int(lengths.sum())
    first = np.cumsum(lengths) - lengths
    keys = np.repeat(np.arange(starts.size, dtype=np.int64) * total, lengths) + rng.permutation(total)
    return np.argsort(keys)[_spans(first, takes)] + np.repeat(starts - first, takes)


def _sample_spans(starts: np.ndarray, lengths: np.ndarray, takes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random set of ``takes[i]`` distinct positions of each span
    ``[starts[i], starts[i] + lengths[i])`` (increasing, disjoint, not empty; ``takes <=
    lengths``): drawn one by one (:func:`_distinct`) from the spans of which at most
    ``1 / FEW_TAKEN`` is taken, by shuffling the others (:func:`_shuffled`)."""
    few = FEW_TAKEN * takes <= lengths
    if few.all():
        return _distinct(starts, lengths, takes, rng)
    shuffled = _shuffled(starts[~few], lengths[~few], takes[~few], rng)
    return np.concatenate((_distinct(starts[few], lengths[few], takes[few], rng), shuffled))


def _balance(excess: np.ndarray, have: np.ndarray, arriving: int, n: int) -> np.ndarray:
    """Records leaving each over-full cell: ``rint(min(excess, beta have) n)`` with ``beta``
    bisected so that about ``arriving`` records leave in all (50 halvings at most). When too
    few leave even at the bisection's highest point ``1 - 2^-50``, every halving goes up: that
    point is the answer, found at once."""
    beta = 1.0 - 0.5**50
    if np.rint(np.minimum(excess, beta * have) * n).sum() >= arriving:
        low, high = 0.0, 1.0
        for _ in range(50):
            beta = 0.5 * (low + high)
            leaving = np.rint(np.minimum(excess, beta * have) * n).sum()
            if abs(leaving - arriving) < 1:
                break
            low, high = (beta, high) if leaving < arriving else (low, beta)
    return np.rint(np.minimum(excess, beta * have) * n).astype(np.int64)


def _moves(count: np.ndarray, target: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Records arriving in and leaving each cell (PrivSyn's GUM, see the module): an under-full
    cell gains ``min(target - have, alpha have)``, an empty one ``alpha target``, and the
    over-full ones lose ``min(have - target, beta have)`` (:func:`_balance`), at most what they
    hold; ``have = count / n``, all in records, rounded."""
    n = int(count.sum())
    have = count / n
    gain = np.where(have > 0, np.minimum(target - have, alpha * have), alpha * target)
    arrive = np.rint(np.where(have < target, gain, 0.0) * n).astype(np.int64)
    leave = np.zeros(target.size, dtype=np.int64)
    over = have > target
    if arrive.any() and over.any():
        leave[over] = np.minimum(_balance(have[over] - target[over], have[over], int(arrive.sum()), n), count[over])
    return arrive, leave


def _draw_by_sort(
    code: np.ndarray, count: np.ndarray, leave: np.ndarray, donor_cells: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_draw`'s records from the records grouped by cell (:func:`_counting_sort`): a
    uniformly random set of positions in each leaving cell's span (:func:`_sample_spans`), a
    uniformly random position in a donor's."""
    order = _counting_sort(code, count.size)
    starts = np.cumsum(count) - count
    full = np.flatnonzero(leave)
    leaving = order[_sample_spans(starts[full], count[full], leave[full], rng)]
    return leaving, order[starts[donor_cells] + rng.integers(0, count[donor_cells])]


def _draw_by_rejection(
    code: np.ndarray, cell: int, need: int, share: float, distinct: bool, rng: np.random.Generator
) -> np.ndarray:
    """``need`` uniform draws from the records of ``cell`` (a ``share`` of all), distinct or
    independent: records drawn uniformly from all, those of another cell dropped (what is left
    are uniform draws from the cell's records), the repeats too when ``distinct`` (the first
    distinct values of a uniform sequence: a uniformly random set, by symmetry)."""
    got = np.empty(0, dtype=np.int64)
    while got.size < need:
        drawn = rng.integers(0, code.size, math.ceil(SLACK * (need - got.size) / share) + MIN_BATCH)
        got = np.concatenate((got, drawn[code[drawn] == cell]))
        if distinct and _repeats(got):
            got = got[np.sort(np.unique(got, return_index=True)[1])]
    return got[:need]


def _repeats(values: np.ndarray) -> bool:
    """Whether some value occurs twice in ``values``."""
    ordered = np.sort(values)
    return bool((ordered[1:] == ordered[:-1]).any())


def _draw_cell(
    code: np.ndarray, cell: int, need: int, count: int, distinct: bool, rng: np.random.Generator
) -> np.ndarray:
    """``need`` uniform draws from the ``count`` records of ``cell``, distinct (a uniformly
    random set) or independent: by rejection (:func:`_draw_by_rejection`) when it expects few
    draws, else from the cell's records, found by a scan of all."""
    if REJECT_SHARE * SLACK * need <= count:
        return _draw_by_rejection(code, cell, need, count / code.size, distinct, rng)
    members = np.flatnonzero(code == cell)
    return rng.choice(members, need, replace=False) if distinct else members[rng.integers(0, count, need)]


def _draw(
    code: np.ndarray, count: np.ndarray, leave: np.ndarray, donor_cells: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A uniformly random set of ``leave[c]`` of the ``count[c]`` records in each cell c
    (``code``: each record's cell; some cell leaves), and a uniformly random record of the cell
    of each entry of ``donor_cells`` (independently): a cell at a time (:func:`_draw_cell`) when
    a few cells are concerned, else from a counting sort (:func:`_draw_by_sort`)."""
    giving = np.flatnonzero(np.bincount(donor_cells, minlength=count.size))
    if np.count_nonzero(leave) + giving.size > FEW_CELLS:
        return _draw_by_sort(code, count, leave, donor_cells, rng)
    leaving = [_draw_cell(code, c, int(leave[c]), int(count[c]), True, rng) for c in np.flatnonzero(leave).tolist()]
    donors = np.empty(donor_cells.size, dtype=np.int64)
    for c in giving.tolist():
        at = np.flatnonzero(donor_cells == c)
        donors[at] = _draw_cell(code, c, at.size, int(count[c]), False, rng)
    return np.concatenate(leaving), donors


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
    distribution over ``shape``), in place.

    The records leaving an over-full cell are a uniformly random set of its records, paired at
    random with the cells they go to (a random subset of either side when one is longer); a
    duplicated record copies a uniformly random record of its new cell (:func:`_draw`, without a
    random permutation of all the records)."""
    code = _cell_codes(records, key, shape)
    count = _counts(code, target.size)
    arrive, leave = _moves(count, target, alpha)
    if not (arrive.any() and leave.any()):
        return
    cells = rng.permutation(np.repeat(np.arange(target.size), arrive))[: leave.sum()]
    copy = (count[cells] > 0) & (rng.random(cells.size) < duplicate)
    leaving, donors = _draw(code, count, leave, cells[copy], rng)
    slots = rng.permutation(leaving)[: cells.size]
    records[slots[copy]] = records[donors]
    replaced = slots[~copy]
    for attribute, value in zip(key, np.unravel_index(cells[~copy], shape)):
        records[replaced, attribute] = value


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
    records = initial_records(one_way, n, rng).astype(code_dtype(max(sizes, default=1)), order="F")
    flat = {key: distribution(table) for key, table in targets.items()}
    shapes = {key: tuple(sizes[a] for a in key) for key in targets}
    for t in range(iterations):
        step = alpha * DECAY ** (t // DECAY_EVERY)
        duplicate = 0.5 if t % 2 == 0 else 1.0
        for key in sorted(flat, key=lambda k: -_l1(records, k, shapes[k], flat[k])):
            update(records, key, shapes[key], flat[key], step, duplicate, rng)
    return records.astype(np.int64, order="F")


def _l1(records: np.ndarray, key: tuple[int, ...], shape: tuple[int, ...], target: np.ndarray) -> float:
    """L1 distance between the records' marginal on ``key`` and ``target``."""
    count = _counts(_cell_codes(records, key, shape), math.prod(shape))
    return float(np.abs(count / records.shape[0] - target).sum())
