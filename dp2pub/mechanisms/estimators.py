"""Server-side post-processing of unbiased frequency estimates.

An unbiased estimate may be negative and need not sum to one. Post-processing is free under
differential privacy; it trades the estimator's unbiasedness for consistency.

- ``unbiased``: no post-processing, ``(C - n q*) / (p* - q*)`` as it is.
- ``clip``: negative entries set to zero, then rescaled to sum to one.
- ``norm_sub``: Norm-Sub (Wang et al., "Locally differentially private frequency estimation
  with consistency", NDSS 2020): subtract one common delta and clip at zero so that the result
  sums to one, which is the Euclidean projection onto the probability simplex.

``none`` (the raw report histogram, biased towards uniform) and ``ibu``
(iterative Bayesian update, :mod:`dp2pub.mechanisms.ibu`) are not post-processings of the
unbiased estimate; each oracle handles them itself.
"""

from __future__ import annotations

import numpy as np

ESTIMATORS: tuple[str, ...] = ("none", "unbiased", "clip", "norm_sub", "ibu")


def clip_normalize(freq: np.ndarray) -> np.ndarray:
    """Clip negative entries to zero and rescale to sum to one (uniform if nothing is left)."""
    out = np.clip(freq, 0.0, None)
    total = out.sum()
    if total <= 0:
        return np.full_like(out, 1.0 / out.size)
    return out / total


def project_simplex(freq: np.ndarray) -> np.ndarray:
    """Euclidean projection of a frequency estimate onto the probability simplex.

    Sort, find the largest ``rho`` with ``u_rho - (sum_{i<=rho} u_i - 1) / rho > 0``, shift
    by that threshold and clip at zero ([1]_, Figure 1). This is Norm-Sub [2]_: subtract one
    common delta and clip at zero so that the result sums to one.

    The projection does not change when a constant is added to every entry, so the largest
    entry is first subtracted: the sums then start near zero and keep their precision at any
    magnitude (estimates of 1e16 from tiny budgets), and ``rho = 0`` always qualifies. The
    threshold is then at least -1, so entries below -1 project to 0 whatever their value:
    they are raised to -1, which keeps the sums finite for any finite input.

    Parameters
    ----------
    freq : numpy.ndarray
        An estimate of any shape (a joint marginal is projected as a whole).

    Returns
    -------
    numpy.ndarray
        Float64 entries >= 0 summing to one, of the shape of ``freq``.

    Raises
    ------
    ValueError
        If an entry is not finite (``project_simplex needs finite entries``).

    References
    ----------
    .. [1] J. Duchi, S. Shalev-Shwartz, Y. Singer, T. Chandra, "Efficient Projections onto
       the l1-Ball for Learning in High Dimensions", ICML 2008, Figure 1.
    .. [2] T. Wang, M. Lopuhaä-Zwakenberg, Z. Li, B. Skoric, N. Li, "Locally Differentially
       Private Frequency Estimation with Consistency", NDSS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import project_simplex
    >>> print(project_simplex(np.array([0.6, 0.5, -0.1])))
    [0.55 0.45 0.  ]
    >>> print(project_simplex(np.array([[0.7, 0.1], [0.3, -0.2]])).round(3))
    [[0.667 0.067]
     [0.267 0.   ]]
    """
    flat = np.asarray(freq, dtype=np.float64).ravel()
    if not np.all(np.isfinite(flat)):
        raise ValueError("project_simplex needs finite entries")
    flat = np.maximum(flat - flat.max(), -1.0)
    u = np.sort(flat)[::-1]
    cumulative = np.cumsum(u) - 1.0
    ranks = np.arange(1, u.size + 1)
    rho = np.nonzero(u - cumulative / ranks > 0)[0][-1]  # never empty: u[0] = 0, cumulative[0] = -1
    theta = cumulative[rho] / (rho + 1)
    return np.maximum(flat - theta, 0.0).reshape(np.shape(freq))


def postprocess(freq: np.ndarray, estimator: str) -> np.ndarray:
    """Apply the named post-processing to an unbiased frequency estimate of any shape.

    Post-processing is free under differential privacy; it trades the estimator's
    unbiasedness for consistency.

    Parameters
    ----------
    freq : numpy.ndarray
        An unbiased estimate (entries may be negative, their sum need not be one).
    estimator : str
        ``unbiased`` (``freq`` as it is), ``clip`` (negative entries set to zero, then
        rescaled to sum to one; uniform if nothing is left) or ``norm_sub`` (the projection
        onto the simplex, :func:`project_simplex`).

    Returns
    -------
    numpy.ndarray
        The post-processed estimate, of the shape of ``freq``.

    Raises
    ------
    ValueError
        For another ``estimator`` (``none`` and ``ibu`` are not post-processings of the
        unbiased estimate: each oracle handles them itself).

    References
    ----------
    .. [1] T. Wang, M. Lopuhaä-Zwakenberg, Z. Li, B. Skoric, N. Li, "Locally Differentially
       Private Frequency Estimation with Consistency", NDSS 2020 (Base-Cut, Norm-Sub).

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import postprocess
    >>> unbiased = np.array([0.6, 0.5, -0.1])
    >>> print(postprocess(unbiased, "clip").round(4))
    [0.5455 0.4545 0.    ]
    >>> print(postprocess(unbiased, "norm_sub"))
    [0.55 0.45 0.  ]
    >>> postprocess(unbiased, "ibu")
    Traceback (most recent call last):
    ...
    ValueError: estimator 'ibu' is not a post-processing; use one of ('none', 'unbiased', 'clip', 'norm_sub', 'ibu')
    """
    if estimator == "unbiased":
        return freq
    if estimator == "clip":
        return clip_normalize(freq)
    if estimator == "norm_sub":
        return project_simplex(freq)
    raise ValueError(f"estimator {estimator!r} is not a post-processing; use one of {ESTIMATORS}")
