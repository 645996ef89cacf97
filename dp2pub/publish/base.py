"""The publisher interface, what it hands back (a release, its ledger, timings), and the
memory estimates publishers share."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset, table_bytes
from dp2pub.data.tally import Tally
from dp2pub.mechanisms.accounting import Spend, epsilon_spent
from dp2pub.publish.release import Release


@dataclass
class Outcome:
    """The result of publishing one table.

    Attributes:
        release: what was released (:mod:`dp2pub.publish.release`): it answers the metrics'
            marginal queries, and says whether it is a table and gives classifiers.
        ledger: the budget spent, one :class:`~dp2pub.mechanisms.accounting.Spend` per item
            (empty for methods without a privacy budget).
        timings: wall time per phase in seconds, logged as ``time_<phase>_s``.
        extra_metrics: further metrics of the mechanism (RAPPOR's ``epsilon_inf``, ...).
        artifacts: JSON-serializable objects logged as ``<name>.json`` (a learned network, ...).
        not_private: why the outcome has no finite privacy guarantee, when the configuration
            asked for a step that answers a query on the true data without noise (its ledger
            then spends ``inf``); empty for a differentially private outcome.
        beyond_budget: why the ledger may spend more than the job's epsilon, when the
            configuration gave epsilon to each of several reports instead of to the user
            (LDP naive Bayes ``accounting: per_report``); empty when it spends at most epsilon.
        allowed_epsilon: with ``beyond_budget``, the most the configuration lets the ledger
            spend (R reports x epsilon), which the job still checks exactly.
    """

    release: Release
    ledger: list[Spend] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    extra_metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, object] = field(default_factory=dict)
    not_private: str = ""
    beyond_budget: str = ""
    allowed_epsilon: float | None = None

    def __post_init__(self) -> None:
        if bool(self.beyond_budget) != (self.allowed_epsilon is not None):
            raise ValueError("beyond_budget and allowed_epsilon go together: why, and how much")

    @property
    def published(self) -> Dataset | None:
        """The published table, if the release is one."""
        return self.release.published

    @property
    def epsilon_spent(self) -> float | None:
        """Per-user privacy cost of the ledger (:func:`~dp2pub.mechanisms.accounting.epsilon_spent`),
        None for methods without a privacy budget."""
        return epsilon_spent(self.ledger)


class Publisher(ABC):
    """A mechanism that publishes a whole table.

    Class constants say what it consumes and needs: ``uses_budget`` (False: no privacy
    budget, as k-anonymity; the job then takes no ``epsilon``), ``needs_target`` (True: it
    learns the dataset's target itself, as LDP naive Bayes).
    """

    name: ClassVar[str]
    uses_budget: ClassVar[bool] = True
    needs_target: ClassVar[bool] = False

    @abstractmethod
    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """Publish ``data`` spending at most ``epsilon`` per user (None when not
        :attr:`uses_budget`)."""

    @property
    def from_tally(self) -> bool:
        """Whether :meth:`publish` needs only the table's histograms, a
        :class:`~dp2pub.data.tally.Tally` (aggregate-level simulation), not its records."""
        return False

    def publish_from(self, data: Dataset | Tally, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """:meth:`publish` a table, or :meth:`publish_tally` its histograms."""
        if isinstance(data, Tally):
            return self.publish_tally(data, epsilon, rng)
        return self.publish(data, epsilon, rng)

    def publish_tally(self, tally: Tally, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """:meth:`publish` from the table's histograms alone (only when :attr:`from_tally`)."""
        raise NotImplementedError(f"{self.name} publishes from records, not from a tally")

    def guarantee(self, epsilon: float | None) -> str:
        """The privacy parameter a reader needs beside the results, as ``key=value``:
        ``epsilon=1.0`` (a publisher without a budget names its own)."""
        return f"epsilon={epsilon}"

    @abstractmethod
    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """An upper estimate of the memory that publishing ``n`` records over attributes of
        domain ``sizes`` takes beside the input table, from the shape alone (the job refuses
        what would not fit before any work, see :mod:`dp2pub.limits`)."""


def working_bytes(n: int, sizes: Sequence[int] | np.ndarray) -> int:
    """The memory of publishing a table column by column: the published copy of the table
    and, for the column being perturbed, a few 8-byte arrays per user. The base of every
    publisher's :meth:`Publisher.memory_bytes`."""
    return table_bytes(n, sizes) + 32 * int(n)


def channel_bytes(sizes: Sequence[int] | np.ndarray) -> int:
    """The memory of a k x k float64 channel matrix (and its inverse) per attribute."""
    return 16 * sum(int(k) ** 2 for k in sizes)


def network_bytes(sizes: Sequence[int] | np.ndarray, degree: int) -> int:
    """The memory of a Bayesian network's largest tables: the joint counts of an attribute
    and ``degree`` parents over the largest domains, float64, a few at a time."""
    largest = sorted((int(k) for k in sizes), reverse=True)[: degree + 1]
    return 32 * math.prod(largest)
