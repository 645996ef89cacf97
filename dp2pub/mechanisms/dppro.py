"""Random projection with Gaussian noise, the mechanism of DPPro (Xu, Ren, Zhang, Qin, Ren,
"DPPro: Differentially Private High-Dimensional Data Release via Random Projection", IEEE
TIFS 12(12), 2017), as library functions.

Each record, a vector ``x`` of dimension ``dim``, is released as ``y = x P + z``: ``P`` is a
``dim x k`` matrix of independent ``N(0, 1/k)`` entries (a Johnson-Lindenstrauss projection;
drawn independently of the data, so it may be published), ``z`` has independent
``N(0, sigma^2)`` entries.

The noise scale. The DPPro paper's own theorem could not be consulted here, so the scale is
the one derived below from two standard results, each at half of ``delta``:

1. The projected difference of two neighbouring records. For a fixed ``v = x - x'``,
   ``||v P||^2 / (||v||^2 / k)`` is chi-square with ``k`` degrees of freedom, and
   (Laurent & Massart, Annals of Statistics 28(5), 2000, Lemma 1)
   ``Pr[chi2_k >= k + 2 sqrt(k t) + 2 t] <= exp(-t)``. With ``t = ln(2/delta)``, except with
   probability ``delta/2`` over ``P``:
   ``||v P|| <= ||v|| sqrt((k + 2 sqrt(k ln(2/delta)) + 2 ln(2/delta)) / k)``
   (:func:`projected_norm_factor`).
2. The Gaussian mechanism in the form of Kenthapadi, Korolova, Mironov, Mishra, "Privacy via
   the Johnson-Lindenstrauss Transform", Journal of Privacy and Confidentiality 5(1), 2013: noise of scale ``sigma >= w sqrt(2 (ln(1/(2 delta')) + eps)) / eps`` on a value
   of L2 sensitivity ``w`` is (eps, delta')-DP for ``delta' < 1/2`` and any ``eps > 0``
   (:func:`gaussian_scale`; the privacy loss is ``N(mu, 2 mu)`` with
   ``mu = w^2 / (2 sigma^2)``, and this sigma keeps ``Pr[loss > eps] <= delta'``).

Together (:func:`dppro_sigma`), with ``Delta`` the largest ``||x - x'||`` of two records:

    sigma = Delta * sqrt((k + 2 sqrt(k ln(2/delta)) + 2 ln(2/delta)) / k)
                  * sqrt(2 (ln(1/delta) + eps)) / eps

is (eps, delta)-DP for records replaced one at a time, ``P`` published: for each pair of
neighbouring tables, the ``P`` outside the bound of step 1 (probability ``delta/2``) add at
most ``delta/2``, and given any other ``P`` the release is the Gaussian mechanism at
(eps, delta/2). No union bound over pairs is needed: differential privacy is a statement
about each pair.

One-hot records (:func:`project_codes`): a record of ``d`` categorical attributes is the
concatenation of one indicator vector per attribute, so ``||x|| = sqrt(d)`` and two records
differ by at most ``sqrt(2 d)`` (:func:`one_hot_sensitivity`). ``x P`` is then the sum of
one row of ``P`` per attribute: computed attribute by attribute, in ``O(n k)`` memory,
without the one-hot matrix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dp2pub.validation import check_epsilon, check_float, check_int, check_probability


def projected_norm_factor(k: int, delta: float) -> float:
    """``sqrt((k + 2 sqrt(k ln(2/delta)) + 2 ln(2/delta)) / k)``: for a fixed ``v`` and ``P``
    of ``N(0, 1/k)`` entries, ``||v P|| <= factor * ||v||`` except with probability
    ``delta / 2`` (Laurent & Massart's chi-square bound)."""
    k = check_int(k, "k", 1)
    t = math.log(2.0 / check_probability(delta, "delta"))
    return math.sqrt((k + 2.0 * math.sqrt(k * t) + 2.0 * t) / k)


def gaussian_scale(epsilon: float, delta: float, sensitivity: float) -> float:
    """The (epsilon, delta)-DP Gaussian mechanism's ``sigma`` for L2 ``sensitivity``:
    ``sensitivity * sqrt(2 (ln(1/(2 delta)) + epsilon)) / epsilon`` (Kenthapadi et al.
    2013; ``delta < 1/2``)."""
    epsilon = check_epsilon(epsilon)
    delta = check_float(delta, "delta", 0.0, 0.5)
    sensitivity = check_float(sensitivity, "sensitivity", 0.0)
    return sensitivity * math.sqrt(2.0 * (math.log(1.0 / (2.0 * delta)) + epsilon)) / epsilon


def dppro_sigma(epsilon: float, delta: float, k: int, sensitivity: float) -> float:
    """The noise scale that makes ``x P + N(0, sigma^2 I_k)`` (epsilon, delta)-DP when two
    records differ by at most ``sensitivity`` in L2 (module docstring): ``delta / 2`` for the
    projection's norm bound, ``delta / 2`` for the Gaussian mechanism."""
    delta = check_probability(delta, "delta")
    return gaussian_scale(epsilon, delta / 2.0, sensitivity * projected_norm_factor(k, delta))


def one_hot_sensitivity(d: int) -> float:
    """``sqrt(2 d)``: the largest L2 distance of two one-hot records of ``d`` attributes
    (each attribute that differs moves one 1 to another place)."""
    return math.sqrt(2.0 * check_int(d, "d", 1))


def projection_matrix(dim: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A ``dim x k`` matrix of independent ``N(0, 1/k)`` entries, so that
    ``E ||x P||^2 = ||x||^2``."""
    dim, k = check_int(dim, "dim", 1), check_int(k, "k", 1)
    return rng.normal(0.0, 1.0 / math.sqrt(k), size=(dim, k))


def one_hot_offsets(sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    """Where each attribute's indicator block starts in the one-hot vector."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def project_codes(codes: np.ndarray, sizes: Sequence[int] | np.ndarray, projection: np.ndarray) -> np.ndarray:
    """``x P`` for the one-hot vector ``x`` of every row of ``codes`` (n x d integer codes of
    domains ``sizes``; ``projection`` has ``sum(sizes)`` rows): one gathered row of ``P`` per
    attribute, summed, shape (n, k)."""
    codes = np.asarray(codes)
    offsets = one_hot_offsets(sizes)
    if codes.ndim != 2 or codes.shape[1] != len(offsets):
        raise ValueError(f"codes must have shape (n, {len(offsets)}), got {codes.shape}")
    if projection.shape[0] != int(np.sum(sizes)):
        raise ValueError(f"the projection has {projection.shape[0]} rows, the one-hot vectors {int(np.sum(sizes))}")
    out = np.zeros((codes.shape[0], projection.shape[1]))
    for j, offset in enumerate(offsets):
        out += projection[offset + codes[:, j].astype(np.int64)]
    return out


def release_projection(
    codes: np.ndarray,
    sizes: Sequence[int] | np.ndarray,
    projection: np.ndarray,
    sigma: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """The noisy projected records ``Y = X P + Z``, ``Z`` of independent ``N(0, sigma^2)``
    entries (:func:`project_codes`; the noise is drawn as one more n x k array and added in place)."""
    released = project_codes(codes, sizes, projection)
    released += rng.normal(0.0, check_float(sigma, "sigma", 0.0, open_low=False), size=released.shape)
    return released
