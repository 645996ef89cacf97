"""Refusing a job that cannot fit, before it starts.

A job's memory is estimated from its shape alone (records, domain sizes, the mechanism's
own keys), before any table is built: the input table (:func:`dp2pub.data.dataset.table_bytes`;
only histograms, :func:`dp2pub.data.tally.tally_bytes`, when they are drawn without records),
the publisher's working memory (:meth:`dp2pub.publish.base.Publisher.memory_bytes`), and the
marginals the metrics compare. A job whose estimate exceeds ``limits.memory_gib`` (default:
80% of this machine's physical memory), or whose metrics would compute more than
``limits.max_marginals`` marginals, is refused in one line that gives the estimate and the
limit, instead of allocating until the kernel kills it. The estimates are upper bounds of
the arrays the code allocates, not measurements; raise the limit if one is too cautious.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

from dp2pub.data.dataset import table_bytes
from dp2pub.data.tally import tally_bytes
from dp2pub.publish.base import Publisher
from dp2pub.settings import LimitSettings, MetricSettings
from dp2pub.validation import ConfigError, check_int

#: Share of the physical memory a job may need when ``limits.memory_gib`` is null.
DEFAULT_SHARE = 0.8
GIB = 1 << 30


class TooLarge(ConfigError):
    """A job whose estimated size exceeds a limit; the message is one line with both."""

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


def human(nbytes: float) -> str:
    """``9.31 GiB``: a byte count with a binary unit."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(nbytes) < 1024 or unit == "PiB":
            return f"{nbytes:.3g} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1024
    raise AssertionError("unreachable")


def marginal_count(d: int, metrics: MetricSettings) -> int:
    """How many marginals the metrics compute on ``d`` attributes: the d one-way marginals
    and, for each k >= 2 in ``metrics.ways``, C(d, k) subsets or ``max_subsets`` of them."""
    count = d
    for way in set(metrics.ways) - {1}:
        subsets = math.comb(d, way)
        count += subsets if metrics.max_subsets is None else min(subsets, metrics.max_subsets)
    return count


def marginal_bytes(sizes: Sequence[int] | np.ndarray, metrics: MetricSettings) -> int:
    """The memory of the largest marginal the metrics may compare: the true and the
    estimated joint table over the largest domains, float64, and their flat codes."""
    way = min(max(metrics.ways, default=1), len(sizes))
    largest = sorted((int(k) for k in sizes), reverse=True)[:way]
    return 32 * math.prod(largest)


def check_job_size(
    publisher: Publisher,
    n: int,
    sizes: Sequence[int] | np.ndarray,
    metrics: MetricSettings,
    limits: LimitSettings,
    what: str,
    counts_only: bool = False,
) -> int:
    """Refuse, with :class:`TooLarge`, a job over ``n`` records and domains ``sizes`` that
    needs more memory or marginals than ``limits`` allow; returns the estimated bytes.
    ``what`` names the data's shape in the message (``dataset.n=..., dataset.d=...``);
    ``counts_only``: the input is only histograms, drawn without records (no table is built).
    A way larger than the number of attributes is refused first, as a ConfigError."""
    for way in metrics.ways:
        check_int(way, "metrics.ways", 1, len(sizes))
    count = marginal_count(len(sizes), metrics)
    if count > limits.max_marginals:
        raise TooLarge(
            "limits.max_marginals",
            limits.max_marginals,
            f"job too large: metrics.ways={list(metrics.ways)} with metrics.max_subsets="
            f"{'null' if metrics.max_subsets is None else metrics.max_subsets} on {len(sizes)} attributes "
            f"would compute {count:,} marginals > limits.max_marginals={limits.max_marginals:,}; "
            "set metrics.max_subsets or raise limits.max_marginals",
        )
    parts = {
        "table": tally_bytes(sizes) if counts_only else table_bytes(n, sizes),
        publisher.name: publisher.memory_bytes(n, sizes),
        "metrics": marginal_bytes(sizes, metrics),
    }
    need, limit = sum(parts.values()), memory_limit(limits)
    if need > limit:
        detail = ", ".join(f"{name} {human(size)}" for name, size in parts.items())
        setting = (
            f"limits.memory_gib={limits.memory_gib:g}"
            if limits.memory_gib is not None
            else (f"limits.memory_gib=null ({DEFAULT_SHARE:.0%} of {human(physical_memory())})")
        )
        raise TooLarge(
            "limits.memory_gib",
            limits.memory_gib,
            f"job too large: {what} would need about {human(need)} ({detail}) > {setting} "
            f"= {human(limit)}; shrink the job or raise limits.memory_gib",
        )
    return need
