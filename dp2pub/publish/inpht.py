"""Publisher ``inpht``: the Fourier (Hadamard) release of marginals of binary tables under
LDP, InpHT (Cormode, Kulkarni & Srivastava, "Marginal Release Under Local Differential
Privacy", SIGMOD 2018).

**The basis.** For a record ``x`` in ``{0, 1}^d`` and a set ``alpha`` of attributes, the
character ``chi_alpha(x) = (-1)^(sum_{i in alpha} x_i)``; the table's Fourier coefficient
``f_alpha`` is the mean of ``chi_alpha`` over its records (``f_{} = 1``). The marginal of
the ``k`` attributes ``beta`` is determined by the ``2^k`` coefficients of the subsets of
``beta``: its cell ``gamma`` is::

    P_beta(gamma) = 2^-k sum_{alpha subset of beta} f_alpha chi_alpha(gamma)

(the indicator of ``x_beta = gamma`` is ``prod_i (1 + (-1)^(x_i + gamma_i)) / 2``), so all
marginals of up to ``ways`` attributes need the ``T = sum_{l=1..ways} C(d, l)``
coefficients of the non-empty sets of at most ``ways`` attributes, and no others.

**Collection** (InpHT, as its name says: the users transform their own input). Each user draws one
of the ``T`` coefficients uniformly at random, independently of their record, and reports
its character on their record, a bit, through randomized response at the whole epsilon
(binary GRR, :class:`dp2pub.mechanisms.grr.GRR`, so the channel is GRR's: ``p / q = e^eps``
and ``epsilon_spent = epsilon``). The draw is public; it reveals nothing of the record.

**Estimation.** The coefficient of set ``j`` from the ``m_j`` users who drew it and the
``c_j`` of them who reported 1 is GRR's unbiased estimate of their share of odd parities,
mapped to a character: ``f_j = 1 - 2 (c_j / m_j - q) / (p - q)``, unbiased for the whole
table's ``f_j`` (the users who drew ``j`` are a uniform sample of them). Its variance given
``m_j`` (:func:`coefficient_variance`) is::

    Var f_j = [ 4 p q / (p - q)^2 + (1 - f_j^2) (N - m_j) / (N - 1) ] / m_j

(randomized response's noise, plus sampling ``m_j`` of the ``N`` records without
replacement); about ``(1 / (p - q)^2 - f_j^2) / m_j`` with ``m_j ~ N / T``. Marginals are
then read off the coefficients by the inverse transform above, and projected onto the
probability simplex (``estimator: norm_sub``, the default) or left unbiased (``unbiased``;
``clip`` also offered, as for the oracles, :mod:`dp2pub.mechanisms.estimators`).

Choices (only the paper's abstract could be read through this project's search tools; the
algorithm is what it describes, marginals released from local Fourier transformations of
each user's input, and these are stated so that they can be checked against the paper):

- **Scaling** by each coefficient's own ``m_j`` (the users who drew it) rather than the
  expected ``N / T``: both are unbiased (the first given that some user drew it); the
  realized count has the smaller variance. A
  coefficient no user drew (``N`` much smaller than ``T``) is estimated as 0, and counted
  in the metric ``coefficients_unmeasured``.
- **Post-processing** of each marginal on its own (Norm-Sub), as HDG's grids: the
  released marginals are distributions, but two marginals that share attributes need not
  agree after it (before it they do, exactly: they are read off the same coefficients).
- **Binary tables only** (the basis above is over bits): attributes of one value are
  allowed (their characters are 1), a table with an attribute of three or more values is
  refused naming ``dataset``. Wider domains coded as several bits each are not built: a
  marginal of ``k`` attributes of ``b`` bits each would need ``2^(kb)`` coefficients.
- **Marginals of more than ``ways`` attributes** are not answered (``max_way``): their
  higher coefficients were never collected.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.mechanisms.accounting import Spend
from dp2pub.mechanisms.chunks import chunk_rows, chunks
from dp2pub.mechanisms.estimators import postprocess
from dp2pub.mechanisms.grr import GRR
from dp2pub.publish.base import Outcome, Publisher
from dp2pub.publish.release import Release
from dp2pub.validation import ConfigError, check_choice, check_epsilon, check_int

#: Post-processings of each reconstructed marginal (:func:`dp2pub.mechanisms.estimators.postprocess`).
INPHT_ESTIMATORS: tuple[str, ...] = ("norm_sub", "clip", "unbiased")
#: Bytes of the Python objects of one coefficient in the release (its attribute tuple, the
#: index's dict slot and integer; measured at about 150 bytes with three attributes).
COEFFICIENT_OBJECTS = 256


# ---------------------------------------------------------------- the basis
@dataclass(frozen=True)
class Basis:
    """The non-empty sets of at most ``ways`` of ``d`` attributes (positions ``0 .. d-1``),
    in order of size then lexicographic: ``members[j]`` the attributes of set ``j``, padded
    with 0 where ``valid[j]`` is False; ``index`` maps a set (sorted tuple) to ``j``."""

    members: np.ndarray
    valid: np.ndarray
    index: dict[tuple[int, ...], int]

    @classmethod
    def of(cls, d: int, ways: int) -> Basis:
        sets = [s for size in range(1, min(ways, d) + 1) for s in itertools.combinations(range(d), size)]
        width = max((len(s) for s in sets), default=1)
        members = np.zeros((len(sets), width), dtype=np.int64)
        valid = np.zeros((len(sets), width), dtype=bool)
        for j, s in enumerate(sets):
            members[j, : len(s)] = s
            valid[j, : len(s)] = True
        return cls(members, valid, {s: j for j, s in enumerate(sets)})

    @property
    def size(self) -> int:
        """``T``, the number of coefficients."""
        return len(self.index)


def basis_size(d: int, ways: int) -> int:
    """``T = sum_{l=1..ways} C(d, l)``."""
    return sum(math.comb(d, size) for size in range(1, min(ways, d) + 1))


def parities(bits: np.ndarray, basis: Basis, chosen: np.ndarray) -> np.ndarray:
    """For each record of ``bits`` (rows of 0/1, one column a basis position) the parity of
    its bits in the set it drew, ``chosen``: ``(1 - chi) / 2`` as uint8, in chunks of users."""
    out = np.empty(bits.shape[0], dtype=np.uint8)
    width = basis.members.shape[1]
    for part in chunks(bits.shape[0], width):
        members, valid = basis.members[chosen[part]], basis.valid[chosen[part]]
        rows = np.arange(part.start, part.stop)[:, None]
        out[part] = (bits[rows, members] & valid).sum(axis=1) & 1
    return out


def signs(k: int) -> np.ndarray:
    """The ``2^k x 2^k`` Walsh-Hadamard matrix in Sylvester's order, ``(-1)^popcount(i & j)``:
    row ``gamma`` of a cell, column ``alpha`` of a set, bit ``k-1-t`` of either for axis ``t``."""
    codes = np.arange(1 << k)
    both = codes[:, None] & codes[None, :]
    parity = np.zeros_like(both)
    for bit in range(k):
        parity ^= (both >> bit) & 1
    return 1 - 2 * parity


def coefficient_variance(f: np.ndarray | float, users: np.ndarray | int, n: int, oracle: GRR) -> np.ndarray:
    """The variance of a coefficient's estimate from ``users`` of the ``n`` users who drew it,
    its true value ``f`` (see the module): randomized response's ``4 p q / (p - q)^2`` plus
    the sampling of ``users`` of ``n`` records without replacement, over ``users``."""
    f, users = np.asarray(f, dtype=np.float64), np.asarray(users, dtype=np.float64)
    p, q = oracle.p, oracle.q
    noise = 4 * p * q / (p - q) ** 2
    sampling = (1 - f**2) * (n - users) / max(n - 1, 1)
    return (noise + sampling) / users


# ---------------------------------------------------------------- the release
@dataclass(frozen=True)
class InpHTRelease(Release):
    """Marginals of up to ``ways`` attributes read off the estimated coefficients (see the
    module): ``coefficients[basis.index[s]]`` is set ``s``'s, estimated from the
    ``users[basis.index[s]]`` users who drew it; ``binary`` the table's attributes of two
    values (basis position ``t`` is attribute ``binary[t]``), ``sizes`` every attribute's
    domain size."""

    coefficients: np.ndarray
    users: np.ndarray
    basis: Basis
    binary: tuple[int, ...]
    sizes: tuple[int, ...]
    ways: int
    estimator: str
    positions: dict[int, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "positions", {a: t for t, a in enumerate(self.binary)})

    @property
    def max_way(self) -> int:
        return self.ways

    def coefficient(self, attributes: tuple[int, ...]) -> float:
        """The estimate of the coefficient of ``attributes`` (sorted basis positions); 1 for
        the empty set."""
        return 1.0 if not attributes else float(self.coefficients[self.basis.index[attributes]])

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        cols = [int(c) for c in columns]
        if len(set(cols)) != len(cols):
            raise ValueError(f"a marginal of distinct columns, not {columns}")
        if len(cols) > self.ways:
            raise ValueError(f"InpHT collected coefficients of at most {self.ways} attributes, not {len(cols)}")
        order = sorted(cols)
        varying = [self.positions[c] for c in order if c in self.positions]
        k = len(varying)
        values = np.array(
            [self.coefficient(tuple(varying[t] for t in range(k) if mask >> (k - 1 - t) & 1)) for mask in range(1 << k)]
        )
        table = postprocess(signs(k) @ values / (1 << k), self.estimator)
        table = table.reshape([self.sizes[c] for c in order])
        return table.transpose([order.index(c) for c in cols])


# ---------------------------------------------------------------- the publisher
@dataclass(frozen=True, kw_only=True)
class InpHTPublisher(Publisher):
    """``mechanism=inpht``: InpHT (see the module).

    Args:
        ways: the most attributes a released marginal joins; the users report the
            coefficients of all sets of up to ``ways`` attributes (default 3).
        estimator: each marginal projected onto the simplex (``norm_sub``, default),
            clipped and rescaled (``clip``), or as read off the coefficients (``unbiased``).
    """

    name: ClassVar[str] = "inpht"
    ways: int = 3
    estimator: str = "norm_sub"

    def __post_init__(self) -> None:
        check_int(self.ways, "ways", 1)
        check_choice(self.estimator, "estimator", INPHT_ESTIMATORS)

    @property
    def max_way(self) -> int:
        return self.ways

    @staticmethod
    def binary(sizes: Sequence[int] | np.ndarray) -> list[int]:
        """The attributes of two values (those of one value have character 1)."""
        return [a for a, k in enumerate(sizes) if int(k) == 2]

    def check_shape(self, n: int, sizes: Sequence[int] | np.ndarray) -> None:
        """Binary attributes only (one value allowed), at least one of two values."""
        if any(int(k) > 2 for k in sizes):
            raise ConfigError("dataset", [int(k) for k in sizes], "a binary table (every attribute of 1 or 2 values)")
        if not self.binary(sizes):
            raise ConfigError("dataset", [int(k) for k in sizes], "a table with an attribute of two values")

    def publish(self, data: Dataset, epsilon: float | None, rng: np.random.Generator) -> Outcome:
        epsilon = check_epsilon(epsilon)
        self.check_shape(data.n, data.domain.sizes)
        start = time.perf_counter()
        binary = self.binary(data.domain.sizes)
        basis = Basis.of(len(binary), self.ways)
        oracle = GRR(epsilon=epsilon, k=2)
        chosen = rng.integers(basis.size, size=data.n)
        reports = oracle.perturb(parities(data.codes[:, binary], basis, chosen), rng)
        users = np.bincount(chosen, minlength=basis.size)
        ones = np.bincount(chosen, weights=reports, minlength=basis.size)
        share = np.divide(ones, users, out=np.zeros(basis.size), where=users > 0)
        coefficients = np.where(users > 0, 1.0 - 2.0 * (share - oracle.q) / (oracle.p - oracle.q), 0.0)
        timed = {"collect": time.perf_counter() - start}
        sizes = tuple(int(k) for k in data.domain.sizes)
        release = InpHTRelease(coefficients, users, basis, tuple(binary), sizes, self.ways, self.estimator)
        ledger = [Spend("report", "one Fourier coefficient", epsilon)]
        extra = {
            "coefficients": float(basis.size),
            "coefficients_unmeasured": float(np.count_nonzero(users == 0)),
            "users_per_coefficient_min": float(users.min()),
        }
        return Outcome(release, ledger, timed, extra)

    # ----- memory
    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """From the shape alone: the binary columns' copy (the table's code dtype), the draws (int64), the parities and reports (a byte each) and GRR's work
        (:meth:`GRR.memory_bytes`); one chunk's gathered sets (int64 members, bool flags,
        the rows' index and the gathered bits: 26 bytes an entry); the basis (9 bytes an
        entry), its index and the release's coefficients (:data:`COEFFICIENT_OBJECTS` and
        three float64 a coefficient: the counts, shares and estimates)."""
        n, b = int(n), len(self.binary(sizes))
        t = basis_size(b, self.ways)
        width = max(1, min(self.ways, b))
        columns = n * b * code_dtype(max((int(k) for k in sizes), default=2)).itemsize
        users = 8 * n + 2 * n + GRR.memory_bytes(n, 2)
        chunk = chunk_rows(n, width) * (26 * width + 8)
        return columns + users + chunk + t * (9 * width + COEFFICIENT_OBJECTS + 24)

    def answer_bytes(self, n: int, sizes: Sequence[int] | np.ndarray, way: int) -> int:
        """A marginal of ``way`` attributes: the ``2^way x 2^way`` sign matrix and its work
        (int64, three of them), its coefficients, table and projection (float64)."""
        cells = 1 << min(way, self.ways)
        return 24 * cells * cells + 64 * cells
