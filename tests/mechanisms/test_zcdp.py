"""zCDP and its conversion to (epsilon, delta): the conversion holds (checked against the
Gaussian mechanism's exact privacy profile), is tight to the bisection's last step, and the
ledger composes rho's exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from dp2pub.mechanisms.accounting import Spend, epsilon_spent
from dp2pub.mechanisms.zcdp import (
    exponential_rho,
    fit_rho_shares,
    gaussian_rho,
    zcdp_delta,
    zcdp_epsilon,
    zcdp_rho,
)

GRID = [(eps, delta) for eps in (0.05, 0.2, 0.4, 1.0, 1.6, 5.0, 20.0) for delta in (1e-12, 1e-9, 1e-5, 0.1)]


def gaussian_delta(sigma: float, epsilon: float) -> float:
    """The exact privacy profile of the Gaussian mechanism of sensitivity 1 (Balle and Wang,
    ICML 2018, Theorem 8): the smallest delta of its (epsilon, delta)-DP."""
    a, b = 1.0 / (2.0 * sigma), epsilon * sigma
    return float(norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b))


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_rho_converts_to_at_most_epsilon_and_no_more_rho_would(epsilon, delta):
    rho = zcdp_rho(epsilon, delta)
    assert zcdp_epsilon(rho, delta) <= epsilon
    assert zcdp_delta(rho, epsilon) <= delta * (1 + 1e-9)  # the bound at the budget itself
    assert zcdp_epsilon(rho * (1 + 1e-9), delta) > epsilon  # tight: a hair more rho is too much


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_the_conversion_holds_for_the_gaussian_mechanism_exactly(epsilon, delta):
    """rho-zCDP of a Gaussian mechanism converted at delta: its exact delta at that epsilon is
    below delta (the conversion is an upper bound), and the classical bound is looser."""
    rho = zcdp_rho(epsilon, delta)
    sigma = math.sqrt(1.0 / (2.0 * rho))
    assert gaussian_rho(sigma) == pytest.approx(rho, rel=1e-12)
    assert gaussian_delta(sigma, epsilon) <= delta
    assert zcdp_epsilon(rho, delta) <= rho + 2 * math.sqrt(rho * math.log(1 / delta))


@pytest.mark.parametrize(("rho", "delta"), [(1e-4, 1e-9), (0.0367, 1e-9), (1.0, 1e-6), (10.0, 1e-3)])
def test_epsilon_is_the_smallest_whose_delta_fits(rho, delta):
    epsilon = zcdp_epsilon(rho, delta)
    assert zcdp_delta(rho, epsilon) <= delta
    assert zcdp_delta(rho, epsilon * (1 - 1e-9)) > delta


def test_the_delta_minimizes_over_alpha():
    """The optimum found is no worse than any alpha on a fine grid (any alpha > 1 is a valid
    bound: the closed form of the bound at alpha)."""
    rho, epsilon = 0.05, 1.0
    alphas = np.linspace(1.01, 60, 200_000)
    bounds = np.exp((alphas - 1) * (alphas * rho - epsilon) + alphas * np.log1p(-1 / alphas)) / (alphas - 1)
    assert zcdp_delta(rho, epsilon) <= bounds.min() * (1 + 1e-9)
    assert zcdp_delta(rho, epsilon) >= bounds.min() * (1 - 1e-3)


def test_shares_fit_exactly():
    for epsilon in (0.1, 0.3, 1.6, 3.1):
        rho = zcdp_rho(epsilon, 1e-9)
        shares = fit_rho_shares([rho / 3] * 3, epsilon, 1e-9)
        assert len(set(shares)) == 1
        assert zcdp_epsilon(math.fsum(shares), 1e-9) <= epsilon


def test_the_ledger_adds_rho_and_converts_once():
    rho = zcdp_rho(1.0, 1e-9)
    items = [Spend("measure", "a", 0.0, rho=share, delta=1e-9) for share in fit_rho_shares([rho / 3] * 3, 1.0, 1e-9)]
    assert epsilon_spent(items) <= 1.0
    assert epsilon_spent(items) == zcdp_epsilon(math.fsum(s.rho for s in items), 1e-9)
    # converting each third separately and adding epsilons would spend far more
    assert sum(zcdp_epsilon(s.rho, 1e-9) for s in items) > 1.5
    # pure items of the same users add to the converted part
    assert epsilon_spent([*items, Spend("report", "b", 0.25)]) == epsilon_spent(items) + 0.25


def test_the_ledger_refuses_mixed_deltas_and_malformed_items():
    with pytest.raises(ValueError, match="one delta"):
        epsilon_spent([Spend("m", "a", 0.0, rho=0.1, delta=1e-9), Spend("m", "b", 0.0, rho=0.1, delta=1e-6)])
    with pytest.raises(ValueError, match="delta > 0 and epsilon 0"):
        Spend("m", "a", 0.0, rho=0.1)
    with pytest.raises(ValueError, match="delta > 0 and epsilon 0"):
        Spend("m", "a", 0.5, rho=0.1, delta=1e-9)
    with pytest.raises(ValueError, match="finite rho"):
        Spend("m", "a", 0.0, rho=-1.0, delta=1e-9)


def test_the_exponential_mechanism_costs_a_quarter_of_pure_squared_over_two():
    assert exponential_rho(2.0) == 0.5  # epsilon^2 / 8 (bounded range), not epsilon^2 / 2
