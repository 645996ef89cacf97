"""What a publisher hands back: a release to measure, the published table, and its ledger."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from dp2pub.data.dataset import Dataset, table_bytes
from dp2pub.data.marginals import marginal_counts


class Release(Protocol):
    """Anything that answers marginal queries about the original table.

    ``max_way`` is the largest number of attributes a marginal query may join (None: any).
    """

    max_way: int | None

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        """Estimated joint frequencies of ``columns``, an array shaped by their domain sizes."""

    def expected_mse(self, column: int, truth: np.ndarray) -> float | None:
        """Closed-form expected ``mse_freq`` of one attribute's estimate, if one exists
        (``truth`` is the attribute's true distribution, which some closed forms need)."""


@dataclass(frozen=True)
class TableRelease:
    """A published table answers marginal queries by counting its rows."""

    table: Dataset
    max_way: int | None = None

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        counts = marginal_counts(self.table.codes[:, list(columns)], self.table.domain.sizes[list(columns)])
        return counts / self.table.n

    def expected_mse(self, column: int, truth: np.ndarray) -> float | None:
        return None


@dataclass
class Outcome:
    """The result of publishing one table.

    Attributes:
        release: answers the marginal queries the metrics ask.
        published: the published table, if the publisher releases one.
        ledger: one row per budget item: ``{"phase", "attribute", "epsilon"}`` and optionally
            ``"users"``, the group of users who spend it (default ``"all"``). A user's cost is
            the sum of the rows of ``"all"`` and of their own group (sequential composition);
            ``epsilon_spent`` is the largest over the disjoint groups (parallel composition).
        timings: wall time per phase in seconds, logged as ``time_<phase>_s``.
        extra_metrics: further metrics of the mechanism (RAPPOR's ``epsilon_inf``, ...).
        artifacts: JSON-serializable objects logged as ``<name>.json`` (a learned network, ...).
    """

    release: Release
    published: Dataset | None = None
    ledger: list[dict] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    extra_metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, object] = field(default_factory=dict)

    @property
    def epsilon_spent(self) -> float | None:
        """Per-user privacy cost under sequential composition, or None for non-DP methods."""
        if not self.ledger:
            return None
        shared = [row["epsilon"] for row in self.ledger if row.get("users", "all") == "all"]
        groups = {row["users"] for row in self.ledger if row.get("users", "all") != "all"}
        if not groups:
            return math.fsum(shared)
        return max(math.fsum(shared + [row["epsilon"] for row in self.ledger if row.get("users") == g]) for g in groups)


class Publisher(Protocol):
    """A mechanism that publishes a whole table under a per-user budget ``epsilon``."""

    name: str

    def publish(self, data: Dataset, epsilon: float, rng: np.random.Generator) -> Outcome:
        """Publish ``data`` spending at most ``epsilon`` per user."""

    def memory_bytes(self, n: int, sizes: Sequence[int]) -> int:
        """An upper estimate of the memory that publishing ``n`` records over attributes of
        domain ``sizes`` takes beside the input table, from the shape alone (the job refuses
        what would not fit before any work, see :mod:`dp2pub.limits`)."""


def working_bytes(n: int, sizes: Sequence[int]) -> int:
    """The memory of publishing a table column by column: the published copy of the table
    and, for the column being perturbed, a few 8-byte arrays per user. The base of every
    publisher's :meth:`Publisher.memory_bytes`."""
    return table_bytes(n, sizes) + 32 * int(n)


def channel_bytes(sizes: Sequence[int]) -> int:
    """The memory of a k x k float64 channel matrix (and its inverse) per attribute."""
    return 16 * sum(int(k) ** 2 for k in sizes)


def network_bytes(sizes: Sequence[int], degree: int) -> int:
    """The memory of a Bayesian network's largest tables: the joint counts of an attribute
    and ``degree`` parents over the largest domains, float64, a few at a time."""
    largest = sorted((int(k) for k in sizes), reverse=True)[: degree + 1]
    return 32 * math.prod(largest)
