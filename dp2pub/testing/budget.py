"""The budget check: on random tables and budgets the ledger never spends more than the
budget, exactly (no tolerance), and a publisher without a budget spends none."""

from __future__ import annotations

import numpy as np

from dp2pub.job import check_budget as job_check_budget
from dp2pub.mechanisms.accounting import Spend
from dp2pub.testing.cases import PublisherCase
from dp2pub.testing.runs import run, shape
from dp2pub.testing.verdicts import ConformanceError, expect

#: ``(epsilon, d)`` always tried first (``d`` kept within the case's range; None: drawn): two
#: budgets whose plain shares ``epsilon / d`` add up (``math.fsum``) to more than epsilon at
#: that d (3.1 at d = 3 and 6, 3.9 at d = 3, 5 and 6), a tiny and a huge one. The other draws
#: are log-uniform in 1e-3 .. 1e3 with d drawn.
FIXED_DRAWS: tuple[tuple[float, int | None], ...] = ((3.1, 3), (3.9, 5), (1e-3, None), (1e3, None), (3.9, 6))


def draws(rng: np.random.Generator, count: int, dims: tuple[int, int]) -> list[tuple[float, int]]:
    """``count`` pairs ``(epsilon, d)``: :data:`FIXED_DRAWS` first, then ``10 ** u`` for u
    uniform in [-3, 3], with ``d`` in ``dims``."""
    fixed = list(FIXED_DRAWS) + [(float(10.0**u), None) for u in rng.uniform(-3.0, 3.0, size=count)]
    low, high = dims
    return [(eps, min(max(d, low), high) if d else int(rng.integers(low, high + 1))) for eps, d in fixed[:count]]


def check_budget(case: PublisherCase) -> None:
    """For ``case.draws`` random tables, budgets and seeds: the ledger holds
    :class:`~dp2pub.mechanisms.accounting.Spend` items and passes the job's own budget check
    (:func:`dp2pub.job.check_budget`): a publisher that uses a budget spends
    ``epsilon_spent <= epsilon`` exactly (or at most ``allowed_epsilon`` when its outcome says
    ``beyond_budget``; its finite items when it says ``not_private``), one that does not
    spends nothing (``epsilon_spent`` None). A table has a target one time in two, always
    when the publisher ``needs_target``."""
    rng = np.random.default_rng(case.seed)
    publisher = case.build()
    for epsilon, d in draws(rng, case.draws, case.dims):
        n = int(rng.integers(case.rows[0], case.rows[1] + 1))
        data = case.table(rng, n, target=publisher.needs_target or bool(rng.integers(2)), d=d)
        seed = int(rng.integers(2**32))
        outcome = run(publisher, data, epsilon, seed)
        where = f"{case.id} on a table with {shape(data)}, epsilon={epsilon!r}, seed={seed}"
        kinds = sorted({type(item).__name__ for item in outcome.ledger})
        expect(all(isinstance(item, Spend) for item in outcome.ledger), f"{where}: the ledger holds {kinds}")
        try:
            job_check_budget(publisher, outcome, epsilon if publisher.uses_budget else None)
        except RuntimeError as error:
            raise ConformanceError(f"{where}: {error} (ledger: {outcome.ledger})") from None
