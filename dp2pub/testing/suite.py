"""The checks of a publisher or an oracle as named callables, and the pytest decorator that
runs each as one test."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.publish.base import Publisher
from dp2pub.testing.budget import check_budget
from dp2pub.testing.cases import OracleCase, PublisherCase, oracle_case, publisher_case
from dp2pub.testing.channel import check_channel, check_channel_tight
from dp2pub.testing.determinism import check_deterministic
from dp2pub.testing.estimator import check_unbiased, check_variance
from dp2pub.testing.memory import check_memory
from dp2pub.testing.refusals import check_bad_epsilon, check_bad_settings, check_oracle_refusals
from dp2pub.testing.release_kind import check_release

#: A named check, ready to run: ``check()`` passes, fails (AssertionError) or skips.
Check = tuple[str, Callable[[], None]]

PUBLISHER_CHECKS: tuple[Callable[[PublisherCase], None], ...] = (
    check_budget,
    check_deterministic,
    check_release,
    check_memory,
    check_bad_settings,
    check_bad_epsilon,
)
ORACLE_CHECKS: tuple[Callable[[OracleCase], None], ...] = (
    check_channel,
    check_channel_tight,
    check_unbiased,
    check_variance,
    check_oracle_refusals,
)


class NamedCheck(functools.partial):
    """A check bound to its case; its repr names both (``check_budget(MyPublisher())``)."""

    def __repr__(self) -> str:
        return f"{self.func.__name__}({self.args[0].id})"


def publisher_checks(make: PublisherCase | Callable[..., Publisher], **options: Any) -> list[Check]:
    """The checks of a publisher: ``make`` is a :class:`PublisherCase`, or a builder with the
    case's fields as ``options`` (``settings={...}``, ``bad={...}``, ...)."""
    case = publisher_case(make, **options)
    return [(check.__name__, NamedCheck(check, case)) for check in PUBLISHER_CHECKS]


def oracle_checks(make: OracleCase | Callable[..., FrequencyOracle], **options: Any) -> list[Check]:
    """The checks of a frequency oracle: ``make`` is an :class:`OracleCase`, or a builder
    taking ``epsilon`` and ``k`` with the case's fields as ``options`` (``options={...}``, ...)."""
    case = oracle_case(make, **options)
    return [(check.__name__, NamedCheck(check, case)) for check in ORACLE_CHECKS]


def all_checks(
    publishers: Sequence[PublisherCase | Callable[..., Publisher]] = (),
    oracles: Sequence[OracleCase | Callable[..., FrequencyOracle]] = (),
) -> list[tuple[str, Callable[[], None]]]:
    """``(test id, check)`` of every check of every publisher and oracle; the id is
    ``<case>-<check>``."""
    found = []
    for publisher in map(publisher_case, publishers):
        found += [(f"{publisher.id}-{name}", check) for name, check in publisher_checks(publisher)]
    for oracle in map(oracle_case, oracles):
        found += [(f"{oracle.id}-{name}", check) for name, check in oracle_checks(oracle)]
    return found


def parametrize_with_checks(
    publishers: Sequence[PublisherCase | Callable[..., Publisher]] = (),
    oracles: Sequence[OracleCase | Callable[..., FrequencyOracle]] = (),
) -> Any:
    """A ``pytest.mark.parametrize`` decorator over every check of ``publishers`` and
    ``oracles`` (builders or cases), as argument ``check``; each test id names the case and
    the check. pytest is imported here, so :mod:`dp2pub.testing` imports without it."""
    import pytest

    checks = all_checks(publishers, oracles)
    if not checks:
        raise ValueError("no publisher and no oracle to check")
    return pytest.mark.parametrize("check", [check for _, check in checks], ids=[name for name, _ in checks])
