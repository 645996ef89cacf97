"""Iterative Bayesian update (IBU): the maximum-likelihood distribution behind LDP reports.

IBU is expectation-maximisation on the reports' likelihood (Agrawal & Aggarwal, PODS 2001;
used for LDP by Wang et al., "Locally Differentially Private Frequency Estimation with
Consistency", NDSS 2020, and Li et al., SIGMOD 2020): starting from the uniform ``pi``,

    pi(x) <- pi(x) * (1/n) sum_i Pr[y_i | x] / sum_x' pi(x') Pr[y_i | x'].

Its result is a distribution (non-negative, sums to one). On a joint domain of
independently perturbed attributes ``Pr[y_i | x]`` is the product of the per-attribute
likelihoods. For GRR the reports' joint histogram is a sufficient statistic, and the channel
is applied axis by axis, never as the Kronecker product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

import numpy as np

from dp2pub.data.marginals import marginal_counts
from dp2pub.mechanisms.chunks import chunks, rowwise_outer


class Channel(Protocol):
    """What IBU needs of a frequency oracle (:class:`dp2pub.mechanisms.oracle.FrequencyOracle`)."""

    k: int
    reports_values: ClassVar[bool]

    def forward(self, table: np.ndarray, axis: int = 0) -> np.ndarray: ...

    def likelihoods(self, reports: np.ndarray) -> np.ndarray: ...

    def n_reports(self, reports: np.ndarray) -> int: ...


#: Below this many cells the per-user likelihood matrix is kept between iterations.
CACHE_CELLS = 1 << 24


def ibu(
    oracles: Sequence[Channel],
    reports: Sequence[np.ndarray],
    max_iter: int | None = None,
    tol: float = 1e-10,
) -> np.ndarray:
    """The IBU estimate of the joint distribution of the attributes behind ``reports``.

    ``reports[j]`` are oracle ``j``'s reports of the same users, in the same order. Stops
    when an iteration changes ``pi`` by less than ``tol`` in L1 norm, or after ``max_iter``
    iterations (default 10000 on a GRR histogram, 1000 when every user's likelihood is used).
    """
    shape = tuple(oracle.k for oracle in oracles)
    if all(oracle.reports_values for oracle in oracles):
        codes = np.stack([np.asarray(r) for r in reports], axis=1)
        observed = marginal_counts(codes, shape) / codes.shape[0]
        return _ibu_grr(list(oracles), observed, max_iter or 10_000, tol)
    return _ibu_users(list(oracles), list(reports), shape, max_iter or 1000, tol)


def _ibu_grr(oracles: list[Channel], observed: np.ndarray, max_iter: int, tol: float) -> np.ndarray:
    def channel(table: np.ndarray) -> np.ndarray:  # the channels are symmetric: Q = Q^T
        for axis, oracle in enumerate(oracles):
            table = oracle.forward(table, axis)
        return table

    pi = np.full(observed.shape, 1.0 / observed.size)
    for _ in range(max_iter):
        predicted = channel(pi)
        ratio = np.divide(observed, predicted, out=np.zeros_like(observed), where=predicted > 0)
        new = pi * channel(ratio)
        new /= new.sum()
        done = np.abs(new - pi).sum() < tol
        pi = new
        if done:
            break
    return pi


def _joint_likelihoods(oracles: list, reports: list, part: slice) -> np.ndarray:
    """``Pr[y_i | x]`` up to a factor per user, for users ``part``, flattened over the joint domain."""
    likelihoods = [oracle.likelihoods(rep[part]) for oracle, rep in zip(oracles, reports)]
    return rowwise_outer([lik / lik.max(axis=1, keepdims=True) for lik in likelihoods])  # rescaled per user


def _ibu_users(oracles: list, reports: list, shape: tuple, max_iter: int, tol: float) -> np.ndarray:
    n, cells = oracles[0].n_reports(reports[0]), int(np.prod(shape))
    parts = list(chunks(n, cells))
    cache = [_joint_likelihoods(oracles, reports, part) for part in parts] if n * cells <= CACHE_CELLS else None
    pi = np.full(cells, 1.0 / cells)
    for _ in range(max_iter):
        total = np.zeros(cells)
        for index, part in enumerate(parts):
            lik = cache[index] if cache is not None else _joint_likelihoods(oracles, reports, part)
            total += lik.T @ (1.0 / (lik @ pi))
        new = pi * total / n
        new /= new.sum()
        done = np.abs(new - pi).sum() < tol
        pi = new
        if done:
            break
    return pi.reshape(shape)
