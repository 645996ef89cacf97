"""Exact privacy audits from a mechanism's transition probabilities.

A mechanism with channel ``P[x, y] = Pr[output y | input x]`` is epsilon-LDP iff for every
output y and inputs x, x': ``P[x, y] <= e^epsilon P[x', y]`` (Warner-style definition used by
Wang et al. 2017, Definition 1).
"""

from __future__ import annotations

import math

import numpy as np


def privacy_loss(channel: np.ndarray) -> float:
    """The privacy loss ``max_{y, x, x'} ln(P[x, y] / P[x', y])`` of a channel.

    The maximum runs over the outputs ``y`` that some input can produce; the loss is
    infinite if an output is possible under one input and impossible under another.

    Parameters
    ----------
    channel : numpy.ndarray
        The transition matrix ``P[x, y] = Pr[output y | input x]``, one row per input
        (e.g. :meth:`dp2pub.mechanisms.oracle.FrequencyOracle.transition_matrix`).

    Returns
    -------
    float
        The smallest epsilon for which the channel is epsilon-LDP (``math.inf`` if none is).

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, Definition 1.

    Examples
    --------
    >>> from dp2pub import GRR, privacy_loss
    >>> round(privacy_loss(GRR(epsilon=1.0, k=4).transition_matrix()), 6)
    1.0
    >>> privacy_loss([[1.0, 0.0], [0.5, 0.5]])  # output 1 is impossible for input 0
    inf
    """
    channel = np.asarray(channel, dtype=np.float64)
    reachable = channel.max(axis=0) > 0
    low = channel[:, reachable].min(axis=0)
    high = channel[:, reachable].max(axis=0)
    if np.any(low == 0):
        return math.inf
    return float(np.max(np.log(high) - np.log(low)))


def satisfies_ldp(channel: np.ndarray, epsilon: float, rtol: float = 1e-9) -> bool:
    """Whether ``channel`` is epsilon-LDP, up to floating-point rounding.

    Parameters
    ----------
    channel : numpy.ndarray
        The transition matrix ``P[x, y] = Pr[output y | input x]``, one row per input.
    epsilon : float
        The budget to check against.
    rtol : float, optional
        Relative tolerance on ``epsilon`` for rounding in the channel's probabilities
        (an absolute ``1e-12`` is allowed too).

    Returns
    -------
    bool
        True if :func:`privacy_loss` of ``channel`` is at most ``epsilon (1 + rtol) + 1e-12``.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, Definition 1.

    Examples
    --------
    An exact audit of optimized unary encoding's channel over all ``2^k`` reports:

    >>> from dp2pub import OUE, satisfies_ldp
    >>> channel = OUE(epsilon=2.0, k=3).transition_matrix()
    >>> channel.shape
    (3, 8)
    >>> satisfies_ldp(channel, 2.0), satisfies_ldp(channel, 1.9)
    (True, False)
    """
    return privacy_loss(channel) <= epsilon * (1 + rtol) + 1e-12
