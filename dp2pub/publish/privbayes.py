"""Publisher ``privbayes``: PrivBayes, the central-DP baseline of the DP2-Pub paper.

Zhang, Cormode, Procopiuc, Srivastava, Xiao, "PrivBayes: Private Data Release via Bayesian
Networks", SIGMOD 2014 / TODS 2017. A trusted curator holds the true table and spends
``epsilon`` in two parts (sequential composition):

1. ``eps1 = beta * epsilon``: GreedyBayes where each of the ``d - 1`` choices of a (child,
   parents) pair is made by the exponential mechanism on mutual information with budget
   ``eps1 / (d - 1)``: ``Pr[pair] ∝ exp(eps1 / (d - 1) * I / (2 Delta))``, with the
   sensitivity of mutual information for general domains (Lemma 1),
   ``Delta = (2/n) ln((n+1)/2) + ((n-1)/n) ln((n+1)/(n-1))``, an upper bound of the binary
   case's, used for every candidate.
2. ``eps2 = (1 - beta) * epsilon``: each of the d joint distributions (child, parents) gets
   Laplace noise of scale ``2 d / (n eps2)`` per cell (each has L1 sensitivity 2/n); negative
   cells are clipped and the conditionals normalized (Algorithm 1, NoisyConditionals).
3. n records are sampled ancestrally from the noisy network
   (:meth:`dp2pub.data.bayes_net.BayesianNetwork.sample`).

The degree is ``degree``, or, with ``theta`` set, the largest k for which a typical
conditional is theta-useful: ``n eps2 / (d * s^(k+1)) >= theta`` with s the median domain
size (the TODS paper's criterion with binary domains replaced by the median size).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dp2pub.data.bayes_net import BayesianNetwork
from dp2pub.data.dataset import Dataset
from dp2pub.data.marginals import marginal_counts
from dp2pub.mechanisms.accounting import Spend, fit_shares, split_budget
from dp2pub.publish.base import Outcome, Publisher, network_bytes, working_bytes
from dp2pub.publish.release import TableRelease
from dp2pub.structure.bayes_net import greedy_bayes
from dp2pub.validation import ConfigError, check_epsilon, check_int, check_optional_float, check_probability


def mi_sensitivity(n: int) -> float:
    """Sensitivity of empirical mutual information on n records, general domains (Lemma 1)."""
    if n < 2:
        return math.log(2)
    return 2 / n * math.log((n + 1) / 2) + (n - 1) / n * math.log((n + 1) / (n - 1))


def exponential_selector(epsilon: float, sensitivity: float):
    """``select(scores, rng)`` drawing index i with probability ∝ exp(epsilon * s_i / (2 Delta)),
    by the Gumbel-max trick (exact)."""

    def select(scores: np.ndarray, rng: np.random.Generator) -> int:
        return int(np.argmax(scores * (epsilon / (2 * sensitivity)) + rng.gumbel(size=scores.size)))

    return select


def noisy_conditionals(
    data: Dataset, network: BayesianNetwork, epsilon2: float, rng: np.random.Generator
) -> dict[int, np.ndarray]:
    """``P(child | parents)`` tables, shape (|dom parents|, |dom child|), from Laplace-noised joints."""
    sizes, scale = data.domain.sizes, 2 * data.d / (data.n * epsilon2)
    tables = {}
    for child, parents in network.pairs():
        columns = [*list(parents), child]
        joint = marginal_counts(data.codes[:, columns], sizes[columns]) / data.n
        noisy = joint + rng.laplace(0.0, scale, size=joint.shape)
        rows = noisy.reshape(-1, sizes[child])
        tables[child] = clip_rows(rows)
    return tables


def clip_rows(rows: np.ndarray) -> np.ndarray:
    """Every row clipped at 0 and normalized (uniform where nothing is left)."""
    clipped = np.clip(rows, 0, None)
    totals = clipped.sum(axis=1, keepdims=True)
    uniform = np.full_like(clipped, 1.0 / clipped.shape[1])
    return np.where(totals > 0, clipped / np.where(totals > 0, totals, 1), uniform)


@dataclass(frozen=True, kw_only=True)
class PrivBayesPublisher(Publisher):
    """``mechanism=privbayes`` (see the module docstring)."""

    name: ClassVar[str] = "privbayes"
    degree: int | None = 2
    beta: float = 0.3
    theta: float | None = None

    def __post_init__(self) -> None:
        if self.degree is not None:
            check_int(self.degree, "degree", 1)
        check_probability(self.beta, "beta")
        check_optional_float(self.theta, "theta", 0.0)
        if self.degree is None and self.theta is None:
            raise ConfigError("degree", None, "an integer >= 1, or set theta to choose it")

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """The table's working memory, the sampled table, and the network's tables
        (``theta`` chooses the degree from the data: estimated at degree 3)."""
        degree = self.degree if self.degree is not None else 3
        return 2 * working_bytes(n, sizes) + len(sizes) * network_bytes(sizes, min(degree, len(sizes) - 1))

    def choose_degree(self, data: Dataset, epsilon2: float) -> int:
        """``degree`` if set, else the theta-useful degree (at least 1, at most d - 1)."""
        if self.theta is None:
            assert self.degree is not None  # __post_init__ requires degree when theta is unset
            if self.degree >= data.d:
                raise ConfigError("mechanism.degree", self.degree, f"an integer in [1, {data.d - 1}] (d={data.d})")
            return self.degree
        s = float(np.median(data.domain.sizes))
        k = 1
        while k + 1 < data.d and data.n * epsilon2 / (data.d * s ** (k + 2)) >= self.theta:
            k += 1
        return k

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        if data.d < 2:
            raise ConfigError("dataset.d", data.d, "at least 2 attributes for a network")
        eps1, eps2 = fit_shares([self.beta * epsilon, (1 - self.beta) * epsilon], epsilon)
        degree = self.choose_degree(data, eps2)
        start = time.perf_counter()
        select = exponential_selector(split_budget(eps1, data.d - 1), mi_sensitivity(data.n))
        network = greedy_bayes(data, degree, rng=rng, select=select)
        learned = time.perf_counter()
        tables = noisy_conditionals(data, network, eps2, rng)
        codes = network.with_tables(data.domain.sizes, tables).sample(data.n, rng)
        done = time.perf_counter()
        table = data.with_codes(codes)
        names = data.domain.names
        ledger = [Spend("network", "(exponential mechanism)", eps1), Spend("conditionals", "(Laplace)", eps2)]
        artifacts: dict[str, object] = {
            "network": [{"child": names[c], "parents": [names[p] for p in pa]} for c, pa in network.pairs()],
            "settings": {"degree": degree, "beta": self.beta, "theta": self.theta, "model": "central DP"},
        }
        return Outcome(
            TableRelease(table), ledger, {"structure": learned - start, "sample": done - learned}, artifacts=artifacts
        )
