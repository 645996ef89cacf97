"""Generalized (k-ary) randomized response, GRR, also called direct encoding.

Wang, Blocki, Li, Jha, "Locally Differentially Private Protocols for Frequency Estimation",
USENIX Security 2017, section 4.1: a user with value ``x`` reports ``x`` with probability
``p = e^eps / (e^eps + k - 1)`` and each other value with probability
``q = 1 / (e^eps + k - 1)``, so ``p / q = e^eps``.

What runs is exactly what is analysed: one uniform ``u = j / 2^53`` per user (numpy's
``random()`` returns exactly such multiples; :meth:`GRR.perturb` reads ``j`` off the same
64-bit words) keeps the value when ``j < K`` and otherwise
reports other value number ``(j - K) // c``. ``c >= q 2^53`` is q rounded *up* on that grid
(with a margin for the rounding of ``e^-eps``) and ``K = 2^53 - (k - 1) c``, so the realized
probabilities ``p = K / 2^53`` and ``q = c / 2^53`` have ``p / q <= e^eps`` at every finite
budget: above about ``eps = 37 + ln(k - 1)`` (where ``q < 2^-53``) the realized loss stays at
``ln(2^53 - k + 1)``, less than the budget, instead of the channel turning deterministic.
Estimators and variances use the realized ``p`` and ``q``.
"""

from __future__ import annotations

import math

import numpy as np

from dp2pub.mechanisms.oracle import FrequencyOracle

#: numpy's ``Generator.random()`` returns ``j / 2^53`` for a uniform integer ``j < 2^53``.
GRID = 1 << 53
#: Relative margin by which q is rounded up before it is put on the grid: covers the
#: few-ulp error of computing ``e^-eps / (1 + (k - 1) e^-eps)`` in floating point.
MARGIN = 16 * 2.0**-53
#: Users perturbed together: their work arrays (8 bytes a user) stay in the cache.
BLOCK = 1 << 15
#: Bit generators whose raw output is one uniform 64-bit word w, of which ``Generator.random()``
#: keeps ``w >> 11`` (numpy's ``next_double``); MT19937's words are 32 bits.
WORD_GENERATORS = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


def grid_words(rng: np.random.Generator, m: int) -> np.ndarray:
    """``m`` uint64 words ``w`` whose ``w >> 11`` are the grid points ``j`` of the next ``m``
    draws of ``rng.random()`` (``u = j / 2^53``), with the generator advanced the same: its
    raw words for a 64-bit generator, else ``j << 11`` computed from ``rng.random()``."""
    if isinstance(rng.bit_generator, WORD_GENERATORS):
        return rng.bit_generator.random_raw(m)
    return (rng.random(m) * GRID).astype(np.uint64) << np.uint64(11)


