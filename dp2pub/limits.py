"""Refusing a job that cannot fit, before it starts.

A job's memory is estimated from its shape alone (records, domain sizes, the mechanism's
own keys), before any table is built: the input table (:func:`dp2pub.data.dataset.table_bytes`;
only histograms, :func:`dp2pub.data.tally.tally_bytes`, when they are drawn without records),
the publisher's working memory (:meth:`dp2pub.publish.base.Publisher.memory_parts`), and the
marginal metrics (:func:`marginal_bytes`, with the release's own work of answering them,
:meth:`~dp2pub.publish.base.Publisher.answer_bytes`). A job whose estimate exceeds
``limits.memory_gib`` (default: 80% of this machine's physical memory), or whose metrics would
compute more than ``limits.max_marginals`` marginals, is refused in one line that gives the
estimate and the limit and names the key whose value drives it (the largest part's: a
mechanism key such as ``mechanism.num_bits``, ``metrics.ways``, else the data's shape),
instead of allocating until the kernel kills it.

Settings out of range are refused first (:meth:`~dp2pub.publish.base.Publisher.check_shape`,
by the job). A generated table is checked before it is drawn with every domain at its
largest size (the table and the publisher), then, like a table that is read, with the domains
it has (everything, the metrics included: their marginals are products over up to
``max(metrics.ways)`` domains, far above any likely draw at the largest sizes). What the data
decides while publishing (DP2-Pub's clusters, which ``max_cells`` only caps) is claimed
when it is known, from what the limit leaves (:func:`job_allowance`). The estimates are
upper bounds of the arrays the code allocates, within a small factor of the traced peak
(``python -m dp2pub.bench estimates``); raise the limit if one is too cautious.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dp2pub.data.dataset import code_dtype, table_bytes
from dp2pub.data.tally import tally_bytes
from dp2pub.products import capped_product
from dp2pub.publish.base import MemoryAllowance, Publisher, counting_bytes
from dp2pub.settings import LimitSettings, MetricSettings
from dp2pub.units import human
from dp2pub.validation import ConfigError, check_int

#: Share of the physical memory a job may need when ``limits.memory_gib`` is null.
DEFAULT_SHARE = 0.8
GIB = 1 << 30
#: Cells of one run of marginals the metrics compare at once (``subset_tvds``' ``max_cells``):
#: a larger marginal goes alone.
RUN_CELLS = 1 << 22
#: Bytes per cell of the run of marginals compared at once, 8 arrays of 8-byte entries: the
#: true counts, their run's bincount and their frequencies, the estimates concatenated, their
#: difference and gaps, the stacked TVD's gather index and values.
RUN_BYTES = 64
#: Bytes per cell of the largest marginal while the release computes its estimate, 5 arrays
#: of 8-byte entries: counts, frequencies, the inverse channel's copy, norm-sub's sorted and
#: summed entries. (Measured with a marginal of 1.9 million cells: 77-80 bytes a cell in all.)
SUBSET_BYTES = 40
#: Bytes per record of finding a table's distinct rows (more than 15 subsets, at most 2^20
#: rows): their int64 codes, np.unique's sort order, sorted copy and flags (8 + 8 + 8 + 1),
#: and the first index and count of each distinct row (at most one per record, 16).
DISTINCT_BYTES = 41


class TooLarge(ConfigError):
    """A job whose estimated size exceeds a limit; the message is one line with both, and
    :attr:`key` is the config key that drives the estimate (``limits.memory_gib`` when it is
    the data's shape)."""

    def __init__(self, key: str, value: object, message: str) -> None:
        super().__init__(key, value, message)
        self.args = (message,)

    def __str__(self) -> str:
        return self.args[0]

    def under(self, prefix: str) -> ConfigError:
        return self


def physical_memory() -> int:
    """This machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def memory_limit(limits: LimitSettings) -> int:
    """The bytes a job may need: ``limits.memory_gib``, else 80% of the physical memory."""
    if limits.memory_gib is not None:
        return int(limits.memory_gib * GIB)
    return int(DEFAULT_SHARE * physical_memory())


def marginal_count(d: int, metrics: MetricSettings) -> int:
    """How many marginals the metrics compute on ``d`` attributes: the d one-way marginals
    and, for each k >= 2 in ``metrics.ways``, C(d, k) subsets or ``max_subsets`` of them."""
    count = d
    for way in set(metrics.ways) - {1}:
        subsets = math.comb(d, way)
        count += subsets if metrics.max_subsets is None else min(subsets, metrics.max_subsets)
    return count


def largest_cells(sizes: Sequence[int] | np.ndarray, way: int) -> int:
    """Cells of the largest ``way``-way marginal: the product of the ``way`` largest domains."""
    return capped_product(sorted((int(k) for k in sizes), reverse=True)[:way])


def run_cells(sizes: Sequence[int] | np.ndarray, way: int, count: int) -> int:
    """Cells of the largest run of ``way``-way marginals compared at once, of ``count``
    subsets: the ``count`` largest subsets' cells (a bound, ``count`` times the largest
    marginal's, when there are more than 2^16 subsets to list), at most :data:`RUN_CELLS`, or
    the largest marginal alone."""
    sizes = [int(k) for k in sizes]
    largest = largest_cells(sizes, way)
    if math.comb(len(sizes), way) <= 1 << 16:
        cells = sorted((capped_product(c) for c in itertools.combinations(sizes, way)), reverse=True)
        total = sum(cells[:count])
    else:
        total = count * largest
    return min(total, max(RUN_CELLS, largest))


def way_bytes(n: int, sizes: Sequence[int] | np.ndarray, way: int, max_subsets: int | None) -> int:
    """The metrics of the ``way``-way marginals (way >= 2): counting the true marginals
    (:func:`~dp2pub.publish.base.counting_bytes`; with more than 15 subsets on at most 2^20
    records, the distinct rows first, :data:`DISTINCT_BYTES` a record and the rows' copy,
    and then only those rows are counted when they are at most half the records, as they are
    when the table has at most n / 2 cells), the run of marginals compared at once
    (:func:`run_cells`, :data:`RUN_BYTES` a cell) and the largest marginal's estimate
    (:data:`SUBSET_BYTES` a cell)."""
    d, rows = len(sizes), int(n)
    count = math.comb(d, way) if max_subsets is None else min(math.comb(d, way), max_subsets)
    distinct = 0
    if count >= 16 and n <= 2**20:
        distinct = rows * (DISTINCT_BYTES + d * code_dtype(max(int(k) for k in sizes)).itemsize)
        table_cells = capped_product(sizes, rows)
        rows = table_cells if table_cells <= rows // 2 else rows
    cells = RUN_BYTES * run_cells(sizes, way, count) + SUBSET_BYTES * largest_cells(sizes, way)
    return counting_bytes(rows, sizes) + distinct + cells


def marginal_bytes(
    n: int, sizes: Sequence[int] | np.ndarray, metrics: MetricSettings, max_way: int | None = None
) -> int:
    """The memory of the marginal metrics on ``n`` records over domains ``sizes``, beside the
    release's own work of answering them (:meth:`Publisher.answer_bytes`): the largest of the
    1-way metrics (an attribute's codes as int64 while they are counted, :data:`RUN_BYTES` a
    value, :data:`SUBSET_BYTES` a value of the largest domain) and each k >= 2 of ``metrics.ways`` up to the release's ``max_way`` (None: any;
    0: no metric) (:func:`way_bytes`)."""
    if max_way == 0:
        return 0
    need = 8 * int(n) + RUN_BYTES * sum(int(k) for k in sizes) + SUBSET_BYTES * largest_cells(sizes, 1)
    for way in set(metrics.ways) - {1}:
        if max_way is None or way <= max_way:
            need = max(need, way_bytes(n, sizes, way, metrics.max_subsets))
    return need


@dataclass(frozen=True)
class Part:
    """One part of a job's estimate: its name in the message, the config key that scales it
    (``""``: the data's shape), that key's value, and its bytes."""

    name: str
    key: str
    value: object
    size: int


def job_parts(
    publisher: Publisher,
    n: int,
    sizes: Sequence[int] | np.ndarray,
    metrics: MetricSettings | None,
    counts_only: bool = False,
) -> list[Part]:
    """The parts of a job's estimate: the table (``counts_only``: its histograms), the
    publisher's (by key, without those it defers until the data decides them:
    :attr:`Publisher.deferred_memory`) and, unless ``metrics`` is None, the metrics' and the
    release's answers to them."""
    parts = [Part("table", "", None, tally_bytes(sizes) if counts_only else table_bytes(n, sizes))]
    for key, size in publisher.memory_parts(n, sizes).items():
        if key not in publisher.deferred_memory:
            value = publisher.setting(key) if key else None
            parts.append(Part(publisher.name, f"mechanism.{key}" if key else "", value, size))
    if metrics is not None:
        key = "metrics.ways" if max(metrics.ways, default=1) > 1 else ""
        records = 0 if counts_only else n  # histograms have 1-way metrics, counted without records
        metric = marginal_bytes(records, sizes, metrics, publisher.max_way)
        parts.append(Part("metrics", key, list(metrics.ways), metric))
        parts.append(answer_part(publisher, n, sizes, metrics))
    return parts


