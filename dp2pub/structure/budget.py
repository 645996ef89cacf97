"""DP2-Pub's release budget per cluster (Jiang et al., IEEE TKDE 2023, section 4.3, eqs. 2-3).

``H(A)`` is the full empirical entropy of attribute A's estimated distribution,
``-sum_v p(v) ln p(v)`` over its whole domain (not the single term ``-(1/k) ln(1/k)``,
which even falls as the domain grows; docs/explanation/pitfalls.md). A cluster's information fraction is
``CIF(C) = sum_{A in C} H(A) / sum_all H(A)``; its budget weight is
``PBC(C) = (1 / CIF(C)) / sum_j (1 / CIF(C_j))``; cluster C receives ``eps2 * PBC(C)``, split
evenly over its attributes. Every user reports every attribute once, so the release phase
costs each user ``sum_C eps2 PBC(C) = eps2``. (The paper's eq. 3 sums over ``j = 1..d`` in
the denominator; the clusters are ``1..t``, and only that sum makes the weights sum to one.)

The paper takes the entropies "based on the probability distributions over the dataset": on
the true data, a query its privacy analysis does not account for. :func:`noisy_entropies`
answers it with the Laplace mechanism instead, using the sensitivity of the empirical
entropy (:func:`entropy_sensitivity`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dp2pub.structure.information import entropy


def cluster_weights(clusters: Sequence[Sequence[int]], entropies: Sequence[float] | np.ndarray) -> np.ndarray:
    """``PBC(C)`` of every cluster; clusters with zero information share what is left equally."""
    cif = np.array([sum(entropies[a] for a in c) for c in clusters], dtype=np.float64)
    total = cif.sum()
    if total <= 0:
        return np.full(len(clusters), 1.0 / len(clusters))
    cif /= total
    inverse = np.divide(1.0, cif, out=np.zeros_like(cif), where=cif > 0)
    if np.any(cif == 0):  # a constant cluster needs no budget to be exact; give it the largest share
        inverse[cif == 0] = inverse.max() if inverse.any() else 1.0
    return inverse / inverse.sum()


def attribute_budgets(clusters: Sequence[Sequence[int]], weights: np.ndarray, epsilon2: float, d: int) -> np.ndarray:
    """Per-attribute release budget: ``eps2 * PBC(C) / |C|`` for each attribute of cluster C."""
    budgets = np.zeros(d)
    for cluster, weight in zip(clusters, weights):
        budgets[list(cluster)] = epsilon2 * weight / len(cluster)
    return budgets


def entropy_sensitivity(n: int) -> float:
    """The global sensitivity of the empirical entropy (nats) of one attribute over n records,
    neighbours differing in one record's value (n fixed).

    ``H = ln n - (1/n) sum_v f(c_v)`` with ``f(c) = c ln c``. Changing one record moves one
    count down and another up by one: ``n dH = g(c_a - 1) - g(c_b)`` with
    ``g(c) = f(c + 1) - f(c)``, increasing from ``g(0) = 0`` to ``g(n - 1) = f(n) - f(n - 1)``.
    So ``|dH| <= (f(n) - f(n - 1)) / n = (1/n) ln n + ((n-1)/n) ln(n / (n-1))``, reached from
    a constant column (H = 0) to one with a single other value. It equals the binary case of
    PrivBayes' mutual-information sensitivity (Zhang et al., SIGMOD 2014, Lemma 1).
    """
    if n < 2:
        return math.log(2)  # n = 1: H is 0 whatever the value; any positive bound is safe
    return math.log(n) / n + (n - 1) / n * math.log(n / (n - 1))


def exact_entropies(codes: np.ndarray, sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    """Every attribute's empirical entropy (nats) on the table ``codes`` (no noise)."""
    return np.array([entropy(codes[:, j], [int(sizes[j])]) for j in range(codes.shape[1])])


def noisy_entropies(
    codes: np.ndarray, sizes: Sequence[int] | np.ndarray, epsilon_each: float, rng: np.random.Generator
) -> np.ndarray:
    """Every attribute's entropy with Laplace noise: each is ``epsilon_each``-DP (the Laplace
    mechanism, scale ``entropy_sensitivity(n) / epsilon_each``), then clipped to its range
    ``[0, ln k]`` (post-processing)."""
    n, d = codes.shape
    noisy = exact_entropies(codes, sizes) + rng.laplace(0.0, entropy_sensitivity(n) / epsilon_each, size=d)
    return np.clip(noisy, 0.0, np.log(np.asarray(sizes, dtype=np.float64)))
