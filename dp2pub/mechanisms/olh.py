"""Optimized local hashing, OLH (Wang et al., USENIX Security 2017, section 4.4).

Each user draws a hash function ``h`` from a universal family mapping the domain to
``g = round(e^eps) + 1`` buckets (at most ``2^30 + 1``, see :data:`MAX_BUCKETS`), and reports ``(h, GRR_g(h(x)))`` where GRR over the g
buckets keeps ``h(x)`` with probability ``p = e^eps / (e^eps + g - 1)``. A report supports
every value v with ``h(v) = y``: ``p* = p`` and ``q* = 1/g``.

The family is ``h_{a,b}(v) = ((a v + b) mod P) mod g`` with the Mersenne prime
``P = 2^31 - 1``, ``a`` in ``[1, P)``, ``b`` in ``[0, P)`` drawn per user from the seeded
generator; its collision probability is ``1/g`` up to ``O(g / P)``. Reports are int64 rows
``(a, b, y)``.
"""

from __future__ import annotations

import math

import numpy as np

from dp2pub.mechanisms.chunks import chunk_rows
from dp2pub.mechanisms.grr import GRR
from dp2pub.mechanisms.oracle import FrequencyOracle

PRIME = (1 << 31) - 1
#: Most buckets: ``g`` is capped (at budgets above ln 2^30 = 20.8) because the hash family
#: cannot spread values over more than P buckets; the variance there is already below
#: 2^-28 of GRR's at any smaller budget.
MAX_BUCKETS = 1 << 30


