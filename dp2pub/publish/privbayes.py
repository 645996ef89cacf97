"""Publisher ``privbayes``: PrivBayes, the central-DP baseline of the DP2-Pub paper.

Zhang, Cormode, Procopiuc, Srivastava, Xiao, "PrivBayes: Private Data Release via Bayesian
Networks", SIGMOD 2014 / ACM TODS 2017. A trusted curator holds the true table of n records.

**Neighbouring tables** differ by *replacing* one record: n is the same on both sides and is
public (the release has n records). Both sensitivities below are for this relation, the one
the paper's Lemma 1 assumes: its bounds hold, and the binary one is attained, when one record
moves from one cell to another with n fixed (``tests/publish/test_privbayes.py`` checks this
by enumerating small tables).

The budget is spent in two parts (sequential composition), ``eps1 + eps2 = epsilon``:

1. ``eps1 = beta * epsilon``: GreedyBayes (Algorithm 4), each of its ``d - 1`` choices of a
   (child X, parents Pi) pair an exponential mechanism at ``e = eps1 / (d - 1)`` that draws
   a pair with probability ``∝ exp(e * I(X; Pi) / (2 Delta(X, Pi)))``. ``Delta(X, Pi)`` is
   the pair's own bound on the sensitivity of mutual information (Lemma 1):
   ``(1/n) ln n + ((n-1)/n) ln(n/(n-1))`` when X or Pi is binary (|dom| <= 2), else
   ``(2/n) ln((n+1)/2) + ((n-1)/n) ln((n+1)/(n-1))``. This is the exponential mechanism of
   the normalized score ``u(D, pair) = I_D(X; Pi) / Delta(X, Pi)``: for neighbours D, D',
   ``|u(D, pair) - u(D', pair)| <= 1`` for *every* pair, so u has sensitivity 1 and
   ``Pr ∝ exp(e * u / 2)`` is e-DP (McSherry-Talwar: the weight of each pair changes by at
   most ``e^(e/2)``, the normalizer by at most ``e^(e/2)`` the other way). It needs only
   that each ``Delta`` is fixed before the data are seen: it depends on n and the declared
   domain sizes (public), not on the values observed, and the candidate pairs depend only on
   the choices already published.
2. ``eps2 = (1 - beta) * epsilon``: NoisyConditionals (Algorithm 1). Only the ``d - k``
   joints ``Pr[X_i, Pi_i]``, i = k+1..d in the network's order, are measured: each has L1
   sensitivity ``2/n`` (a replaced record moves ``1/n`` of mass out of one cell and into
   another), each gets ``eps2 / (d - k)``, so every cell gets Laplace noise of scale
   ``2 (d - k) / (n eps2)``; the paper's ``Lap(4 (d - k) / (n eps))`` is the same scale with
   its even split ``eps2 = eps / 2``. (With add/remove neighbours one would noise counts, of
   sensitivity 1, and n would not be public.) Negative cells are set to 0 and each joint is
   normalized. The first k+1 attributes have prefix parent sets (``Pi_{k+1} = {X_1..X_k}``),
   so ``Pr[X_i | Pi_i]`` for i <= k is derived from the noisy (k+1)-way joint by
   marginalizing and conditioning: post-processing, no budget.
3. n records are sampled ancestrally from the noisy network
   (:meth:`dp2pub.data.bayes_net.BayesianNetwork.sample`): post-processing.

The degree is ``degree``, or, with ``theta`` set, the largest k whose noisy joints are
theta-useful: the average cell of a joint, ``1 / |dom(X_i, Pi_i)|``, is at least theta times
the noise scale, ``n eps2 / (2 (d - k) |dom(X_i, Pi_i)|) >= theta`` (with binary domains,
``|dom| = 2^(k+1)``: the paper's ``n eps2 / ((d - k) 2^(k+2)) >= theta``). The pairs are not
known before the network is learnt, so ``|dom(X_i, Pi_i)|`` is taken as ``s^(k+1)``, s the
median domain size.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dp2pub.data.bayes_net import BayesianNetwork
from dp2pub.data.dataset import Dataset, code_dtype, table_bytes
from dp2pub.data.marginals import marginal_counts
from dp2pub.data.sampling import DRAW_BYTES
from dp2pub.mechanisms.accounting import REPLACE_ONE, Spend, split_budget, two_shares
from dp2pub.mechanisms.exponential import exponential_draw
from dp2pub.products import PRODUCT_CAP, capped_product
from dp2pub.publish.base import Outcome, Publisher, network_bytes, parts_total
from dp2pub.publish.release import TableRelease
from dp2pub.structure.bayes_net import PairSelector, greedy_bayes
from dp2pub.structure.budget import entropy_sensitivity
from dp2pub.structure.information import BINCOUNT_CELLS_PER_ITEM, BINCOUNT_MAX_CELLS
from dp2pub.validation import ConfigError, check_epsilon, check_int, check_optional_float, check_probability


def mi_sensitivity(n: int, binary: bool = False) -> float:
    """Sensitivity of empirical mutual information I(X; Pi) on n records under replace-one
    neighbours (Lemma 1): the smaller bound when X or Pi is binary, else the general one."""
    if n < 2:
        return math.log(2)  # one record: I = 0 on every table; any bound >= 0 holds
    if binary:  # the same bound as the entropy of one attribute's (structure/budget.py)
        return entropy_sensitivity(n)
    return 2 / n * math.log((n + 1) / 2) + (n - 1) / n * math.log((n + 1) / (n - 1))


def pair_sensitivities(n: int, sizes: np.ndarray, children: np.ndarray, parent_sets: np.ndarray) -> np.ndarray:
    """Lemma 1's bound for every candidate (children[i], parent_sets[i]): binary when the
    child's or the parent set's declared domain has at most 2 values."""
    parent_cells = np.asarray(sizes, dtype=np.float64)[parent_sets].prod(axis=1)
    binary = (np.asarray(sizes)[children] <= 2) | (parent_cells <= 2)
    return np.where(binary, mi_sensitivity(n, binary=True), mi_sensitivity(n))


def privbayes_selector(epsilon: float, n: int, sizes: np.ndarray) -> PairSelector:
    """``select_pair`` for :func:`greedy_bayes`: the exponential mechanism at ``epsilon`` on
    each candidate's score normalized by its own Lemma-1 sensitivity (module docstring)."""

    def select(
        scores: np.ndarray, children: np.ndarray, parent_sets: np.ndarray, rng: np.random.Generator | None
    ) -> int:
        return exponential_draw(scores, pair_sensitivities(n, sizes, children, parent_sets), epsilon, rng)

    return select


