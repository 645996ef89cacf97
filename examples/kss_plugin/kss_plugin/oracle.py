"""The k-subset mechanism (KSS) as a dp2pub frequency oracle.

M. Ye and A. Barg, "Optimal schemes for discrete distribution estimation under locally
differential privacy", IEEE Trans. Inf. Theory 64(8), 2018 (their d-subset mechanism: k
values, subsets of size d); S. Wang, L. Huang, P. Wang, Y. Nie, H. Xu, W. Yang, X.-Y. Li and
C. Qiao, "Mutual information optimally local private discrete distribution estimation",
arXiv:1607.08025, 2016 (their k-subset mechanism: d values, subsets of size k). Here, as in
dp2pub, ``k`` is the domain size and ``m`` the subset size.

A user with value x reports a subset S of m of the k values with

    Pr[S | x] = e^eps / Z  if x in S,   1 / Z  otherwise,   Z = C(k-1, m-1) e^eps + C(k-1, m).   (1)

Equivalently: x is put in S with probability

    p = C(k-1, m-1) e^eps / Z = m e^eps / (m e^eps + k - m),                                       (2)

and the other members are a uniform (m-1)- or m-subset of the k-1 other values. A report
supports the values it holds, so the protocol is pure (Wang et al., USENIX Security 2017) with

    p* = p,   q* = Pr[v in S | x != v] = (p (m-1) + (1-p) m) / (k-1) = (m - p) / (k-1),         (3)

and the base class's unbiased estimate ``(C/n - q*) / (p* - q*)`` is Ye and Barg's estimator.
Ye and Barg's optimal subset size for the l2 risk is near ``k / (e^eps + 1)``.

**What runs.** p is rounded down to a multiple of 2^-32 (``p^``, with a margin for the
floating-point error of (2)) and x in S is an exact Bernoulli(p^) bit (:mod:`dp2pub.mechanisms.bits`);
the other members are the first of a Fisher-Yates shuffle of the k-1 other values, whose
bounded integers are exactly uniform, so each subset is exactly equally likely.
The realized channel is therefore (1) with

    Pr[S | x] = p^ / C(k-1, m-1)  if x in S,   (1 - p^) / C(k-1, m)  otherwise,

whose privacy loss ``ln(p^ (k-m) / ((1-p^) m))`` increases with p^ and equals eps at p^ = p:
rounding p down keeps it at most eps. Everything (p*, q*, ratio, channel, loss, variance)
uses p^.
"""

from __future__ import annotations

import itertools
import math
from numbers import Integral

import numpy as np
from dp2pub import ConfigError
from dp2pub.mechanisms import PackedReports, bits
from dp2pub.mechanisms.chunks import CHUNK_CELLS, chunks

#: Relative margin by which p is lowered before it is put on the 2^-32 grid: covers the few-ulp
#: error of computing (2) in floating point, so the realized p^ never exceeds the exact p.
MARGIN = 16 * 2.0**-53
#: The largest output space :meth:`KSubset.transition_matrix` enumerates.
MAX_OUTPUTS = 1 << 16


def optimal_subset_size(epsilon: float, k: int) -> int:
    """The integer nearest ``k / (e^eps + 1)`` (halves rounded up), at least 1.

    Ye and Barg's l2-optimal size lies next to ``k / (e^eps + 1)``; taking the nearest integer
    (instead of comparing the variance at its floor and ceiling) is this plugin's choice. It is
    below k/2 + 1/2, so it is at most k - 1 for every k >= 2.
    """
    shrink = math.exp(-epsilon)  # k / (e^eps + 1) = k e^-eps / (1 + e^-eps): finite at any budget
    return max(1, math.floor(k * shrink / (1 + shrink) + 0.5))


def check_subset_size(value: object, k: int) -> int:
    """``value`` as a subset size in ``1 .. k-1``, or ConfigError naming ``subset_size``."""
    allowed = f"an integer in 1..{k - 1} for a {k}-value attribute (every attribute of the table), or null"
    if isinstance(value, bool) or not isinstance(value, Integral) or not 1 <= int(value) <= k - 1:
        raise ConfigError("subset_size", value, allowed)
    return int(value)


