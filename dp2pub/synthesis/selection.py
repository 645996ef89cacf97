"""Which 2-way marginals to measure: PrivSyn's greedy selection, fed by LDP reports.

Zhang et al., "PrivSyn: Differentially Private Data Synthesis", USENIX Security 2021, section
4 (DenseMarg): a pair left unmeasured is synthesized about as if its attributes were
independent, which costs its *dependency error* ``InDif = ||P_ab - P_a x P_b||_1``; a measured
pair costs its *noise error*, which grows with the number of measured pairs as they share the
users. PrivSyn adds pairs greedily while the sum of the two errors falls.

PrivSyn measures InDif on the true data (central DP, with noise). Under LDP nobody holds the
true data, so here InDif is estimated in a first phase: each candidate pair's unbiased estimate
made by its own group of users, against the product of the two attributes' 1-way marginals
estimated from all the first-phase reports (so much less noisy than the pair's own sums).
Under independence that distance is the L1 norm of the estimate's error alone, whose mean is
:func:`expected_l1`; the estimated InDif is the distance less that mean, kept within [0, 2]
(the range of an L1 distance between distributions).

That is PrivSyn's rule, the default, and it keeps independent pairs: an independent pair's
estimate is the positive part of a noise centred near 0, positive about half the time and of
the order of the first phase's noise, which exceeds the error of measuring the pair again with
the second phase's many users. It chooses 45 to 59 of 253 pairs of independent binary
attributes (d = 23, n = 38,000) and 21 to 31 of 120 (d = 16, n = 17,259; 3 seeds at epsilon =
0.2, 1, 4, 8).

With a ``level`` (``select_level``), a pair counts as dependent only when its distance exceeds
the mean by a margin that Gaussian concentration bounds (:func:`dependence_margin`,
:func:`l1_spread`): an independent pair passes with probability at most about ``level /
candidates``, so some pair of all the candidates with probability at most about ``level``
(Bonferroni; about: under the normal approximation of the error, which for GRR McDiarmid's
inequality makes unnecessary). No independent pair passed in 60 runs (23 and 16 binary
attributes, 10 of 5 values, epsilon 0.2 to 8, 5 seeds), where a normal approximation of the
L1 norm (its mean and standard deviation) at the same level let some through in 18: it is too
light-tailed for tables of a few cells. The price is every dependence too weak for the first
phase to see, and with the first phase's default share, about 30 users a pair on the DP2-Pub
paper's binary datasets, that is every dependence: the distance two balanced binary
attributes need to pass (19.2, 3.35, 1.64, 1.08, 1.01 at epsilon = 0.2, 1, 2, 4, 8) exceeds
the largest they can have (1, two copies of one attribute).

Both errors are errors against the *population's* marginal. A user drawn at random from the
population supports cell ``c`` of their report with probability ``s = q* + p_c (p* - q*)``
(the oracle's ``p*`` and ``q*``, Wang et al., USENIX Security 2017, section 3), so its unbiased
estimate ``(1[c in support] - q*) / (p* - q*)`` has variance ``s (1 - s) / (p* - q*)^2``
exactly (:func:`cell_variances`), the oracle's noise and the sampling of the users in one: a
group of ``m`` users errs by that over ``m`` (drawn with replacement; drawn without, as the
groups are, the sampling part is smaller by ``(n - m) / (n - 1)``). The sampling part
dominates at large budgets; without it the rule would choose more pairs than the users can
measure well. A sum of independent ``N(0, v_c / m)`` errors has the expected L1 norm
``sqrt(2 / (pi m)) * sum_c sqrt(v_c)`` (:func:`expected_l1`). The noise error of a measured
pair is that norm with the users of both phases. The second
phase's users are split among the chosen pairs and the attributes they leave uncovered
(measured alone).
"""

from __future__ import annotations

import math

import numpy as np


def cell_variances(freq: np.ndarray, p_star: float, q_star: float) -> np.ndarray:
    """Per-user variance of each cell of a group's unbiased estimate of the population's
    marginal ``freq`` through an oracle of support probabilities ``p_star`` and ``q_star``:
    ``s (1 - s) / (p* - q*)^2`` with ``s = q* + p (p* - q*)`` (module docstring). With
    ``p* = 1, q* = 0`` (exact reports) it is the sampling variance ``p (1 - p)``."""
    p = np.clip(np.asarray(freq, dtype=np.float64), 0.0, 1.0)
    s = q_star + p * (p_star - q_star)
    return s * (1.0 - s) / (p_star - q_star) ** 2


def expected_l1(variances: np.ndarray, users: float | np.ndarray = 1.0) -> np.ndarray:
    """Expected L1 norm of independent N(0, ``variances[c] / users``) errors (along the last
    axis): ``sqrt(2 / (pi users)) * sum_c sqrt(variances[c])``."""
    return np.sqrt(2.0 / (math.pi * np.asarray(users, dtype=np.float64))) * np.sqrt(variances).sum(axis=-1)


