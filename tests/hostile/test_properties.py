"""Property-based tests (hypothesis): every frequency oracle at budgets from 1e-300 to 1e300
on random domain sizes, and the simplex projection of estimates of any finite magnitude.

Hypothesis runs derandomized (a fixed seed per test), so a run is reproducible and never
flakes; a failure prints the smallest example it found.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dp2pub.mechanisms import GRR, OLH, OUE, SUE
from dp2pub.mechanisms.estimators import project_simplex
from dp2pub.validation import ConfigError

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

PROFILE = settings(derandomize=True, deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])

#: Budgets log-uniform over 1e-300 .. 1e300.
budgets = st.floats(min_value=-300, max_value=300).map(lambda e: 10.0**e)


@PROFILE
@given(epsilon=budgets, k=st.integers(2, 4096), oracle=st.sampled_from([GRR, SUE, OUE, OLH]))
def test_every_oracle_runs_finitely_within_its_budget_or_refuses_it(epsilon, k, oracle):
    try:
        mechanism = oracle(epsilon=epsilon, k=k)
    except ConfigError as error:
        assert "\n" not in str(error) and str(error).startswith(f"epsilon={epsilon!r} is invalid")
        assert epsilon < 1e-5, "a usable budget was refused"
        return
    assert mechanism.privacy_loss() <= epsilon  # exact, no slack
    rng = np.random.default_rng(k)
    values = rng.integers(0, k, 200)
    estimate = mechanism.estimate(mechanism.perturb(values, rng), "unbiased")
    assert np.all(np.isfinite(estimate))
    assert np.isfinite(mechanism.variance(values.size)) and mechanism.variance(values.size) >= 0


@PROFILE
@given(freq=arrays(np.float64, st.integers(1, 60), elements=st.floats(-1e300, 1e300)))
def test_project_simplex_is_a_projection_at_any_magnitude(freq):
    out = project_simplex(freq)
    assert np.all(out >= 0) and out.sum() == pytest.approx(1.0, abs=1e-9)
    positive = out > 0
    # The projection is max(x - theta, 0): entries kept are the largest ones, shifted alike.
    assert freq[positive].min() >= freq[~positive].max(initial=-np.inf)
    shift = freq[positive] - out[positive]
    scale = max(1.0, float(np.abs(freq[positive]).max()))
    assert np.ptp(shift) <= 1e-9 * scale


def test_project_simplex_of_estimates_of_1e16_keeps_the_top_entry():
    """The case that crashed DP2-Pub on adult at epsilon 0.1 (inputs of 1e16 lost the +1 of
    the threshold): the largest entry, far above the others, gets all the mass."""
    out = project_simplex(np.array([3e16, -1e16, 2e16, 5.0]))
    np.testing.assert_array_equal(out, [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(project_simplex(np.array([1e15, 1e15 + 0.5, -3.0])), [0.25, 0.75, 0.0])
