"""What the suite is given: a publisher or an oracle to build, with its settings and what
the checks should know about it.

A user names a *builder* (a :class:`~dp2pub.publish.base.Publisher` class or any callable
returning one; a :class:`~dp2pub.mechanisms.oracle.FrequencyOracle` class or any callable
taking ``epsilon`` and ``k``), never an instance: the checks build fresh objects, invalid
ones among them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.publish.base import Publisher
from dp2pub.testing.tables import random_table

#: ``make_table(rng, n)``: a table of ``n`` records drawn with ``rng``.
TableMaker = Callable[[np.random.Generator, int], Dataset]


def describe(make: Callable[..., object], settings: Mapping[str, Any]) -> str:
    """``Builder(key=value, ...)``: how a case is named in test ids and messages."""
    name = getattr(make, "__name__", None) or type(make).__name__
    return f"{name}({', '.join(f'{key}={value!r}' for key, value in settings.items())})"


@dataclass(frozen=True)
class PublisherCase:
    """A publisher for :func:`~dp2pub.testing.suite.publisher_checks`.

    Attributes:
        make: the builder, called as ``make(**settings)``.
        settings: valid settings (keyword arguments of ``make``); empty: its defaults.
        bad: invalid settings, ``key -> value``: each alone (over ``settings``) must raise a
            :class:`~dp2pub.validation.ConfigError` naming ``key``, when the publisher is built or
            at the latest when it publishes.
        name: the case's name in test ids (default: ``make`` with its settings).
        rows, dims, sizes: inclusive ranges of the random tables' records, attributes and
            domain sizes (:func:`~dp2pub.testing.tables.random_table`).
        make_table: ``make_table(rng, n)``, tables of your own instead (with a target if the
            publisher ``needs_target``).
        draws: random (table, budget, seed) triples of the budget check.
        epsilon: the budget of the determinism, release and memory checks.
        randomized: whether two seeds must give different releases (None: if it uses a budget).
        distributions: whether every marginal the release answers is a probability
            distribution (a table that counts its rows is always held to it).
        memory_rows: records of the table on which ``memory_bytes`` must bound the peak, and
            be at most :data:`~dp2pub.testing.memory.MAX_RATIO` times it.
        memory_slack: bytes allowed on both sides of that check for the Python objects of any
            call (frames, the outcome's dicts, small objects), which no estimate from the shape
            alone counts (measured at 20-40 KiB); far below what a per-record mistake costs at
            ``memory_rows``.
        seed: the seed of every random draw of the checks.
    """

    make: Callable[..., Publisher]
    settings: Mapping[str, Any] = field(default_factory=dict)
    bad: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    rows: tuple[int, int] = (60, 150)
    dims: tuple[int, int] = (2, 6)
    sizes: tuple[int, int] = (2, 5)
    make_table: TableMaker | None = None
    draws: int = 12
    epsilon: float = 1.0
    randomized: bool | None = None
    distributions: bool = False
    memory_rows: int = 20_000
    memory_slack: int = 1 << 16
    seed: int = 0

    @property
    def id(self) -> str:
        """The case's name in test ids."""
        return self.name or describe(self.make, self.settings)

    def build(self, **overrides: Any) -> Publisher:
        """A fresh publisher of ``settings`` updated by ``overrides``."""
        return self.make(**{**self.settings, **overrides})

    def table(self, rng: np.random.Generator, n: int, target: bool = True, d: int | None = None) -> Dataset:
        """A table of ``n`` records: ``make_table``'s, else a random one in the case's ranges
        (with a target when ``target`` is true; ``d`` attributes if given)."""
        if self.make_table is not None:
            return self.make_table(rng, n)
        return random_table(rng, n, dims=(d, d) if d else self.dims, sizes=self.sizes, target=target)


@dataclass(frozen=True)
class OracleCase:
    """A frequency oracle for :func:`~dp2pub.testing.suite.oracle_checks`.

    Attributes:
        make: the builder, called as ``make(epsilon=..., k=..., **options)``.
        options: its further settings (RAPPOR's Bloom filter, ...).
        bad: invalid options, ``key -> value``, each of which must raise a ConfigError naming
            ``key`` (``epsilon`` and ``k`` are always tried).
        name: the case's name in test ids (default: ``make`` with its options).
        k: the domain size; the exact channel must be small enough to enumerate.
        epsilons: the budgets at which the exact channel is audited.
        loose: why the exact channel may lose less than the budget (the tightness check is
            then skipped with this reason); empty: it must lose the budget to ``tight_rtol``.
        tight_rtol: the channel must fail epsilon-LDP at ``epsilon * (1 - tight_rtol)``.
        epsilon: the budget of the estimator checks.
        users: users per simulated estimate; ``replicates``: estimates simulated.
        alpha: the false-alarm level of each statistical check (over all its cells).
        resolution: the largest bias the unbiasedness check must be able to see; a check
            whose tolerance is wider fails, asking for more users or replicates.
        seed: the seed of every random draw of the checks.
    """

    make: Callable[..., FrequencyOracle]
    options: Mapping[str, Any] = field(default_factory=dict)
    bad: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    k: int = 4
    epsilons: tuple[float, ...] = (0.05, 0.5, 1.0, 3.0)
    loose: str = ""
    tight_rtol: float = 1e-6
    epsilon: float = 1.0
    users: int = 2_000
    replicates: int = 2_000
    alpha: float = 1e-4
    resolution: float = 0.02
    seed: int = 0

    @property
    def id(self) -> str:
        """The case's name in test ids."""
        return self.name or describe(self.make, self.options)

    def build(self, epsilon: float, **overrides: Any) -> FrequencyOracle:
        """A fresh oracle at ``epsilon`` on ``k`` values, its options updated by ``overrides``."""
        return self.make(**{"epsilon": epsilon, "k": self.k, **self.options, **overrides})


def publisher_case(item: PublisherCase | Callable[..., Publisher], **options: Any) -> PublisherCase:
    """``item`` as a case: a case as it is (``options`` replacing its fields), a builder with
    ``options`` as the case's fields (``settings=...``, ``bad=...``)."""
    if isinstance(item, Publisher):
        raise TypeError(f"pass the builder of {type(item).__name__} (its class) and its settings, not an instance")
    if isinstance(item, PublisherCase):
        return replace(item, **options)
    return PublisherCase(item, **options)


def oracle_case(item: OracleCase | Callable[..., FrequencyOracle], **options: Any) -> OracleCase:
    """``item`` as a case, as :func:`publisher_case` does for publishers."""
    if isinstance(item, FrequencyOracle):
        raise TypeError(f"pass the class of {type(item).__name__} and its options, not an instance")
    if isinstance(item, OracleCase):
        return replace(item, **options)
    return OracleCase(item, **options)
