"""The uniform synthetic generator: independent, uniformly distributed attributes.

On this data every marginal is uniform, and GRR maps uniform to uniform, so no marginal
metric can depend on epsilon; it is kept to reproduce the raw-histogram tables of the ``seed_tables`` study.
"""

from __future__ import annotations

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.domain import Domain
from dp2pub.data.generator import Generator
from dp2pub.data.tally import Tally
from dp2pub.validation import ConfigError, check_int


def check_shape(n: object, d: object, k_min: object, k_max: object) -> tuple[int, int, int, int]:
    """Check (config values of) a generator's ``n >= 1``, ``d >= 1``, ``2 <= k_min <= k_max``; returns them."""
    n = check_int(n, "n", 1)
    d = check_int(d, "d", 1)
    k_min = check_int(k_min, "k_min", 2)
    k_max = check_int(k_max, "k_max", 2)
    if k_min > k_max:
        raise ConfigError("k_min", k_min, f"an integer <= k_max={k_max}")
    return n, d, k_min, k_max


def table_shape(n: int, d: int, k_min: int, k_max: int, rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """Check a generator's shape (:func:`check_shape`) and draw the d domain sizes uniformly
    from ``[k_min, k_max]``; returns ``(n, sizes)``."""
    n, d, k_min, k_max = check_shape(n, d, k_min, k_max)
    return n, rng.integers(k_min, k_max, size=d, endpoint=True)


def make_synthetic(*, n: int, d: int, k_min: int, k_max: int, rng: np.random.Generator) -> Dataset:
    """Draw a table of independent, uniformly distributed attributes.

    Each attribute's domain size is drawn uniformly from ``[k_min, k_max]``; each value is
    drawn uniformly from its domain, independently of everything else. Attributes are named
    ``a0 .. a{d-1}``. On this data every marginal is uniform, so no marginal metric of GRR can
    depend on epsilon (:func:`make_synthetic_bn` draws correlated tables).

    Parameters
    ----------
    n : int
        The number of records, >= 1.
    d : int
        The number of attributes, >= 1.
    k_min, k_max : int
        The range of the domain sizes, ``2 <= k_min <= k_max``.
    rng : numpy.random.Generator
        The source of the domain sizes and the values.

    Returns
    -------
    Dataset
        The table, named ``synthetic``, codes of the smallest unsigned dtype.

    Raises
    ------
    ConfigError
        Naming the bare key of a value out of range (``k_min=6 is invalid: expected an
        integer <= k_max=5``).

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import make_synthetic
    >>> data = make_synthetic(n=1000, d=3, k_min=2, k_max=5, rng=np.random.default_rng(0))
    >>> data.n, data.domain.names, data.codes.dtype
    (1000, ('a0', 'a1', 'a2'), dtype('uint8'))
    >>> print(data.domain.sizes)
    [5 4 4]
    >>> make_synthetic(n=10, d=3, k_min=6, k_max=5, rng=np.random.default_rng(0))
    Traceback (most recent call last):
    ...
    dp2pub.validation.ConfigError: k_min=6 is invalid: expected an integer <= k_max=5
    """
    n, sizes = table_shape(n, d, k_min, k_max, rng)
    codes = np.empty((n, len(sizes)), dtype=code_dtype(sizes.max()), order="F")
    for j, k in enumerate(sizes):  # one vectorized draw per attribute
        codes[:, j] = rng.integers(0, k, size=n)
    return Dataset(codes, Domain.from_sizes(sizes), name="synthetic")


def tally_synthetic(*, n: int, d: int, k_min: int, k_max: int, rng: np.random.Generator) -> Tally:
    """The histograms of :func:`make_synthetic`'s table, drawn without its records: the
    domain sizes as there, then each attribute's counts Multinomial(n, uniform), which is
    exactly the distribution of the histogram of n independent uniform values."""
    n, sizes = table_shape(n, d, k_min, k_max, rng)
    counts = tuple(rng.multinomial(n, np.full(int(k), 1.0 / int(k))) for k in sizes)
    return Tally(counts, Domain.from_sizes(sizes), name="synthetic")


def largest_shape(*, n: object, d: object, k_min: object, k_max: object, **_: object) -> tuple[int, list[int]]:
    """``(n, sizes)`` of a generated table before it is drawn, every domain at ``k_max``
    (:func:`check_shape` first)."""
    n, d, _k_min, k_max = check_shape(n, d, k_min, k_max)
    return n, [k_max] * d


#: ``dataset=synthetic`` (entry point ``dp2pub.datasets``).
SYNTHETIC = Generator(make_synthetic, largest_shape, tally_synthetic)
