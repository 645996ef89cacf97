"""Frequency oracles over a whole table: ``mechanism=grr|sue|oue|olh|rappor``.

Multi-attribute strategies (Wang et al., USENIX Security 2017):

- ``split`` (SPL): every user reports every attribute at ``epsilon / d``. With GRR the raw
  reports form the published table (a "first perturbation" that later phases may refine).
- ``sample`` (SMP): every user reports one uniformly sampled attribute with the whole
  ``epsilon``; attribute j is estimated from the ``n_j`` users who reported it (the estimate
  is scaled by ``1 / n_j``, about ``d / n``). Joint marginals are then not estimable.

Server-side estimates per ``estimator``: ``none`` (raw support fractions; for GRR the report
histogram), ``unbiased``, ``clip``, ``norm_sub``, ``ibu``. Joint marginals are estimated from
the same reports: by the channel inverse axis by axis (GRR), or as the mean over users of the
outer product of their per-attribute unbiased vectors (the attributes are perturbed
independently, so the product is unbiased).

``simulate``: ``records`` (default) perturbs every user's value; ``aggregates`` draws each
attribute's report counts (support counts; RAPPOR's bit sums) from their exact distribution
given its histogram (:meth:`~dp2pub.mechanisms.oracle.FrequencyOracle.simulate_counts`: GRR,
SUE, OUE, RAPPOR), from a :class:`~dp2pub.data.tally.Tally`, so a job costs O(k) to
O(num_bits k) whatever n is. The attributes'
counts are independent given the data under ``split``, so every 1-way estimate, and any
function of them, has exactly the distribution of the records path. It refuses what needs
records: OLH (each user's random hash ties the supports of all values together: no closed form),
``strategy=sample`` (disjoint groups of users), ``ibu`` but for GRR (per-user likelihoods);
joint marginals (``max_way`` 1) and classifiers are refused by the job.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype, table_bytes
from dp2pub.data.marginals import marginal_counts
from dp2pub.data.tally import Tally
from dp2pub.mechanisms.accounting import Spend, split_budget
from dp2pub.mechanisms.chunks import chunk_rows, chunks, rowwise_outer
from dp2pub.mechanisms.estimators import ESTIMATORS, postprocess
from dp2pub.mechanisms.grr import GRR
from dp2pub.mechanisms.ibu import CACHE_CELLS, IBUTrace, ibu
from dp2pub.mechanisms.olh import OLH
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.mechanisms.rappor import RAPPOR
from dp2pub.mechanisms.unary import OUE, SUE
from dp2pub.products import capped_product
from dp2pub.publish.base import Outcome, Publisher, parts_total
from dp2pub.publish.release import Release, TableRelease
from dp2pub.validation import ConfigError, check_choice, check_epsilon

STRATEGIES: tuple[str, ...] = ("split", "sample")
#: How the users' reports are produced: one per user, or their counts drawn in one step.
SIMULATIONS: tuple[str, ...] = ("records", "aggregates")
#: The server's default estimate: Norm-Sub, a distribution (every TVD in [0, 1]).
DEFAULT_ESTIMATOR = "norm_sub"

_Oracle = TypeVar("_Oracle", bound=FrequencyOracle)


@dataclass(frozen=True, kw_only=True)
class GRRReportsRelease(TableRelease):
    """A published table of independent per-attribute GRR reports, whose marginals are
    estimated through the channel.

    The reports of a set of attributes went through the Kronecker product of their channels,
    so the unbiased joint estimate applies each attribute's inverse along its own axis.
    Classifiers are trained on the reports as they are.
    """

    oracles: tuple[GRR, ...]
    estimator: str
    trace: IBUTrace = field(default_factory=IBUTrace, compare=False)

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        cols = list(columns)
        if self.estimator == "ibu":
            return ibu([self.oracles[j] for j in cols], [self.table.codes[:, j] for j in cols], trace=self.trace)
        counts = marginal_counts(self.table.codes[:, cols], self.table.domain.sizes[cols])
        freq = counts / self.table.n
        if self.estimator == "none":
            return freq
        for axis, j in enumerate(cols):
            freq = self.oracles[j].unbias(freq, axis=axis)
        return postprocess(freq, self.estimator)

    def expected_mse(self, column: int, truth: np.ndarray) -> float | None:
        if self.estimator != "unbiased":
            return None
        return self.oracles[column].expected_mse(self.table.n, truth)

    def diagnostics(self) -> dict[str, float]:
        return self.trace.metrics()


@dataclass(frozen=True)
class OracleRelease(Release):
    """Marginals estimated from per-attribute reports of any frequency oracle.

    ``reports[j]`` are the reports of attribute j; with ``joint`` (strategy split) they come
    from the same users in the same order, so joint marginals can be estimated too.
    """

    oracles: tuple[FrequencyOracle, ...]
    reports: tuple[np.ndarray, ...]
    estimator: str
    joint: bool = True
    trace: IBUTrace = field(default_factory=IBUTrace, compare=False)

    @property
    def max_way(self) -> int | None:
        """Joint marginals need reports of the same users and linear per-user estimates."""
        return None if self.joint and all(o.linear for o in self.oracles) else 1

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        if len(columns) == 1:
            j = columns[0]
            return self.oracles[j].estimate(self.reports[j], self.estimator, self.trace)
        if len(columns) > 1 and self.max_way == 1:
            raise ValueError("no joint marginals: strategy=sample, or a rank-deficient RAPPOR design")
        oracles = [self.oracles[j] for j in columns]
        reports = [self.reports[j] for j in columns]
        if self.estimator == "ibu":
            return ibu(oracles, reports, trace=self.trace)
        shape = tuple(o.k for o in oracles)
        vectors = (lambda o, r: o.support(r)) if self.estimator == "none" else (lambda o, r: o.user_estimates(r))
        n = oracles[0].n_reports(reports[0])
        total = np.zeros(int(np.prod(shape)))
        for part in chunks(n, int(np.prod(shape))):
            per_user = [np.asarray(vectors(o, r[part]), dtype=np.float64) for o, r in zip(oracles, reports)]
            total += rowwise_outer(per_user).sum(axis=0)
        joint = (total / n).reshape(shape)
        return joint if self.estimator in ("none", "unbiased") else postprocess(joint, self.estimator)

    def expected_mse(self, column: int, truth: np.ndarray) -> float | None:
        if self.estimator != "unbiased":
            return None
        oracle = self.oracles[column]
        return oracle.expected_mse(oracle.n_reports(self.reports[column]), truth)

    def diagnostics(self) -> dict[str, float]:
        return self.trace.metrics()


@dataclass(frozen=True)
class CountsRelease(Release):
    """1-way marginals estimated from each attribute's report counts alone (aggregate-level
    simulation, :meth:`~dp2pub.mechanisms.oracle.FrequencyOracle.report_counts`): ``counts[j]``
    are attribute j's over the ``n`` users. No joint marginals:
    their counts need the users' reports of several attributes together."""

    oracles: tuple[FrequencyOracle, ...]
    counts: tuple[np.ndarray, ...]
    n: int
    estimator: str
    trace: IBUTrace = field(default_factory=IBUTrace, compare=False)

    @property
    def max_way(self) -> int:
        return 1

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        if len(columns) != 1:
            raise ValueError(f"no joint marginal {columns} from aggregates: simulate=records gives them")
        j = columns[0]
        return self.oracles[j].estimate_counts(self.counts[j], self.n, self.estimator, self.trace)

    def expected_mse(self, column: int, truth: np.ndarray) -> float | None:
        return self.oracles[column].expected_mse(self.n, truth) if self.estimator == "unbiased" else None

    def diagnostics(self) -> dict[str, float]:
        return self.trace.metrics()


