"""The estimator checks of a frequency oracle, by Monte Carlo with a fixed seed: its
``unbiased`` estimate is unbiased, and its mean squared error is ``expected_mse``.

``case.replicates`` estimates are simulated, each from ``case.users`` users whose values
have the frequencies of :func:`population` (halving from value 0, the last value absent),
through the oracle's own ``perturb`` and ``estimate``. The tolerances follow from the number
of replicates and the level ``case.alpha``, so a check neither flakes (the seed is fixed and
a correct oracle fails with probability at most alpha for any seed) nor passes vacuously (the
unbiasedness check fails when it could not see a bias of ``case.resolution``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import chi2
from scipy.stats import t as student_t

from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.testing.cases import OracleCase
from dp2pub.testing.verdicts import expect, skip

#: Users perturbed in one call (several replicates at a time).
BATCH_USERS = 1 << 17


def population(k: int, n: int) -> np.ndarray:
    """Counts of ``n`` users over ``k`` values, proportional to ``1, 1/2, 1/4, ...`` with
    the last value absent (largest remainders: the counts sum to ``n``)."""
    weights = np.append(0.5 ** np.arange(k - 1), 0.0)
    exact = weights / weights.sum() * n
    counts = np.floor(exact).astype(np.int64)
    counts[np.argsort(counts - exact, kind="stable")[: n - int(counts.sum())]] += 1
    return counts


def simulate(case: OracleCase, oracle: FrequencyOracle) -> tuple[np.ndarray, np.ndarray]:
    """``case.replicates`` unbiased estimates of ``oracle`` (one row each) and the true
    frequencies they estimate."""
    counts = population(case.k, case.users)
    values, n = np.repeat(np.arange(case.k), counts), case.users
    rng = np.random.default_rng(case.seed)
    per_call = max(1, BATCH_USERS // n)
    estimates = np.empty((case.replicates, case.k))
    for start in range(0, case.replicates, per_call):
        m = min(per_call, case.replicates - start)
        reports = oracle.perturb(np.tile(values, m), rng)
        for i in range(m):
            estimates[start + i] = oracle.estimate(reports[i * n : (i + 1) * n], "unbiased")
    return estimates, counts / n


def needs_linear(case: OracleCase, oracle: FrequencyOracle) -> None:
    """Skip unless the oracle offers an unbiased estimator (``linear``)."""
    if not oracle.linear:
        skip(f"{case.id}: linear is False, so its 'unbiased' estimate is not claimed unbiased (e.g. a Lasso fit)")


def check_unbiased(case: OracleCase) -> None:
    """The mean of the ``unbiased`` estimates is within a t-test's tolerance of the true
    frequency in every cell (level ``case.alpha`` over the k cells, Bonferroni), and that
    tolerance is at most ``case.resolution``."""
    oracle = case.build(case.epsilon)
    needs_linear(case, oracle)
    estimates, truth = simulate(case, oracle)
    where = f"{case.id} at epsilon={case.epsilon!r}, k={case.k}, {case.users} users x {case.replicates} estimates"
    reps = case.replicates
    stderr = estimates.std(axis=0, ddof=1) / math.sqrt(reps)
    tolerance = float(student_t.ppf(1 - case.alpha / (2 * case.k), reps - 1)) * stderr
    expect(
        tolerance.max() <= case.resolution,
        f"{where}: the test could not see a bias of {case.resolution} (tolerance {tolerance.max():.3g}): "
        "more users or replicates",
    )
    bias = estimates.mean(axis=0) - truth
    off = np.flatnonzero(np.abs(bias) > tolerance)
    expect(
        off.size == 0,
        f"{where}: biased: mean - truth = {bias[off].tolist()} in cells {off.tolist()}, "
        f"beyond {tolerance[off].tolist()} (level {case.alpha})",
    )


def mse_interval(replicates: int, alpha: float) -> tuple[float, float]:
    """Bounds of the ratio (empirical MSE) / (expected MSE) at level ``alpha``: chi-square
    quantiles with one degree of freedom per replicate, divided by their number. The k cells
    of one estimate count as one degree of freedom: correlated cells (their sum is fixed)
    make the empirical MSE vary more than k independent ones would, at most as much as one."""
    low = float(chi2.ppf(alpha / 2, replicates)) / replicates
    high = float(chi2.ppf(1 - alpha / 2, replicates)) / replicates
    return low, high


def check_variance(case: OracleCase) -> None:
    """The mean squared error of the ``unbiased`` estimates, over replicates and cells, is
    within :func:`mse_interval` of ``expected_mse(users, truth)`` (skipped when the oracle has
    no unbiased estimator or ``expected_mse`` no closed form, NaN)."""
    oracle = case.build(case.epsilon)
    needs_linear(case, oracle)
    truth = population(case.k, case.users) / case.users
    theory = oracle.expected_mse(case.users, truth)
    if theory is None or not math.isfinite(theory):
        skip(f"{case.id}: expected_mse is {theory!r}: no closed form to compare with")
    estimates, truth = simulate(case, oracle)
    empirical = float(np.mean((estimates - truth) ** 2))
    low, high = mse_interval(case.replicates, case.alpha)
    expect(
        low <= empirical / theory <= high,
        f"{case.id} at epsilon={case.epsilon!r}, k={case.k}, {case.users} users x {case.replicates} estimates: "
        f"empirical MSE {empirical:.4g} is {empirical / theory:.3f} x expected_mse {theory:.4g}, "
        f"outside [{low:.3f}, {high:.3f}] (level {case.alpha})",
    )
