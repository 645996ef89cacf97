"""IBU stops at its stated tolerance on the log-likelihood, at the maximum-likelihood
distribution, and says how many EM steps it took and whether it stopped at its cap instead."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from dp2pub.job import run_job
from dp2pub.mechanisms import GRR, OLH, OUE, RAPPOR
from dp2pub.mechanisms.ibu import IBUTrace, ibu
from dp2pub.validation import ConfigError
from tests.test_job import plain

FREQ = np.array([0.4, 0.2, 0.1, 0.1, 0.05, 0.05, 0.04, 0.03, 0.02, 0.01])


def reports_of(oracle, n, seed):
    rng = np.random.default_rng(seed)
    return oracle.perturb(rng.choice(FREQ.size, size=n, p=FREQ), rng)


def log_likelihood(oracle, reports, pi):
    """Mean log-likelihood per report of ``pi`` (up to a constant of the reports)."""
    return float(np.mean(np.log(oracle.likelihoods(reports) @ pi)))


@pytest.mark.parametrize("oracle", [GRR(epsilon=0.5, k=10), OUE(epsilon=0.5, k=10), OLH(epsilon=0.5, k=10)], ids=str)
def test_accelerated_ibu_reaches_the_maximum_likelihood_that_plain_em_takes_10_000s_of_steps_to(oracle):
    reports = reports_of(oracle, 3000, seed=1)
    fast, slow = IBUTrace(), IBUTrace()
    estimate = ibu([oracle], [reports], trace=fast)
    reference = ibu([oracle], [reports], max_iter=200_000, tol=1e-15, accelerate=False, trace=slow)
    assert fast.capped == 0 and slow.capped == 0
    assert slow.iterations[0] > 10 * fast.iterations[0]  # measured: 7,000-40,000 plain steps against 40-200
    assert np.abs(estimate - reference).sum() < 1e-4
    # the former fixed 1,000 plain steps stopped short: L1 0.03-0.05 from the maximum
    short = ibu([oracle], [reports], max_iter=1000, tol=0.0, accelerate=False)
    assert np.abs(short - reference).sum() > 100 * np.abs(estimate - reference).sum()
    assert log_likelihood(oracle, reports, estimate) >= log_likelihood(oracle, reports, short)


def test_the_trace_counts_steps_and_estimates_stopped_at_the_cap():
    oracle = OUE(epsilon=0.5, k=10)
    reports = reports_of(oracle, 2000, seed=2)
    trace = IBUTrace()
    ibu([oracle], [reports], max_iter=7, trace=trace)  # SQUAREM: two iterations of 3 steps, one plain
    ibu([oracle], [reports], max_iter=5, trace=trace, accelerate=False)
    ibu([oracle], [reports], trace=trace)
    assert trace.iterations[:2] == [7, 5] and trace.iterations[2] > 7
    assert trace.capped == 2
    assert trace.metrics() == {
        "ibu_estimates": 3.0,
        "ibu_iterations_max": float(max(trace.iterations)),
        "ibu_iterations_cap": 10_000.0,
        "ibu_capped": 2.0,
    }
    assert IBUTrace().metrics() == {}


@pytest.mark.parametrize("max_iter", [1, 2])
def test_a_cap_below_one_squarem_iteration_still_takes_plain_steps(max_iter):
    oracle = OUE(epsilon=0.5, k=10)
    reports = reports_of(oracle, 500, seed=3)
    trace = IBUTrace()
    estimate = ibu([oracle], [reports], max_iter=max_iter, trace=trace)
    plain = ibu([oracle], [reports], max_iter=max_iter, accelerate=False)
    assert trace.iterations == [max_iter] and trace.capped == 1
    np.testing.assert_allclose(estimate, plain)  # not the uniform start
    assert np.abs(estimate - 0.1).sum() > 0


def test_ibu_without_reports_is_refused():
    with pytest.raises(ValueError, match="at least one report"):
        ibu([GRR(epsilon=1.0, k=3)], [np.zeros(0, dtype=np.int64)])
    with pytest.raises(ConfigError, match="reports=0"):
        RAPPOR(epsilon=1.0, k=4).estimate(np.zeros((0, 64), dtype=bool), "ibu")


def test_a_job_logs_its_ibu_steps_and_notes_and_warns_when_a_cap_was_hit(caplog):
    converged = run_job(
        plain(["mechanism=oue", "mechanism.estimator=ibu", "dataset.n=2000", "dataset.d=4", "epsilon=8"])
    )
    assert converged.metrics["ibu_estimates"] == 4 + 6  # 4 attributes, 6 pairs
    assert converged.metrics["ibu_capped"] == 0 and not any("ibu" in note for note in converged.notes)
    with caplog.at_level(logging.WARNING, logger="dp2pub.job"):
        capped = run_job(plain(["dataset=car", "mechanism=pram", "mechanism.prior=ibu", "epsilon=0.5"]))
    # PRAM's prior: plain EM, at most 2,000 steps; at epsilon 0.5/7 per attribute it has not converged
    assert capped.metrics["ibu_capped"] == 7 and capped.metrics["ibu_iterations_max"] == 2000
    line = "ibu: 7 of 7 estimates stopped at the cap of 2000 EM steps before the log-likelihood converged"
    assert line in capped.notes and line in caplog.text
