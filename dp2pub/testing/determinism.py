"""The determinism check: the same seed gives the same release, another seed another one
(for a randomized mechanism)."""

from __future__ import annotations

import numpy as np

from dp2pub.testing.answers import answers, differences
from dp2pub.testing.cases import PublisherCase
from dp2pub.testing.runs import run, shape
from dp2pub.testing.verdicts import expect


def check_deterministic(case: PublisherCase) -> None:
    """On one random table, a publisher published twice with ``default_rng(s)`` (the same
    object twice: no state may carry over between calls) gives identical answers
    (:func:`~dp2pub.testing.answers.answers`: ledger, extra metrics, published table,
    marginals, closed-form errors, classifiers' predictions, a dataclass release's fields);
    with another seed a randomized publisher (``case.randomized``, by default one that uses a
    budget) gives different ones."""
    rng = np.random.default_rng(case.seed)
    publisher = case.build()
    data = case.table(rng, case.rows[1])
    seed = int(rng.integers(2**32))
    first, again = (answers(run(publisher, data, case.epsilon, seed), data) for _ in range(2))
    where = f"{case.id} on a table with {shape(data)}, epsilon={case.epsilon!r}"
    changed = differences(first, again)
    expect(not changed, f"{where}: the same seed {seed} gave different {', '.join(changed)}")
    randomized = publisher.uses_budget if case.randomized is None else case.randomized
    if randomized:
        other = answers(run(case.build(), data, case.epsilon, seed + 1), data)
        expect(
            differences(first, other),
            f"{where}: seeds {seed} and {seed + 1} gave identical releases; a randomized mechanism must draw "
            "from the generator it is given (PublisherCase.randomized=False if it is deterministic)",
        )