def laplace_scale(n: int, epsilon2: float, marginals: int) -> float:
    """Per-cell Laplace scale of Algorithm 1: ``marginals`` joints of L1 sensitivity 2/n
    (replace-one neighbours) sharing ``epsilon2``: ``2 marginals / (n epsilon2)``."""
    return 2 * marginals / (n * epsilon2)


def prefix_degree(network: BayesianNetwork) -> int:
    """k = the network's degree, after checking Algorithm 1's premise (which GreedyBayes,
    Algorithm 4, meets): the i-th attribute of the order, i = 1..k+1, has the i-1 attributes
    before it as its parents."""
    k = network.degree
    for i, child in enumerate(network.order[: k + 1]):
        if network.parents[child] != tuple(sorted(network.order[:i])):
            raise ValueError(f"attribute {child}'s parents are not the {i} attributes before it (GreedyBayes order)")
    return k


def noisy_joint(data: Dataset, columns: list[int], scale: float, rng: np.random.Generator) -> np.ndarray:
    """Pr*[columns]: the joint frequencies plus Laplace(scale) per cell, negatives set to 0,
    normalized (uniform if nothing is left), shaped by the columns' domain sizes."""
    sizes = data.domain.sizes[columns]
    joint = marginal_counts(data.codes[:, columns], sizes) / data.n
    clipped = np.clip(joint + rng.laplace(0.0, scale, size=joint.shape), 0, None)
    total = clipped.sum()
    return clipped / total if total > 0 else np.full(joint.shape, 1.0 / joint.size)


