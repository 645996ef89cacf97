"""One publication as the job runs it: from the table's histograms when the publisher needs
no more, with the budget only if it uses one, with a fresh generator of a given seed."""

from __future__ import annotations

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.data.tally import Tally
from dp2pub.publish.base import Outcome, Publisher


def source(publisher: Publisher, data: Dataset) -> Dataset | Tally:
    """What the job hands ``publisher``: ``data``, or its histograms if it publishes from them."""
    return Tally.of(data) if publisher.from_tally else data


def run(publisher: Publisher, data: Dataset | Tally, epsilon: float, seed: int) -> Outcome:
    """``publisher``'s outcome on ``data`` (made its :func:`source`) at ``epsilon`` (None if
    it uses no budget), drawn with ``default_rng(seed)``."""
    if isinstance(data, Dataset):
        data = source(publisher, data)
    budget = epsilon if publisher.uses_budget else None
    return publisher.publish_from(data, budget, np.random.default_rng(seed))


def shape(data: Dataset) -> str:
    """``n=.., sizes=[..], target=..``: the table of a failure, for its message."""
    return f"n={data.n}, sizes={[int(k) for k in data.domain.sizes]}, target={data.target!r}"
