"""Unary encoding: symmetric (SUE, basic RAPPOR without Bloom filter) and optimized (OUE).

Wang et al., USENIX Security 2017, section 4.3: the value ``x`` is one-hot encoded in k bits;
bit ``x`` is reported as 1 with probability p, every other bit with probability q, and
``epsilon = ln(p (1 - q) / ((1 - p) q))``.

- SUE: ``p = e^{eps/2} / (e^{eps/2} + 1)``, ``q = 1 - p``.
- OUE: ``p = 1/2``, ``q = 1 / (e^eps + 1)``, which minimises the variance.

p and q are rounded to multiples of 2^-32 (p down, q up), which can only lower the privacy
loss; the realized values are the ones every estimate and audit uses. Reports are packed
bits, ``(n, ceil(k/8))`` uint8, drawn chunk by chunk so memory stays bounded.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dp2pub.mechanisms import bits
from dp2pub.mechanisms.chunks import chunk_rows, chunks
from dp2pub.mechanisms.packed import PackedReports
from dp2pub.validation import check_epsilon


class UnaryEncoding(PackedReports):
    """Unary encoding with bit probabilities ``p`` (own bit) and ``q`` (other bits)."""

    name = "ue"

    def __init__(self, *, epsilon: float, k: int, p: float, q: float) -> None:
        super().__init__(epsilon=epsilon, k=k)
        self._tp = bits.threshold(p, "down")
        self._tq = bits.threshold(q, "up")
        self.check_informative()

    @property
    def p_star(self) -> float:
        return bits.realized(self._tp)

    @property
    def q_star(self) -> float:
        return bits.realized(self._tq)

    @property
    def ratio(self) -> float:
        p, q = self.p_star, self.q_star
        return p * (1 - q) / (q * (1 - p))

    def privacy_loss(self) -> float:
        return math.log(self.ratio)

    @classmethod
    def report_bytes(cls, n: int, k: int, **options: object) -> int:
        """Packed reports, ``ceil(k / 8)`` bytes a user."""
        return int(n) * ((k + 7) // 8)

    @classmethod
    def memory_bytes(cls, n: int, k: int, **options: object) -> int:
        """The packed reports and one chunk's work (:func:`~dp2pub.mechanisms.chunks.chunk_rows`
        users): per user of the chunk, its k bits drawn as random bytes, compared and matched
        against the threshold's top byte (3 k, and 1/32 k for the indices of the ties), its
        packed bits and its own bit's index (int64); with more than one chunk, the last one's
        bits, held while the next ones are drawn (k)."""
        rows = chunk_rows(n, k)
        held = k if int(n) > rows else 0
        return cls.report_bytes(n, k) + rows * (3 * k + k // 32 + 1 + (k + 7) // 8 + 8 + held)

    def perturb(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Packed reports: every bit Bernoulli(q), then bit ``x`` of each user Bernoulli(p).

        Parameters
        ----------
        values : numpy.ndarray
            One column of codes in ``0 .. k-1``, one per user.
        rng : numpy.random.Generator
            The source of the users' randomness.

        Returns
        -------
        numpy.ndarray
            The reports as packed bits, ``(n, ceil(k / 8))`` uint8 (``np.unpackbits(reports,
            axis=1, count=k)`` gives each user's k bits).
        """
        values = self.check_values(values)
        n, k = values.size, self.k
        packed = np.empty((n, (k + 7) // 8), dtype=np.uint8)
        for part in chunks(n, k):
            m = part.stop - part.start
            block = bits.bernoulli(rng, (m, k), self._tq)
            block[np.arange(m), values[part]] = bits.bernoulli(rng, m, self._tp)
            packed[part] = np.packbits(block, axis=1)
        return packed

    simulates_counts = True

    def simulate_counts(self, true_counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The bit counts, exactly in distribution: bit v is 1 in each of the ``n_v`` reports of
        value v with probability p and in each of the other ``n - n_v`` with probability q,
        all bits independent, so ``C(v) = Bin(n_v, p) + Bin(n - n_v, q)``, independently
        over v (realized p and q)."""
        counts = self.check_counts(true_counts)
        return rng.binomial(counts, self.p_star) + rng.binomial(counts.sum() - counts, self.q_star)

    def transition_matrix(self) -> np.ndarray:
        """The exact channel ``P[x, y]`` over all ``2^k`` bit vectors y.

        Returns
        -------
        numpy.ndarray
            A (k, 2^k) matrix, outputs in the order of ``itertools.product((0, 1), repeat=k)``.

        Raises
        ------
        ValueError
            If ``k > 12`` (the output space is enumerated).
        """
        if self.k > 12:
            raise ValueError(f"the exact channel has 2^{self.k} outputs; audit with k <= 12")
        outputs = np.array(list(itertools.product((0, 1), repeat=self.k)), dtype=bool)
        own = np.eye(self.k, dtype=bool)
        prob_one = np.where(own, self.p_star, self.q_star)  # (x, bit)
        per_bit = np.where(outputs[None, :, :], prob_one[:, None, :], 1 - prob_one[:, None, :])
        return per_bit.prod(axis=2)


class SUE(UnaryEncoding):
    """Symmetric unary encoding, SUE (basic one-time RAPPOR without a Bloom filter).

    The value ``x`` is one-hot encoded in k bits; bit ``x`` is reported as 1 with probability
    ``p = e^{eps/2} / (e^{eps/2} + 1)``, every other bit with probability ``q = 1 - p``, so
    ``epsilon = ln(p (1 - q) / ((1 - p) q))`` ([1]_, section 4.3). p and q are rounded to
    multiples of 2^-32 (p down, q up), which can only lower the privacy loss; reports are
    packed bits, ``(n, ceil(k/8))`` uint8.

    Parameters
    ----------
    epsilon : float
        The budget of one report, a finite number > 0.
    k : int
        The domain size, >= 2.

    Raises
    ------
    ConfigError
        For an ``epsilon`` or ``k`` out of range, or a budget so small that the realized
        channel is uniform.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, section 4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import SUE
    >>> oracle = SUE(epsilon=2.0, k=4)
    >>> round(oracle.p_star, 4), round(oracle.q_star, 4)
    (0.7311, 0.2689)
    >>> rng = np.random.default_rng(0)
    >>> values = rng.choice(4, size=20_000, p=[0.5, 0.3, 0.15, 0.05])
    >>> reports = oracle.perturb(values, rng)
    >>> reports.shape, reports.dtype
    ((20000, 1), dtype('uint8'))
    >>> print(oracle.estimate(reports, "norm_sub").round(2))
    [0.51 0.3  0.15 0.04]
    """

    name = "sue"

    def __init__(self, *, epsilon: float, k: int) -> None:
        shrink = math.exp(-check_epsilon(epsilon) / 2)  # e^{-eps/2}: finite at any budget
        super().__init__(epsilon=epsilon, k=k, p=1 / (1 + shrink), q=shrink / (1 + shrink))


class OUE(UnaryEncoding):
    """Optimized unary encoding, OUE: ``p = 1/2``, ``q = 1 / (e^eps + 1)``.

    As :class:`SUE`, the value is one-hot encoded in k bits, but the own bit is kept with
    ``p = 1/2`` and every other bit is set with ``q = 1 / (e^eps + 1)``, the choice that
    minimises the variance ([1]_, section 4.3). p and q are rounded to multiples of 2^-32
    (p down, q up); reports are packed bits, ``(n, ceil(k/8))`` uint8.

    Parameters
    ----------
    epsilon : float
        The budget of one report, a finite number > 0.
    k : int
        The domain size, >= 2.

    Raises
    ------
    ConfigError
        For an ``epsilon`` or ``k`` out of range, or a budget so small that the realized
        channel is uniform.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, section 4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import OUE
    >>> oracle = OUE(epsilon=2.0, k=4)
    >>> round(oracle.p_star, 4), round(oracle.q_star, 4)
    (0.5, 0.1192)
    >>> rng = np.random.default_rng(0)
    >>> values = rng.choice(4, size=20_000, p=[0.5, 0.3, 0.15, 0.05])
    >>> reports = oracle.perturb(values, rng)
    >>> print(oracle.estimate(reports, "norm_sub").round(2))
    [0.5  0.3  0.15 0.04]
    >>> print(np.unpackbits(reports[:3], axis=1, count=4))  # three users' reported bits
    [[0 1 0 0]
     [0 0 0 0]
     [1 0 0 1]]
    """

    name = "oue"

    def __init__(self, *, epsilon: float, k: int) -> None:
        shrink = math.exp(-check_epsilon(epsilon))  # q = 1 / (e^eps + 1), finite at any budget
        super().__init__(epsilon=epsilon, k=k, p=0.5, q=shrink / (1 + shrink))
