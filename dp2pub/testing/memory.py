"""The memory check: ``memory_bytes(n, sizes)`` bounds what publishing allocates beside the
input table, measured with :mod:`tracemalloc` (Python objects and numpy arrays; memory a
compiled library allocates on its own, as liblinear's, is not traced)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import numpy as np

from dp2pub.testing.cases import PublisherCase
from dp2pub.testing.runs import run, shape, source
from dp2pub.testing.verdicts import expect


def traced_peak(work: Callable[[], object]) -> int:
    """The peak of traced memory above what was allocated before, while ``work`` runs and its
    result is still held (a release is part of what publishing takes)."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        gc.collect()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = work()
        peak = tracemalloc.get_traced_memory()[1]
        del result
    finally:
        if not tracing:
            tracemalloc.stop()
    return peak - before


def check_memory(case: PublisherCase) -> None:
    """On a table of ``case.memory_rows`` records with the most attributes of the case's
    range, the traced peak of publishing is at most ``memory_bytes(n, sizes)`` plus
    ``case.memory_slack``. A first publication on a small table runs before, so that modules
    imported and caches filled on first use are not counted; the histograms of a publisher
    that publishes from them are counted before too (the job loads them instead of the table)."""
    rng = np.random.default_rng(case.seed)
    publisher = case.build()
    data = case.table(rng, case.memory_rows, d=case.dims[1])
    run(publisher, case.table(rng, case.rows[1], d=case.dims[1]), case.epsilon, case.seed)  # warm up
    given = source(publisher, data)  # the job loads the histograms alone when they suffice
    peak = traced_peak(lambda: run(publisher, given, case.epsilon, case.seed))
    bound = publisher.memory_bytes(data.n, data.domain.sizes)
    expect(
        peak <= bound + case.memory_slack,
        f"{case.id} on a table with {shape(data)}, epsilon={case.epsilon!r}: publishing took {peak:,} bytes "
        f"at its peak, more than memory_bytes = {bound:,} ({peak / max(bound, 1):.2f} times) "
        f"+ {case.memory_slack:,} bytes of slack",
    )