class GRR(FrequencyOracle):
    """Generalized randomized response (GRR, direct encoding) for one attribute.

    A user with value ``x`` reports ``x`` with probability ``p = e^eps / (e^eps + k - 1)`` and
    each other value with probability ``q = 1 / (e^eps + k - 1)``, so ``p / q = e^eps`` ([1]_,
    section 4.1). Reports are values (codes) of the same dtype as the input; a report supports
    itself. The realized ``p`` and ``q`` are multiples of ``2^-53`` with ``p / q <= e^eps``
    (see the module docstring); estimates and variances use them.

    Parameters
    ----------
    epsilon : float
        The budget of one report, a finite number > 0.
    k : int
        The domain size, >= 2.

    Attributes
    ----------
    p : float
        The realized probability of reporting the true value.
    q : float
        The realized probability of reporting one given other value.

    Raises
    ------
    ConfigError
        For an ``epsilon`` or ``k`` out of range, or a budget so small that the realized
        channel is uniform.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, section 4.1.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import GRR
    >>> oracle = GRR(epsilon=1.0, k=4)
    >>> round(oracle.p, 4), round(oracle.q, 4), round(oracle.privacy_loss(), 6)
    (0.4754, 0.1749, 1.0)
    >>> rng = np.random.default_rng(0)
    >>> values = rng.choice(4, size=20_000, p=[0.5, 0.3, 0.15, 0.05])
    >>> reports = oracle.perturb(values, rng)
    >>> reports.shape, reports.dtype == values.dtype
    ((20000,), True)
    >>> print(oracle.estimate(reports, "unbiased").round(2))
    [0.48 0.32 0.16 0.04]
    """

    name = "grr"
    reports_values = True

    def __init__(self, *, epsilon: float, k: int) -> None:
        super().__init__(epsilon=epsilon, k=k)
        e = math.exp(-self.epsilon)  # written with e^-eps: finite for any eps
        q = e / (1.0 + (self.k - 1) * e)
        #: Grid counts of one other value (``c``) and of the true value (``K``), see the module docstring.
        self.other_count = max(1, math.ceil(q * GRID * (1 + MARGIN)))
        self.keep_count = GRID - (self.k - 1) * self.other_count
        self.check_informative()  # refuses K <= c: a budget too small for the grid

    @property
    def p(self) -> float:
        """Probability of reporting the true value, as realized (``K / 2^53``)."""
        return self.keep_count / GRID

    @property
    def q(self) -> float:
        """Probability of reporting one given other value, as realized (``c / 2^53``)."""
        return self.other_count / GRID

    p_star = p
    q_star = q

    @property
    def ratio(self) -> float:
        return self.p / self.q

    def privacy_loss(self) -> float:
        """``ln(p / q)`` of the channel that :meth:`perturb` realizes (``ln(K / c)``): at most
        the budget, and at most ``ln(2^53 - k + 1)`` however large the budget."""
        return math.log(self.keep_count / self.other_count)

    def transition_matrix(self) -> np.ndarray:
        """The exact channel ``P[x, y] = Pr[report y | value x]``.

        Returns
        -------
        numpy.ndarray
            The k x k matrix ``(p - q) I + q 1 1^T`` of the realized probabilities (rows sum
            to one).

        Examples
        --------
        >>> from dp2pub import GRR
        >>> print(GRR(epsilon=1.0, k=3).transition_matrix().round(3))
        [[0.576 0.212 0.212]
         [0.212 0.576 0.212]
         [0.212 0.212 0.576]]
        """
        return self.channel_matrix()

    def channel_matrix(self) -> np.ndarray:
        """The k x k channel ``Q = (p - q) I + q 1 1^T``."""
        return np.full((self.k, self.k), self.q) + np.eye(self.k) * (self.p - self.q)

    @classmethod
    def report_bytes(cls, n: int, k: int, **options: object) -> int:
        """The reports: one code a user, of the values' dtype (``itemsize`` bytes if given,
        else the smallest dtype of ``k`` values)."""
        itemsize = options.get("itemsize")
        return int(n) * (itemsize if isinstance(itemsize, int) else np.min_scalar_type(max(k - 1, 0)).itemsize)

    @classmethod
    def count_bytes(cls, n: int, k: int, **options: object) -> int:
        """The report histogram (one ``bincount``, int64)."""
        return 8 * k

    @classmethod
    def memory_bytes(cls, n: int, k: int, **options: object) -> int:
        """The reports (:meth:`report_bytes`) and :meth:`perturb`'s work arrays, allocated
        whatever n: :data:`BLOCK` work words (uint64) and two flags (10 bytes each), the random
        words of one block (uint64, for at most BLOCK users), and the larger of the next
        block's words, drawn while the last ones are held, and the cast buffer of the ufunc that
        skips the own value (numpy's buffer size of int64 entries)."""
        n = int(n)
        overlap = max(8 * min(max(n - BLOCK, 0), BLOCK), 8 * np.getbufsize())
        return cls.report_bytes(n, k, **options) + 10 * BLOCK + 8 * min(n, BLOCK) + overlap

    def perturb(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Perturb a whole column of values at once; returns reports of the same dtype.

        One uniform ``u = j / 2^53`` per user decides both branches: ``j < K`` keeps the
        value; otherwise ``(j - K) // c`` picks one of the ``k - 1`` other values, each on
        exactly ``c`` of the ``2^53`` grid points. Any array shape is accepted (each entry is
        one independent report, in C order).

        Users go in blocks of :data:`BLOCK` whose work arrays stay in cache (fresh arrays of n
        entries cost more in page faults than the arithmetic), and ``j`` is read off the
        generator's 64-bit words (:func:`grid_words`) without a float: the reports are those
        of ``rng.random()``, bit for bit.

        Parameters
        ----------
        values : numpy.ndarray
            Codes in ``0 .. k-1``, of any shape and integer dtype.
        rng : numpy.random.Generator
            The source of the users' randomness.

        Returns
        -------
        numpy.ndarray
            The reported codes, of the shape and dtype of ``values``.

        Raises
        ------
        ConfigError
            Naming a value outside the domain.
        """
        values = np.asarray(values)
        if values.size and (values.min() < 0 or values.max() >= self.k):
            self.check_values(values.ravel())
        flat = values.reshape(-1)
        out = np.empty(flat.size, dtype=values.dtype)
        in_place = out.dtype == np.int64  # the other value's index is computed in the output
        work, keep, above = np.empty(BLOCK, np.uint64), np.empty(BLOCK, bool), np.empty(BLOCK, bool)
        # j < K  <=>  w < K 2^11, and (j - K) // c == (w - K 2^11) // (c 2^11) for w = j 2^11 + low bits
        keep_words, other_words = np.uint64(self.keep_count << 11), np.uint64(self.other_count << 11)
        for start in range(0, flat.size, BLOCK):
            stop = min(start + BLOCK, flat.size)
            m, own = stop - start, flat[start:stop]
            words = grid_words(rng, m)
            np.less(words, keep_words, out=keep[:m])
            words -= keep_words  # wraps for kept users, overwritten below
            other = out[start:stop].view(np.uint64) if in_place else work[:m]
            np.floor_divide(words, other_words, out=other)
            index = other.view(np.int64)  # 0 .. k-2 for every user who does not keep
            np.greater_equal(index, own, out=above[:m])
            np.add(index, above[:m].view(np.int8), out=index, casting="unsafe")  # skip the own value
            np.copyto(index, own, where=keep[:m], casting="unsafe")
            if not in_place:
                out[start:stop] = index
        return out.reshape(values.shape)

    simulates_counts = True

    def simulate_counts(self, true_counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The report histogram, exactly in distribution, in O(k). The ``n_v`` users of value v
        send reports distributed Multinomial(n_v, Q[v, .]) (p on v, q on each other value).
        The same channel is: keep the value with probability ``1 - kq``, else report a
        uniform value of all k (the own value then has ``1 - kq + q = p``); so ``R_v ~
        Bin(n_v, kq)`` users of value v redraw, and the histogram is ``n - R`` plus
        Multinomial(sum R, 1/k). ``kq = k c / 2^53`` is exact and at most 1 (``K > c``)."""
        counts = self.check_counts(true_counts)
        redrawn = rng.binomial(counts, self.k * self.q)
        return counts - redrawn + rng.multinomial(int(redrawn.sum()), np.full(self.k, 1.0 / self.k))

    def support(self, reports: np.ndarray) -> np.ndarray:
        """One-hot rows: a report supports exactly the value it names."""
        onehot = np.zeros((len(reports), self.k), dtype=np.uint8)
        onehot[np.arange(len(reports)), np.asarray(reports, dtype=np.intp)] = 1
        return onehot

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        """``C(v)``: the report histogram."""
        return np.bincount(np.asarray(reports).ravel(), minlength=self.k)

    def forward(self, table: np.ndarray, axis: int = 0) -> np.ndarray:
        """Apply the channel along one axis of a (joint) frequency table: ``(p-q) T + q sum T``."""
        return (self.p - self.q) * table + self.q * table.sum(axis=axis, keepdims=True)

    def unbias(self, counts: np.ndarray, axis: int = 0) -> np.ndarray:
        """Apply the inverse channel along one axis of a (joint) count or frequency table.

        ``(C - N q) / (p - q)`` where ``N`` is the total along ``axis``; applied to each axis
        of a joint table in turn it inverts the Kronecker product of independent GRR channels
        without building it.
        """
        total = counts.sum(axis=axis, keepdims=True)
        return (counts - total * self.q) / (self.p - self.q)

    def variance(self, n: int) -> float:
        """``Var[f_hat(v)]`` for a value of frequency near 0 (Wang et al. 2017, section 4.1):

        ``(e^eps + k - 2) / (n (e^eps - 1)^2)``, which is ``q (1 - q) / (n (p - q)^2)``,
        computed with the realized p and q (finite at every budget the oracle accepts).
        """
        p, q = self.p, self.q
        return q * (1 - q) / (n * (p - q) ** 2)
