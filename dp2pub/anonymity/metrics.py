"""Utility metrics of a k-anonymous table.

- ``ncp``: Normalized Certainty Penalty / Global Certainty Penalty in percent (Xu, Wang, Pei,
  Wang, Shi, Fu, "Utility-based anonymization using local recoding", KDD 2006): a record's
  value of QI ``j`` generalized to a set of ``w`` of the ``s_j`` domain values costs
  ``(w - 1) / (s_j - 1)`` (a hierarchy node: the leaves under it; an interval of ordered
  codes: its width); averaged over QIs and records, a suppressed record costing 1.
- ``discernibility``: Σ_E |E|² + n · |suppressed| (Bayardo & Agrawal, ICDE 2005).
- ``cavg``: (N / #classes) / k, N the published records (LeFevre et al., ICDE 2006).
"""

from __future__ import annotations

import numpy as np


def ncp(widths: np.ndarray, sizes: np.ndarray, n_suppressed: int = 0) -> float:
    """GCP in percent of published records whose QI ``j`` covers ``widths[i, j]`` of the
    ``sizes[j]`` domain values, plus ``n_suppressed`` fully generalized records."""
    widths = np.asarray(widths, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    denom = np.where(sizes > 1, sizes - 1, 1.0)
    per_record = ((widths - 1) / denom).mean(axis=1) if widths.shape[1] else np.zeros(len(widths))
    n = len(widths) + n_suppressed
    return float(100.0 * (per_record.sum() + n_suppressed) / n) if n else 0.0


def discernibility(sizes: np.ndarray, n_suppressed: int, n: int) -> float:
    """Σ |E|² over equivalence classes plus n for every suppressed record."""
    sizes = np.asarray(sizes, dtype=np.float64)
    return float((sizes**2).sum() + float(n) * n_suppressed)


def cavg(sizes: np.ndarray, k: int) -> float:
    """Normalized average class size: (published records / #classes) / k."""
    sizes = np.asarray(sizes)
    return float(sizes.sum() / len(sizes) / k) if len(sizes) else 0.0