def conditional_from_joint(joint: np.ndarray, axes: list[int], child: int, parents: Sequence[int]) -> np.ndarray:
    """Pr[child | parents], shape (|dom parents|, |dom child|), from a joint whose axes are the
    attributes ``axes`` (a superset of child and parents): marginalize, then condition."""
    keep = sorted([*parents, child])
    marginal = joint.sum(axis=tuple(j for j, a in enumerate(axes) if a not in keep))
    kept_axes = [a for a in axes if a in keep]  # the kept axes, in the joint's order
    marginal = np.moveaxis(marginal, [kept_axes.index(a) for a in [*parents, child]], list(range(len(keep))))
    return clip_rows(marginal.reshape(-1, joint.shape[axes.index(child)]))


def noisy_conditionals(
    data: Dataset, network: BayesianNetwork, epsilon2: float, rng: np.random.Generator
) -> dict[int, np.ndarray]:
    """``P(child | parents)`` tables, shape (|dom parents|, |dom child|), by Algorithm 1:
    Laplace noise on the d-k joints of the attributes k+1..d of the order only; the first k
    conditionals from the noisy (k+1)-way joint (module docstring)."""
    k, order, parents = prefix_degree(network), network.order, network.parents
    scale = laplace_scale(data.n, epsilon2, data.d - k)
    prefix_axes = [*parents[order[k]], order[k]]  # X_1..X_{k+1}
    prefix = noisy_joint(data, prefix_axes, scale, rng)
    tables = {child: conditional_from_joint(prefix, prefix_axes, child, parents[child]) for child in order[: k + 1]}
    for child in order[k + 1 :]:
        axes = [*parents[child], child]
        tables[child] = conditional_from_joint(noisy_joint(data, axes, scale, rng), axes, child, parents[child])
    return tables


def clip_rows(rows: np.ndarray) -> np.ndarray:
    """Every row clipped at 0 and normalized (uniform where nothing is left)."""
    clipped = np.clip(rows, 0, None)
    totals = clipped.sum(axis=1, keepdims=True)
    uniform = np.full_like(clipped, 1.0 / clipped.shape[1])
    return np.where(totals > 0, clipped / np.where(totals > 0, totals, 1), uniform)


def usefulness(n: int, d: int, k: int, epsilon2: float, cells: float) -> float:
    """Average cell of a joint of ``cells`` cells over the Laplace scale of Algorithm 1 at
    degree k: ``n epsilon2 / (2 (d - k) cells)`` (theta-usefulness)."""
    return (1.0 / cells) / laplace_scale(n, epsilon2, d - k)


#: Bytes per record and unvisited attribute of one scoring pass of GreedyBayes: the gathered
#: codes and their keys (int64), their counts (at most BINCOUNT_CELLS_PER_ITEM int64 cells a
#: key) and what is read off the counts (five arrays of at most one 8-byte entry per two keys).
SCORE_BYTES = 16 + 8 * BINCOUNT_CELLS_PER_ITEM + 20


