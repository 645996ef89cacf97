"""Every frequency oracle at every finite positive budget: it runs with finite estimates and
variances and a privacy loss of at most epsilon, or refuses the budget in one ConfigError
(only where its realized channel cannot tell values apart)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dp2pub.mechanisms import GRR, OLH, OUE, SUE
from dp2pub.validation import ConfigError
from tests.conftest import run_cli

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

#: 1e-320 (subnormal) .. 1e308, every two decades, and the largest float.
BUDGETS = [1e-320, *np.logspace(-300, 300, 31), 1e308, float(np.finfo(float).max)]


@pytest.mark.parametrize("oracle", [GRR, SUE, OUE, OLH], ids=lambda c: c.name)
@pytest.mark.parametrize("k", [2, 16, 1000])
def test_every_budget_runs_finitely_or_is_refused_in_one_line(oracle, k):
    rng = np.random.default_rng(k)
    values = rng.integers(0, k, 3000)
    refused = []
    for epsilon in BUDGETS:
        try:
            mechanism = oracle(epsilon=float(epsilon), k=k)
        except ConfigError as error:
            assert str(error).startswith(f"epsilon={float(epsilon)!r} is invalid: expected a budget per report")
            assert "\n" not in str(error)
            refused.append(epsilon)
            continue
        estimate = mechanism.estimate(mechanism.perturb(values, rng), "unbiased")
        assert np.all(np.isfinite(estimate)), epsilon
        assert np.isfinite(mechanism.expected_mse(values.size)) and np.isfinite(mechanism.variance(values.size))
        assert mechanism.privacy_loss() <= epsilon, epsilon  # exact, no slack
    assert all(epsilon < 1e-5 for epsilon in refused)  # a usable budget is never refused
    assert refused  # the subnormal budgets are


def test_a_budget_too_small_for_any_oracle_is_refused_on_the_command_line(tmp_path):
    done = run_cli(
        ["epsilon=1e-300", "dataset.n=200", f"tracking.uri=sqlite:///{tmp_path / 'm.db'}", f"paths.outputs={tmp_path}"],
        cwd=tmp_path,
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("dp2pub: error: ") and "is invalid: expected a budget per report at which grr" in line


@pytest.mark.parametrize("oracle", [GRR, OLH], ids=lambda c: c.name)
def test_grr_realizes_its_budget_at_huge_epsilon(oracle):
    """Above about eps = 37 + ln(k - 1) another value's probability is below the 2^-53 grid
    of a uniform draw: it is rounded up to one grid point, so the realized channel keeps a
    finite loss, ln(2^53 - k + 1), below the budget."""
    loss = oracle(epsilon=1000.0, k=16).privacy_loss()
    assert loss <= 1000.0
    assert loss == pytest.approx(math.log(2.0**53 - 15))
