"""The publisher interface, what it hands back (a release, its ledger, timings), and the
memory estimates publishers share.

A publisher's memory is estimated from the shape before any work (:meth:`Publisher.memory_bytes`,
split by the config key that scales each part in :meth:`Publisher.memory_parts`). What the
data decides while publishing (DP2-Pub's clusters: the caps ``max_cells`` and
``max_cluster_size`` only bound them) is estimated again once it is known and claimed from
the running job's :class:`MemoryAllowance` (:func:`claim_memory`), which refuses it, naming
the key, when it does not fit.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset, table_bytes
from dp2pub.data.tally import Tally
from dp2pub.mechanisms.accounting import Spend, epsilon_spent
from dp2pub.mechanisms.chunks import chunk_rows
from dp2pub.mechanisms.ibu import CACHE_CELLS
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.publish.release import Release


@dataclass
class Outcome:
    """The result of publishing one table (what :meth:`Publisher.publish` returns).

    Parameters
    ----------
    release : Release
        What was released (:mod:`dp2pub.publish.release`): it answers the metrics' marginal
        queries, and says whether it is a table and gives classifiers.
    ledger : list of Spend, optional
        The budget spent, one :class:`~dp2pub.mechanisms.accounting.Spend` per item (empty
        for methods without a privacy budget).
    timings : dict, optional
        Wall time per phase in seconds, logged as ``time_<phase>_s``.
    extra_metrics : dict, optional
        Further metrics of the mechanism (RAPPOR's ``epsilon_inf``, ...).
    artifacts : dict, optional
        JSON-serializable objects logged as ``<name>.json`` (a learned network, ...).
    not_private : str, optional
        Why the outcome has no finite privacy guarantee, when the configuration asked for a
        step that answers a query on the true data without noise (its ledger then spends
        ``inf``); empty for a differentially private outcome.
    beyond_budget : str, optional
        Why the ledger may spend more than the job's epsilon, when the configuration gave
        epsilon to each of several reports instead of to the user (LDP naive Bayes
        ``accounting: per_report``); empty when it spends at most epsilon.
    allowed_epsilon : float, optional
        With ``beyond_budget``, the most the configuration lets the ledger spend (R reports x
        epsilon), which the job still checks exactly.

    Raises
    ------
    ValueError
        If only one of ``beyond_budget`` and ``allowed_epsilon`` is given.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import GRRPublisher, load_car
    >>> outcome = GRRPublisher().publish(load_car(), epsilon=1.0, rng=np.random.default_rng(0))
    >>> outcome.epsilon_spent, len(outcome.ledger), outcome.published.n
    (1.0, 7, 1728)
    >>> outcome.ledger[0]
    Spend(phase='perturb', attribute='buying', epsilon=0.14285714285714285, users='all', rho=0.0, delta=0.0, neighbours='')
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
    """A mechanism that publishes a whole table: a table in, an :class:`Outcome` out.

    Subclasses are (frozen) dataclasses whose fields are the keys of their ``mechanism``
    config; they implement :meth:`publish` and :meth:`memory_bytes`. Class constants say what
    a publisher consumes and needs.

    Attributes
    ----------
    name : str
        The ``mechanism`` name it is registered under (``grr``, ``dp2pub``, ...).
    uses_budget : bool
        False for a method without a privacy budget (k-anonymity): the job then takes no
        ``epsilon``.
    needs_target : bool
        True when it learns the dataset's target itself (LDP naive Bayes).

    Examples
    --------
    Every publisher is used the same way:

    >>> import numpy as np
    >>> from dp2pub import PRAMPublisher, Publisher, SamaratiPublisher, load_car
    >>> car = load_car()
    >>> for publisher in (PRAMPublisher(), SamaratiPublisher(k=5)):
    ...     epsilon = 1.0 if publisher.uses_budget else None
    ...     outcome = publisher.publish(car, epsilon, np.random.default_rng(0))
    ...     print(publisher.name, isinstance(publisher, Publisher), publisher.guarantee(epsilon), outcome.epsilon_spent)
    pram True epsilon=1.0 1.0
    samarati True k=5 None
    """

    name: ClassVar[str]
    uses_budget: ClassVar[bool] = True
    needs_target: ClassVar[bool] = False

    @abstractmethod
    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """Publish a table, spending at most ``epsilon`` per user.

        Parameters
        ----------
        data : Dataset
            The table to publish.
        epsilon : float or None
            The privacy budget per user; None for a publisher that does not
            :attr:`uses_budget`.
        rng : numpy.random.Generator
            The source of all the mechanism's randomness.

        Returns
        -------
        Outcome
            The release, its ledger (whose :func:`~dp2pub.mechanisms.accounting.epsilon_spent`
            is at most ``epsilon``), timings and further metrics.

        Raises
        ------
        ConfigError
            For an ``epsilon`` out of range or a setting that does not fit the table.
        """

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

    #: Keys of :meth:`memory_parts` whose part is a cap the data may not reach (DP2-Pub's
    #: clusters): the job does not refuse on it before any work; the publisher claims what
    #: the data decided once it is known (:func:`claim_memory`).
    deferred_memory: ClassVar[frozenset[str]] = frozenset()

    def memory_parts(self, n: int, sizes: Sequence[int] | np.ndarray) -> dict[str, int]:
        """:meth:`memory_bytes` split by what scales each part: a key of the publisher's
        config (``num_bits``, ``degree``, ...) or ``""`` for the data's shape alone. A job too
        large names the key of the largest part. Default: one part of the shape."""
        return {"": self.memory_bytes(n, sizes)}

    @property
    def max_way(self) -> int | None:
        """The most attributes a marginal its release answers may join, as the release's
        :attr:`~dp2pub.publish.release.Release.max_way` (None: any; 0: none), known before it
        publishes: the metrics ask no more (their estimate counts no more)."""
        return None

    #: The config key that scales :meth:`answer_bytes` (``""``: the data's shape alone).
    answer_key: ClassVar[str] = ""

    def answer_bytes(self, n: int, sizes: Sequence[int] | np.ndarray, way: int) -> int:
        """The memory the release takes to answer the metrics' marginals of up to ``way``
        attributes, beside the metrics' own arrays (:func:`dp2pub.limits.marginal_bytes`,
        which count the answers' cells). Default, a published table of ``n`` records: it
        counts its rows as the metrics count the original's (:func:`counting_bytes`)."""
        return counting_bytes(n, sizes)

    def setting(self, key: str) -> object:
        """The value of config key ``key`` (a refusal names it): the field of that name."""
        return getattr(self, key)

    def check_shape(self, n: int, sizes: Sequence[int] | np.ndarray) -> None:
        """Refuse, with a ConfigError naming the key, a setting out of range for a table of
        ``n`` records over domains ``sizes`` (a network degree of at least d). The job calls it
        before the memory estimate, :meth:`publish` before any work. Default: none."""
        return None


def working_bytes(n: int, sizes: Sequence[int] | np.ndarray) -> int:
    """The memory of publishing a table column by column, from its shape alone.

    The published copy of the table (its codes in the smallest dtype and its labels) and, for
    the column being perturbed, a few 8-byte arrays per user: the base of every publisher's
    :meth:`Publisher.memory_bytes`, which a job checks against its limits before any work.

    Parameters
    ----------
    n : int
        The number of records.
    sizes : sequence of int
        The domain size of every attribute.

    Returns
    -------
    int
        An estimate in bytes.

    Examples
    --------
    >>> from dp2pub import working_bytes
    >>> working_bytes(1000, [4, 3, 3])
    35640
    >>> f"{working_bytes(10**6, [2] * 10) / 2**20:.1f} MiB"
    '40.1 MiB'
    """
    return table_bytes(n, sizes) + 32 * int(n)


#: Keys of one block of rows that :func:`~dp2pub.data.marginals.stacked_marginal_counts`
#: counts at once (its ``max_keys``).
BLOCK_KEYS = 1 << 23


def counting_bytes(n: int, sizes: Sequence[int] | np.ndarray) -> int:
    """What counting joint marginals of a table of ``n`` records takes
    (:func:`~dp2pub.data.marginals.stacked_marginal_counts`), per row of a block of at most
    :data:`BLOCK_KEYS` keys: the block's codes and their keys as int64 (8 d each) and the
    prefix shift (8); and the cast buffer of a ufunc (numpy's buffer size of int64 entries)."""
    d = len(sizes)
    rows = min(int(n), max(1, BLOCK_KEYS // max(d, 1)))
    return (16 * d + 8) * rows + 8 * np.getbufsize()


def reports_bytes(
    oracles: Sequence[type[FrequencyOracle]], m: int, k: int, ibu: bool = False, **options: object
) -> int:
    """What perturbing ``m`` users' values over ``k`` values with the largest of ``oracles``
    takes (:meth:`~dp2pub.mechanisms.oracle.FrequencyOracle.memory_bytes`), or, beside the
    reports (:meth:`~dp2pub.mechanisms.oracle.FrequencyOracle.report_bytes`), estimating
    from them: counting them
    (:meth:`~dp2pub.mechanisms.oracle.FrequencyOracle.count_bytes`), or with ``ibu`` the
    users' likelihoods (float64), kept between steps when there are few, and made in chunks
    of users (:func:`~dp2pub.mechanisms.chunks.chunk_rows`) of 4 arrays."""
    need = 0
    for oracle in oracles:
        reports = oracle.report_bytes(m, k, **options)
        counting = oracle.count_bytes(m, k, **options)
        if ibu:
            cached = 8 * int(m) * k if int(m) * k <= CACHE_CELLS else 0
            counting = max(counting, cached + 32 * chunk_rows(m, k) * k)
        need = max(need, reports + max(oracle.memory_bytes(m, k, **options) - reports, counting))
    return need


def parts_total(parts: dict[str, int]) -> int:
    """The total of :meth:`Publisher.memory_parts`: :meth:`Publisher.memory_bytes`."""
    return sum(parts.values())


@dataclass
class MemoryAllowance:
    """What a running job lets a publisher claim for structures its data decides.

    Attributes:
        available: bytes left for them beyond the job's estimate from the shape; None: any
            (claims are only recorded, as the memory checks of :mod:`dp2pub.testing` do).
        refuse: raises the job's refusal for a claim ``(key, value, need, what)`` that does
            not fit (:class:`dp2pub.limits.TooLarge`, one line naming the key).
        claimed: every claim so far, by key: the bytes the data decided.
    """

    available: int | None = None
    refuse: Callable[[str, object, int, str], None] | None = None
    claimed: dict[str, int] = field(default_factory=dict)


_ALLOWANCE: ContextVar[MemoryAllowance | None] = ContextVar("dp2pub_memory_allowance", default=None)


@contextmanager
def allowance(granted: MemoryAllowance) -> Iterator[MemoryAllowance]:
    """Run the block (a publication) with ``granted`` as the allowance :func:`claim_memory` uses."""
    token = _ALLOWANCE.set(granted)
    try:
        yield granted
    finally:
        _ALLOWANCE.reset(token)


def claim_memory(key: str, value: object, need: int, what: str) -> None:
    """Claim ``need`` bytes for a structure the data decided, scaled by config key ``key``
    (whose value is ``value``; ``what`` describes it): recorded, and refused through the
    running job's allowance when more than it has left. Outside a job, nothing happens."""
    granted = _ALLOWANCE.get()
    if granted is None:
        return
    granted.claimed[key] = max(need, granted.claimed.get(key, 0))
    if granted.available is not None and need > granted.available and granted.refuse is not None:
        granted.refuse(key, value, need, what)


def channel_bytes(sizes: Sequence[int] | np.ndarray) -> int:
    """The memory of a k x k float64 channel matrix (and its inverse) per attribute."""
    return 16 * sum(int(k) ** 2 for k in sizes)


def network_bytes(sizes: Sequence[int] | np.ndarray, degree: int) -> int:
    """The memory of a Bayesian network's largest tables: the joint counts of an attribute
    and ``degree`` parents over the largest domains, float64, a few at a time."""
    largest = sorted((int(k) for k in sizes), reverse=True)[: degree + 1]
    return 32 * math.prod(largest)
