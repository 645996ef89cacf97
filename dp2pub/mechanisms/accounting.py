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

Items may instead spend rho-zCDP (MST, AIM): the rho's of the items a user pays add up
exactly, and their sum is converted to epsilon at the items' delta
(:func:`dp2pub.mechanisms.zcdp.zcdp_epsilon`), then added to the user's pure epsilon's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dp2pub.mechanisms.zcdp import zcdp_epsilon

#: The user group of an item spent by every user.
ALL_USERS = "all"
#: Neighbouring tables of a central guarantee: one record replaced (n fixed and public), or
#: one record added or removed (n private).
REPLACE_ONE = "replace-one"
ADD_REMOVE = "add/remove"


@dataclass(frozen=True)
class Spend:
    """One item of a privacy ledger: ``epsilon`` spent in a phase on an attribute by a group.

    ``epsilon = inf`` records a query answered on the true data without noise (no finite
    guarantee). An item of a zCDP mechanism spends ``rho`` instead (its ``epsilon`` 0),
    converted at ``delta`` once the ledger's rho's are added up (:func:`epsilon_spent`).

    Parameters
    ----------
    phase : str
        What the budget was spent on: ``perturb``, ``structure``, ``report``, ...
    attribute : str
        The attribute (or a description of the items) the budget was spent on.
    epsilon : float
        The pure epsilon spent, >= 0 (``inf``: no bound; 0 for a zCDP item).
    users : str, optional
        :data:`ALL_USERS` (``"all"``, default), or the name of one of disjoint groups of
        users who alone pay this item (composed in parallel).
    rho : float, optional
        The rho-zCDP spent (finite, >= 0; default 0).
    delta : float, optional
        The delta in [0, 1) at which a zCDP item's rho converts to epsilon (> 0 when ``rho``
        is).
    neighbours : str, optional
        The neighbouring tables a central guarantee is for (:data:`REPLACE_ONE`:
        ``replace-one``, n fixed and public; :data:`ADD_REMOVE`: ``add/remove``, one record
        more or less); empty (default) for a local one, which holds for any two values of
        one user's record.

    Raises
    ------
    ValueError
        If ``epsilon`` is negative or NaN (``a ledger item spends an epsilon >= 0 ...``), if
        ``rho`` or ``delta`` is out of range, or if an item spending ``rho > 0`` has no
        ``delta > 0`` or a non-zero ``epsilon``.

    Examples
    --------
    >>> from dp2pub import Spend
    >>> Spend("perturb", "age", 0.5)
    Spend(phase='perturb', attribute='age', epsilon=0.5, users='all', rho=0.0, delta=0.0, neighbours='')
    >>> try:
    ...     Spend("perturb", "age", -1.0)
    ... except ValueError as error:
    ...     print(error)
    a ledger item spends an epsilon >= 0 (inf: no bound), not -1.0 (perturb, age)
    """

    phase: str
    attribute: str
    epsilon: float
    users: str = ALL_USERS
    rho: float = 0.0
    delta: float = 0.0
    neighbours: str = ""

    def __post_init__(self) -> None:
        where = f"({self.phase}, {self.attribute})"
        if not self.epsilon >= 0.0:  # NaN fails too; inf: a query answered without noise
            raise ValueError(f"a ledger item spends an epsilon >= 0 (inf: no bound), not {self.epsilon!r} {where}")
        if not (0.0 <= self.rho < math.inf and 0.0 <= self.delta < 1.0):
            raise ValueError(f"a ledger item spends a finite rho >= 0 at a delta in [0, 1), not {self!r}")
        if self.rho > 0.0 and not (self.delta > 0.0 and self.epsilon == 0.0):
            raise ValueError(f"an item that spends rho > 0 has a delta > 0 and epsilon 0 {where}")


def epsilon_spent(ledger: Sequence[Spend]) -> float | None:
    """The per-user privacy cost of a ledger.

    A user pays the items of every user plus those of their own group (sequential
    composition); the cost is the largest over the disjoint groups (parallel composition).
    Sums are exact (``math.fsum``), so shares from :func:`fit_shares` never exceed the budget.
    A user's rho's (zCDP items) add up exactly and convert at the ledger's one delta
    (:func:`dp2pub.mechanisms.zcdp.zcdp_epsilon`).

    Parameters
    ----------
    ledger : sequence of Spend
        The items spent (:attr:`dp2pub.publish.base.Outcome.ledger`).

    Returns
    -------
    float or None
        The epsilon a user pays at most, or None for an empty ledger (no budget used).

    Raises
    ------
    ValueError
        If the zCDP items name different deltas (``the zCDP items of one ledger convert at
        one delta, not [...]``).

    Examples
    --------
    Every user pays the structure phase; two disjoint groups each pay one report:

    >>> from dp2pub import Spend, epsilon_spent
    >>> ledger = [
    ...     Spend("structure", "network", 0.2),
    ...     Spend("report", "age", 1.0, users="group 1"),
    ...     Spend("report", "sex", 1.0, users="group 2"),
    ... ]
    >>> epsilon_spent(ledger)
    1.2
    >>> epsilon_spent([]) is None
    True
    """
    if not ledger:
        return None
    deltas = {item.delta for item in ledger if item.rho > 0.0}
    if len(deltas) > 1:
        raise ValueError(f"the zCDP items of one ledger convert at one delta, not {sorted(deltas)}")
    groups = {item.users for item in ledger if item.users != ALL_USERS} or {ALL_USERS}
    return max(_user_epsilon([item for item in ledger if item.users in (ALL_USERS, group)]) for group in groups)


def _user_epsilon(items: Sequence[Spend]) -> float:
    """What one user pays for ``items``: the exact sum of their epsilon's, plus their rho's
    exact sum converted to epsilon at their delta."""
    rho = math.fsum(item.rho for item in items)
    pure = math.fsum(item.epsilon for item in items)
    if rho == 0.0:
        return pure
    return pure + zcdp_epsilon(rho, next(item.delta for item in items if item.rho > 0.0))


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
    """The share of each of ``parts`` equal uses of a budget, never summing above it.

    ``epsilon / parts`` is rounded to the nearest float, up as often as down, so ``parts``
    such shares can add up to a hair more than ``epsilon``; the share is lowered by a few
    units in the last place until their exact sum (``math.fsum``) is at most ``epsilon``
    (:func:`fit_shares`).

    Parameters
    ----------
    epsilon : float
        The budget to split.
    parts : int
        The number of equal uses, >= 1.

    Returns
    -------
    float
        The share of one use.

    Examples
    --------
    >>> import math
    >>> from dp2pub import split_budget
    >>> math.fsum([1e-5 / 10] * 10)  # the rounded quotient overspends
    1.0000000000000003e-05
    >>> share = split_budget(1e-5, 10)
    >>> math.fsum([share] * 10) <= 1e-5
    True
    >>> split_budget(1.0, 4)
    0.25
    """
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