def answer_part(publisher: Publisher, n: int, sizes: Sequence[int] | np.ndarray, metrics: MetricSettings) -> Part:
    """The release's work of answering the metrics' largest marginal
    (:meth:`Publisher.answer_bytes`), counted with the metrics, under the key that scales it
    (:attr:`Publisher.answer_key`: RAPPOR's ``num_bits``)."""
    way = min(max(metrics.ways, default=1), len(sizes), len(sizes) if publisher.max_way is None else publisher.max_way)
    if way < 1:
        return Part("metrics", "", None, 0)
    key = publisher.answer_key
    value = publisher.setting(key) if key else None
    return Part("metrics", f"mechanism.{key}" if key else "", value, publisher.answer_bytes(n, sizes, way))


def limit_setting(limits: LimitSettings) -> str:
    """``limits.memory_gib=16 = 16 GiB`` as a refusal states it."""
    if limits.memory_gib is not None:
        return f"limits.memory_gib={limits.memory_gib:g} = {human(memory_limit(limits))}"
    return f"limits.memory_gib=null ({DEFAULT_SHARE:.0%} of {human(physical_memory())}) = {human(memory_limit(limits))}"


def refusal(driver: Part | None, what: str, need: int, detail: str, limits: LimitSettings) -> TooLarge:
    """The one-line refusal of a job of ``need`` bytes described by ``what``, naming the key
    of ``driver`` (the largest part) when a setting scales it."""
    setting = limit_setting(limits)
    if driver is None or not driver.key:
        return TooLarge(
            "limits.memory_gib",
            limits.memory_gib,
            f"job too large: {what} would need about {human(need)} ({detail}) > {setting}; "
            "shrink the job or raise limits.memory_gib",
        )
    return TooLarge(
        driver.key,
        driver.value,
        f"job too large: {driver.key}={driver.value} with {what} would need about {human(need)} ({detail}) "
        f"> {setting}; lower {driver.key} or raise limits.memory_gib",
    )