@dataclass(frozen=True, kw_only=True)
class OraclePublisher(Publisher):
    """One frequency oracle (:attr:`oracle`) applied to every attribute of a table.

    One subclass per oracle (:class:`GRRPublisher`, :class:`SUEPublisher`,
    :class:`OUEPublisher`, :class:`OLHPublisher`, :class:`RAPPORPublisher`). Multi-attribute
    strategies are those of Wang et al. [1]_: ``split`` (SPL), every user reports every
    attribute at ``epsilon / d``; ``sample`` (SMP), every user reports one uniformly sampled
    attribute with the whole ``epsilon`` (joint marginals are then not estimable). Joint
    marginals are estimated from the same reports, by the channel inverse axis by axis (GRR)
    or as the mean over users of the outer product of their per-attribute unbiased vectors.

    Parameters
    ----------
    estimator : str, optional
        ``norm_sub`` (default: a distribution), ``clip``, ``ibu``, ``unbiased`` (not a
        distribution: negative entries) or ``none`` (the raw report histogram).
    strategy : str, optional
        ``split`` (default: epsilon / d per attribute) or ``sample`` (one attribute per user).
    simulate : str, optional
        ``records`` (default: every user's report) or ``aggregates`` (the reports' counts
        drawn from their exact distribution, from the table's histograms; see the module).
    options : mapping, optional
        Further keyword arguments of the oracle (RAPPOR's Bloom filter and noise).

    Raises
    ------
    ConfigError
        For an unknown ``estimator``, ``strategy`` or ``simulate``, or what
        ``simulate=aggregates`` cannot give exactly (OLH, ``strategy=sample``, ``ibu`` but for
        GRR).

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import OLHPublisher, OraclePublisher, load_car
    >>> publisher = OLHPublisher(strategy="sample")
    >>> isinstance(publisher, OraclePublisher), publisher.oracle.name
    (True, 'olh')
    >>> outcome = publisher.publish(load_car(), epsilon=2.0, rng=np.random.default_rng(0))
    >>> outcome.ledger  # each user reports one attribute with the whole budget
    [Spend(phase='perturb', attribute='one sampled attribute', epsilon=2.0, users='all', rho=0.0, delta=0.0, neighbours='')]
    >>> outcome.release.max_way
    1
    """

    oracle: ClassVar[type[FrequencyOracle]]
    #: Why ``simulate=aggregates`` is refused, for an oracle without :meth:`~FrequencyOracle.simulate_counts`.
    no_aggregates: ClassVar[str] = "its support counts have no aggregate form here"
    estimator: str = DEFAULT_ESTIMATOR
    strategy: str = "split"
    simulate: str = "records"
    options: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_choice(self.estimator, "estimator", ESTIMATORS)
        check_choice(self.strategy, "strategy", STRATEGIES)
        check_choice(self.simulate, "simulate", SIMULATIONS)
        if self.from_tally:
            self._check_aggregates()

    def _check_aggregates(self) -> None:
        """Refuse, naming the key, what ``simulate=aggregates`` cannot give exactly."""
        if not self.oracle.simulates_counts:
            raise ConfigError(
                "simulate",
                self.simulate,
                f"records for {self.name}: {self.no_aggregates} (grr, sue, oue and rappor have an exact aggregate form)",
            )
        if self.strategy != "split":
            raise ConfigError(
                "strategy", self.strategy, "split with simulate=aggregates (sample's disjoint groups need records)"
            )
        if self.estimator == "ibu" and not self.oracle.reports_values:
            raise ConfigError(
                "estimator",
                self.estimator,
                f"one of none, unbiased, clip, norm_sub with simulate=aggregates ({self.name}'s ibu needs "
                "every report's likelihood)",
            )

    @property
    def from_tally(self) -> bool:
        return self.simulate == "aggregates"

    def setting(self, key: str) -> object:
        """A key of the publisher, or of its oracle's options (their default if not given)."""
        if key in self.options:
            return self.options[key]
        parameter = inspect.signature(self.oracle).parameters.get(key)
        return parameter.default if parameter is not None else getattr(self, key)

    @classmethod
    def config_builder(cls) -> Callable[..., OraclePublisher]:
        """The function a ``mechanism`` config entry calls (see :func:`oracle_publisher`):
        a subclass naming another oracle is a new ``mechanism`` with that oracle's options."""
        return oracle_publisher(cls)

    #: The config key that scales the oracle's part of the estimate ("": the domains alone).
    oracle_key: ClassVar[str] = ""

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """The sum of :meth:`memory_parts`."""
        return parts_total(self.memory_parts(n, sizes))

    def memory_parts(self, n: int, sizes: Sequence[int] | np.ndarray) -> dict[str, int]:
        """The oracles' part (:attr:`oracle_key`): every attribute's reports and what its
        oracle keeps (:meth:`~FrequencyOracle.report_bytes`; ``sample``: one report a user)
        and the largest work of perturbing one attribute (:meth:`~FrequencyOracle.memory_bytes`
        less its reports); and the data's part: with ``split`` GRR's published copy of the
        reports, with ``sample`` each user's attribute (int64), the users of each attribute
        (int64 in all), a flag and the values of the users of one attribute. With aggregates,
        the oracles and a few count arrays (int64) per value instead."""
        options = {**self.options, "itemsize": code_dtype(max((int(k) for k in sizes), default=1)).itemsize}
        own = {int(k): self.oracle.report_bytes(0, int(k), **options) for k in sizes}
        users = 0 if self.from_tally else int(n)
        kept = {k: self.oracle.report_bytes(users, k, **options) - own[k] for k in own}
        work = max((self.oracle.memory_bytes(users, k, **options) - own[k] - kept[k] for k in own), default=0)
        held = sum(own[int(k)] for k in sizes)
        if self.from_tally:
            shape = 64 * sum(int(k) for k in sizes)
        elif self.strategy == "split":
            held += sum(kept[int(k)] for k in sizes)
            shape = table_bytes(n, sizes) if self.name == "grr" else 0
        else:
            held += max(kept.values(), default=0)
            shape = int(n) * (17 + options["itemsize"])
        parts = {"": shape}
        parts[self.oracle_key] = parts.get(self.oracle_key, 0) + held + work
        return {key: size for key, size in parts.items() if size} or {"": 0}

    @property
    def max_way(self) -> int | None:
        """1 from report counts or one sampled attribute a user (:class:`OracleRelease`)."""
        return 1 if self.from_tally or self.strategy == "sample" else None

    def answer_bytes(self, n: int, sizes: Sequence[int] | np.ndarray, way: int) -> int:
        """The release's work of answering a marginal of up to ``way`` attributes (its cells
        are the metrics'): none from report counts (aggregates); from GRR's published reports,
        the columns' codes and their joint code (int64) a user; from other reports, a 1-way
        marginal by counting them (:meth:`~FrequencyOracle.count_bytes`) and a joint one in
        chunks of users (:func:`~dp2pub.mechanisms.chunks.chunk_rows` of its cells), the
        users' joint vectors and their last factor (float64, 16 bytes a cell) and each
        attribute's vector (:meth:`vector_bytes`); with ``ibu`` the users' likelihoods
        instead, kept between steps when they are few (float64)."""
        n, largest = int(n), sorted((int(k) for k in sizes), reverse=True)
        if self.from_tally or not largest:
            return 0
        options = {**self.options, "itemsize": code_dtype(largest[0]).itemsize}
        if self.name == "grr" and self.strategy == "split":
            return n * (8 + way * options["itemsize"])
        way = 1 if self.max_way == 1 else way
        cells = capped_product(largest[:way])
        rows = chunk_rows(n, cells)
        vectors = 8 * rows * sum(largest[:way]) + max(self.vector_bytes(rows, k) for k in largest[:way])
        work = self.oracle.count_bytes(n, cells, **options) if way == 1 else 16 * rows * cells + vectors
        if self.estimator == "ibu":
            cached = 8 * n * cells if n * cells <= CACHE_CELLS else 0
            work = max(work, cached + 16 * rows * cells + vectors)
        return work

    def vector_bytes(self, rows: int, k: int) -> int:
        """What making one attribute's per-user vectors for ``rows`` users takes beside them
        (float64, kept while the others are made): their support, made as the oracle counts
        it (:meth:`~FrequencyOracle.count_bytes`) and unpacked (a byte), then shifted and
        scaled (two float64 arrays), 17 bytes a user and value of their width
        (:meth:`user_width`)."""
        return self.oracle.count_bytes(rows, k, **self.options) + 17 * rows * self.user_width(k)

    def user_width(self, k: int) -> int:
        """The width of one user's vector while an estimate is made (its support over k values)."""
        return k

    def _oracles(self, data: Dataset | Tally, share: float) -> tuple[FrequencyOracle, ...]:
        try:
            return tuple(self.oracle(epsilon=share, k=int(k), **self.options) for k in data.domain.sizes)
        except ConfigError as error:
            raise error.under("mechanism") from None

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """Publish the oracles' estimates of ``data`` (one report per user and attribute).

        With ``simulate=aggregates`` the reports' counts are drawn from ``data``'s histograms
        (:meth:`publish_tally`).

        Parameters
        ----------
        data : Dataset
            The table to publish.
        epsilon : float
            The budget per user (``split``: ``epsilon / d`` per attribute).
        rng : numpy.random.Generator
            The source of the users' randomness.

        Returns
        -------
        Outcome
            The release (:class:`OracleRelease`; GRR with ``split``: the reports as a table,
            :class:`GRRReportsRelease`) and one ledger item per attribute.

        Raises
        ------
        ConfigError
            For an ``epsilon`` out of range, or an oracle option out of range (under
            ``mechanism``).
        """
        if self.from_tally:
            return self.publish_tally(Tally.of(data), epsilon, rng)
        epsilon = check_epsilon(epsilon)
        split = self.strategy == "split"
        share = split_budget(epsilon, data.d) if split else epsilon
        oracles = self._oracles(data, share)
        start = time.perf_counter()
        users: list[slice | np.ndarray]  # every user, or those who report attribute j
        if split:
            users = [slice(None)] * data.d
        else:
            chosen = rng.integers(0, data.d, size=data.n)
            users = [np.flatnonzero(chosen == j) for j in range(data.d)]
        reports = tuple(o.perturb(data.codes[who, j], rng) for j, (o, who) in enumerate(zip(oracles, users)))
        perturbed = time.perf_counter() - start

        spent = [o.epsilon_promised for o in oracles]
        if split:
            ledger = [Spend("perturb", a, e) for a, e in zip(data.domain.names, spent)]
        else:
            ledger = [Spend("perturb", "one sampled attribute", max(spent))]
        return Outcome(self.release(data, oracles, reports), ledger, {"perturb": perturbed}, self.guarantees(oracles))

    def publish_tally(self, tally: Tally, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """Every attribute's report counts drawn from their exact distribution given its
        histogram (``simulate=aggregates``, strategy split)."""
        if not self.from_tally:
            raise ValueError(f"{self.name} with simulate=records perturbs records; a Tally needs simulate=aggregates")
        oracles = self._oracles(tally, split_budget(check_epsilon(epsilon), tally.d))
        start = time.perf_counter()
        counts = tuple(o.simulate_counts(tally.one_way_counts(j), rng) for j, o in enumerate(oracles))
        ledger = [Spend("perturb", a, o.epsilon_promised) for a, o in zip(tally.domain.names, oracles)]
        release = CountsRelease(oracles, counts, tally.n, self.estimator)
        return Outcome(release, ledger, {"perturb": time.perf_counter() - start}, self.guarantees(oracles))

    def release(self, data: Dataset, oracles: Sequence[FrequencyOracle], reports: Sequence[np.ndarray]) -> Release:
        """The reports' estimates (no table: reports are not values of the domain)."""
        return OracleRelease(tuple(oracles), tuple(reports), self.estimator, joint=self.strategy == "split")

    def guarantees(self, oracles: Sequence[FrequencyOracle]) -> dict[str, float]:
        """Further privacy guarantees logged as metrics (none but the ledger's)."""
        return {}


class GRRPublisher(OraclePublisher):
    """``mechanism=grr``: generalized randomized response on every attribute.

    With ``split`` the reports form the published table (:class:`GRRReportsRelease`, whose
    marginals are estimated through the inverse channel); see :class:`OraclePublisher` and
    :class:`~dp2pub.mechanisms.grr.GRR`.

    Parameters
    ----------
    estimator : str, optional
        ``norm_sub`` (default), ``clip``, ``ibu``, ``unbiased`` or ``none``
        (see :class:`OraclePublisher`).
    strategy : str, optional
        ``split`` (default: epsilon / d per attribute) or ``sample`` (one attribute per user).
    simulate : str, optional
        ``records`` (default) or ``aggregates``.
    options : mapping, optional
        Further keyword arguments of the oracle.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, section 4.1.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import GRRPublisher, evaluate_marginals, load_car
    >>> car = load_car()
    >>> outcome = GRRPublisher(estimator="norm_sub").publish(car, epsilon=4.0, rng=np.random.default_rng(0))
    >>> outcome.epsilon_spent, outcome.published.n  # a table of reports
    (4.0, 1728)
    >>> metrics = evaluate_marginals(car, outcome.release, np.random.default_rng(1)).metrics
    >>> round(metrics["tvd_1way"], 3), round(metrics["tvd_2way"], 3)
    (0.101, 0.489)
    """

    name = "grr"
    oracle = GRR

    def release(self, data: Dataset, oracles: Sequence[FrequencyOracle], reports: Sequence[np.ndarray]) -> Release:
        if self.strategy != "split":
            return super().release(data, oracles, reports)
        codes = np.empty(data.codes.shape, dtype=data.codes.dtype, order="F")
        for j, column in enumerate(reports):
            codes[:, j] = column
        return GRRReportsRelease(
            table=data.with_codes(codes), oracles=_instances(GRR, oracles), estimator=self.estimator
        )


class SUEPublisher(OraclePublisher):
    """``mechanism=sue``: symmetric unary encoding on every attribute.

    See :class:`OraclePublisher` and :class:`~dp2pub.mechanisms.unary.SUE`; the release
    holds estimates, not a table.

    Parameters
    ----------
    estimator : str, optional
        ``norm_sub`` (default), ``clip``, ``ibu``, ``unbiased`` or ``none``
        (see :class:`OraclePublisher`).
    strategy : str, optional
        ``split`` (default: epsilon / d per attribute) or ``sample`` (one attribute per user).
    simulate : str, optional
        ``records`` (default) or ``aggregates``.
    options : mapping, optional
        Further keyword arguments of the oracle.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, section 4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import SUEPublisher, load_car
    >>> car = load_car()
    >>> outcome = SUEPublisher().publish(car, epsilon=4.0, rng=np.random.default_rng(0))
    >>> outcome.epsilon_spent, outcome.published is None
    (4.0, True)
    >>> print(outcome.release.marginal((car.target_column,)).round(2))
    [0.7  0.17 0.06 0.07]
    """

    name = "sue"
    oracle = SUE


class OUEPublisher(OraclePublisher):
    """``mechanism=oue``: optimized unary encoding on every attribute.

    See :class:`OraclePublisher` and :class:`~dp2pub.mechanisms.unary.OUE`; the release
    holds estimates, not a table.

    Parameters
    ----------
    estimator : str, optional
        ``norm_sub`` (default), ``clip``, ``ibu``, ``unbiased`` or ``none``
        (see :class:`OraclePublisher`).
    strategy : str, optional
        ``split`` (default: epsilon / d per attribute) or ``sample`` (one attribute per user).
    simulate : str, optional
        ``records`` (default) or ``aggregates``.
    options : mapping, optional
        Further keyword arguments of the oracle.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, section 4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import OUEPublisher, load_car
    >>> car = load_car()
    >>> outcome = OUEPublisher(estimator="clip").publish(car, epsilon=4.0, rng=np.random.default_rng(0))
    >>> print(outcome.release.marginal((car.target_column,)).round(2))
    [0.66 0.28 0.02 0.04]

    The report counts can be drawn from the table's histograms instead of its records:

    >>> fast = OUEPublisher(simulate="aggregates").publish(car, epsilon=4.0, rng=np.random.default_rng(0))
    >>> fast.release.max_way, fast.epsilon_spent
    (1, 4.0)
    """

    name = "oue"
    oracle = OUE


class OLHPublisher(OraclePublisher):
    """``mechanism=olh``: optimized local hashing on every attribute.

    See :class:`OraclePublisher` and :class:`~dp2pub.mechanisms.olh.OLH`; the release holds
    estimates, not a table. ``simulate=aggregates`` is refused: each user's random hash ties
    the supports of all values together, so the counts have no closed form.

    Parameters
    ----------
    estimator : str, optional
        ``norm_sub`` (default), ``clip``, ``ibu``, ``unbiased`` or ``none``
        (see :class:`OraclePublisher`).
    strategy : str, optional
        ``split`` (default: epsilon / d per attribute) or ``sample`` (one attribute per user).
    simulate : str, optional
        ``records`` (default) or ``aggregates``.
    options : mapping, optional
        Further keyword arguments of the oracle.

    Raises
    ------
    ConfigError
        With ``simulate=aggregates``.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, section 4.4.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import OLHPublisher, load_car
    >>> car = load_car()
    >>> outcome = OLHPublisher().publish(car, epsilon=4.0, rng=np.random.default_rng(0))
    >>> print(outcome.release.marginal((car.target_column,)).round(2))
    [0.74 0.15 0.02 0.09]
    >>> OLHPublisher(simulate="aggregates")
    Traceback (most recent call last):
    ...
    dp2pub.validation.ConfigError: simulate='aggregates' is invalid: expected records for olh: each user's random hash ties the supports of all values together, so the counts have no closed form (grr, sue, oue and rappor have an exact aggregate form)
    """

    name = "olh"
    oracle = OLH
    no_aggregates = (
        "each user's random hash ties the supports of all values together, so the counts have no closed form"
    )


class RAPPORPublisher(OraclePublisher):
    """``mechanism=rappor``: basic one-time RAPPOR on every attribute.

    Logs both RAPPOR guarantees (``epsilon_inf``, ``epsilon_one``) as further metrics,
    composed like the ledger. See :class:`OraclePublisher` and
    :class:`~dp2pub.mechanisms.rappor.RAPPOR`, whose keyword arguments ``options`` gives
    (``num_bits``, ``num_hashes``, ``f``, ``p``, ``q``, ``guarantee``, ``hash_seed``).

    Parameters
    ----------
    estimator : str, optional
        ``norm_sub`` (default), ``clip``, ``ibu``, ``unbiased`` or ``none``
        (see :class:`OraclePublisher`).
    strategy : str, optional
        ``split`` (default: epsilon / d per attribute) or ``sample`` (one attribute per user).
    simulate : str, optional
        ``records`` (default) or ``aggregates``.
    options : mapping, optional
        Further keyword arguments of the oracle.

    References
    ----------
    .. [1] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
       Privacy-Preserving Ordinal Response", ACM CCS 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import RAPPORPublisher, load_car
    >>> car = load_car()
    >>> publisher = RAPPORPublisher(options={"num_bits": 16})
    >>> outcome = publisher.publish(car, epsilon=4.0, rng=np.random.default_rng(0))
    >>> round(outcome.epsilon_spent, 6), sorted(outcome.extra_metrics)
    (4.0, ['epsilon_inf', 'epsilon_one'])
    >>> print(outcome.release.marginal((car.target_column,)).round(2))
    [0.79 0.21 0.   0.  ]
    """

    name = "rappor"
    oracle = RAPPOR
    oracle_key = "num_bits"
    answer_key = "num_bits"

    def user_width(self, k: int) -> int:
        """A user's reported bits, unpacked, or its k values' support."""
        num_bits = self.setting("num_bits")
        return max(k, num_bits if isinstance(num_bits, int) else 0)

    def guarantees(self, oracles: Sequence[FrequencyOracle]) -> dict[str, float]:
        combine = sum if self.strategy == "split" else max
        rappors = _instances(RAPPOR, oracles)
        return {
            "epsilon_inf": combine(o.epsilon_inf for o in rappors),
            "epsilon_one": combine(o.epsilon_one for o in rappors),
        }


def _instances(kind: type[_Oracle], oracles: Sequence[FrequencyOracle]) -> tuple[_Oracle, ...]:
    """``oracles`` as a tuple, each checked to be a ``kind`` (the publisher's :attr:`~OraclePublisher.oracle`)."""
    narrowed = tuple(o for o in oracles if isinstance(o, kind))
    if len(narrowed) != len(oracles):
        raise TypeError(f"expected {kind.__name__} oracles, got {[type(o).__name__ for o in oracles]}")
    return narrowed


#: ``mechanism=<name>`` -> its publisher class, for every frequency oracle.
ORACLE_PUBLISHERS: dict[str, type[OraclePublisher]] = {
    cls.name: cls for cls in (GRRPublisher, SUEPublisher, OUEPublisher, OLHPublisher, RAPPORPublisher)
}


def oracle_publisher(publisher: type[OraclePublisher]) -> Callable[..., OraclePublisher]:
    """The config builder of an :class:`OraclePublisher` subclass (``mechanism=<oracle>``).

    Its keyword arguments are ``estimator``, ``strategy``, ``simulate`` and the oracle's own options (for
    RAPPOR: ``num_bits``, ``num_hashes``, ``f``, ``p``, ``q``, ...), read off the oracle class,
    so the registry can name an unknown config key.
    """
    own = [p for name, p in inspect.signature(publisher.oracle).parameters.items() if name not in ("epsilon", "k")]

    def build(
        estimator: str = DEFAULT_ESTIMATOR, strategy: str = "split", simulate: str = "records", **options
    ) -> OraclePublisher:
        return publisher(estimator=estimator, strategy=strategy, simulate=simulate, options=options)

    keyword = inspect.Parameter.KEYWORD_ONLY
    # a function's signature attribute is not declared on Callable, but inspect reads it
    build.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("estimator", keyword, default=DEFAULT_ESTIMATOR),
            inspect.Parameter("strategy", keyword, default="split"),
            inspect.Parameter("simulate", keyword, default="records"),
        ]
        + [p.replace(kind=keyword) for p in own]
    )
    return build