class OLH(FrequencyOracle):
    """Optimized local hashing, OLH, for one attribute with domain ``0 .. k-1``.

    Each user draws a hash function ``h`` from a universal family mapping the domain to
    ``g = round(e^eps) + 1`` buckets (at most ``2^30 + 1``, :data:`MAX_BUCKETS`) and reports
    ``(h, GRR_g(h(x)))``, where GRR over the g buckets keeps ``h(x)`` with probability
    ``p = e^eps / (e^eps + g - 1)``. A report supports every value v with ``h(v) = y``:
    ``p* = p`` and ``q* = 1/g`` ([1]_, section 4.4). The family is
    ``h_{a,b}(v) = ((a v + b) mod P) mod g`` with ``P = 2^31 - 1``; reports are int64 rows
    ``(a, b, y)``.

    Parameters
    ----------
    epsilon : float
        The budget of one report, a finite number > 0.
    k : int
        The domain size, >= 2.

    Attributes
    ----------
    g : int
        The number of hash buckets.
    bucket : GRR
        The randomized response over the buckets.

    Raises
    ------
    ConfigError
        For an ``epsilon`` or ``k`` out of range.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, section 4.4.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import OLH
    >>> oracle = OLH(epsilon=2.0, k=4)
    >>> oracle.g, round(oracle.p_star, 4), oracle.q_star
    (8, 0.5135, 0.125)
    >>> rng = np.random.default_rng(0)
    >>> values = rng.choice(4, size=20_000, p=[0.5, 0.3, 0.15, 0.05])
    >>> reports = oracle.perturb(values, rng)
    >>> reports.shape, reports.dtype
    ((20000, 3), dtype('int64'))
    >>> print(oracle.estimate(reports, "norm_sub").round(2))
    [0.5  0.3  0.15 0.04]
    """

    name = "olh"

    def __init__(self, *, epsilon: float, k: int) -> None:
        super().__init__(epsilon=epsilon, k=k)
        self.g = min(round(math.exp(min(self.epsilon, math.log(MAX_BUCKETS)))), MAX_BUCKETS) + 1
        self.bucket = GRR(epsilon=self.epsilon, k=self.g)
        self.check_informative()

    @property
    def p_star(self) -> float:
        return self.bucket.p

    @property
    def q_star(self) -> float:
        return 1.0 / self.g

    @property
    def ratio(self) -> float:
        return self.bucket.p / self.bucket.q

    def privacy_loss(self) -> float:
        return self.bucket.privacy_loss()

    def hash(self, a: np.ndarray, b: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``h_{a,b}(v)`` elementwise (broadcasting), as int64 buckets in ``0 .. g-1``."""
        return ((a * values + b) % PRIME) % self.g

    @classmethod
    def report_bytes(cls, n: int, k: int, **options: object) -> int:
        """Reports ``(a, b, y)``, int64: 24 bytes a user."""
        return 24 * int(n)

    @classmethod
    def memory_bytes(cls, n: int, k: int, **options: object) -> int:
        """At its peak, stacking the reports: the values, a, b and y as int64 and their stacked
        copy (56 bytes a user); before, while hashing and perturbing the buckets, the values, a,
        b, two temporaries of the hash and y, with GRR's work arrays (:meth:`GRR.memory_bytes`
        less the reports)."""
        grr_work = GRR.memory_bytes(n, 2, itemsize=8) - GRR.report_bytes(n, 2, itemsize=8)
        return max(56 * int(n), 40 * int(n) + grr_work)

    @classmethod
    def count_bytes(cls, n: int, k: int, **options: object) -> int:
        """Each report's support over the k values (:meth:`support`), users in chunks
        (:func:`~dp2pub.mechanisms.chunks.chunk_rows`): the hash's int64 temporaries (at most
        three at once), the comparison and its uint8 copy, 32 bytes a user and value."""
        return 32 * chunk_rows(n, k) * k + 8 * k

    def perturb(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Reports ``(a, b, y)``: a fresh hash per user, then GRR over the g buckets.

        Parameters
        ----------
        values : numpy.ndarray
            One column of codes in ``0 .. k-1``, one per user.
        rng : numpy.random.Generator
            The source of the users' hashes and randomness.

        Returns
        -------
        numpy.ndarray
            An (n, 3) int64 array of rows ``(a, b, y)``: the hash parameters and the
            perturbed bucket.
        """
        values = self.check_values(values).astype(np.int64)
        a = rng.integers(1, PRIME, size=values.size, dtype=np.int64)
        b = rng.integers(0, PRIME, size=values.size, dtype=np.int64)
        y = self.bucket.perturb(self.hash(a, b, values), rng)
        return np.stack([a, b, y], axis=1)

    def support(self, reports: np.ndarray) -> np.ndarray:
        """``S[i, v] = [h_i(v) = y_i]``."""
        a, b, y = (reports[:, j : j + 1] for j in range(3))
        return (self.hash(a, b, np.arange(self.k, dtype=np.int64)[None, :]) == y).astype(np.uint8)

    def transition_matrix(self, hashes: np.ndarray | None = None) -> np.ndarray:
        """The channel ``P[x, (h, y)]`` for a uniform choice among given hash functions.

        Parameters
        ----------
        hashes : numpy.ndarray, optional
            (H, 2) ``(a, b)`` hash parameters, chosen uniformly (default: 16 fixed ones).

        Returns
        -------
        numpy.ndarray
            A (k, H g) matrix, outputs ordered by hash then bucket.

        Examples
        --------
        >>> from dp2pub import OLH, satisfies_ldp
        >>> channel = OLH(epsilon=1.0, k=5).transition_matrix()
        >>> channel.shape, satisfies_ldp(channel, 1.0)
        ((5, 64), True)
        """
        if hashes is None:
            hashes = np.array([(a, b) for a in (1, 2, 3, 5, 7, 11, 13, 17) for b in (0, 1)])
        values = np.arange(self.k, dtype=np.int64)
        buckets = self.hash(hashes[:, :1], hashes[:, 1:], values[None, :])  # (H, k)
        channel = self.bucket.channel_matrix()  # (g, g)
        per_hash = channel[buckets]  # (H, k, g): Pr[y | x, h]
        return per_hash.transpose(1, 0, 2).reshape(self.k, -1) / len(hashes)
