"""A conformance suite for publishers and frequency oracles, run in the user's own pytest.

Write one test::

    from dp2pub.testing import OracleCase, PublisherCase, parametrize_with_checks

    @parametrize_with_checks(
        publishers=[MyPublisher, PublisherCase(MyPublisher, settings={"k": 3}, bad={"k": 0})],
        oracles=[MyOracle, OracleCase(MyOracle, options={"width": 8}, k=5)],
    )
    def test_conformance(check):
        check()

Each check becomes one test, its id ``<case>-<check>``. A publisher is given as its builder
(its class, or any callable returning a :class:`~dp2pub.publish.base.Publisher`), called
with keyword settings, or as a :class:`PublisherCase` (the builder with valid ``settings``,
invalid ones in ``bad``, and the tables and budgets to use); an oracle as its class (any
callable taking ``epsilon`` and ``k`` by keyword, returning a
:class:`~dp2pub.mechanisms.oracle.FrequencyOracle`) or an :class:`OracleCase`. Never an
instance: the checks build fresh objects, invalid ones among them.

Publisher checks (:data:`~dp2pub.testing.suite.PUBLISHER_CHECKS`): ``check_budget`` (random
tables and budgets, ``epsilon_spent <= epsilon`` exactly), ``check_deterministic`` (same
seed, same release; another seed, another release), ``check_release`` (the release is what
its kind promises), ``check_memory`` (``memory_bytes`` bounds the traced peak),
``check_bad_settings`` (each of ``bad`` raises a ConfigError naming its key),
``check_bad_epsilon``. Oracle checks (:data:`~dp2pub.testing.suite.ORACLE_CHECKS`):
``check_channel`` (the exact channel meets epsilon), ``check_channel_tight`` (and fails just
below it), ``check_unbiased``, ``check_variance`` (Monte Carlo against ``expected_mse``),
``check_oracle_refusals``. A check that does not apply is skipped with its reason, never
passed silently. docs/explanation/testing.md says what each asserts.

pytest is imported only by :func:`parametrize_with_checks` and by a skip: the checks run
anywhere (``for name, check in publisher_checks(MyPublisher): check()``).
"""

from dp2pub.testing.cases import OracleCase, PublisherCase
from dp2pub.testing.suite import (
    ORACLE_CHECKS,
    PUBLISHER_CHECKS,
    all_checks,
    oracle_checks,
    parametrize_with_checks,
    publisher_checks,
)
from dp2pub.testing.tables import random_table
from dp2pub.testing.verdicts import ConformanceError

__all__ = [
    "ORACLE_CHECKS",
    "PUBLISHER_CHECKS",
    "ConformanceError",
    "OracleCase",
    "PublisherCase",
    "all_checks",
    "oracle_checks",
    "parametrize_with_checks",
    "publisher_checks",
    "random_table",
]
