"""The privacy ledger and budget shares whose exact sum never exceeds the budget.

A publisher records what it spends as :class:`Spend` items; :func:`epsilon_spent` composes
them into the per-user cost: sequentially (a sum) over the items spent by the same users,
in parallel (a maximum) over disjoint groups of users.

``epsilon / d`` is rounded to the nearest float, up as often as down, so d such shares can
add up to a hair more than epsilon (``3 * (0.1 / 3) > 0.1``; ``10 * (1e-5 / 10) = 1.0000000000000003e-05``).
Every publisher that splits its budget takes its shares from :func:`fit_shares`, which lowers
them by a few units in the last place until their exact sum (``math.fsum``, the same sum
that composes the ledger into ``epsilon_spent``) is at most the budget, or from
:func:`two_shares`, two parts whose exact sum is the budget: the accounting is then exact,
with no tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: The user group of an item spent by every user.
ALL_USERS = "all"


@dataclass(frozen=True)
class Spend:
    """One item of a privacy ledger: ``epsilon`` spent in ``phase`` (``perturb``,
    ``structure``, ``report``, ...) on ``attribute`` by the users of group ``users``
    (:data:`ALL_USERS`, or the name of one of disjoint groups of users). ``epsilon = inf``
    records a query answered on the true data without noise (no finite guarantee)."""

    phase: str
    attribute: str
    epsilon: float
    users: str = ALL_USERS

    def __post_init__(self) -> None:
        if not self.epsilon >= 0.0:  # NaN fails too; inf: a query answered without noise
            raise ValueError(
                f"a ledger item spends an epsilon >= 0 (inf: no bound), not {self.epsilon!r} "
                f"({self.phase}, {self.attribute})"
            )


def epsilon_spent(ledger: Sequence[Spend]) -> float | None:
    """The per-user privacy cost of ``ledger``, or None for an empty ledger (no budget used).

    A user pays the items of every user plus those of their own group (sequential
    composition); the cost is the largest over the disjoint groups (parallel composition).
    Sums are exact (``math.fsum``), so shares from :func:`fit_shares` never exceed the budget.
    """
    if not ledger:
        return None
    shared = [item.epsilon for item in ledger if item.users == ALL_USERS]
    groups = {item.users for item in ledger if item.users != ALL_USERS}
    if not groups:
        return math.fsum(shared)
    return max(math.fsum(shared + [item.epsilon for item in ledger if item.users == group]) for group in groups)


def fit_shares(shares: Sequence[float], epsilon: float, spent: Sequence[float] = ()) -> list[float]:
    """``shares`` (each >= 0), each lowered by the same few ulps if needed, so that with the
    shares already ``spent`` (used as they are) ``math.fsum`` of all is at most ``epsilon``.
    Shares that are equal stay equal.

    Raises:
        ValueError: if ``spent`` alone exceeds ``epsilon``.
    """
    if math.fsum(spent) > epsilon:
        raise ValueError(f"shares already spent ({math.fsum(spent)!r}) exceed the budget {epsilon!r}")
    fitted = [float(share) for share in shares]
    while math.fsum([*spent, *fitted]) > epsilon:
        fitted = [math.nextafter(share, 0.0) for share in fitted]
    return fitted


def split_budget(epsilon: float, parts: int) -> float:
    """The share of each of ``parts`` equal uses of ``epsilon`` (``epsilon / parts``, lowered
    so that ``parts`` of them sum to at most ``epsilon``)."""
    return fit_shares([epsilon / parts] * parts, epsilon)[0]


def two_shares(epsilon: float, share: float) -> tuple[float, float]:
    """``(share * epsilon, (1 - share) * epsilon)``, each within an ulp or so, whose exact sum
    (``math.fsum``) is ``epsilon``: the larger part is rounded, the smaller is ``epsilon``
    minus it, which is exact (Sterbenz: the larger part is at least ``epsilon / 2``).
    ``share`` is in [0, 1]; ``epsilon`` is finite and >= 0."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"a share in [0, 1], not {share!r}")
    larger = min(epsilon, max(share, 1.0 - share) * epsilon)
    smaller = epsilon - larger
    return (smaller, larger) if share < 0.5 else (larger, smaller)