def check_marginal_count(d: int, metrics: MetricSettings, limits: LimitSettings) -> None:
    """Refuse a way larger than ``d`` (a ConfigError) and more marginals than
    ``limits.max_marginals`` (:class:`TooLarge`)."""
    for way in metrics.ways:
        check_int(way, "metrics.ways", 1, d)
    count = marginal_count(d, metrics)
    if count > limits.max_marginals:
        raise TooLarge(
            "limits.max_marginals",
            limits.max_marginals,
            f"job too large: metrics.ways={list(metrics.ways)} with metrics.max_subsets="
            f"{'null' if metrics.max_subsets is None else metrics.max_subsets} on {d} attributes "
            f"would compute {count:,} marginals > limits.max_marginals={limits.max_marginals:,}; "
            "set metrics.max_subsets or raise limits.max_marginals",
        )


def check_job_size(
    publisher: Publisher,
    n: int,
    sizes: Sequence[int] | np.ndarray,
    metrics: MetricSettings,
    limits: LimitSettings,
    what: str,
    counts_only: bool = False,
    before_draw: bool = False,
) -> MemoryAllowance:
    """Refuse, with :class:`TooLarge`, a job over ``n`` records and domains ``sizes`` that
    needs more memory or marginals than ``limits`` allow; returns the allowance its publisher
    claims what the data decides from (:func:`job_allowance`).
    ``what`` names the data's shape in the message (``dataset.n=..., dataset.d=...``);
    ``counts_only``: the input is only histograms, drawn without records (no table is built);
    ``before_draw``: ``sizes`` are the largest a generated table may draw, the metrics wait for
    the check with the drawn ones. Settings out of range for the shape
    (:meth:`Publisher.check_shape`) and a way larger than the number of attributes are refused
    first, as ConfigErrors naming their key."""
    publisher.check_shape(n, sizes)
    check_marginal_count(len(sizes), metrics, limits)
    parts = job_parts(publisher, n, sizes, None if before_draw else metrics, counts_only)
    need, limit = sum(part.size for part in parts), memory_limit(limits)
    if need > limit:
        totals: dict[str, int] = {}
        for part in parts:
            totals[part.name] = totals.get(part.name, 0) + part.size
        detail = ", ".join(f"{name} {human(size)}" for name, size in totals.items())
        raise refusal(max(parts, key=lambda part: part.size), what, need, detail, limits)
    return job_allowance(need, what, limits)


def job_allowance(need: int, what: str, limits: LimitSettings) -> MemoryAllowance:
    """What a job whose estimate is ``need`` bytes leaves its publisher for the structures
    its data decides (:func:`~dp2pub.publish.base.claim_memory`): the limit less ``need``; a
    claim beyond it is refused in one line naming the key that caps the structure."""
    limit = memory_limit(limits)

    def refuse(key: str, value: object, claim: int, described: str) -> None:
        driver = Part("", f"mechanism.{key}", value, claim)
        detail = f"{described} {human(claim)} beside the rest of the job's {human(need)}"
        raise refusal(driver, what, need + claim, detail, limits)

    return MemoryAllowance(available=limit - need, refuse=refuse)
