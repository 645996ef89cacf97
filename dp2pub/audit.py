"""Exact privacy audits from a mechanism's transition probabilities.

A mechanism with channel ``P[x, y] = Pr[output y | input x]`` is epsilon-LDP iff for every
output y and inputs x, x': ``P[x, y] <= e^epsilon P[x', y]`` (Warner-style definition used by
Wang et al. 2017, Definition 1).
"""

from __future__ import annotations

import math

import numpy as np


def privacy_loss(channel: np.ndarray) -> float:
    """``max_{y, x, x'} ln(P[x, y] / P[x', y])`` over outputs that some input can produce.

    Infinite if an output is possible under one input and impossible under another.
    """
    channel = np.asarray(channel, dtype=np.float64)
    reachable = channel.max(axis=0) > 0
    low = channel[:, reachable].min(axis=0)
    high = channel[:, reachable].max(axis=0)
    if np.any(low == 0):
        return math.inf
    return float(np.max(np.log(high) - np.log(low)))


def satisfies_ldp(channel: np.ndarray, epsilon: float, rtol: float = 1e-9) -> bool:
    """Whether ``channel`` is epsilon-LDP (up to floating-point rounding ``rtol``)."""
    return privacy_loss(channel) <= epsilon * (1 + rtol) + 1e-12
