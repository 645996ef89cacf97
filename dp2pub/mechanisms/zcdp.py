"""Zero-concentrated differential privacy (zCDP) and its conversion to (epsilon, delta)-DP.

MST and AIM (McKenna et al.) account in rho-zCDP (Bun and Steinke, TCC 2016): the Gaussian
mechanism with L2 sensitivity 1 and noise ``N(0, sigma^2)`` is ``1 / (2 sigma^2)``-zCDP,
the exponential mechanism at epsilon is ``epsilon^2 / 8``-zCDP (Cesar and Rogers, 2021, its
bounded range), and rho's of a sequence add up. The total is converted to (epsilon, delta)
with the bound of Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
Privacy" (NeurIPS 2020, arXiv 2004.00010; its conversion from concentrated to approximate
DP), the one the published MST and AIM scripts use (private-pgm's ``mechanisms/cdp2adp.py``)::

    delta = inf over alpha > 1 of exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1/alpha)^alpha

Any ``alpha > 1`` gives a valid delta, so a numerically imperfect optimum only overstates
delta. :func:`zcdp_epsilon` returns an epsilon whose delta is checked to be at most the
target (the upper end of a bisection); :func:`zcdp_rho` the largest rho found whose
:func:`zcdp_epsilon` is checked to be at most the budget. The ledger composes with the same
function, so a mechanism that spends :func:`zcdp_rho` (in shares from
:func:`fit_rho_shares`) spends at most epsilon exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

#: Bisection steps: enough to narrow [0, 1e6] to below one ulp of the answer.
BISECTION_STEPS = 200
#: The smallest alpha tried, as private-pgm's conversion does (numerical stability near 1).
MIN_ALPHA = 1.01


def best_alpha(rho: float, epsilon: float) -> float:
    """The alpha > 1 that minimizes the delta of :func:`zcdp_delta`, where the derivative of
    its logarithm, ``(2 alpha - 1) rho - epsilon + log(1 - 1/alpha)``, is 0 (increasing in
    alpha); at least :data:`MIN_ALPHA`. The bisection ends once its interval stops changing
    (adjacent floats, some 60 steps), where the :data:`BISECTION_STEPS` steps end too."""
    low, high = MIN_ALPHA, (epsilon + 1.0) / (2.0 * rho) + 2.0
    for _ in range(BISECTION_STEPS):
        alpha = (low + high) / 2.0
        before = low, high
        if (2.0 * alpha - 1.0) * rho - epsilon + math.log1p(-1.0 / alpha) < 0.0:
            low = alpha
        else:
            high = alpha
        if (low, high) == before:  # a step that changes nothing changes nothing ever after
            break
    return (low + high) / 2.0


def zcdp_delta(rho: float, epsilon: float) -> float:
    """The delta at which rho-zCDP implies (epsilon, delta)-DP (Canonne, Kamath, Steinke
    2020), at most 1."""
    if rho < 0.0 or epsilon < 0.0:
        raise ValueError(f"rho and epsilon >= 0, not rho={rho!r}, epsilon={epsilon!r}")
    if rho == 0.0:
        return 0.0
    alpha = best_alpha(rho, epsilon)
    log_delta = (alpha - 1.0) * (alpha * rho - epsilon) + alpha * math.log1p(-1.0 / alpha) - math.log(alpha - 1.0)
    return math.exp(min(log_delta, 0.0))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The smallest epsilon found (to the last bisection step) such that rho-zCDP implies
    (epsilon, delta)-DP: ``zcdp_delta(rho, epsilon) <= delta`` holds for the value returned.
    Starts from the classical bound ``rho + 2 sqrt(rho log(1/delta))`` (Bun and Steinke,
    Prop. 1.3), which always holds."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta in (0, 1), not {delta!r}")
    if rho == 0.0:
        return 0.0
    high = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    while zcdp_delta(rho, high) > delta:  # never seen; guards the bound's rounding
        high *= 2.0
    return boundary(lambda epsilon: zcdp_delta(rho, epsilon) <= delta, 0.0, high)[1]


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest rho found such that rho-zCDP implies (epsilon, delta)-DP:
    ``zcdp_epsilon(rho, delta) <= epsilon`` holds for the value returned."""
    if not (epsilon > 0.0 and math.isfinite(epsilon)):
        raise ValueError(f"a finite epsilon > 0, not {epsilon!r}")
    fits = lambda rho: zcdp_epsilon(rho, delta) <= epsilon  # noqa: E731
    low, high = 0.0, epsilon
    while fits(high):  # never: epsilon(rho) > rho for delta < 1
        low, high = high, 2.0 * high
    return boundary(lambda rho: not fits(rho), low, high)[0]


def boundary(above: Callable[[float], bool], low: float, high: float) -> tuple[float, float]:
    """``(low, high)`` narrowed by bisection to adjacent floats (or :data:`BISECTION_STEPS`
    steps) around where ``above`` turns true, ``above`` false at ``low`` and true at ``high``
    (assumed of the ends given, checked of every point tried)."""
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if above(middle):
            high = middle
        else:
            low = middle
    return low, high


def fit_rho_shares(shares: Sequence[float], epsilon: float, delta: float) -> list[float]:
    """``shares`` of rho (each >= 0), each lowered by the same few ulps if needed, so that
    their exact sum (``math.fsum``, as the ledger composes them) converts to at most
    ``epsilon`` at ``delta`` (:func:`zcdp_epsilon`). Shares that are equal stay equal."""
    fitted = [float(share) for share in shares]
    while zcdp_epsilon(math.fsum(fitted), delta) > epsilon:
        fitted = [math.nextafter(share, 0.0) for share in fitted]
    return fitted


def gaussian_rho(sigma: float, sensitivity: float = 1.0) -> float:
    """The zCDP of the Gaussian mechanism: ``sensitivity^2 / (2 sigma^2)`` (Bun and Steinke,
    Prop. 1.6)."""
    return sensitivity**2 / (2.0 * sigma**2)


def exponential_rho(epsilon: float) -> float:
    """The zCDP of the exponential mechanism at ``epsilon`` (score sensitivity 1, draws
    ``∝ exp(epsilon score / 2)``): ``epsilon^2 / 8`` (Cesar and Rogers 2021, Lemma 3.2; the
    bound AIM and MST use)."""
    return epsilon**2 / 8.0
