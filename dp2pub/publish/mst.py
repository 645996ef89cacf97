"""Publisher ``mst``: MST, the maximum-spanning-tree synthesizer of McKenna, Miklau, Sheldon.

McKenna, Miklau, Sheldon, "Winning the NIST Contest: A scalable and general approach to
differentially private synthetic data", Journal of Privacy and Confidentiality 11(3), 2021,
section 4 (the general MST that private-pgm's ``mechanisms/mst.py`` implements; no public
data). A trusted curator holds the table.

**Privacy.** rho-zCDP for *add/remove* neighbours (one record more or less: n is private),
converted to (epsilon, delta)-DP with the bound of Canonne, Kamath, Steinke 2020
(:mod:`dp2pub.mechanisms.zcdp`): ``rho`` is the largest whose conversion at ``delta`` is at
most epsilon. Under *replace-one* neighbours (PrivBayes's) a replacement is a removal and an
addition, so the same release is (2 epsilon, 2 e^epsilon delta)-DP there at most (group
privacy); the ledger says ``add/remove`` on every item. rho is spent in three equal thirds:

1. **Measure the 1-way marginals**: every attribute's counts plus Gaussian noise; d counts
   vectors of L2 sensitivity 1 each, noise ``sigma1 = sqrt(d / (2 rho1))`` on every cell.
2. **Compress** each domain (post-processing): values whose noisy count is below
   ``3 sigma1`` are merged into one value, measured as the sum of their noisy counts divided
   by ``sqrt(m)`` (m merged values), so it keeps noise ``sigma1`` (private-pgm's
   ``compress_domain``).
3. **Select a maximum spanning tree** (rho2): the model fitted to the 1-way measurements
   (a product distribution) predicts every pair; a pair's weight is the L1 distance between
   its true counts and that prediction (sensitivity 1). Kruskal's algorithm with each of
   the d - 1 edges drawn by the exponential mechanism at ``sqrt(8 rho2 / (d - 1))`` among
   the pairs that join two components (each draw ``epsilon^2 / 8``-zCDP).
4. **Measure the tree's d - 1 pairs** (rho3) on the compressed domains, noise
   ``sigma3 = sqrt((d - 1) / (2 rho3))``.
5. **Fit** a graphical model to all measurements by private-pgm's mirror descent
   (:mod:`dp2pub.synthesis.pgm`), **sample** as many records as it estimates exactly from it,
   and undo the compression (a merged value becomes one of its values uniformly).

Where this differs from the published script, and why: every sigma is rounded up and the
exponential mechanism's epsilon down to the ulp until the ledger converts to at most
epsilon (:class:`Scales`); with one attribute all of rho measures it (the script would
leave two thirds unspent); the number of records is estimated from the 1-way measurements
before compression and given to both fits (mbi 1.1.0 estimates it only from measurements
of plain counts, so with every attribute compressed it took n = 1); the sampler is exact
(:func:`dp2pub.synthesis.pgm.sample`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype, table_bytes
from dp2pub.data.marginals import marginal_counts
from dp2pub.mechanisms.accounting import ADD_REMOVE, Spend, epsilon_spent
from dp2pub.mechanisms.exponential import exponential_draw
from dp2pub.mechanisms.zcdp import exponential_rho, fit_rho_shares, gaussian_rho, zcdp_rho
from dp2pub.publish.base import Outcome, Publisher
from dp2pub.publish.release import TableRelease
from dp2pub.synthesis.compression import Compression
from dp2pub.synthesis.pgm import MODEL_COPIES, Measurement, Model, fit, sample, total_estimate
from dp2pub.validation import check_epsilon, check_float, check_int

#: A value is kept when its noisy count is at least this many noise deviations (the script's 3).
SUPPORT_SIGMAS = 3.0


def zcdp_spend(phase: str, what: str, rho: float, delta: float) -> Spend:
    """A ledger item of MST or AIM: ``rho`` of zCDP over add/remove neighbours, converted at
    ``delta``."""
    return Spend(phase, what, 0.0, rho=rho, delta=delta, neighbours=ADD_REMOVE)


def gaussian_sigma(rho: float, count: int) -> float:
    """The smallest sigma (to the ulp) at which ``count`` Gaussian measurements of L2
    sensitivity 1 spend at most ``rho`` together (``math.fsum``, as the ledger adds)."""
    sigma = math.sqrt(count / (2.0 * rho))
    while math.fsum([gaussian_rho(sigma)] * count) > rho:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def exponential_epsilon(rho: float, count: int) -> float:
    """The largest epsilon (to the ulp) at which ``count`` exponential mechanisms spend at
    most ``rho`` together."""
    epsilon = math.sqrt(8.0 * rho / count)
    while math.fsum([exponential_rho(epsilon)] * count) > rho:
        epsilon = math.nextafter(epsilon, 0.0)
    return epsilon


@dataclass(frozen=True)
class Scales:
    """MST's noise scales and the exponential mechanism's epsilon (module docstring)."""

    sigma1: float
    em: float
    sigma3: float

    @classmethod
    def fit(cls, d: int, epsilon: float, delta: float) -> Scales:
        """The scales of each third of rho (all of it to the 1-way marginals when d = 1),
        then each sigma raised and the choices' epsilon lowered by an ulp at a time until the
        ledger converts to at most ``epsilon`` (:func:`~dp2pub.mechanisms.zcdp.zcdp_epsilon`
        is not monotone in rho at the last ulp)."""
        rho = zcdp_rho(epsilon, delta)
        if d == 1:
            scales = cls(gaussian_sigma(fit_rho_shares([rho], epsilon, delta)[0], 1), 0.0, math.inf)
        else:
            rho1, rho2, rho3 = fit_rho_shares([rho / 3.0] * 3, epsilon, delta)
            scales = cls(gaussian_sigma(rho1, d), exponential_epsilon(rho2, d - 1), gaussian_sigma(rho3, d - 1))
        while (epsilon_spent(scales.ledger(d, delta)) or 0.0) > epsilon:
            sigma1, sigma3 = (math.nextafter(sigma, math.inf) for sigma in (scales.sigma1, scales.sigma3))
            scales = cls(sigma1, math.nextafter(scales.em, 0.0), sigma3)
        return scales

    def ledger(self, d: int, delta: float) -> list[Spend]:
        """What these scales spend: d 1-way marginals, and (d > 1) d - 1 choices of an edge
        and d - 1 pairs."""
        items = [zcdp_spend("measure", f"{d} 1-way marginals (sigma={self.sigma1:.6g})",
                            math.fsum([gaussian_rho(self.sigma1)] * d), delta)]  # fmt: skip
        if d > 1:
            items += [
                zcdp_spend("select", f"{d - 1} tree edges (exponential mechanism, epsilon={self.em:.6g} each)",
                           math.fsum([exponential_rho(self.em)] * (d - 1)), delta),
                zcdp_spend("measure", f"{d - 1} 2-way marginals (sigma={self.sigma3:.6g})",
                           math.fsum([gaussian_rho(self.sigma3)] * (d - 1)), delta),
            ]  # fmt: skip
        return items


def compress(measured: Sequence[Measurement], sizes: Sequence[int]) -> tuple[Compression, list[Measurement]]:
    """Step 2: each attribute's values with a noisy count of at least
    :data:`SUPPORT_SIGMAS` deviations kept, the others merged, and the 1-way measurements
    re-expressed over the compressed domains (module docstring)."""
    kept: list[np.ndarray] = []
    again: list[Measurement] = []
    for a, m in enumerate(measured):
        support = m.values >= SUPPORT_SIGMAS * m.stddev
        kept.append(np.flatnonzero(support))
        if support.all():
            again.append(m)
            continue
        merged = int(sizes[a]) - int(support.sum())
        values = np.append(m.values[support], m.values[~support].sum() / math.sqrt(merged))
        weights = np.append(np.ones(int(support.sum())), 1.0 / math.sqrt(merged))
        again.append(Measurement((a,), values, m.stddev, weights))
    return Compression(tuple(kept), tuple(int(s) for s in sizes)), again


def measure(
    codes: np.ndarray, sizes: Sequence[int], cliques: Sequence[tuple[int, ...]], sigma: float, rng: np.random.Generator
) -> list[Measurement]:
    """Each clique's counts plus Gaussian noise of deviation ``sigma`` on every cell."""
    out = []
    for clique in cliques:
        counts = marginal_counts(codes[:, list(clique)], [sizes[a] for a in clique]).ravel().astype(np.float64)
        out.append(Measurement(clique, counts + rng.normal(0.0, sigma, size=counts.size), sigma))
    return out