def l1_spread(k: int, users: float, p_star: float, q_star: float) -> float:
    """A Lipschitz constant of the L1 norm of a group's error (k cells, ``users`` users) as a
    function of the standard normal noise of its normal approximation:
    ``sqrt((k q* + p* - q*) / (users (p* - q*)^2))``.

    The error's covariance is at most ``D = diag(s) / (users (p* - q*)^2)`` in the PSD order
    (GRR's per-user covariance is ``diag(s) - s s^T``; OUE's bits are slightly negatively
    correlated through the user's one value), and for ``e = A g`` with ``A A^T <= D``,
    ``| ||A u||_1 - ||A u'||_1 | <= max_w w^T A (u - u') <= sqrt(trace D) ||u - u'||_2`` over
    sign vectors ``w``; ``sum_c s_c = k q* + p* - q*``. For GRR (``k q* + p* - q* = 1``) the
    same tail bound also holds without the approximation, by McDiarmid's inequality: one user's
    report moves the L1 norm by at most ``2 / (users (p* - q*))``.
    """
    return math.sqrt((k * q_star + p_star - q_star) / (users * (p_star - q_star) ** 2))


def dependence_margin(candidates: int, level: float) -> float:
    """How many :func:`l1_spread` above its mean under independence a pair's distance must be
    for the pair to count as dependent: ``sqrt(2 ln(candidates / level))``, so that by
    Gaussian concentration (a Lipschitz function ``f`` of standard normal noise exceeds its
    mean by ``t L`` with probability at most ``exp(-t^2 / 2)``) each independent pair passes
    with probability at most about ``level / candidates``, and some pair of all of them with
    at most about ``level`` (about: the normal approximation of the error, and its mean
    taken at estimated frequencies)."""
    return math.sqrt(2.0 * math.log(max(candidates, 1) / level))


def dependence(
    table: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    users: int,
    support: tuple[float, float],
    margin: float,
    variances: np.ndarray | None = None,
) -> float:
    """Estimated InDif of a pair from the unbiased estimate ``table`` (k_a x k_b) of ``users``
    users whose oracle has the support probabilities ``support = (p*, q*)``, and estimates of
    its 1-way marginals ``first`` and ``second``: 0 unless the distance to their product
    exceeds the mean that the error alone gives under independence by ``margin`` times
    :func:`l1_spread`, else that excess over the mean, within [0, 2]. ``variances``: the
    cells' per-user variances under independence when not :func:`cell_variances` of the
    product (an estimate summed onto merged values)."""
    product = np.outer(first, second)
    if variances is None:
        variances = cell_variances(product, *support)
    excess = float(np.abs(table - product).sum() - expected_l1(variances.ravel(), users))
    if excess <= margin * l1_spread(product.size, users, *support):
        return 0.0
    return min(excess, 2.0)


def select_pairs(
    pairs: list[tuple[int, int]],
    dependency: np.ndarray,
    scale: np.ndarray,
    first_users: np.ndarray,
    second_users: int,
    lone: int = 0,
) -> list[int]:
    """Indices of the pairs to measure again, in the order chosen.

    Args:
        pairs: the candidate pairs of attributes.
        dependency: each pair's estimated InDif (:func:`dependence`).
        scale: each pair's ``sum_c sqrt(v_c)`` over its cells' per-user variances
            (:func:`cell_variances`): its estimate from ``m`` users errs by
            ``sqrt(2 / (pi m)) * scale`` in expected L1 norm.
        first_users: users behind each pair's first-phase estimate.
        second_users: the users of the second phase, split evenly among the chosen pairs and
            the attributes they leave uncovered.
        lone: attributes in no candidate pair, each measured alone by a second-phase group
            whatever is chosen.
    """
    dependency = np.asarray(dependency, dtype=np.float64)
    attributes = sorted({a for pair in pairs for a in pair})
    chosen: list[int] = []
    covered: set[int] = set()
    best = float(dependency.sum())

    def noise(groups: int) -> np.ndarray:
        return np.sqrt(2.0 / (math.pi * (first_users + second_users / groups))) * scale

    while len(chosen) < dependency.size:
        new = np.array([(a not in covered) + (b not in covered) for a, b in pairs])
        totals = np.full(dependency.size, np.inf)
        for gained in (0, 1, 2):
            groups = len(chosen) + 1 + len(attributes) - len(covered) - gained + lone
            errors = noise(groups)
            base = errors[chosen].sum() + dependency.sum() - dependency[chosen].sum()
            at = new == gained
            totals[at] = (base + errors - dependency)[at]
        totals[chosen] = np.inf
        pick = int(np.argmin(totals))
        if not totals[pick] < best:
            break
        chosen.append(pick)
        covered |= set(pairs[pick])
        best = float(totals[pick])
    return chosen
