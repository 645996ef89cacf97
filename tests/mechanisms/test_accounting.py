"""Budget shares whose exact sum never exceeds the budget (dp2pub.mechanisms.accounting)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dp2pub.mechanisms.accounting import Spend, epsilon_spent, fit_shares, split_budget, two_shares


def test_plain_division_overspends_and_split_budget_does_not():
    assert math.fsum([1e-5 / 10] * 10) > 1e-5  # the case the job's check caught
    assert math.fsum([split_budget(1e-5, 10)] * 10) <= 1e-5


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    epsilon=st.floats(1e-300, 1e300),
    parts=st.integers(1, 500),
    fraction=st.floats(0.01, 0.99),
    release=st.lists(st.floats(0.01, 1.0), min_size=1, max_size=30),
)
def test_shares_fitted_after_a_spent_phase_stay_within_the_budget(epsilon, parts, fraction, release):
    """DP2-Pub's two phases: the structure shares are spent first and cannot change; the
    release shares (weights of what is left) are fitted around them."""
    spent = [split_budget(fraction * epsilon, parts)] * parts
    left = (1 - fraction) * epsilon
    shares = [left * w / math.fsum(release) for w in release]
    fitted = fit_shares(shares, epsilon, spent=spent)
    assert math.fsum([*spent, *fitted]) <= epsilon
    assert all(0 <= f <= s and f >= s * (1 - 1e-12) for f, s in zip(fitted, shares))


def test_a_spent_phase_over_the_budget_is_refused():
    with pytest.raises(ValueError, match="exceed the budget"):
        fit_shares([0.1], 1.0, spent=[0.6, 0.5])


def test_the_ledger_composes_sequentially_within_and_in_parallel_across_user_groups():
    assert epsilon_spent([]) is None
    assert epsilon_spent([Spend("perturb", "a", 0.25), Spend("perturb", "b", 0.5)]) == 0.75
    disjoint = [
        Spend("structure", "a", 1.0, "structure"),
        Spend("structure", "b", 1.0, "structure"),
        Spend("release", "a", 1.5, "release"),
    ]
    assert epsilon_spent(disjoint) == 2.0  # the structure users spend 2, the release users 1.5
    assert epsilon_spent([*disjoint, Spend("report", "c", 0.5)]) == 2.5  # every user also pays 0.5
    assert epsilon_spent([Spend("perturb", "x", 0.1)] * 3) == math.fsum([0.1] * 3)


@pytest.mark.parametrize("epsilon", [-0.1, -math.inf, math.nan])
def test_a_ledger_item_spends_a_non_negative_budget(epsilon):
    with pytest.raises(ValueError, match="epsilon >= 0"):
        Spend("perturb", "a", epsilon)


def test_a_query_without_noise_spends_inf_and_the_ledger_has_no_bound():
    ledger = [Spend("perturb", "a", 0.5), Spend("weights", "exact entropies", math.inf)]
    assert epsilon_spent(ledger) == math.inf
    assert epsilon_spent(ledger[:1]) == 0.5


@settings(derandomize=True, max_examples=300, deadline=None)
@given(epsilon=st.floats(0.0, 1e300), share=st.floats(0.0, 1.0))
def test_two_shares_sum_exactly_to_the_budget(epsilon, share):
    first, second = two_shares(epsilon, share)
    assert math.fsum([first, second]) == epsilon and first >= 0 and second >= 0
    assert first == pytest.approx(share * epsilon, rel=1e-15, abs=4 * math.ulp(epsilon))


def test_two_shares_refuses_a_share_outside_0_1():
    assert two_shares(1.0, 0.3) == (0.30000000000000004, 0.7)  # the smaller part is 1.0 - 0.7, exactly
    with pytest.raises(ValueError, match="share"):
        two_shares(1.0, 1.5)
