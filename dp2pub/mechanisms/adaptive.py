"""The frequency oracle of smaller variance for a domain: GRR or OUE.

Wang, Blocki, Li & Jha, "Locally Differentially Private Protocols for Frequency
Estimation", USENIX Security 2017, section 5: the variance of an estimated frequency near 0
is ``(e^eps + k - 2) / (n (e^eps - 1)^2)`` for GRR and ``4 e^eps / (n (e^eps - 1)^2)`` for
OUE, so GRR is the better oracle exactly when ``k < 3 e^eps + 2``. :func:`adaptive_oracle`
compares the two closed forms (:meth:`FrequencyOracle.variance`) rather than the rule, so it
stays right for any candidates.
"""

from __future__ import annotations

from collections.abc import Sequence

from dp2pub.mechanisms.grr import GRR
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.mechanisms.oracles import ORACLES
from dp2pub.mechanisms.unary import OUE

#: The oracles ``adaptive`` chooses from, in the order ties go.
CANDIDATES: tuple[type[FrequencyOracle], ...] = (GRR, OUE)


def adaptive_oracle(
    epsilon: float, k: int, candidates: Sequence[type[FrequencyOracle]] = CANDIDATES
) -> FrequencyOracle:
    """The candidate oracle at ``epsilon`` over ``k`` values whose estimates have the
    smallest closed-form variance (the first of equals)."""
    oracles = [candidate(epsilon=epsilon, k=k) for candidate in candidates]
    return min(oracles, key=lambda oracle: oracle.variance(1))


def build_oracle(name: str, epsilon: float, k: int, **options: object) -> FrequencyOracle:
    """The oracle ``name`` (a key of :data:`dp2pub.mechanisms.ORACLES`, or ``adaptive``:
    :func:`adaptive_oracle`, which takes no options) at ``epsilon`` over ``k`` values."""
    if name == "adaptive":
        return adaptive_oracle(epsilon, int(k))
    return ORACLES[name](epsilon=epsilon, k=int(k), **options)
