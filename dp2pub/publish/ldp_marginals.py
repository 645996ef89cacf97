"""Publisher ``ldp_marginals``: a table synthesized from consistent noisy marginals under LDP.

The line of work after DP2-Pub measures a few low-dimensional marginals, each from its own
group of users with the whole budget, instead of every attribute of every user at
``epsilon / d``:

1. **Measure** (CALM, Zhang et al., CCS 2018, section 4.2): the users are split uniformly at
   random into disjoint groups, one per marginal; each user reports the value of their
   group's attribute pair as one value of its joint domain with the whole ``epsilon``
   (parallel composition: ``epsilon_spent = epsilon``), through a frequency oracle chosen by
   the domain's size (``oracle: adaptive``: GRR when ``k < 3 e^epsilon + 2``, else OUE; Wang
   et al., USENIX Security 2017) or a fixed one. Each estimate is unbiased with the oracle's
   closed-form variance for its group's size.
2. **Select** (``marginals``): ``all_pairs`` measures every pair of attributes once;
   ``adaptive`` spends a ``select_fraction`` of the users on a first estimate of every pair,
   picks the pairs worth measuring again by PrivSyn's greedy rule on their estimated
   dependence, a pair counting as dependent only when a test at the family-wise
   ``select_level`` says so (None: every positive estimate counts, PrivSyn's rule without a
   test; :mod:`dp2pub.synthesis.selection`), and splits the other users among those; a
   chosen pair's two estimates are combined with inverse-variance weights.
3. **Make consistent** (CALM section 4.4): all estimates made non-negative and agreeing on
   shared attributes (:mod:`dp2pub.synthesis.consistency`).
4. **Synthesize** ``n`` records matching the chosen pairs and the 1-way marginals with
   PrivSyn's GUM (:mod:`dp2pub.synthesis.gum`).

Or steps 3-4 by a graphical model (``inference: pgm``, :meth:`LDPMarginalsPublisher.infer_pgm`):
every estimate a Gaussian measurement of its counts with its variance, fitted by private-pgm's
mirror descent (McKenna et al., ICML 2019) as MST and AIM do centrally, and ``n`` records
sampled from the model exactly (:mod:`dp2pub.synthesis.pgm`). ``allocation: cells`` gives a
marginal's group users in proportion to ``cells ** (2/3)`` rather than equally
(:func:`allocation_weights`).

``rare_sd`` merges, before steps 3-4, each attribute's values whose 1-way estimate (pooled
from every estimate that holds the attribute) is below ``rare_sd`` standard deviations into
one value, as MST compresses its domain centrally (McKenna et al., JPC 2021; private-pgm's
``compress_domain``, 3 standard deviations), sums every estimate onto the smaller domain,
synthesizes there and draws a merged value's records uniformly among its values
(:mod:`dp2pub.synthesis.compression`; docs/studies/ldp_marginals.md, "Rare values merged").

Steps 2-4 are post-processing of the reports (the choice of pairs reads only first-phase
reports, which are differentially private). Attributes in no pair of at most ``max_cells``
cells are measured alone, by a group of their own.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.marginals import joint_codes
from dp2pub.mechanisms.accounting import Spend
from dp2pub.mechanisms.adaptive import build_oracle
from dp2pub.mechanisms.grr import GRR
from dp2pub.mechanisms.oracles import ORACLES
from dp2pub.mechanisms.unary import OUE
from dp2pub.products import capped_product
from dp2pub.publish.base import Outcome, Publisher, claim_memory, parts_total, reports_bytes
from dp2pub.publish.release import TableRelease
from dp2pub.synthesis.compression import Compression, compress
from dp2pub.synthesis.consistency import Consistency, Tables, make_consistent
from dp2pub.synthesis.gum import gum
from dp2pub.synthesis.pgm import MODEL_COPIES, Measurement, fit, model_megabytes, model_memory, sample
from dp2pub.synthesis.selection import cell_variances, dependence, dependence_margin, select_pairs
from dp2pub.validation import ConfigError, check_choice, check_epsilon, check_float, check_int, check_optional_float

MARGINALS: tuple[str, ...] = ("adaptive", "all_pairs")
MARGINAL_ORACLES: tuple[str, ...] = ("adaptive", "grr", "oue", "olh")
INFERENCES: tuple[str, ...] = ("gum", "pgm")
ALLOCATIONS: tuple[str, ...] = ("uniform", "cells")


@dataclass(frozen=True)
class Measured:
    """An unbiased estimate of one marginal, its per-cell variance at frequencies near 0, the
    users behind it, their oracle's support probabilities ``(p*, q*)`` (``(1, 0)``: exact),
    whether a report supports exactly one value (GRR, exact reports) or each value on its own
    (OUE, OLH), and, for an estimate summed onto a compressed domain
    (:mod:`dp2pub.synthesis.compression`), how many of the reported domain's cells each of
    its cells holds (None: one each)."""

    table: np.ndarray
    variance: float
    users: int
    support: tuple[float, float]
    exclusive: bool = True
    multiplicity: np.ndarray | None = None

    @property
    def population_variance(self) -> float:
        """Mean per-cell variance as an estimate of the whole population's marginal: the
        oracle's and the group's sampling variance (:meth:`per_user_variances`, at the
        estimate's frequencies clipped to [0, 1]); the consistency step's weights."""
        return float(self.per_user_variances(self.table).mean()) / self.users

    def per_user_variances(self, freq: np.ndarray) -> np.ndarray:
        """Each cell's per-user variance at the population's frequencies ``freq``:
        :func:`~dp2pub.synthesis.selection.cell_variances`, or for a compressed estimate
        :func:`support_variances` of the reported cells each of its cells holds."""
        if self.multiplicity is None:
            return cell_variances(freq, *self.support)
        return support_variances(freq, self.multiplicity, self.support, self.exclusive)

    def sums_variance(self, keep: int) -> float:
        """Mean variance of the estimate's sums onto its axis ``keep`` (a pair's row or column
        sums) about the population's, as :attr:`population_variance` is of its cells
        (:func:`support_variances` of the sums and the reported cells each holds)."""
        other = tuple(axis for axis in range(self.table.ndim) if axis != keep)
        cells = np.ones(self.table.shape) if self.multiplicity is None else self.multiplicity
        sums = self.table.sum(axis=other)
        return float(support_variances(sums, cells.sum(axis=other), self.support, self.exclusive).mean()) / self.users

    def compressed(self, compression: Compression, key: tuple[int, ...]) -> Measured:
        """The estimate summed onto ``compression``'s domain: still unbiased; its variance
        near 0 that of a reported cell times the mean number of reported cells a compressed
        one holds."""
        held = np.ones(self.table.shape) if self.multiplicity is None else self.multiplicity
        cells = compression.table(held, key)
        return Measured(
            compression.table(self.table, key),
            self.variance / float(held.mean()) * float(cells.mean()),
            self.users,
            self.support,
            self.exclusive,
            cells,
        )


def support_variances(freq: np.ndarray, cells: np.ndarray, support: tuple[float, float], exclusive: bool) -> np.ndarray:
    """Per-user variance of the unbiased estimate of sums of ``cells`` reported values each, of
    the population's frequencies ``freq`` (clipped to [0, 1]), through an oracle of support
    probabilities ``(p*, q*)``. A user of a sum's frequency f supports s of its K values: when
    a report supports one value (GRR, ``exclusive``), s is Bernoulli with mean ``K q* + f (p* -
    q*)``; when each value on its own (OUE, OLH: the user's own with p*, each other with q*),
    ``Var s = f (p*(1 - p*) - q*(1 - q*)) + K q*(1 - q*) + f (1 - f) (p* - q*)^2``. Divided by
    ``(p* - q*)^2``; with K = 1 both are
    :func:`~dp2pub.synthesis.selection.cell_variances`."""
    p, q = support
    f = np.clip(np.asarray(freq, dtype=np.float64), 0.0, 1.0)
    if exclusive:
        s = cells * q + f * (p - q)
        spread = s * (1.0 - s)
    else:
        spread = f * (p * (1 - p) - q * (1 - q)) + cells * q * (1 - q) + f * (1 - f) * (p - q) ** 2
    return spread / (p - q) ** 2


@dataclass(frozen=True)
class Survey:
    """What the users reported: every group (its marginal and its users' row indices, the
    groups disjoint), the estimate of every marginal measured (a chosen pair's two estimates
    combined), the marginals chosen for the synthesis, and the compression of rare values
    (``rare_sd``; the estimates are then on its domain)."""

    groups: list[tuple[tuple[int, ...], np.ndarray]]
    measured: dict[tuple[int, ...], Measured]
    chosen: list[tuple[int, ...]]
    compression: Compression | None = None


def measure(
    data: Dataset, key: tuple[int, ...], users: np.ndarray, epsilon: float, oracle: str, rng: np.random.Generator
) -> Measured:
    """The users ``users`` (row indices) report their values on ``key`` as one value of its
    joint domain through ``oracle`` at ``epsilon``; the unbiased estimate of its marginal."""
    shape = tuple(int(data.domain.sizes[a]) for a in key)
    k = math.prod(shape)
    if k < 2:
        return Measured(np.ones(shape), 0.0, users.size, (1.0, 0.0))  # a constant: nothing to learn
    channel = build_oracle(oracle, epsilon, k)
    values = joint_codes(data.codes[np.ix_(users, np.array(key))], shape)
    estimate = channel.estimate(channel.perturb(values, rng), "unbiased").reshape(shape)
    support = (channel.p_star, channel.q_star)
    return Measured(estimate, channel.variance(users.size), users.size, support, isinstance(channel, GRR))


def combine(a: Measured, b: Measured) -> Measured:
    """Two independent unbiased estimates of one marginal, weighted by inverse variance (an
    exact one, of a one-cell marginal, as it is)."""
    if a.variance == 0.0:
        return a
    wa, wb = 1.0 / a.variance, 1.0 / b.variance
    table = (wa * a.table + wb * b.table) / (wa + wb)
    return Measured(table, 1.0 / (wa + wb), a.users + b.users, a.support, a.exclusive, a.multiplicity)


def split_users(users: np.ndarray, cells: Sequence[int], allocation: str, key: str, value: object) -> list[np.ndarray]:
    """``users`` split into one group per marginal of ``cells`` cells: ``uniform``, sizes that
    differ by at most one; ``cells``, sizes proportional to ``cells ** (2/3)`` (largest
    remainders, each at least one user; :func:`allocation_weights`).

    Raises:
        ConfigError: naming ``key`` (whose ``value`` decided how many users there are) when
            some group would be empty.
    """
    groups = len(cells)
    if users.size < groups:
        raise ConfigError(
            key, value, f"a value that leaves at least {groups} users for {groups} marginals (not {users.size})"
        )
    if allocation == "uniform":
        return np.array_split(users, groups)
    return np.split(users, np.cumsum(group_sizes(users.size, allocation_weights(cells)))[:-1])


def allocation_weights(cells: Sequence[int]) -> np.ndarray:
    """The share of users of a marginal of ``cells`` cells under ``allocation: cells``:
    ``cells ** (2/3)``. Each cell's estimate from m users has variance ``v / m`` (the oracle's
    per-user variance ``v``), so a marginal's expected TVD is about ``c k sqrt(v / m)``; the
    sum over marginals, with the users' total fixed, is least at ``m`` proportional to
    ``(k^2 v)^(1/3)`` (Lagrange). ``v`` is taken equal for all marginals: it is for OUE and
    OLH, and GRR's, where the adaptive oracle picks it, is within 4x of OUE's."""
    return np.asarray(cells, dtype=np.float64) ** (2.0 / 3.0)


def group_sizes(users: int, weights: np.ndarray) -> np.ndarray:
    """``users`` split proportionally to ``weights`` by largest remainders, every group at
    least one (``users`` at least the number of groups)."""
    extra = users - weights.size  # one user each first, the rest by weight
    share = extra * weights / weights.sum()
    sizes = np.floor(share).astype(np.int64)
    sizes[np.argsort(sizes - share, kind="stable")[: extra - int(sizes.sum())]] += 1
    return sizes + 1


@dataclass(frozen=True, kw_only=True)
class LDPMarginalsPublisher(Publisher):
    """``mechanism=ldp_marginals``: disjoint groups of users each report one marginal with the
    whole epsilon; consistent estimates; a table synthesized by GUM (see the module)."""

    name: ClassVar[str] = "ldp_marginals"
    marginals: str = "adaptive"
    oracle: str = "adaptive"
    select_fraction: float = 0.2
    select_level: float | None = None
    max_cells: int = 100_000
    iterations: int = 50
    consistency_rounds: int = 100
    allocation: str = "uniform"
    inference: str = "gum"
    pgm_iterations: int = 1000
    max_model_size: float = 1.0
    rare_sd: float | None = None

    def __post_init__(self) -> None:
        check_choice(self.marginals, "marginals", MARGINALS)
        check_choice(self.oracle, "oracle", MARGINAL_ORACLES)
        check_float(self.select_fraction, "select_fraction", 0.0, 1.0)
        check_optional_float(self.select_level, "select_level", 0.0, 1.0)
        check_int(self.max_cells, "max_cells", 4)
        check_int(self.iterations, "iterations", 0)
        check_int(self.consistency_rounds, "consistency_rounds", 1)
        check_choice(self.allocation, "allocation", ALLOCATIONS)
        check_choice(self.inference, "inference", INFERENCES)
        check_int(self.pgm_iterations, "pgm_iterations", 1)
        check_float(self.max_model_size, "max_model_size", 0.0)
        check_optional_float(self.rare_sd, "rare_sd", 0.0)

    #: ``inference: pgm``: the model's size is decided by the pairs chosen, within
    #: ``max_model_size``: claimed once its cliques are known, before the fit.
    deferred_memory: ClassVar[frozenset[str]] = frozenset({"max_model_size"})

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        return parts_total(self.memory_parts(n, sizes))

    def memory_parts(self, n: int, sizes: Sequence[int] | np.ndarray) -> dict[str, int]:
        """What the survey and the synthesis keep, the users' order (int64) and every
        candidate marginal's estimate with its consistent copy, variances and GUM's target (32
        bytes a cell), and the larger of the two phases. Measuring a marginal: its users' codes
        of its attributes and their joint code (int64), and their reports and estimate
        (:func:`~dp2pub.publish.base.reports_bytes` over its cells) for the most users a group
        may have (:meth:`group_users`). The synthesis by GUM: the records in the table's codes
        and as int64 (the published table), and GUM's per-record arrays (64 bytes). By
        private-pgm (``inference: pgm``): the sampled codes (int64, twice) and the published
        copy, the sampler's per-record arrays (192 bytes), and, under ``max_model_size``,
        :data:`~dp2pub.synthesis.pgm.MODEL_COPIES` float64 copies of the model's cells: at most that many megabytes
        but never less than its 1-way tables, nor more than d tables of the whole domain;
        deferred, and claimed once its cliques are known, before the fit."""
        n, sizes = int(n), [int(k) for k in sizes]
        itemsize = code_dtype(max(sizes, default=1)).itemsize
        cells = [math.prod(sizes[a] for a in key) for key in self.candidates(np.asarray(sizes))] + sizes
        oracles = (GRR, OUE) if self.oracle == "adaptive" else (ORACLES[self.oracle],)
        users = self.group_users(n, sizes)
        measure = users * (2 * itemsize + 8) + reports_bytes(oracles, users, max(cells, default=1), itemsize=8)
        if self.inference == "gum":
            synthesis = n * len(sizes) * (itemsize + 8) + 64 * n
            return {"": 8 * n + 32 * sum(cells) + max(measure, synthesis)}
        synthesis = n * len(sizes) * (itemsize + 16) + 192 * n
        return {
            "": 8 * n + 32 * sum(cells) + max(measure, synthesis),
            "max_model_size": model_memory(self.max_model_size, sizes),
        }

    def whole(self, sizes: Sequence[int]) -> bool:
        """``inference: pgm``: whether the model may hold the whole domain (its float64 cells
        within ``max_model_size`` megabytes), and so every measured pair."""
        return 8 * capped_product(sizes) <= self.max_model_size * 2**20

    def group_users(self, n: int, sizes: Sequence[int]) -> int:
        """The most users one group may have, of ``n`` over attributes of domain ``sizes``
        (:meth:`split`): ``all_pairs``, of the candidates' share; ``adaptive``, the larger of
        the first phase's and the second's, whose marginals, the chosen pairs and the
        attributes none of them covers, are at least d / 2, from the candidates and the
        attributes (under ``allocation: cells`` the largest of them beside the smallest)."""
        candidates = [math.prod(sizes[a] for a in key) for key in self.candidates(np.asarray(sizes))]
        if self.marginals == "all_pairs":
            return self.largest_group(n, candidates, len(candidates))
        cut = round(self.select_fraction * n)
        second = self.largest_group(n - cut, [*candidates, *sizes], -(-len(sizes) // 2))
        return max(self.largest_group(cut, candidates, len(candidates)), second)

    def largest_group(self, users: int, cells: Sequence[int], groups: int) -> int:
        """The most users one of ``groups`` groups may get of ``users``, each group's marginal
        of cells among ``cells`` (:func:`split_users`)."""
        groups = max(groups, 1)
        if self.allocation == "uniform" or not cells:
            return -(-users // groups)
        weights = np.sort(allocation_weights(cells))
        least = weights[-1] + weights[: groups - 1].sum()
        return int(max(users - groups, 0) * weights[-1] / least) + 2

    def candidates(self, sizes: np.ndarray) -> list[tuple[int, ...]]:
        """Every pair of at most ``max_cells`` cells and no constant attribute (which depends on
        nothing), then each attribute in none of them alone."""
        pairs = itertools.combinations(range(len(sizes)), 2)
        return _with_uncovered(
            [(a, b) for a, b in pairs if sizes[a] * sizes[b] <= self.max_cells and min(sizes[a], sizes[b]) > 1],
            len(sizes),
        )

    def survey(self, data: Dataset, epsilon: float, rng: np.random.Generator) -> Survey:
        """Steps 1-2: the users split into disjoint groups, each group's reports of its
        marginal, and the marginals chosen for the synthesis."""
        candidates = self.candidates(data.domain.sizes)
        users = rng.permutation(data.n)
        cut = data.n if self.marginals == "all_pairs" else round(self.select_fraction * data.n)
        groups = list(zip(candidates, self.split(users[:cut], candidates, data)))
        first = {key: measure(data, key, g, epsilon, self.oracle, rng) for key, g in groups}
        if self.marginals == "all_pairs":
            return self.compressed(Survey(groups, first, candidates), data.d)
        chosen = self.choose(first, data.n - cut, data.d)
        again = _with_uncovered(chosen, data.d)
        groups += zip(again, self.split(users[cut:], again, data))
        second = {key: measure(data, key, g, epsilon, self.oracle, rng) for key, g in groups[len(candidates) :]}
        measured = {**first, **{key: combine(first[key], m) if key in first else m for key, m in second.items()}}
        return self.compressed(Survey(groups, measured, chosen), data.d)

    def compressed(self, survey: Survey, d: int) -> Survey:
        """With ``rare_sd``, the survey's estimates summed onto the domain where each attribute's
        values estimated below ``rare_sd`` standard deviations are merged
        (:func:`~dp2pub.synthesis.compression.compress` of :func:`one_way_estimates`)."""
        if self.rare_sd is None:
            return survey
        compression = compress(*one_way_estimates(survey.measured, d), self.rare_sd)
        measured = {key: m.compressed(compression, key) for key, m in survey.measured.items()}
        return Survey(survey.groups, measured, survey.chosen, compression)

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        start = time.perf_counter()
        survey = self.survey(data, epsilon, rng)
        timed = {"measure": time.perf_counter() - start}
        if self.inference == "pgm":
            records, extra = self.infer_pgm(data.n, survey_sizes(data, survey), survey, rng)
            timed["synthesis"] = time.perf_counter() - start - timed["measure"]
        else:
            tables, consistency = consistent(survey.measured, self.consistency_rounds)
            timed["consistency"] = time.perf_counter() - start - timed["measure"]
            one_way = [_one_way(tables, a) for a in range(data.d)]
            targets = {key: tables[key] for key in _with_uncovered(survey.chosen, data.d)}
            records = gum(targets, one_way, data.n, rng, self.iterations)
            timed["synthesis"] = time.perf_counter() - start - sum(timed.values())
            extra = {
                "consistency_rounds": float(consistency.rounds),
                "consistency_converged": float(consistency.converged),
            }
        if survey.compression is not None:
            records = survey.compression.decode(records, rng).astype(data.codes.dtype)
            extra["values_merged"] = float(survey.compression.merged)
        label = {key: "+".join(data.domain.names[a] for a in key) for key in survey.measured}
        ledger = [Spend("report", label[key], epsilon, f"group {i}") for i, (key, _) in enumerate(survey.groups)]
        extra = {
            "marginals_measured": float(len(survey.measured)),
            "pairs_chosen": float(sum(len(key) == 2 for key in survey.chosen)),
            **extra,
        }
        measured = {"measured": [label[key] for key, _ in survey.groups], "chosen": [label[k] for k in survey.chosen]}
        return Outcome(TableRelease(data.with_codes(records)), ledger, timed, extra, {"marginals": measured})

    def infer_pgm(self, n: int, sizes: list[int], survey: Survey, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        """Steps 3-4 by private-pgm's estimation instead (``inference: pgm``): every estimate a
        Gaussian measurement of counts with its population variance
        (:attr:`Measured.population_variance` times n^2); the measured pairs, the chosen ones
        first, each group most dependent first (:func:`ranked`), enter the model while its
        junction tree stays within ``max_model_size`` megabytes; a pair that does not is
        measured on its two attributes (its row and column sums, :meth:`Measured.sums_variance`),
        an attribute's 1-way measurements pooled (:func:`pooled`), a constant's left out (the
        total fixes it); the model's memory claimed, fitted, and n records sampled from it
        exactly. A model whose whole domain fits in ``max_model_size`` (:meth:`whole`) takes
        every measured pair. ``n`` records; ``sizes``, the domain the survey's estimates are on."""
        whole = self.whole(sizes)
        pairs = [key for key in survey.measured if len(key) == 2]
        chosen = [key for key in survey.chosen if len(key) == 2]
        singles = [(a,) for a in range(len(sizes))]
        model_pairs: list[tuple[int, ...]] = []
        for key in [*ranked(survey.measured, chosen), *ranked(survey.measured, [p for p in pairs if p not in chosen])]:
            if whole or model_megabytes(sizes, [*model_pairs, key, *singles]) <= self.max_model_size:
                model_pairs.append(key)
        measurements, sums = [], []
        for key, m in survey.measured.items():
            if key in model_pairs:
                measurements.append(Measurement(key, m.table.ravel() * n, math.sqrt(m.population_variance) * n))
            elif len(key) == 1 and sizes[key[0]] > 1:  # a constant's is exact: the total fixes it
                sums.append(Measurement(key, m.table.ravel() * n, math.sqrt(m.population_variance) * n))
            elif len(key) == 2:  # the pair's marginal of each of its attributes
                sums += attribute_sums(key, m, n)
        measurements += pooled(sums)
        megabytes = model_megabytes(sizes, [*model_pairs, *singles])
        claim_memory(
            "max_model_size", self.max_model_size, MODEL_COPIES * int(megabytes * 2**20), "the graphical model"
        )
        model = fit(sizes, measurements, self.pgm_iterations, known_total=float(n))
        records = sample(model, n, rng)
        extra = {"pairs_modelled": float(len(model_pairs)), "model_megabytes": megabytes, "model_whole": float(whole)}
        return records.astype(code_dtype(max(sizes, default=1))), extra

    def split(self, users: np.ndarray, keys: Sequence[tuple[int, ...]], data: Dataset) -> list[np.ndarray]:
        """:func:`split_users` of ``users`` over the marginals ``keys`` of ``data``."""
        cells = [math.prod(int(data.domain.sizes[a]) for a in key) for key in keys]
        return split_users(users, cells, self.allocation, *self.users_key(data.n))

    def users_key(self, n: int) -> tuple[str, object]:
        """The key to change when there are too few users for the groups, and its value."""
        return (
            ("dataset.n", n) if self.marginals == "all_pairs" else ("mechanism.select_fraction", self.select_fraction)
        )

    def choose(self, first: dict[tuple[int, ...], Measured], second_users: int, d: int) -> list[tuple[int, ...]]:
        """The pairs PrivSyn's greedy rule picks from their first estimates (against 1-way
        marginals, and with cell frequencies, made consistent from all of them)."""
        pairs = [(key[0], key[1]) for key in first if len(key) == 2]
        if not pairs:
            return []
        tables, _ = consistent(first, 1)
        one_way = [_one_way(tables, a) for a in range(d)]

        def one_way_of(pair: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
            return one_way[pair[0]], one_way[pair[1]]

        margin = 0.0 if self.select_level is None else dependence_margin(len(pairs), self.select_level)
        picked = select_pairs(
            pairs,
            np.array(
                [dependence(first[p].table, *one_way_of(p), first[p].users, first[p].support, margin) for p in pairs]
            ),
            np.array([np.sqrt(cell_variances(tables[p], *first[p].support)).sum() for p in pairs]),
            np.array([first[p].users for p in pairs]),
            second_users,
            lone=d - len({a for pair in pairs for a in pair}),
        )
        return [pairs[i] for i in picked]


def consistent(measured: Mapping[tuple[int, ...], Measured], rounds: int) -> tuple[Tables, Consistency]:
    """:func:`~dp2pub.synthesis.consistency.make_consistent` of the estimates (an exact one,
    of a constant attribute, sets what it shares)."""
    variances = {key: m.population_variance for key, m in measured.items()}
    return make_consistent({key: m.table for key, m in measured.items()}, variances, rounds)


def survey_sizes(data: Dataset, survey: Survey) -> list[int]:
    """The domain sizes of the survey's estimates: ``data``'s, or their compression's."""
    if survey.compression is not None:
        return list(survey.compression.sizes)
    return [int(k) for k in data.domain.sizes]


def attribute_sums(key: tuple[int, ...], m: Measured, scale: float = 1.0) -> list[Measurement]:
    """A pair's estimate as a measurement of each of its two attributes (its column and row
    sums, with :meth:`Measured.sums_variance`), times ``scale`` (n: counts)."""
    return [
        Measurement((attribute,), m.table.sum(axis=1 - axis) * scale, math.sqrt(m.sums_variance(axis)) * scale)
        for axis, attribute in enumerate(key)
    ]


def one_way_estimates(measured: Mapping[tuple[int, ...], Measured], d: int) -> tuple[list[np.ndarray], list[float]]:
    """Each attribute's 1-way marginal from every estimate that holds it (a pair's sums, its
    own group's estimate), pooled by inverse variance (:func:`pooled`), and its mean standard
    deviation; an attribute of one value, exactly 1."""
    sums: list[Measurement] = []
    for key, m in measured.items():
        if len(key) == 2:
            sums += attribute_sums(key, m)
        elif m.variance > 0.0:
            sums.append(Measurement(key, m.table.ravel(), math.sqrt(m.population_variance)))
    by_attribute = {m.clique[0]: m for m in pooled(sums)}
    constant = Measurement((0,), np.ones(1), 0.0)
    pooled_ = [by_attribute.get(a, constant) for a in range(d)]
    return [m.values for m in pooled_], [m.stddev for m in pooled_]


def pooled(measurements: Sequence[Measurement]) -> list[Measurement]:
    """Measurements of one clique pooled into one, each clique's in order of first
    appearance: the inverse-variance mean of their values, with variance one over the sum
    of the inverse variances. The least-squares loss of the pooled measurement differs from
    the sum of theirs by a constant, so a fit is the same, with fewer terms."""
    by_clique: dict[tuple[int, ...], list[Measurement]] = {}
    for m in measurements:
        by_clique.setdefault(m.clique, []).append(m)
    result = []
    for clique, group in by_clique.items():
        weights = np.array([1.0 / m.stddev**2 for m in group])
        values = np.average(np.stack([m.values for m in group]), axis=0, weights=weights)
        result.append(Measurement(clique, values, float(1.0 / math.sqrt(weights.sum()))))
    return result


def ranked(measured: Mapping[tuple[int, ...], Measured], pairs: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """``pairs`` by their estimated dependence, the largest first (ties in their order):
    :func:`~dp2pub.synthesis.selection.dependence` of each pair's estimate against its own
    1-way sums, with no margin."""

    def score(key: tuple[int, ...]) -> float:
        m = measured[key]
        first, second = m.table.sum(axis=1), m.table.sum(axis=0)
        variances = m.per_user_variances(np.outer(first, second))
        return dependence(m.table, first, second, m.users, m.support, 0.0, variances)

    return sorted(pairs, key=lambda key: -score(key))


def _with_uncovered(chosen: list[tuple[int, ...]], d: int) -> list[tuple[int, ...]]:
    """``chosen``, then each attribute in none of them alone."""
    covered = {a for key in chosen for a in key}
    return [*chosen, *((a,) for a in range(d) if a not in covered)]


def _one_way(tables: Tables, attribute: int) -> np.ndarray:
    """Attribute ``attribute``'s 1-way marginal from the first consistent table that holds it."""
    key = next(key for key in tables if attribute in key)
    return tables[key].sum(axis=tuple(i for i, a in enumerate(key) if a != attribute))