def learning_bytes(n: int, d: int, degree: int, cells: int | None = None) -> int:
    """An upper bound of what GreedyBayes (:func:`~dp2pub.structure.bayes_net.greedy_bayes`)
    allocates on ``n`` records of ``d`` attributes. Per record: its attribute-major int64 copy
    of the table (8 d), the partitions of the rows along a prefix tree of parent sets, the
    whole table's and one per parent (row and group id, int64: 16 (degree + 1)), and the
    scoring pass over the d - 1 attributes unvisited at the first step (:data:`SCORE_BYTES`
    each), which is also more than refining a partition takes; and once, the table of a
    counting pass that uses ``np.bincount`` (int64 counts with their flags, 9 bytes a cell):
    at most the joint domain of a child and its parents, ``cells`` (None: unknown), and at most
    what :func:`~dp2pub.structure.information.use_bincount` allows, BINCOUNT_MAX_CELLS or 4 a
    record; and the candidates of a step, at most C(d - 1, degree) parent sets for each of
    the d attributes: the cache of their scores and its copy in the step's order (float64),
    each candidate's child and parent set (int64: 8 + 8 degree) and what selects among them
    (16)."""
    per_record = 8 * d + 16 * (degree + 1) + SCORE_BYTES * max(d - 1, 1)
    table = max(BINCOUNT_MAX_CELLS, BINCOUNT_CELLS_PER_ITEM * int(n))
    candidates = capped_comb(max(d - 1, 0), degree) * d * (40 + 8 * degree)
    return int(n) * per_record + 9 * (table if cells is None else min(cells, table)) + candidates


def capped_comb(n: int, k: int, cap: int = PRODUCT_CAP) -> int:
    """C(n, k), or ``cap`` once it exceeds it (never a huge integer: C(n, i) grows with i up
    to k <= n / 2)."""
    k = min(k, n - k)
    if k < 0:
        return 0
    value = 1
    for i in range(k):
        value = value * (n - i) // (i + 1)
        if value > cap:
            return cap
    return value


