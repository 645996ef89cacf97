"""The refusal checks: a bad setting raises a :class:`~dp2pub.validation.ConfigError` naming
its key, when the object is built or, for what depends on the data, when it publishes."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.publish.base import Outcome
from dp2pub.testing.cases import OracleCase, PublisherCase
from dp2pub.testing.runs import run
from dp2pub.testing.verdicts import ConformanceError, skip
from dp2pub.validation import ConfigError

#: Budgets every publisher that uses one, and every oracle, must refuse (``check_epsilon``).
BAD_EPSILONS = (0.0, -1.0, math.nan, math.inf)
#: Domain sizes every oracle must refuse.
BAD_DOMAINS = (1, 0, -3)


def names(error: ConfigError, key: str) -> bool:
    """Whether ``error`` names ``key``: as its whole key or as a part of a dotted one
    (``mechanism.key``, ``key.inner``)."""
    return key == error.key or key in error.key.split(".")


def refused(attempt: Callable[[], object], key: str, value: Any, where: str) -> None:
    """Raise :class:`ConformanceError` unless ``attempt()`` raises a ConfigError naming ``key``."""
    try:
        attempt()
    except ConfigError as error:
        if not names(error, key):
            raise ConformanceError(
                f"{where}: {key}={value!r} raised a ConfigError naming {error.key!r}: {error}"
            ) from None
        return
    except Exception as error:  # any other error is a failure of the check, shown with its type
        raise ConformanceError(
            f"{where}: {key}={value!r} raised {type(error).__name__}: {error}, not a ConfigError"
        ) from None
    raise ConformanceError(f"{where}: {key}={value!r} was accepted")


def check_bad_settings(case: PublisherCase) -> None:
    """Each of ``case.bad`` alone raises a ConfigError naming its key, when the publisher is
    built or when it publishes a random table."""
    if not case.bad:
        skip(f"{case.id}: no invalid settings declared (PublisherCase.bad)")
    rng = np.random.default_rng(case.seed)
    data = case.table(rng, case.rows[1])
    for key, value in case.bad.items():
        refused(partial(build_and_run, case, {key: value}, data), key, value, case.id)


def build_and_run(case: PublisherCase, overrides: dict[str, Any], data: Dataset) -> Outcome:
    """The outcome of a publisher of ``case``'s settings updated by ``overrides``."""
    return run(case.build(**overrides), data, case.epsilon, case.seed)


def check_bad_epsilon(case: PublisherCase) -> None:
    """A publisher that uses a budget refuses a budget that is not a finite number > 0 with a
    ConfigError naming ``epsilon`` (the job checks it first; a publisher used alone must too)."""
    publisher = case.build()
    if not publisher.uses_budget:
        skip(f"{case.id}: uses no budget (uses_budget is False), so it takes no epsilon")
    data = case.table(np.random.default_rng(case.seed), case.rows[1])
    for epsilon in BAD_EPSILONS:
        refused(partial(run, publisher, data, epsilon, case.seed), "epsilon", epsilon, case.id)


def check_oracle_refusals(case: OracleCase) -> None:
    """A budget that is not a finite number > 0, a domain of fewer than 2 values and each of
    ``case.bad`` raise a ConfigError naming ``epsilon``, ``k`` or the option."""
    for epsilon in BAD_EPSILONS:
        refused(partial(case.build, epsilon), "epsilon", epsilon, case.id)
    for k in BAD_DOMAINS:
        refused(partial(case.build, case.epsilon, k=k), "k", k, case.id)
    for key, value in case.bad.items():
        refused(partial(case.build, case.epsilon, **{key: value}), key, value, case.id)
