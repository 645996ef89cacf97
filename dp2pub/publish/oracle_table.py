"""Frequency oracles over a whole table: ``mechanism=grr|sue|oue|olh|rappor``.

Multi-attribute strategies (Wang et al., USENIX Security 2017; DESIGN section 3):

- ``split`` (SPL): every user reports every attribute at ``epsilon / d``. With GRR the raw
  reports form the published table (the seed documents' "first perturbation").
- ``sample`` (SMP): every user reports one uniformly sampled attribute with the whole
  ``epsilon``; attribute j is estimated from the ``n_j`` users who reported it (the estimate
  is scaled by ``1 / n_j``, about ``d / n``). Joint marginals are then not estimable.

Server-side estimates per ``estimator``: ``none`` (raw support fractions; for GRR the report
histogram), ``unbiased``, ``clip``, ``norm_sub``, ``ibu``. Joint marginals are estimated from
the same reports: by the channel inverse axis by axis (GRR), or as the mean over users of the
outer product of their per-attribute unbiased vectors (the attributes are perturbed
independently, so the product is unbiased).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.mechanisms import ORACLES
from dp2pub.mechanisms.accounting import split_budget
from dp2pub.mechanisms.estimators import ESTIMATORS, postprocess
from dp2pub.mechanisms.grr import GRR
from dp2pub.mechanisms.ibu import ibu
from dp2pub.mechanisms.chunks import chunks, rowwise_outer
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.data.marginals import marginal_counts
from dp2pub.publish.base import Outcome, working_bytes
from dp2pub.validation import ConfigError, check_choice, check_epsilon

STRATEGIES: tuple[str, ...] = ("split", "sample")


@dataclass(frozen=True)
class GRRReportsRelease:
    """Marginals estimated from a table of independent per-attribute GRR reports.

    The reports of a set of attributes went through the Kronecker product of their channels,
    so the unbiased joint estimate applies each attribute's inverse along its own axis.
    """

    reports: Dataset
    oracles: tuple[GRR, ...]
    estimator: str
    max_way: int | None = None

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        cols = list(columns)
        if self.estimator == "ibu":
            return ibu([self.oracles[j] for j in cols], [self.reports.codes[:, j] for j in cols])
        counts = marginal_counts(self.reports.codes[:, cols], self.reports.domain.sizes[cols])
        freq = counts / self.reports.n
        if self.estimator == "none":
            return freq
        for axis, j in enumerate(cols):
            freq = self.oracles[j].unbias(freq, axis=axis)
        return postprocess(freq, self.estimator)

    def expected_mse(self, column: int, truth: np.ndarray) -> float | None:
        if self.estimator != "unbiased":
            return None
        return self.oracles[column].expected_mse(self.reports.n, truth)


@dataclass(frozen=True)
class OracleRelease:
    """Marginals estimated from per-attribute reports of any frequency oracle.

    ``reports[j]`` are the reports of attribute j; with ``joint`` (strategy split) they come
    from the same users in the same order, so joint marginals can be estimated too.
    """

    oracles: tuple[FrequencyOracle, ...]
    reports: tuple[np.ndarray, ...]
    estimator: str
    joint: bool = True

    @property
    def max_way(self) -> int | None:
        """Joint marginals need reports of the same users and linear per-user estimates."""
        return None if self.joint and all(o.linear for o in self.oracles) else 1

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        if len(columns) == 1:
            j = columns[0]
            return self.oracles[j].estimate(self.reports[j], self.estimator)
        if self.max_way == 1:
            raise ValueError("no joint marginals: strategy=sample, or a rank-deficient RAPPOR design")
        oracles = [self.oracles[j] for j in columns]
        reports = [self.reports[j] for j in columns]
        if self.estimator == "ibu":
            return ibu(oracles, reports)
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


@dataclass(frozen=True)
class OraclePublisher:
    """Publisher for one frequency oracle applied to every attribute of a table.

    Args:
        oracle: ``grr``, ``sue``, ``oue``, ``olh`` or ``rappor``.
        estimator: ``none``, ``unbiased``, ``clip``, ``norm_sub`` or ``ibu``.
        strategy: ``split`` (epsilon / d per attribute) or ``sample`` (one attribute per user).
        options: further keyword arguments of the oracle (RAPPOR's Bloom filter and noise).
    """

    oracle: str = "grr"
    estimator: str = "unbiased"
    strategy: str = "split"
    options: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_choice(self.oracle, "oracle", tuple(ORACLES))
        check_choice(self.estimator, "estimator", ESTIMATORS)
        check_choice(self.strategy, "strategy", STRATEGIES)

    @property
    def name(self) -> str:
        return self.oracle

    def memory_bytes(self, n: int, sizes: Sequence[int]) -> int:
        """The table's working memory and every attribute's reports (all kept for the joint
        marginals; ``sample``: each user reports one attribute)."""
        per_user = [ORACLES[self.oracle].memory_bytes(n, int(k), **self.options) for k in sizes]
        reports = sum(per_user) if self.strategy == "split" else max(per_user, default=0)
        return working_bytes(n, sizes) + reports

    def _oracles(self, data: Dataset, share: float) -> tuple[FrequencyOracle, ...]:
        try:
            return tuple(ORACLES[self.oracle](share, int(k), **self.options) for k in data.domain.sizes)
        except ConfigError as error:
            raise error.under("mechanism") from None

    def publish(self, data: Dataset, epsilon: float, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        split = self.strategy == "split"
        share = split_budget(epsilon, data.d) if split else epsilon
        oracles = self._oracles(data, share)
        start = time.perf_counter()
        if split:
            users = [slice(None)] * data.d
        else:
            chosen = rng.integers(0, data.d, size=data.n)
            users = [np.flatnonzero(chosen == j) for j in range(data.d)]
        reports = tuple(o.perturb(data.codes[who, j], rng) for j, (o, who) in enumerate(zip(oracles, users)))
        perturbed = time.perf_counter() - start

        spent = [getattr(o, "epsilon_promised", o.epsilon) for o in oracles]
        if split:
            ledger = [{"phase": "perturb", "attribute": a, "epsilon": e} for a, e in zip(data.domain.names, spent)]
        else:
            ledger = [{"phase": "perturb", "attribute": "one sampled attribute", "epsilon": max(spent)}]
        extra = {}
        if self.oracle == "rappor":  # both RAPPOR guarantees, composed like the ledger
            combine = sum if split else max
            extra = {
                "epsilon_inf": combine(o.epsilon_inf for o in oracles),
                "epsilon_one": combine(o.epsilon_one for o in oracles),
            }
        if self.oracle == "grr" and split:
            codes = np.empty(data.codes.shape, dtype=data.codes.dtype, order="F")
            for j, column in enumerate(reports):
                codes[:, j] = column
            table = data.with_codes(codes)
            release = GRRReportsRelease(table, oracles, self.estimator)
        else:
            table, release = None, OracleRelease(oracles, reports, self.estimator, joint=split)
        return Outcome(release, table, ledger, {"perturb": perturbed}, extra)


def oracle_publisher(oracle: str):
    """The registry builder of ``mechanism=<oracle>``.

    Its keyword arguments are ``estimator``, ``strategy`` and the oracle's own options (for
    RAPPOR: ``num_bits``, ``num_hashes``, ``f``, ``p``, ``q``, ...), read off the oracle class,
    so the registry can name an unknown config key.
    """
    own = [p for name, p in inspect.signature(ORACLES[oracle]).parameters.items() if name not in ("epsilon", "k")]

    def build(estimator: str = "unbiased", strategy: str = "split", **options) -> OraclePublisher:
        return OraclePublisher(oracle, estimator, strategy, options)

    keyword = inspect.Parameter.KEYWORD_ONLY
    build.__signature__ = inspect.Signature(
        [inspect.Parameter("estimator", keyword, default="unbiased"), inspect.Parameter("strategy", keyword, default="split")]
        + [p.replace(kind=keyword) for p in own]
    )
    return build
