"""DP2-Pub's release budget per cluster (Jiang et al., IEEE TKDE 2023, section 4.3).

``H(A)`` is the full empirical entropy of attribute A's estimated distribution,
``-sum_v p(v) ln p(v)`` over its whole domain (not the single term ``-(1/k) ln(1/k)``,
which even falls as the domain grows; docs/design.md, pitfalls). A cluster's information fraction is
``CIF(C) = sum_{A in C} H(A) / sum_all H(A)``; its budget weight is
``PBC(C) = (1 / CIF(C)) / sum_j (1 / CIF(C_j))``; cluster C receives ``eps2 * PBC(C)``, split
evenly over its attributes. Every user reports every attribute once, so the release phase
costs each user ``sum_C eps2 PBC(C) = eps2``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def cluster_weights(clusters: Sequence[Sequence[int]], entropies: Sequence[float]) -> np.ndarray:
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
