"""Publisher ``dp2pub``: DP2-Pub (Jiang, Yu, Cheng, Pei, Pless, Yu, "DP2-Pub: Differentially
Private High-Dimensional Data Publication with Invariant Post Randomization", IEEE TKDE 2023,
arXiv 2208.11693), in the paper's two versions and one of ours (``trust``):

``trusted`` (section 4, central epsilon-DP; a curator holds the true table):
    1. ``eps1 = structure_fraction * epsilon`` (the paper: 1/2). The network is learned on the
       true data by GreedyBayes whose d-1 choices are exponential mechanisms on mutual
       information with budget ``eps_net / (d-1)`` each (Algorithm 1, PrivBayes' selector
       with each candidate's Lemma-1 sensitivity). ``entropies: private`` (ours, the default) takes a share
       ``entropy_fraction`` of eps1 from the network to answer the d attribute entropies of
       the budget weights with the Laplace mechanism; ``entropies: exact`` computes them on
       the true data as the paper does, a query it does not account for: the job then logs
       ``epsilon_spent = inf`` and warns that the release is not differentially private.
    2. Markov-blanket clusters (Algorithm 2; heads at random), post-processing.
    3. ``eps2 = epsilon - eps1``: cluster C gets ``PBC(C) * eps2`` from the entropies (eqs. 2-3),
       split evenly over its attributes; the curator perturbs every record's attributes with
       GRR at those budgets (the cluster's channel is their Kronecker product) and publishes
       invariant PRAM per cluster (section 4.4).
``local`` (section 5, epsilon-LDP; a semi-honest server):
    every user reports every attribute with GRR at ``epsilon / d``, the whole budget. The
    server learns the network from the reports with the non-private GreedyBayes, clusters with
    the largest-entropy head first (the paper's suggested variant; entropies of the debiased
    reports) and publishes invariant PRAM per cluster on the same reports. No PBC weights.
``local_two_phase`` (ours, not the paper's: an LDP adaptation of the trusted version):
    a structure phase of GRR reports (``split: budget``: every user at ``eps1 / d`` per
    attribute, ``eps1 = structure_fraction * epsilon``, default 0.2; ``split: users``: a
    disjoint ``structure_fraction`` of the users with the whole epsilon), the network learned
    from them, clusters in the network's order, PBC weights from the reports' entropies, and
    a release phase at ``PBC(C) * eps2`` as in the trusted version.

``prior`` is each cluster's estimated distribution: ``inverse`` (the paper's ``Q^-1 lambda``,
projected onto the simplex because a negative probability cannot be sampled) or ``ibu``
(maximum likelihood); ``compound`` how a cluster is resampled
(:mod:`dp2pub.publish.invariant_pram`). Keys that belong to one version are null by default
and refused for the others; docs/mechanisms/dp2pub.md lists the readings of the paper taken here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.sampling import DRAW_BYTES
from dp2pub.mechanisms.accounting import ALL_USERS, REPLACE_ONE, Spend, fit_shares, split_budget, two_shares
from dp2pub.mechanisms.chunks import chunk_rows
from dp2pub.mechanisms.grr import GRR
from dp2pub.mechanisms.ibu import IBUTrace
from dp2pub.products import PRODUCT_CAP, capped_product
from dp2pub.publish.base import Outcome, Publisher, claim_memory, parts_total
from dp2pub.publish.invariant_pram import COMPOUNDS, PRIORS, pram_clusters
from dp2pub.publish.pram import perturb_table
from dp2pub.publish.privbayes import learning_bytes, privbayes_selector
from dp2pub.publish.release import TableRelease
from dp2pub.structure.bayes_net import BayesianNetwork, greedy_bayes
from dp2pub.structure.budget import attribute_budgets, cluster_weights, exact_entropies, noisy_entropies
from dp2pub.structure.clustering import HEAD_RULES, cluster_attributes, head_order
from dp2pub.structure.information import entropy_of_distribution
from dp2pub.validation import (
    ConfigError,
    check_choice,
    check_epsilon,
    check_int,
    check_optional_float,
    check_probability,
)

TRUST: tuple[str, ...] = ("trusted", "local", "local_two_phase")
ENTROPIES: tuple[str, ...] = ("private", "exact")
SPLITS: tuple[str, ...] = ("budget", "users")
#: Defaults of the version-specific keys (null in the config).
DEFAULTS: dict[str, dict[str, object]] = {
    "trusted": {"structure_fraction": 0.5, "entropies": "private", "entropy_fraction": 0.1, "cluster_head": "random"},
    "local": {"cluster_head": "max_entropy"},
    "local_two_phase": {"structure_fraction": 0.2, "split": "budget", "cluster_head": "network_order"},
}


#: Bytes per cell of a cluster's joint tables while it is estimated and resampled: its report
#: counts and frequencies, the inverse channel's copies and the projection's five arrays
#: (shifted, sorted, cumulative, ranks, result) or IBU's distributions and ratios, 8 at once;
#: then the prior's marginal on a subset, its table transposed, and that table's cumulative
#: rows with their default ones (4). Float64 or int64 each.
CLUSTER_CELL_BYTES = 96


def cluster_bytes(n: int, c: int, cells: int, itemsize: int) -> int:
    """What estimating and resampling one cluster of ``c`` attributes and ``cells`` cells
    (:func:`~dp2pub.publish.invariant_pram.invariant_pram`) takes for ``n`` users of codes of
    ``itemsize`` bytes. Per user: its reports copied and the resampled copy (2 c itemsize),
    its joint code, its subset's index and its place among the subset's users (8 each), and a
    draw (:data:`~dp2pub.data.sampling.DRAW_BYTES`) with its values unravelled and stacked
    (int64: 24 + 16 c). The subsets are chosen for users in chunks
    (:func:`~dp2pub.mechanisms.chunks.chunk_rows` of the 2^c subsets): their weights and the
    weights' cumulative rows with their default ones, 24 bytes a user and subset. And
    :data:`CLUSTER_CELL_BYTES` a cell."""
    subsets = 1 << min(c, 62)  # more subsets than this cannot be listed, let alone weighed
    per_user = 2 * c * itemsize + 24 + DRAW_BYTES + 24 + 16 * c
    return int(n) * per_user + 24 * chunk_rows(n, subsets) * subsets + CLUSTER_CELL_BYTES * int(cells)


@dataclass(frozen=True)
class Draft:
    """What a version hands to the release step: the reports to resample and how they came."""

    reports: np.ndarray
    oracles: list[GRR]
    rows: Dataset
    network: BayesianNetwork
    entropies: np.ndarray
    clusters: list[list[int]]
    weights: np.ndarray | None
    ledger: list[Spend]
    not_private: str = ""


@dataclass(frozen=True, kw_only=True)
class DP2PubPublisher(Publisher):
    """``mechanism=dp2pub``: DP2-Pub, invariant PRAM on clusters of a Bayesian network.

    Three versions (the module docstring details them and docs/mechanisms/dp2pub.md lists the readings
    of the paper taken here): ``trusted`` (the paper's section 4, central epsilon-DP: a
    network learned by GreedyBayes with exponential mechanisms, Markov-blanket clusters,
    budgets ``PBC(C) * eps2`` per cluster from the attribute entropies, eqs. 2-3, GRR and
    invariant PRAM per cluster), ``local`` (section 5, epsilon-LDP: GRR at ``epsilon / d``
    on every attribute, the network and clusters learned from the reports, invariant PRAM
    per cluster) and ``local_two_phase`` (ours: an LDP adaptation of the trusted version).
    Keys that belong to one version are None by default (the version's default) and refused
    for the others.

    Parameters
    ----------
    trust : str, optional
        ``local`` (default), ``trusted`` or ``local_two_phase``.
    degree : int, optional
        The most parents of an attribute in the network, >= 1 (default 2).
    prior : str, optional
        Each cluster's estimated distribution: ``inverse`` (default: the paper's
        ``Q^-1 lambda``, projected onto the simplex) or ``ibu`` (maximum likelihood).
    compound : str, optional
        How a cluster is resampled: ``joint`` (default) or ``kronecker``
        (:mod:`dp2pub.publish.invariant_pram`).
    cluster_head : str, optional
        How clusters are headed: ``random`` (trusted's default), ``max_entropy`` (local's) or
        ``network_order`` (local_two_phase's).
    max_cluster_size : int, optional
        The most attributes of a cluster (default 8; None: no cap).
    max_cells : int, optional
        The most cells of a cluster's joint domain (default 1,000,000; None: no cap).
    structure_fraction : float, optional
        The share ``eps1`` of epsilon spent on the structure (trusted: 0.5, the paper's;
        local_two_phase: 0.2, or with ``split: users`` the share of the users).
    entropies : str, optional
        trusted only: ``private`` (default: the entropies answered with the Laplace
        mechanism) or ``exact`` (the paper's, on the true data: not differentially private,
        the job logs ``epsilon_spent = inf`` and warns).
    entropy_fraction : float, optional
        trusted with private entropies: the share of eps1 they take (default 0.1).
    split : str, optional
        local_two_phase only: ``budget`` (default: every user reports both phases) or
        ``users`` (disjoint groups of users).

    Raises
    ------
    ConfigError
        For a value out of range, or a key set for a version it does not belong to
        (``structure_fraction=0.3 is invalid: expected null with trust=local ...``).

    References
    ----------
    .. [1] H. Jiang, H. Yu, X. Cheng, J. Pei, R. Pless, J. Yu, "DP2-Pub: Differentially
       Private High-Dimensional Data Publication with Invariant Post Randomization", IEEE
       TKDE 2023, arXiv 2208.11693 (Algorithms 1 and 2, eqs. 2-3, sections 4 and 5).
    .. [2] J. Zhang, G. Cormode, C. M. Procopiuc, D. Srivastava, X. Xiao, "PrivBayes: Private
       Data Release via Bayesian Networks", SIGMOD 2014 (GreedyBayes' selector).
    .. [3] J. M. Gouweleeuw, P. Kooiman, L. C. R. J. Willenborg, P.-P. de Wolf, "Post
       randomisation for statistical disclosure control: theory and implementation",
       Journal of Official Statistics 14(4), 1998.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import DP2PubPublisher, make_synthetic_bn
    >>> data = make_synthetic_bn(
    ...     n=20_000, d=5, degree=2, k_min=2, k_max=4, strength=0.8, rng=np.random.default_rng(0)
    ... )
    >>> outcome = DP2PubPublisher(trust="trusted").publish(data, epsilon=2.0, rng=np.random.default_rng(0))
    >>> outcome.epsilon_spent, sorted({item.phase for item in outcome.ledger})
    (2.0, ['release', 'structure', 'weights'])
    >>> [cluster["attributes"] for cluster in outcome.artifacts["clusters"]]
    [['a0', 'a2', 'a3', 'a4'], ['a1']]
    >>> DP2PubPublisher(trust="local", structure_fraction=0.3)
    Traceback (most recent call last):
    ...
    dp2pub.validation.ConfigError: structure_fraction=0.3 is invalid: expected null with trust=local (a key of trust=trusted or trust=local_two_phase)
    """

    name: ClassVar[str] = "dp2pub"
    trust: str = "local"
    degree: int = 2
    prior: str = "inverse"
    compound: str = "joint"
    cluster_head: str | None = None
    max_cluster_size: int | None = 8
    max_cells: int | None = 1_000_000
    structure_fraction: float | None = None
    entropies: str | None = None
    entropy_fraction: float | None = None
    split: str | None = None

    def __post_init__(self) -> None:
        check_choice(self.trust, "trust", TRUST)
        check_int(self.degree, "degree", 1)
        check_choice(self.prior, "prior", PRIORS)
        check_choice(self.compound, "compound", COMPOUNDS)
        for key, value in (("max_cluster_size", self.max_cluster_size), ("max_cells", self.max_cells)):
            if value is not None:
                check_int(value, key, 1)
        allowed = DEFAULTS[self.trust]
        for key in ("structure_fraction", "entropies", "entropy_fraction", "split"):
            if getattr(self, key) is not None and key not in allowed:
                raise ConfigError(key, getattr(self, key), f"null with trust={self.trust} (a key of {_owners(key)})")
        self._check_values()

    def _check_values(self) -> None:
        if self.cluster_head is not None:
            check_choice(self.cluster_head, "cluster_head", HEAD_RULES)
        if self.structure_fraction is not None:
            check_probability(self.structure_fraction, "structure_fraction")
        if self.entropies is not None:
            check_choice(self.entropies, "entropies", ENTROPIES)
        check_optional_float(self.entropy_fraction, "entropy_fraction", 0.0, 1.0)
        if self.entropy_fraction is not None and self.setting("entropies") == "exact":
            raise ConfigError("entropy_fraction", self.entropy_fraction, "null with entropies=exact (nothing to pay)")
        if self.split is not None:
            check_choice(self.split, "split", SPLITS)

    def setting(self, key: str) -> object:
        """The value of a version-specific key: as set, else the version's default."""
        value = getattr(self, key)
        return DEFAULTS[self.trust].get(key) if value is None else value

    def fraction(self, key: str) -> float:
        """A version-specific share (``structure_fraction``, ``entropy_fraction``) as a float."""
        value = self.setting(key)
        assert isinstance(value, (int, float)), key  # checked in __post_init__, defaults are floats
        return float(value)

    #: A cluster's part of the estimate waits for the clusters (:meth:`claim_clusters`).
    deferred_memory: ClassVar[frozenset[str]] = frozenset({"max_cells", "max_cluster_size"})

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """The sum of :meth:`memory_parts`."""
        return parts_total(self.memory_parts(n, sizes))

    def memory_parts(self, n: int, sizes: Sequence[int] | np.ndarray) -> dict[str, int]:
        """The data's part: the reports and the published table (a code a record and
        attribute each; ``split: users``: the two groups' copies of the table, a flag and a
        permutation a record), and the larger of perturbing an attribute (GRR's work) and
        learning the network (:func:`~dp2pub.publish.privbayes.learning_bytes`, on the
        structure's users). The largest
        cluster's part (:func:`cluster_bytes`) at the most its caps allow, under the cap that
        drives it: ``max_cells`` (its cells) or ``max_cluster_size`` (its 2^c subsets); the
        job claims it again once the clusters are known (:meth:`claim_clusters`)."""
        n, d = int(n), len(sizes)
        itemsize = code_dtype(max((int(k) for k in sizes), default=1)).itemsize
        largest = sorted((int(k) for k in sizes), reverse=True)
        grr = max(
            (GRR.memory_bytes(n, k, itemsize=itemsize) - GRR.report_bytes(n, k, itemsize=itemsize) for k in largest),
            default=0,
        )
        degree = min(self.degree, max(d - 1, 1))
        learners, split = n, 0
        if self.setting("split") == "users":  # two groups: the structure's, the release's
            learners, split = max(1, round(self.fraction("structure_fraction") * n)), n * (d * itemsize + 9)
        learning = learning_bytes(learners, d, degree, capped_product(largest[: degree + 1]))
        size = d if self.max_cluster_size is None else min(self.max_cluster_size, d)
        cells = capped_product(largest[:size], PRODUCT_CAP if self.max_cells is None else self.max_cells)
        cells = max(largest[0] if largest else 1, cells)
        release = {"": 2 * n * d * itemsize + split + max(grr, learning)}
        return release | self.cluster_part(max(n - learners, 1) if split else n, size, cells, itemsize)

    def cluster_part(self, n: int, size: int, cells: int, itemsize: int) -> dict[str, int]:
        """A cluster of ``size`` attributes and ``cells`` cells (:func:`cluster_bytes`) as a
        part of the estimate, under the cap that drives it."""
        need = cluster_bytes(n, size, cells, itemsize)
        key = "max_cells" if CLUSTER_CELL_BYTES * cells >= need - CLUSTER_CELL_BYTES * cells else "max_cluster_size"
        return {key: need}

    def claim_clusters(self, data: Dataset, groups: Sequence[Sequence[int]]) -> None:
        """Claim the largest of ``groups``' :func:`cluster_bytes` from the running job
        (:func:`~dp2pub.publish.base.claim_memory`) before any is estimated: refused, naming the
        cap that drives it, when it does not fit."""
        sizes, n = data.domain.sizes, data.n
        itemsize = code_dtype(max((int(k) for k in sizes), default=1)).itemsize
        biggest = max(groups, key=lambda g: cluster_bytes(n, len(g), math.prod(int(sizes[j]) for j in g), itemsize))
        cells = math.prod(int(sizes[j]) for j in biggest)
        ((key, need),) = self.cluster_part(n, len(biggest), cells, itemsize).items()
        names = ", ".join(data.domain.names[j] for j in biggest)
        claim_memory(key, self.setting(key), need, f"dp2pub's largest cluster ({names}: {cells:,} cells)")

    def check_shape(self, n: int, sizes: Sequence[int] | np.ndarray) -> None:
        """A network needs 2 attributes, and a degree below their number."""
        d = len(sizes)
        if d < 2:
            raise ConfigError("dataset.d", d, "at least 2 attributes for dp2pub's network")
        if self.degree >= d:
            raise ConfigError("mechanism.degree", self.degree, f"an integer in [1, {d - 1}] (d={d})")

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """Publish ``data`` by the configured version of DP2-Pub.

        Parameters
        ----------
        data : Dataset
            The table to publish.
        epsilon : float
            The budget per user (central for ``trusted``, local otherwise).
        rng : numpy.random.Generator
            The source of all the randomness.

        Returns
        -------
        Outcome
            A :class:`~dp2pub.publish.release.TableRelease` of the resampled records, the
            ledger of the phases, and the network, clusters and entropies as artifacts.
        """
        epsilon = check_epsilon(epsilon)
        self.check_shape(data.n, data.domain.sizes)
        times: dict[str, float] = {}
        version = {"trusted": self._trusted, "local": self._local, "local_two_phase": self._two_phase}
        draft = version[self.trust](data, epsilon, rng, times)
        groups = draft.clusters if self.compound == "joint" else [[a] for c in draft.clusters for a in c]
        self.claim_clusters(draft.rows, groups)
        mark, trace = time.perf_counter(), IBUTrace()
        published = pram_clusters(draft.reports, draft.oracles, draft.clusters, rng, self.prior, self.compound, trace)
        times["pram"] = time.perf_counter() - mark
        release = TableRelease(draft.rows.with_codes(published))
        return Outcome(
            release,
            draft.ledger,
            times,
            extra_metrics=trace.metrics(),
            artifacts=self._artifacts(data, draft),
            not_private=draft.not_private,
        )

    def _trusted(self, data: Dataset, epsilon: float, rng: np.random.Generator, times: dict[str, float]) -> Draft:
        """Section 4: the curator learns the network privately, then perturbs every record."""
        names, d = data.domain.names, data.d
        eps1, eps2 = two_shares(epsilon, self.fraction("structure_fraction"))
        private = self.setting("entropies") == "private"
        eps_h, eps_net = two_shares(eps1, self.fraction("entropy_fraction")) if private else (0.0, eps1)
        net_share = split_budget(eps_net, d - 1)
        mark = time.perf_counter()
        select = privbayes_selector(net_share, data.n, data.domain.sizes)
        network = greedy_bayes(data, self.degree, rng=rng, select_pair=select)
        times["structure"] = time.perf_counter() - mark
        # the curator's queries of the true table: central, PrivBayes's replace-one sensitivities
        # (n public); the release perturbs each record on its own, a local guarantee
        ledger = [
            Spend("structure", f"selection {i + 1} (exponential mechanism)", net_share, neighbours=REPLACE_ONE)
            for i in range(d - 1)
        ]
        if private:
            h_share = split_budget(eps_h, d)
            entropies = noisy_entropies(data.codes, data.domain.sizes, h_share, rng)
            ledger += [Spend("weights", f"entropy of {a} (Laplace)", h_share, neighbours=REPLACE_ONE) for a in names]
        else:
            entropies = exact_entropies(data.codes, data.domain.sizes)
        clusters = self._clusters(network, entropies, data.domain.sizes, rng)
        weights = cluster_weights(clusters, entropies)
        spent = [item.epsilon for item in ledger]
        budgets = self._release_budgets(clusters, weights, eps2, epsilon, spent, d)
        mark = time.perf_counter()
        reports, oracles = perturb_table(data, budgets, rng)
        times["perturb"] = time.perf_counter() - mark
        ledger += [Spend("release", a, b) for a, b in zip(names, budgets)]
        not_private = ""
        if not private:
            ledger.append(Spend("weights", "entropies of the true data (no noise)", math.inf))
            not_private = "entropies=exact: the budget weights use the true data's entropies, which no noise protects"
        return Draft(reports, oracles, data, network, entropies, clusters, weights, ledger, not_private)

    def _local(self, data: Dataset, epsilon: float, rng: np.random.Generator, times: dict[str, float]) -> Draft:
        """Section 5: users report every attribute at epsilon/d; the server does the rest."""
        share = split_budget(epsilon, data.d)
        reports, oracles, network, entropies, clusters = self._report_and_learn(data, share, rng, times)
        ledger = [Spend("perturb", a, share) for a in data.domain.names]
        return Draft(reports, oracles, data, network, entropies, clusters, None, ledger)

    def _two_phase(self, data: Dataset, epsilon: float, rng: np.random.Generator, times: dict[str, float]) -> Draft:
        """Ours: a structure phase of GRR reports, then an entropy-weighted release phase."""
        fraction = self.fraction("structure_fraction")
        by_budget = self.setting("split") == "budget"
        if by_budget:
            (learners, releasers), (eps1, eps2) = (data, data), two_shares(epsilon, fraction)
        else:
            (learners, releasers), (eps1, eps2) = _split_users(data, fraction, rng), (epsilon, epsilon)
        share1 = split_budget(eps1, data.d)
        _, _, network, entropies, clusters = self._report_and_learn(learners, share1, rng, times)
        weights = cluster_weights(clusters, entropies)
        paid = [share1] * data.d if by_budget else []
        budgets = self._release_budgets(clusters, weights, eps2, epsilon, paid, data.d)
        mark = time.perf_counter()
        released, release_oracles = perturb_table(releasers, budgets, rng)
        times["perturb"] += time.perf_counter() - mark
        users = (ALL_USERS, ALL_USERS) if by_budget else ("structure", "release")
        names = data.domain.names
        ledger = [Spend("structure", a, share1, users[0]) for a in names]
        ledger += [Spend("release", a, b, users[1]) for a, b in zip(names, budgets)]
        return Draft(released, release_oracles, releasers, network, entropies, clusters, weights, ledger)

    def _report_and_learn(
        self, rows: Dataset, share: float, rng: np.random.Generator, times: dict[str, float]
    ) -> tuple[np.ndarray, list[GRR], BayesianNetwork, np.ndarray, list[list[int]]]:
        """Every user of ``rows`` reports every attribute with GRR at ``share``; from the
        reports alone (post-processing) the server learns the non-private GreedyBayes network,
        the entropies of the debiased (norm-sub) 1-way estimates and the clusters. Returns
        (reports, oracles, network, entropies, clusters)."""
        mark = time.perf_counter()
        reports, oracles = perturb_table(rows, [share] * rows.d, rng)
        times["perturb"] = time.perf_counter() - mark
        mark = time.perf_counter()
        network = greedy_bayes(reports, self.degree, sizes=rows.domain.sizes, rng=rng)
        times["structure"] = time.perf_counter() - mark
        entropies = np.array(
            [entropy_of_distribution(o.estimate(reports[:, j], "norm_sub")) for j, o in enumerate(oracles)]
        )
        return reports, oracles, network, entropies, self._clusters(network, entropies, rows.domain.sizes, rng)

    def _clusters(
        self, network: BayesianNetwork, entropies: np.ndarray, sizes: np.ndarray, rng: np.random.Generator
    ) -> list[list[int]]:
        """The Markov-blanket clusters, heads by the version's rule, within the caps."""
        heads = head_order(str(self.setting("cluster_head")), network, entropies, rng)
        return cluster_attributes(network, sizes, self.max_cluster_size, self.max_cells, heads)

    @staticmethod
    def _release_budgets(
        clusters: list[list[int]], weights: np.ndarray, eps2: float, epsilon: float, spent: list[float], d: int
    ) -> list[float]:
        """Per attribute ``eps2 PBC(C) / |C|``, fitted so that with ``spent`` they sum to at most epsilon."""
        return fit_shares([float(b) for b in attribute_budgets(clusters, weights, eps2, d)], epsilon, spent=spent)

    def _artifacts(self, data: Dataset, draft: Draft) -> dict[str, object]:
        names = data.domain.names
        release = {item.attribute: item.epsilon for item in draft.ledger if item.phase in ("release", "perturb")}
        clusters = []
        for i, cluster in enumerate(draft.clusters):
            entry: dict[str, object] = {"attributes": [names[a] for a in cluster]}
            entry["epsilon"] = math.fsum(release[names[a]] for a in cluster)
            if draft.weights is not None:
                entry["pbc"] = float(draft.weights[i])
            clusters.append(entry)
        settings = {key: self.setting(key) for key in DEFAULTS[self.trust]}
        if self.setting("entropies") == "exact":
            settings.pop("entropy_fraction")  # nothing is paid for exact entropies
        return {
            "network": [{"child": names[c], "parents": [names[p] for p in pa]} for c, pa in draft.network.pairs()],
            "clusters": clusters,
            "entropies": {a: float(h) for a, h in zip(names, draft.entropies)},
            "settings": {"trust": self.trust, "prior": self.prior, "compound": self.compound, **settings},
        }


def _owners(key: str) -> str:
    """The versions that take ``key``, for error messages."""
    return " or ".join(f"trust={t}" for t, keys in DEFAULTS.items() if key in keys)


def _split_users(data: Dataset, fraction: float, rng: np.random.Generator) -> tuple[Dataset, Dataset]:
    """A uniformly random ``fraction`` of the users (at least one) and the others."""
    in_structure = np.zeros(data.n, dtype=bool)
    in_structure[rng.permutation(data.n)[: max(1, round(fraction * data.n))]] = True
    if in_structure.all():
        raise ConfigError("mechanism.structure_fraction", fraction, "a share that leaves release users")
    return data.rows(in_structure), data.rows(~in_structure)