def spanning_tree(
    codes: np.ndarray, sizes: Sequence[int], one_way: Model, epsilon: float, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """Step 3: Kruskal's algorithm, each edge drawn by the exponential mechanism at
    ``epsilon`` on the L1 distance between a pair's counts and the model's prediction."""
    d = len(sizes)
    predicted = [one_way.marginal([a]) * one_way.total for a in range(d)]
    pairs = list(itertools.combinations(range(d), 2))
    weights = np.array(
        [
            np.abs(
                marginal_counts(codes[:, [a, b]], [sizes[a], sizes[b]])
                - np.outer(predicted[a], predicted[b]) / one_way.total
            ).sum()
            for a, b in pairs
        ]
    )
    component = list(range(d))

    def root(a: int) -> int:
        while component[a] != a:
            a = component[a]
        return a

    edges: list[tuple[int, int]] = []
    for _ in range(d - 1):
        open_ = [i for i, (a, b) in enumerate(pairs) if root(a) != root(b)]
        chosen = open_[exponential_draw(weights[open_], 1.0, epsilon, rng)]
        a, b = pairs[chosen]
        component[root(a)] = root(b)
        edges.append((a, b))
    return edges


@dataclass(frozen=True, kw_only=True)
class CentralZCDP(Publisher):
    """A central publisher in rho-zCDP over add/remove neighbours, converted to (epsilon,
    delta)-DP at its ``delta`` (MST, AIM): the key and the guarantee a run reports."""

    delta: float = 1e-9

    def __post_init__(self) -> None:
        check_float(self.delta, "delta", 0.0, 1.0)

    def guarantee(self, epsilon: float | None) -> str:
        return f"epsilon={epsilon}, delta={self.delta} (add/remove neighbours)"


@dataclass(frozen=True, kw_only=True)
class MSTPublisher(CentralZCDP):
    """``mechanism=mst``: MST (McKenna, Miklau, Sheldon 2021), central rho-zCDP converted to
    (epsilon, delta)-DP, add/remove neighbours (see the module)."""

    name: ClassVar[str] = "mst"
    iterations: int = 10_000
    select_iterations: int = 2_500

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.iterations, "iterations", 1)
        check_int(self.select_iterations, "select_iterations", 1)

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """Three int64 copies of the table (compressed, sampled, decoded) and the published
        one; per record, a few int64 and float64 arrays at a time (a marginal's joint codes,
        a sampled column's parents, uniforms and search); the model's tables, at most d pairs
        of the largest domains, :data:`~dp2pub.synthesis.pgm.MODEL_COPIES` float64 copies."""
        n, sizes = int(n), [int(k) for k in sizes]
        largest = sorted(sizes, reverse=True)[:2]
        cliques = MODEL_COPIES * 8 * math.prod(largest) * len(sizes)
        return 24 * n * len(sizes) + table_bytes(n, sizes) + 192 * n + cliques

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        start = time.perf_counter()
        d, sizes = data.d, [int(k) for k in data.domain.sizes]
        scales = Scales.fit(d, epsilon, self.delta)
        log1 = measure(data.codes, sizes, [(a,) for a in range(d)], scales.sigma1, rng)
        total = total_estimate(log1)  # before compression re-expresses the measurements
        compression, log1 = compress(log1, sizes)
        codes = compression.encode(data.codes)
        edges: list[tuple[int, int]] = []
        if d > 1:
            one_way = fit(compression.sizes, log1, self.select_iterations, known_total=total)
            edges = spanning_tree(codes, compression.sizes, one_way, scales.em, rng)
            log1 += measure(codes, compression.sizes, edges, scales.sigma3, rng)
        ledger = scales.ledger(d, self.delta)
        timed = {"measure": time.perf_counter() - start}
        model = fit(compression.sizes, log1, self.iterations, known_total=total)
        timed["fit"] = time.perf_counter() - start - timed["measure"]
        rows = max(1, round(model.total))
        records = compression.decode(sample(model, rows, rng), rng)
        timed["synthesis"] = time.perf_counter() - start - sum(timed.values())
        names = data.domain.names
        published = data.with_codes(records.astype(code_dtype(max(sizes, default=1))))
        extra = {"records_published": float(rows), "values_merged": float(compression.merged)}
        tree = {"edges": [[names[a], names[b]] for a, b in edges]}
        return Outcome(TableRelease(published), ledger, timed, extra, {"tree": tree})
