"""The memory check: ``memory_bytes(n, sizes)`` bounds what publishing allocates beside the
input table, measured with :mod:`tracemalloc` (Python objects and numpy arrays; memory a
compiled library allocates on its own, as liblinear's, is not traced), and is not far above
it: an honest estimate, not a refusal of jobs that fit.

An estimate is checked on both sides of the traced peak: ``peak <= estimate + slack`` and
``estimate <= MAX_RATIO * peak + slack``. The slack (:attr:`PublisherCase.memory_slack`,
64 KiB by default) is what no estimate from the shape counts on either side: the Python
objects of a call (frames, the outcome's dicts, a Dataset's small arrays), measured at about
20-40 KiB for a publication of a few records. A publisher that claims what its data decided
(:func:`~dp2pub.publish.base.claim_memory`: DP2-Pub's clusters) is held to its estimate with
those claims in place of the parts it defers, and the claims to at most its estimate from the
shape alone.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.limits import answer_part, marginal_bytes
from dp2pub.metrics.evaluate import evaluate_marginals
from dp2pub.publish.base import MemoryAllowance, Outcome, Publisher, allowance
from dp2pub.settings import MetricSettings
from dp2pub.testing.cases import PublisherCase
from dp2pub.testing.runs import run, shape, source
from dp2pub.testing.verdicts import expect

#: An estimate may be at most this many times the traced peak (plus the slack).
MAX_RATIO = 4.0


@contextmanager
def settled_heap() -> Iterator[None]:
    """Garbage collected once and what is left set aside (:func:`gc.freeze`) while the block
    runs: the collection before each traced measurement (:func:`traced_peak`) then scans only
    what was allocated since, not every object of a process that imported MLflow or JAX (up to
    a second a collection in a test worker late in the suite, for a measurement of
    milliseconds). For a series of measurements; what was set aside is collectable again after
    (all of it: a freeze of the caller's own is undone too).

    A measurement's baseline is unchanged (what was set aside existed before it), but with
    fewer objects counted as old, the collector's full collections come more often during
    ``work`` than in a job with a large heap: garbage in reference cycles may be freed sooner,
    so a peak made of such garbage may read lower than in the job."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


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


@dataclass(frozen=True)
class Measured:
    """An estimate next to the traced peak of what it estimates.

    Attributes:
        estimate: the estimate as the job uses it (with what the data decided, if claimed).
        peak: the traced peak.
        bound: the estimate from the shape alone (the same unless parts wait for the data).
    """

    estimate: int
    peak: int
    bound: int

    @property
    def ratio(self) -> float:
        """estimate / peak."""
        return self.estimate / max(self.peak, 1)

    def within(self, slack: int, ratio: float = MAX_RATIO) -> bool:
        """``peak <= estimate + slack <= bound + slack`` and ``estimate <= ratio * peak + slack``."""
        return self.peak <= self.estimate + slack and self.estimate <= min(self.bound, ratio * self.peak + slack)


def realized_bytes(publisher: Publisher, n: int, sizes: Sequence[int] | np.ndarray, claimed: dict[str, int]) -> int:
    """The publisher's estimate once its data decided what it defers: the parts of
    :meth:`~Publisher.memory_parts` it does not defer, and its claims in place of the others
    (a deferred part it did not claim stays as estimated from the shape)."""
    parts = publisher.memory_parts(n, sizes)
    deferred = [key for key in parts if key in publisher.deferred_memory]
    kept = sum(size for key, size in parts.items() if key not in publisher.deferred_memory)
    if not deferred:
        return kept
    return kept + (max(claimed.values()) if claimed else max(parts[key] for key in deferred))


def measure_publishing(publisher: Publisher, data: Dataset, epsilon: float, seed: int) -> tuple[Measured, Outcome]:
    """The traced peak of publishing ``data`` (its histograms if the publisher publishes from
    them) next to the publisher's estimate, and the outcome (the caller warms up first, so that
    modules imported and caches filled on first use are not counted)."""
    given = source(publisher, data)
    outcomes: list[Outcome] = []
    with allowance(MemoryAllowance()) as granted:
        peak = traced_peak(lambda: outcomes.append(run(publisher, given, epsilon, seed)))
    sizes = data.domain.sizes
    estimate = realized_bytes(publisher, data.n, sizes, granted.claimed)
    return Measured(estimate, peak, publisher.memory_bytes(data.n, sizes)), outcomes[0]


def measure_metrics(
    publisher: Publisher, data: Dataset, outcome: Outcome, metrics: MetricSettings, seed: int = 0
) -> Measured:
    """The traced peak of the marginal metrics of ``outcome``'s release against ``data``
    (:func:`~dp2pub.metrics.evaluate.evaluate_marginals`, after a warm-up) next to their
    estimate: :func:`~dp2pub.limits.marginal_bytes` and the release's answers
    (:meth:`~dp2pub.publish.base.Publisher.answer_bytes`)."""

    def evaluate() -> object:
        rng = np.random.default_rng(seed)
        return evaluate_marginals(data, outcome.release, rng, ways=metrics.ways, max_subsets=metrics.max_subsets)

    evaluate()
    peak = traced_peak(evaluate)
    sizes = data.domain.sizes
    estimate = (
        marginal_bytes(data.n, sizes, metrics, publisher.max_way) + answer_part(publisher, data.n, sizes, metrics).size
    )
    return Measured(estimate, peak, estimate)


def check_memory(case: PublisherCase) -> None:
    """On a table of ``case.memory_rows`` records with the most attributes of the case's
    range, the traced peak of publishing is at most ``memory_bytes(n, sizes)`` plus
    ``case.memory_slack``, and the estimate at most :data:`MAX_RATIO` times the peak plus the
    slack (with what the data decided in place of the parts deferred until it is known, see
    the module). A first publication on a small table runs before, so that modules imported
    and caches filled on first use are not counted; the histograms of a publisher that
    publishes from them are counted before too (the job loads them instead of the table)."""
    rng = np.random.default_rng(case.seed)
    publisher = case.build()
    data = case.table(rng, case.memory_rows, d=case.dims[1])
    run(publisher, case.table(rng, case.rows[1], d=case.dims[1]), case.epsilon, case.seed)  # warm up
    measured, _ = measure_publishing(publisher, data, case.epsilon, case.seed)
    peak, bound, estimate = measured.peak, measured.bound, measured.estimate
    expect(
        peak <= min(bound, estimate) + case.memory_slack,
        f"{case.id} on a table with {shape(data)}, epsilon={case.epsilon!r}: publishing took {peak:,} bytes "
        f"at its peak, more than memory_bytes = {min(bound, estimate):,} ({peak / max(bound, 1):.2f} times) "
        f"+ {case.memory_slack:,} bytes of slack",
    )
    expect(
        estimate <= bound,
        f"{case.id} on a table with {shape(data)}: it claimed {estimate:,} bytes once its data decided, "
        f"more than memory_bytes = {bound:,} from the shape",
    )
    expect(
        estimate <= MAX_RATIO * peak + case.memory_slack,
        f"{case.id} on a table with {shape(data)}, epsilon={case.epsilon!r}: memory_bytes = {estimate:,} is "
        f"{estimate / max(peak, 1):.2f} times the traced peak {peak:,}, more than {MAX_RATIO:g} times "
        f"+ {case.memory_slack:,} bytes of slack",
    )
