"""Publisher ``dp2pub``: DP2-Pub (Jiang, Yu, Cheng, Pei, Pless, Yu, IEEE TKDE 2023).

1. Structure phase. ``split: budget``: every user reports every attribute with GRR at
   ``eps1 / d``, ``eps1 = structure_fraction * epsilon``. ``split: users``: a disjoint
   ``structure_fraction`` of the users does so with the whole epsilon (parallel composition).
   The server learns a Bayesian network of ``degree`` from the reports with GreedyBayes
   (:mod:`dp2pub.structure.bayes_net`).
2. Clustering by Markov blanket, capped by ``max_cluster_size`` and ``max_cells``
   (:mod:`dp2pub.structure.clustering`).
3. Budget: entropies of the debiased structure-phase marginals give CIF and PBC; cluster C gets
   ``eps2 * PBC(C)``, split evenly over its attributes (:mod:`dp2pub.structure.budget`).
4. Release phase: the release users report every attribute with GRR at its budget; the server
   runs invariant PRAM on each cluster's joint domain and publishes the table (of the release
   users). ``prior: inverse`` estimates each cluster's distribution as ``project(Q^-1 lambda)``
   (as the paper and PRAM do); ``prior: ibu`` uses the maximum-likelihood estimate instead.

Every user spends exactly epsilon: ``eps1 + eps2`` with ``split: budget``, epsilon in one
phase with ``split: users``. ``trust: local`` (users apply the channel) and ``trust: trusted``
(a curator applies it to the true records) publish tables with the same distribution, so both
run the same code; the setting is recorded in the artifacts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.mechanisms.accounting import ALL_USERS, Spend, fit_shares, split_budget
from dp2pub.publish.base import Outcome, Publisher, channel_bytes, network_bytes, working_bytes
from dp2pub.publish.invariant_pram import PRIORS, invariant_pram
from dp2pub.publish.pram import perturb_table
from dp2pub.publish.release import TableRelease
from dp2pub.structure.bayes_net import greedy_bayes
from dp2pub.structure.budget import attribute_budgets, cluster_weights
from dp2pub.structure.clustering import cluster_attributes
from dp2pub.structure.information import entropy_of_distribution
from dp2pub.validation import ConfigError, check_choice, check_epsilon, check_int, check_probability


@dataclass(frozen=True, kw_only=True)
class DP2PubPublisher(Publisher):
    """``mechanism=dp2pub`` (see the module docstring for the phases and keys)."""

    name: ClassVar[str] = "dp2pub"
    degree: int = 2
    structure_fraction: float = 0.2
    split: str = "budget"
    max_cluster_size: int = 4
    max_cells: int = 10_000
    trust: str = "local"
    prior: str = "inverse"

    def __post_init__(self) -> None:
        check_int(self.degree, "degree", 1)
        check_probability(self.structure_fraction, "structure_fraction")
        check_choice(self.split, "split", ("budget", "users"))
        check_int(self.max_cluster_size, "max_cluster_size", 1)
        check_int(self.max_cells, "max_cells", 1)
        check_choice(self.trust, "trust", ("local", "trusted"))
        check_choice(self.prior, "prior", PRIORS)

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """PRAM's memory, the structure phase's network and a joint table of at most
        ``max_cells`` cells per cluster (float64, a few per cluster)."""
        d = len(sizes)
        return (
            2 * working_bytes(n, sizes)
            + channel_bytes(sizes)
            + network_bytes(sizes, min(self.degree, d - 1))
            + 32 * d * min(self.max_cells, math.prod(int(k) for k in sizes))
        )

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        if data.d < 2:
            raise ConfigError("dataset.d", data.d, "at least 2 attributes for dp2pub's network")
        if self.degree >= data.d:
            raise ConfigError("mechanism.degree", self.degree, f"an integer in [1, {data.d - 1}] (d={data.d})")
        sizes = data.domain.sizes
        times: dict[str, float] = {}
        start = time.perf_counter()

        if self.split == "budget":
            eps1, eps2 = self.structure_fraction * epsilon, (1 - self.structure_fraction) * epsilon
            learners, releasers = data, data
        else:
            eps1 = eps2 = epsilon
            in_structure = np.zeros(data.n, dtype=bool)
            in_structure[rng.permutation(data.n)[: max(1, round(self.structure_fraction * data.n))]] = True
            if in_structure.all():
                raise ConfigError(
                    "mechanism.structure_fraction", self.structure_fraction, "a share that leaves release users"
                )
            learners, releasers = data.rows(in_structure), data.rows(~in_structure)
        share1 = split_budget(eps1, data.d)
        reports, oracles = perturb_table(learners, [share1] * data.d, rng)
        times["perturb"] = time.perf_counter() - start

        mark = time.perf_counter()
        network = greedy_bayes(reports, self.degree, sizes=sizes, rng=rng)
        times["structure"] = time.perf_counter() - mark

        entropies = [entropy_of_distribution(o.estimate(reports[:, j], "norm_sub")) for j, o in enumerate(oracles)]
        clusters = cluster_attributes(network, sizes, self.max_cluster_size, self.max_cells)
        weights = cluster_weights(clusters, entropies)
        budgets = attribute_budgets(clusters, weights, eps2, data.d)
        # the release shares, with what a user already paid for the structure (split=budget)
        paid = [share1] * data.d if self.split == "budget" else []
        budgets = np.array(fit_shares(list(budgets), epsilon, spent=paid))

        mark = time.perf_counter()
        released, release_oracles = perturb_table(releasers, list(budgets), rng)
        times["perturb"] += time.perf_counter() - mark
        mark = time.perf_counter()
        published = np.empty_like(released)
        for cluster in clusters:
            published[:, cluster] = invariant_pram(
                released[:, cluster], [release_oracles[j] for j in cluster], rng, self.prior
            )[0]
        times["pram"] = time.perf_counter() - mark

        table = releasers.with_codes(published)
        names = data.domain.names
        shared = self.split == "budget"  # else disjoint structure and release users
        ledger = [Spend("structure", a, share1, ALL_USERS if shared else "structure") for a in names]
        ledger += [
            Spend("release", names[a], float(budgets[a]), ALL_USERS if shared else "release") for a in range(data.d)
        ]
        artifacts = {
            "network": [{"child": names[c], "parents": [names[p] for p in pa]} for c, pa in network.pairs()],
            "clusters": [
                {"attributes": [names[a] for a in cluster], "pbc": float(w), "epsilon": float(eps2 * w)}
                for cluster, w in zip(clusters, weights)
            ],
            "entropies": {a: float(h) for a, h in zip(names, entropies)},
            "settings": {
                "split": self.split,
                "trust": self.trust,
                "prior": self.prior,
                "epsilon1": eps1,
                "epsilon2": eps2,
            },
        }
        return Outcome(TableRelease(table), ledger, times, artifacts=artifacts)
