"""Exact Bernoulli bits at the speed of random bytes.

A bit that is 1 with probability ``T / 2^32`` is drawn lazily: one random byte ``b`` is
compared with the top byte ``t`` of ``T``; only when ``b == t`` (probability 1/256) are 24 more
random bits compared with the rest of ``T``. So ``Pr[1] = t/256 + (1/256)(T mod 2^24)/2^24``
``= T / 2^32`` exactly, for about 8.1 random bits per output bit instead of 32 or 64.

Mechanisms round their probabilities to a multiple of ``2^-32`` *in the direction that keeps
the privacy guarantee* and then use the realized probabilities everywhere (estimators,
variances, audits), so what is analysed is exactly what runs.
"""

from __future__ import annotations

import math

import numpy as np

SCALE = 1 << 32


def threshold(probability: float, direction: str) -> int:
    """``T`` in ``[1, 2^32 - 1]`` with ``T / 2^32`` the probability rounded ``up`` or ``down``."""
    scaled = probability * SCALE
    value = math.ceil(scaled) if direction == "up" else math.floor(scaled)
    return min(max(value, 1), SCALE - 1)


def realized(t: int) -> float:
    """The probability that :func:`bernoulli` with threshold ``t`` returns 1."""
    return t / SCALE


def random_bytes(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` independent uniform bytes (drawn as full-range uint64 words, the fastest path)."""
    words = rng.integers(0, np.iinfo(np.uint64).max, size=(size + 7) // 8, dtype=np.uint64, endpoint=True)
    return words.view(np.uint8)[:size]


def bernoulli(rng: np.random.Generator, shape: tuple[int, ...] | int, t: int) -> np.ndarray:
    """Boolean array of the given shape, each entry independently 1 with probability t/2^32."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = math.prod(shape)
    top, rest = t >> 24, t & 0xFFFFFF
    first = random_bytes(rng, size)
    out = first < top
    if rest:
        ties = np.flatnonzero(first == top)
        more = random_bytes(rng, 3 * ties.size).reshape(-1, 3).astype(np.uint32)
        out[ties] = ((more[:, 0] << 16) | (more[:, 1] << 8) | more[:, 2]) < rest
    return out.reshape(shape)


#: ``BYTE_BITS[b, j]`` is bit j (most significant first, as ``np.packbits``) of byte b.
BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.int64)


def packed_column_sums(packed: np.ndarray, width: int) -> np.ndarray:
    """How many rows of ``np.packbits(bits, axis=1)`` have each of the ``width`` bits set.

    One ``bincount`` of (column, byte value) pairs, then a 256 x 8 table lookup: no unpacking.
    """
    _n, columns = packed.shape
    keys = packed.astype(np.int64) + 256 * np.arange(columns, dtype=np.int64)
    histogram = np.bincount(keys.ravel(), minlength=256 * columns).reshape(columns, 256)
    return (histogram @ BYTE_BITS).ravel()[:width]