class KSubset(PackedReports):
    """The k-subset frequency oracle on values ``0 .. k-1`` at budget ``epsilon``.

    Args:
        epsilon: the budget of each report.
        k: the domain size (at least 2).
        subset_size: the size m of every reported subset, in ``1 .. k-1`` (m = 1 is GRR);
            None: :func:`optimal_subset_size`.

    Reports are the subsets' indicator vectors packed into ``ceil(k / 8)`` bytes a user (as
    unary encoding's), so :meth:`support` unpacks them.
    """

    name = "kss"

    def __init__(self, *, epsilon: float, k: int, subset_size: int | None = None) -> None:
        super().__init__(epsilon=epsilon, k=k)
        m = optimal_subset_size(self.epsilon, self.k) if subset_size is None else check_subset_size(subset_size, self.k)
        #: The subset size m.
        self.subset_size = m
        exact = m / (m + (self.k - m) * math.exp(-self.epsilon))  # (2), written with e^-eps
        self._t = bits.threshold(exact * (1 - MARGIN), "down")
        self.check_informative()  # p^ <= m / k: the budget is too small for the grid

    def __repr__(self) -> str:
        return f"KSubset(epsilon={self.epsilon!r}, k={self.k!r}, subset_size={self.subset_size!r})"

    @property
    def p_star(self) -> float:
        """``Pr[x in S | x] = p^``, (2) as realized."""
        return bits.realized(self._t)

    @property
    def q_star(self) -> float:
        """``Pr[v in S | x != v] = (m - p^) / (k - 1)``, (3)."""
        return (self.subset_size - self.p_star) / (self.k - 1)

    @property
    def ratio(self) -> float:
        """``Pr[S | x in S] / Pr[S | x not in S] = p^ (k-m) / ((1-p^) m)`` (at most e^eps)."""
        p, m = self.p_star, self.subset_size
        return p * (self.k - m) / ((1 - p) * m)

    def privacy_loss(self) -> float:
        """``ln`` of :attr:`ratio`: the realized channel's loss, at most epsilon."""
        return math.log(self.ratio)

    @classmethod
    def memory_bytes(cls, n: int, k: int, **options: object) -> int:
        """Packed reports, ``ceil(k / 8)`` bytes a user, and one chunk's work arrays, per user of
        the chunk: the int64 pool of the k-1 other values, the bool comparison of its first m
        and the bool block of k bits (at most k each), the row index and the inside flags (8
        each), and the packed row."""
        users = min(n, max(1, CHUNK_CELLS // max(1, k)))
        return n * ((k + 7) // 8) + users * (8 * (k - 1) + 2 * k + 16 + (k + 7) // 8)

    # ----- client side
    def perturb(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Packed subsets, chunk by chunk over users: shape ``(n, ceil(k / 8))`` uint8."""
        values = self.check_values(values)
        packed = np.empty((values.size, (self.k + 7) // 8), dtype=np.uint8)
        for part in chunks(values.size, self.k):
            packed[part] = np.packbits(self._subsets(values[part].astype(np.intp), rng), axis=1)
        return packed

    def _subsets(self, own: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Indicator rows ``(users, k)`` of subsets drawn from (1): a uniform m-subset of the
        other values, its last member replaced by x with probability p^ (the first m-1 of a
        uniform m-subset drawn in order are a uniform (m-1)-subset)."""
        users = own.size
        inside = bits.bernoulli(rng, users, self._t)
        members = self._others(users, rng)
        members += members >= own[:, None]  # index i of the k-1 others -> value i, skipping x
        members[inside, -1] = own[inside]
        block = np.zeros((users, self.k), dtype=bool)
        block[np.arange(users)[:, None], members] = True
        return block

    def _others(self, users: int, rng: np.random.Generator) -> np.ndarray:
        """``(users, m)`` distinct indices in ``0 .. k-2`` drawn uniformly in order: the first m
        of a uniform permutation of each row (``Generator.permuted``: a Fisher-Yates shuffle per
        row, in C, whose bounded integers are exactly uniform)."""
        pool = np.tile(np.arange(self.k - 1, dtype=np.intp), (users, 1))
        rng.permuted(pool, axis=1, out=pool)
        return pool[:, : self.subset_size]

    # ----- server side
    def subsets(self) -> np.ndarray:
        """Every output, as indicator rows ``(C(k, m), k)`` in ``itertools.combinations`` order."""
        count = math.comb(self.k, self.subset_size)
        if count > MAX_OUTPUTS:
            raise ValueError(
                f"the exact channel has C({self.k}, {self.subset_size}) = {count} outputs; audit smaller k"
            )
        members = np.array(list(itertools.combinations(range(self.k), self.subset_size)), dtype=np.intp)
        indicator = np.zeros((count, self.k), dtype=bool)
        indicator[np.arange(count)[:, None], members] = True
        return indicator

    def transition_matrix(self) -> np.ndarray:
        """The realized channel ``P[x, S]`` over :meth:`subsets`: ``p^ / C(k-1, m-1)`` when x is
        in S, else ``(1 - p^) / C(k-1, m)`` (module docstring)."""
        p, k, m = self.p_star, self.k, self.subset_size
        inside, outside = p / math.comb(k - 1, m - 1), (1 - p) / math.comb(k - 1, m)
        return np.where(self.subsets().T, inside, outside)
