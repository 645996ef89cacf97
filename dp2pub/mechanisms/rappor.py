"""RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014), one report per user.

A value ``v`` is hashed into a Bloom filter ``B(v)`` of ``num_bits`` bits with
``num_hashes`` hash functions (public, from ``hash_seed``). The permanent randomized response
(PRR) sets each bit to 1 with probability f/2, to 0 with probability f/2, and keeps it
otherwise; the optional instantaneous randomized response (IRR) reports 1 with probability
``q`` if the PRR bit is 1 and ``p`` if it is 0. So a reported bit is 1 with probability
``q* = f/2 (p + q) + (1 - f) q`` if the Bloom bit is 1 and ``p* = f/2 (p + q) + (1 - f) p`` if
it is 0 (without IRR: ``1 - f/2`` and ``f/2``).

Privacy (the paper's Theorems 1 and 2): ``eps_inf = 2 h ln((1 - f/2) / (f/2))`` for the
permanent response, ``eps_1 = h ln(q* (1 - p*) / (p* (1 - q*)))`` for one report.

The server debiases the bit sums, ``t = (c - n p*) / (q* - p*)``, and fits ``t = X c`` where
``X[j, v] = [j in B(v)]``: ordinary least squares when X has full column rank (then the
estimate is unbiased and linear per user), otherwise scikit-learn's Lasso, as in the paper.

Probabilities are rounded to multiples of 2^-32 in the direction that lowers the privacy loss
(f up; with IRR q down and p up) and the realized values are used everywhere.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dp2pub.mechanisms import bits
from dp2pub.mechanisms.chunks import chunk_rows, chunks
from dp2pub.mechanisms.estimators import ESTIMATORS, postprocess
from dp2pub.mechanisms.ibu import IBUTrace
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.validation import ConfigError, check_choice, check_int, check_probability

GUARANTEES = ("permanent", "one_report")


class RAPPOR(FrequencyOracle):
    """Basic one-time RAPPOR with Bloom filter, PRR and optional IRR.

    A value ``v`` is hashed into a Bloom filter ``B(v)`` of ``num_bits`` bits with
    ``num_hashes`` public hash functions. The permanent randomized response (PRR) sets each
    bit to 1 with probability f/2, to 0 with probability f/2, and keeps it otherwise; the
    optional instantaneous randomized response (IRR) reports 1 with probability ``q`` if the
    PRR bit is 1 and ``p`` if it is 0. Privacy: ``eps_inf = 2 h ln((1 - f/2) / (f/2))`` for the
    permanent response ([1]_, Theorem 1), ``eps_1 = h ln(q* (1 - p*) / (p* (1 - q*)))`` for one
    report (Theorem 2). The server debiases the bit sums and fits them by least squares when
    the Bloom design has full column rank, otherwise by scikit-learn's Lasso, as in the paper.
    Probabilities are rounded to multiples of 2^-32 in the direction that lowers the privacy
    loss, and the realized values are used everywhere.

    Parameters
    ----------
    epsilon : float
        The budget that ``guarantee`` must meet.
    k : int
        The domain size, >= 2.
    num_bits : int, optional
        The Bloom filter size m (default 64).
    num_hashes : int, optional
        The hash count h, in ``[1, num_bits]`` (default 2).
    f : float, optional
        The PRR noise in (0, 1); None (default) derives the largest-utility f that meets the
        budget.
    p, q : float, optional
        The IRR probabilities, ``0 < p < q < 1`` (both None, the default: no IRR, the PRR
        bits are reported).
    guarantee : str, optional
        ``permanent`` (default: ``eps_inf <= epsilon``) or ``one_report``
        (``eps_1 <= epsilon``).
    hash_seed : int, optional
        The seed of the public Bloom hash functions (default 0).

    Attributes
    ----------
    design : numpy.ndarray
        The Bloom design ``X[j, v] = [j in B(v)]``, (num_bits, k) uint8.
    full_rank : bool
        Whether ``design`` has full column rank (least squares, else Lasso).

    Raises
    ------
    ConfigError
        For a parameter out of range, only one of ``p`` and ``q``, ``q <= p``, or an ``f``
        whose guarantee exceeds the budget.

    References
    ----------
    .. [1] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
       Privacy-Preserving Ordinal Response", ACM CCS 2014, Theorems 1 and 2.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import RAPPOR, satisfies_ldp
    >>> oracle = RAPPOR(epsilon=2.0, k=4, num_bits=8)
    >>> round(oracle.f, 4), round(oracle.epsilon_inf, 4), bool(oracle.full_rank)
    (0.7551, 2.0, True)
    >>> rng = np.random.default_rng(0)
    >>> values = rng.choice(4, size=20_000, p=[0.5, 0.3, 0.15, 0.05])
    >>> reports = oracle.perturb(values, rng)
    >>> reports.shape, reports.dtype
    ((20000, 1), dtype('uint8'))
    >>> print(oracle.estimate(reports, "norm_sub").round(2))
    [0.5  0.31 0.14 0.05]
    >>> satisfies_ldp(oracle.transition_matrix(), 2.0)
    True

    With IRR, the budget can bound one report instead of the permanent response:

    >>> once = RAPPOR(epsilon=2.0, k=4, num_bits=8, p=0.25, q=0.75, guarantee="one_report")
    >>> round(once.epsilon_one, 3), round(once.epsilon_inf, 3)
    (2.0, 4.287)
    """

    name = "rappor"

    def __init__(
        self,
        *,
        epsilon: float,
        k: int,
        num_bits: int = 64,
        num_hashes: int = 2,
        f: float | None = None,
        p: float | None = None,
        q: float | None = None,
        guarantee: str = "permanent",
        hash_seed: int = 0,
    ) -> None:
        super().__init__(epsilon=epsilon, k=k)
        self.num_bits = check_int(num_bits, "num_bits", 1)
        self.num_hashes = check_int(num_hashes, "num_hashes", 1, self.num_bits)
        self.guarantee = check_choice(guarantee, "guarantee", GUARANTEES)
        if (p is None) != (q is None):
            raise ConfigError("p" if p is None else "q", None, "both p and q set (IRR) or both null")
        self.irr = p is not None
        if self.irr:
            p, q = check_probability(p, "p"), check_probability(q, "q")
            if q <= p:
                raise ConfigError("q", q, f"a number in (p={p}, 1): IRR needs q > p")
            self._tp, self._tq = bits.threshold(p, "up"), bits.threshold(q, "down")
        f = self._derive_f() if f is None else check_probability(f, "f")
        self._tf = bits.threshold(f, "up")
        spent = self.epsilon_promised
        if spent > self.epsilon * (1 + 1e-9):
            raise ConfigError(
                "f", f, f"a value whose {self.guarantee} epsilon ({spent:.4g}) is <= the budget {self.epsilon:.4g}"
            )
        rng = np.random.default_rng(check_int(hash_seed, "hash_seed", 0))
        positions = rng.integers(0, self.num_bits, size=(self.k, self.num_hashes))
        self.design = np.zeros((self.num_bits, self.k), dtype=np.uint8)  # X[j, v]
        self.design[positions, np.arange(self.k)[:, None]] = 1
        self.full_rank = np.linalg.matrix_rank(self.design.astype(float)) == self.k
        self.pinv = np.linalg.pinv(self.design.astype(float)) if self.full_rank else None

    # ----- probabilities
    @property
    def f(self) -> float:
        return bits.realized(self._tf)

    @property
    def prob_one_if_one(self) -> float:
        """``q*``: a reported bit is 1 given its Bloom bit is 1."""
        f = self.f
        if not self.irr:
            return 1 - f / 2
        p, q = bits.realized(self._tp), bits.realized(self._tq)
        return f / 2 * (p + q) + (1 - f) * q

    @property
    def prob_one_if_zero(self) -> float:
        """``p*``: a reported bit is 1 given its Bloom bit is 0."""
        f = self.f
        if not self.irr:
            return f / 2
        p, q = bits.realized(self._tp), bits.realized(self._tq)
        return f / 2 * (p + q) + (1 - f) * p

    @property
    def epsilon_inf(self) -> float:
        """Permanent-response privacy ``2 h ln((1 - f/2) / (f/2))`` (Theorem 1)."""
        f = self.f
        return 2 * self.num_hashes * math.log((1 - f / 2) / (f / 2))

    @property
    def epsilon_one(self) -> float:
        """One-report privacy ``h ln(q* (1 - p*) / (p* (1 - q*)))`` (Theorem 2)."""
        return self.num_hashes * math.log(self.ratio)

    @property
    def epsilon_promised(self) -> float:
        """The privacy loss the configured guarantee refers to (logged as epsilon_spent)."""
        return self.epsilon_inf if self.guarantee == "permanent" else self.epsilon_one

    def _derive_f(self) -> float:
        """The smallest f (least noise) whose promised epsilon is within the budget."""
        h = self.num_hashes
        f_inf = 2 / (1 + math.exp(self.epsilon / (2 * h)))  # eps_inf(f_inf) = epsilon
        if self.guarantee == "permanent" or not self.irr:  # without IRR, eps_1 = eps_inf
            return f_inf
        p, q = bits.realized(self._tp), bits.realized(self._tq)

        def excess(f: float) -> float:
            return _epsilon_one(f, p, q, h) - self.epsilon

        low, high = 1e-9, 1 - 1e-9
        if excess(low) <= 0:
            return low
        if excess(high) > 0:
            raise ConfigError("q", q, f"IRR probabilities whose one-report epsilon can be <= {self.epsilon}")
        from scipy.optimize import brentq  # deferred (tests/test_layers.py, DEFERRED)

        return brentq(excess, low, high, xtol=1e-12)

    @property
    def p_star(self) -> float:
        return self.prob_one_if_one

    @property
    def q_star(self) -> float:
        return self.prob_one_if_zero

    @property
    def ratio(self) -> float:
        one, zero = self.prob_one_if_one, self.prob_one_if_zero
        return one * (1 - zero) / (zero * (1 - one))

    def privacy_loss(self) -> float:
        return self.epsilon_one

    # ----- client
    @classmethod
    def report_bytes(cls, n: int, k: int, **options: object) -> int:
        """Packed reports (``ceil(num_bits / 8)`` bytes a user) and what the oracle keeps: the
        ``num_bits x k`` design (uint8) and its pseudo-inverse (float64), 9 bytes a cell."""
        m = _num_bits(options)
        return int(n) * ((m + 7) // 8) + 9 * m * k

    @classmethod
    def memory_bytes(cls, n: int, k: int, **options: object) -> int:
        """The reports (:meth:`report_bytes`) and the larger of building the oracle (the
        design's float copies for its rank and pseudo-inverse and their SVD's factors: 32 bytes
        a cell) and one chunk of :meth:`perturb` (:func:`~dp2pub.mechanisms.chunks.chunk_rows`
        users; a byte a user and bit for each of the Bloom bits, the noise flags, a draw's random
        bytes and flags and the chosen bits, 5; with IRR two more draws and a choice, 8; with
        more than one chunk, the last one's Bloom bits and noise flags, held while the next ones
        are drawn, 2; and the design's boolean transpose)."""
        m = _num_bits(options)
        rows = chunk_rows(n, m)
        per_bit = (8 if options.get("p") is not None else 5) + (2 if int(n) > rows else 0)
        perturbing = per_bit * rows * m + m * k
        return cls.report_bytes(n, k, **options) + max(32 * m * k, perturbing)

    @classmethod
    def count_bytes(cls, n: int, k: int, **options: object) -> int:
        """The bit sums of the packed reports, users in chunks, as unary encoding's
        (:meth:`~dp2pub.mechanisms.packed.PackedReports.count_bytes`), and their fit (a few
        float64 arrays of num_bits and k)."""
        width = (_num_bits(options) + 7) // 8
        return 16 * chunk_rows(n, width) * width + 8 * 256 * width + 32 * (_num_bits(options) + k)

    def perturb(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Packed reported bits: each user's Bloom filter through PRR (and IRR).

        Parameters
        ----------
        values : numpy.ndarray
            One column of codes in ``0 .. k-1``, one per user.
        rng : numpy.random.Generator
            The source of the users' randomness.

        Returns
        -------
        numpy.ndarray
            The reported bits, packed: ``(n, ceil(num_bits / 8))`` uint8.
        """
        values = self.check_values(values)
        n, m = values.size, self.num_bits
        bloom_of = self.design.T.astype(bool)  # (k, m)
        packed = np.empty((n, (m + 7) // 8), dtype=np.uint8)
        for part in chunks(n, m):
            size = part.stop - part.start
            prr = bloom_of[values[part]]
            noisy = bits.bernoulli(rng, (size, m), self._tf)
            prr = np.where(noisy, bits.bernoulli(rng, (size, m), 1 << 31), prr)
            if self.irr:
                prr = np.where(prr, bits.bernoulli(rng, (size, m), self._tq), bits.bernoulli(rng, (size, m), self._tp))
            packed[part] = np.packbits(prr, axis=1)
        return packed

    # ----- server
    def reported_bits(self, reports: np.ndarray) -> np.ndarray:
        return np.unpackbits(reports, axis=1, count=self.num_bits)

    def support(self, reports: np.ndarray) -> np.ndarray:
        """How many of ``B(v)``'s bits report ``i`` sets, for every v: (m, k)."""
        return self.reported_bits(reports).astype(np.int64) @ self.design.astype(np.int64)

    def likelihoods(self, reports: np.ndarray) -> np.ndarray:
        """``Pr[y_i | v]`` up to a factor of ``y_i``, including the ``|B(v)|`` term."""
        one, zero = self.prob_one_if_one, self.prob_one_if_zero
        size = self.design.sum(axis=0)
        base = ((1 - one) / (1 - zero)) ** size
        return base[None, :] * np.power(self.ratio, self.support(reports).astype(np.float64))

    def bit_sums(self, reports: np.ndarray) -> np.ndarray:
        """How many reports set each bit."""
        sums = np.zeros(self.num_bits, dtype=np.int64)
        for part in chunks(len(reports), reports.shape[1]):
            sums += bits.packed_column_sums(reports[part], self.num_bits)
        return sums

    @property
    def linear(self) -> bool:
        return bool(self.full_rank)

    def user_estimates(self, reports: np.ndarray) -> np.ndarray:
        """Per-user unbiased vectors ``pinv(X) (y - p*) / (q* - p*)`` (full-rank X only)."""
        if self.pinv is None:  # None exactly when the design is not full rank
            raise ValueError("the Bloom design matrix is rank deficient: no linear unbiased estimate")
        debiased = (self.reported_bits(reports) - self.prob_one_if_zero) / (
            self.prob_one_if_one - self.prob_one_if_zero
        )
        return debiased @ self.pinv.T

    def report_counts(self, reports: np.ndarray) -> np.ndarray:
        """The bit sums: what the least-squares estimate fits."""
        return self.bit_sums(reports)

    def estimate_counts(
        self, counts: np.ndarray, n: int, estimator: str = "unbiased", trace: IBUTrace | None = None
    ) -> np.ndarray:
        """Estimated frequencies from the bit sums ``counts`` of ``n`` reports; ``none`` is the
        raw bit-sum fit without debiasing (``ibu`` needs the reports: :meth:`estimate`)."""
        check_choice(estimator, "estimator", ESTIMATORS)
        if n <= 0:
            raise ConfigError("reports", n, "at least one report")
        if estimator == "ibu":
            raise ValueError(f"{self.name}: ibu needs the reports, not only their bit sums")
        sums = np.asarray(counts, dtype=np.float64)
        if estimator == "none":
            return self._fit(sums) / n
        debiased = (sums - n * self.prob_one_if_zero) / (self.prob_one_if_one - self.prob_one_if_zero)
        return postprocess(self._fit(debiased) / n, estimator)

    simulates_counts = True

    def simulate_counts(self, true_counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The bit sums, exactly in distribution: bit j is set in the Bloom filters of
        ``N_j = (X counts)_j`` users, and every bit of every report is independent given the
        filters (PRR, then IRR), so the sum is ``Bin(N_j, P(1 | 1)) + Bin(n - N_j, P(1 | 0))``,
        independently over bits (realized probabilities). O(m k) work."""
        counts = self.check_counts(true_counts)
        ones = self.design.astype(np.int64) @ counts
        return rng.binomial(ones, self.prob_one_if_one) + rng.binomial(counts.sum() - ones, self.prob_one_if_zero)

    def _fit(self, targets: np.ndarray) -> np.ndarray:
        if self.pinv is not None:
            return self.pinv @ targets
        from sklearn.linear_model import Lasso  # deferred (tests/test_layers.py, DEFERRED)

        model = Lasso(alpha=1e-3 * max(targets.max(), 1.0), fit_intercept=False, positive=True)
        return model.fit(self.design.astype(float), targets).coef_

    def variance(self, n: int) -> float:
        """``Var[f_hat(v)]`` when every value has frequency near 0 (mean over values)."""
        zero, one = self.prob_one_if_zero, self.prob_one_if_one
        if self.pinv is None:
            return math.nan
        cov = self.pinv @ self.pinv.T * zero * (1 - zero) / (one - zero) ** 2
        return float(np.mean(np.diag(cov))) / n

    def expected_mse(self, n: float, freq: np.ndarray | None = None) -> float:
        """Exact expected squared error of the least-squares estimate, averaged over values.

        Bits are independent given the Bloom filters, so ``Cov(c) = diag(n_j1 q*(1-q*) +
        (n - n_j1) p*(1-p*))`` with ``n_j1 = n (X f)_j``; the estimate is
        ``pinv(X) (c - n p*) / (n (q* - p*))``. Without ``freq``, f = 0 is assumed.
        """
        if self.pinv is None:
            return math.nan
        zero, one = self.prob_one_if_zero, self.prob_one_if_one
        ones = self.design @ (np.zeros(self.k) if freq is None else np.asarray(freq, float))
        var_bits = (ones * one * (1 - one) + (1 - ones) * zero * (1 - zero)) / (n * (one - zero) ** 2)
        return float(np.mean(np.einsum("vj,j,vj->v", self.pinv, var_bits, self.pinv)))

    def transition_matrix(self) -> np.ndarray:
        """The exact channel ``P[x, y]`` of one report over all ``2^num_bits`` bit vectors.

        Returns
        -------
        numpy.ndarray
            A (k, 2^num_bits) matrix (:meth:`permanent_matrix`: the PRR's alone).

        Raises
        ------
        ValueError
            If ``num_bits > 12`` (the output space is enumerated).
        """
        return self._bitwise_channel(self.prob_one_if_one, self.prob_one_if_zero)

    def permanent_matrix(self) -> np.ndarray:
        """``P[x, b']`` of the permanent response alone (the channel behind eps_inf)."""
        return self._bitwise_channel(1 - self.f / 2, self.f / 2)

    def _bitwise_channel(self, one: float, zero: float) -> np.ndarray:
        if self.num_bits > 12:
            raise ValueError(f"the exact channel has 2^{self.num_bits} outputs; audit with num_bits <= 12")
        outputs = np.array(list(itertools.product((0, 1), repeat=self.num_bits)), dtype=bool)
        prob_one = np.where(self.design.T.astype(bool), one, zero)  # (x, bit)
        per_bit = np.where(outputs[None], prob_one[:, None, :], 1 - prob_one[:, None, :])
        return per_bit.prod(axis=2)


def _num_bits(options: dict[str, object]) -> int:
    """``num_bits`` of a RAPPOR's options as its memory estimate reads it (the default, 64,
    when it is absent or invalid: the oracle refuses an invalid one when it is built)."""
    num_bits = options.get("num_bits", 64)
    return num_bits if isinstance(num_bits, int) and num_bits > 0 else 64


def _epsilon_one(f: float, p: float, q: float, h: int) -> float:
    """``h ln(q* (1 - p*) / (p* (1 - q*)))`` for PRR noise f and IRR (p, q)."""
    one = f / 2 * (p + q) + (1 - f) * q
    zero = f / 2 * (p + q) + (1 - f) * p
    return h * math.log(one * (1 - zero) / (zero * (1 - one)))