@dataclass(frozen=True, kw_only=True)
class PrivBayesPublisher(Publisher):
    """``mechanism=privbayes``: PrivBayes, the central-DP baseline of the DP2-Pub paper.

    A trusted curator holds the table; neighbouring tables differ by replacing one record.
    ``eps1 = beta * epsilon`` learns the network by GreedyBayes ([1]_, Algorithm 4), each of
    its ``d - 1`` choices an exponential mechanism on mutual information normalized by its
    Lemma-1 sensitivity; ``eps2 = (1 - beta) * epsilon`` measures the ``d - k`` joints with
    Laplace noise of scale ``2 (d - k) / (n eps2)`` (NoisyConditionals, Algorithm 1); n
    records are then sampled from the noisy network (post-processing). The module docstring
    gives the sensitivities and the theta-usefulness rule.

    Parameters
    ----------
    degree : int, optional
        The most parents of an attribute, >= 1 and below d (default 2); None: chosen by
        ``theta``.
    beta : float, optional
        The share of epsilon spent on the network, in (0, 1) (default 0.3).
    theta : float, optional
        With ``degree`` None, choose the largest degree whose noisy joints are
        theta-useful (> 0).

    Raises
    ------
    ConfigError
        For a value out of range, or neither ``degree`` nor ``theta``.

    References
    ----------
    .. [1] J. Zhang, G. Cormode, C. M. Procopiuc, D. Srivastava, X. Xiao, "PrivBayes: Private
       Data Release via Bayesian Networks", SIGMOD 2014 / ACM TODS 2017 (Algorithms 1 and
       4, Lemma 1).

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import PrivBayesPublisher, evaluate_marginals, make_synthetic_bn
    >>> data = make_synthetic_bn(
    ...     n=20_000, d=5, degree=2, k_min=2, k_max=4, strength=0.8, rng=np.random.default_rng(0)
    ... )
    >>> outcome = PrivBayesPublisher(degree=2, beta=0.3).publish(data, epsilon=1.0, rng=np.random.default_rng(0))
    >>> [(item.phase, round(item.epsilon, 6), item.neighbours) for item in outcome.ledger]
    [('network', 0.3, 'replace-one'), ('conditionals', 0.7, 'replace-one')]
    >>> metrics = evaluate_marginals(data, outcome.release, np.random.default_rng(1)).metrics
    >>> round(metrics["tvd_2way"], 3)
    0.024
    """

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
        """The sampled table (:func:`table_bytes`), the network's tables, and the larger of
        learning the network (:func:`learning_bytes`: 8 d + 68 (d - 1) + 16 (degree + 1)
        bytes a record) and sampling an attribute (its parents' codes, their row code and a
        draw: about 70 bytes a record). With ``theta`` the degree is chosen from the data:
        the partitions are counted at degree d - 1, the network's tables at degree 3."""
        return parts_total(self.memory_parts(n, sizes))

    def memory_parts(self, n: int, sizes: Sequence[int] | np.ndarray) -> dict[str, int]:
        """:meth:`memory_bytes`: the network's tables are the part of ``degree`` (products of
        degree + 1 domains), the rest the data's."""
        d = len(sizes)
        degree = min(self.degree if self.degree is not None else d - 1, max(d - 1, 1))
        itemsize = code_dtype(max((int(k) for k in sizes), default=1)).itemsize
        sampling = int(n) * (degree * itemsize + DRAW_BYTES)
        cells = capped_product(sorted((int(k) for k in sizes), reverse=True)[: degree + 1])
        tables = d * network_bytes(sizes, min(self.degree or 3, max(d - 1, 1)))
        return {
            "": table_bytes(n, sizes) + max(learning_bytes(n, d, degree, cells), sampling),
            "degree" if self.degree is not None else "theta": tables,
        }

    def check_shape(self, n: int, sizes: Sequence[int] | np.ndarray) -> None:
        """A network needs 2 attributes, and a degree below their number."""
        d = len(sizes)
        if d < 2:
            raise ConfigError("dataset.d", d, "at least 2 attributes for a network")
        if self.degree is not None and self.degree >= d:
            raise ConfigError("mechanism.degree", self.degree, f"an integer in [1, {d - 1}] (d={d})")

    def choose_degree(self, data: Dataset, epsilon2: float) -> int:
        """``degree`` if set, else the largest theta-useful k in [1, d-1] (1 if none is)."""
        if self.theta is None:
            assert self.degree is not None  # __post_init__ requires degree when theta is unset
            self.check_shape(data.n, data.domain.sizes)
            return self.degree
        s = float(np.median(data.domain.sizes))
        useful = [k for k in range(1, data.d) if usefulness(data.n, data.d, k, epsilon2, s ** (k + 1)) >= self.theta]
        return max(useful, default=1)

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        """Learn a noisy network of ``data`` and sample a table of n records from it.

        Parameters
        ----------
        data : Dataset
            The table to publish (at least 2 attributes).
        epsilon : float
            The central budget, ``beta * epsilon`` for the network and the rest for the
            conditionals.
        rng : numpy.random.Generator
            The source of all the randomness.

        Returns
        -------
        Outcome
            A :class:`~dp2pub.publish.release.TableRelease` of the sampled records, the
            two-item ledger, and the network as an artifact.

        Raises
        ------
        ConfigError
            For a table of one attribute or a ``degree`` of at least d.
        """
        epsilon = check_epsilon(epsilon)
        self.check_shape(data.n, data.domain.sizes)
        eps1, eps2 = two_shares(epsilon, self.beta)
        degree = self.choose_degree(data, eps2)
        start = time.perf_counter()
        select = privbayes_selector(split_budget(eps1, data.d - 1), data.n, data.domain.sizes)
        network = greedy_bayes(data, degree, rng=rng, select_pair=select)
        learned = time.perf_counter()
        tables = noisy_conditionals(data, network, eps2, rng)
        codes = network.with_tables(data.domain.sizes, tables).sample(data.n, rng)
        done = time.perf_counter()
        names = data.domain.names
        ledger = [
            Spend("network", f"(exponential mechanism, {data.d - 1} choices)", eps1, neighbours=REPLACE_ONE),
            Spend("conditionals", f"(Laplace, {data.d - degree} joints)", eps2, neighbours=REPLACE_ONE),
        ]
        artifacts: dict[str, object] = {
            "network": [{"child": names[c], "parents": [names[p] for p in pa]} for c, pa in network.pairs()],
            "settings": {"degree": degree, "beta": self.beta, "theta": self.theta, "model": "central DP"},
        }
        timings = {"structure": learned - start, "sample": done - learned}
        return Outcome(TableRelease(data.with_codes(codes)), ledger, timings, artifacts=artifacts)
