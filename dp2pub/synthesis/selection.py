"""Which 2-way marginals to measure: PrivSyn's greedy selection, fed by LDP reports.

Zhang et al., "PrivSyn: Differentially Private Data Synthesis", USENIX Security 2021, section
4 (DenseMarg): a pair left unmeasured is synthesized about as if its attributes were
independent, which costs its *dependency error* ``InDif = ||P_ab - P_a x P_b||_1``; a measured
pair costs its *noise error*, which grows with the number of measured pairs as they share the
users. PrivSyn adds pairs greedily while the sum of the two errors falls.

PrivSyn measures InDif on the true data (central DP, with noise). Under LDP nobody holds the
true data, so here InDif is estimated in a first phase: each candidate pair's unbiased estimate
made by its own group of users, against the product of the two attributes' 1-way marginals
estimated from all the first-phase reports (so much less noisy than the pair's own sums), less
the L1 norm the estimate's noise alone gives, ``cells * sqrt(2 v / pi)`` (the expected
``|N(0, v)|`` of each of its cells), and kept within [0, 2], the range of an L1 distance between
distributions. The noise error of a measured pair is the expected L1 norm of its estimate's
error, ``cells * sqrt(2 v / pi)``, with ``v`` the per-cell variance of the first-phase estimate
combined (inverse-variance weights) with the second phase's. Both use the variance of a
group's estimate of the *population's* marginal (:func:`population_variance`): the oracle's
and the group's sampling variance. The second phase's users are
split among the chosen pairs and the attributes no chosen pair covers (measured alone).
"""

from __future__ import annotations

import math

import numpy as np


def population_variance(
    user_variance: np.ndarray | float, cells: np.ndarray | int, users: np.ndarray | float
) -> np.ndarray:
    """Per-cell variance of a group's estimate of the whole population's marginal: the
    oracle's ``user_variance / users`` plus the group's own sampling variance ``p (1 - p) /
    users``, taken at the uniform ``p = 1 / cells`` (its largest mean over the cells). The
    second term dominates at large budgets, where it keeps more pairs from being chosen than
    the users can measure."""
    cells = np.asarray(cells, dtype=np.float64)
    return (np.asarray(user_variance) + (1.0 - 1.0 / cells) / cells) / np.asarray(users)


def expected_l1(cells: np.ndarray | int, variance: np.ndarray | float) -> np.ndarray:
    """Expected L1 norm of ``cells`` independent N(0, ``variance``) errors."""
    return np.asarray(cells) * np.sqrt(2.0 * np.asarray(variance) / math.pi)


def dependence(table: np.ndarray, variance: float, first: np.ndarray, second: np.ndarray) -> float:
    """Estimated InDif of a pair from an unbiased estimate ``table`` (k_a x k_b, per-cell
    variance ``variance``) and estimates of its 1-way marginals ``first`` and ``second``: the
    distance to their product, less what the noise alone gives, within [0, 2]."""
    excess = np.abs(table - np.outer(first, second)).sum() - expected_l1(table.size, variance)
    return float(np.clip(excess, 0.0, 2.0))


def select_pairs(
    pairs: list[tuple[int, int]],
    dependency: np.ndarray,
    cells: np.ndarray,
    user_variance: np.ndarray,
    first_users: np.ndarray,
    second_users: int,
) -> list[int]:
    """Indices of the pairs to measure again, in the order chosen.

    Args:
        pairs: the candidate pairs of attributes.
        dependency: each pair's estimated InDif (:func:`dependence`).
        cells: each pair's number of cells.
        user_variance: each pair's per-cell variance of one user's report
            (:meth:`FrequencyOracle.variance` at ``n = 1``).
        first_users: users behind each pair's first-phase estimate.
        second_users: the users of the second phase, split evenly among the chosen pairs and
            the attributes they leave uncovered.
    """
    dependency = np.asarray(dependency, dtype=np.float64)
    attributes = sorted({a for pair in pairs for a in pair})
    chosen: list[int] = []
    covered: set[int] = set()
    best = float(dependency.sum())

    def noise(groups: int) -> np.ndarray:
        return expected_l1(cells, population_variance(user_variance, cells, first_users + second_users / groups))

    while len(chosen) < dependency.size:
        new = np.array([(a not in covered) + (b not in covered) for a, b in pairs])
        totals = np.full(dependency.size, np.inf)
        for gained in (0, 1, 2):
            groups = len(chosen) + 1 + len(attributes) - len(covered) - gained
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
