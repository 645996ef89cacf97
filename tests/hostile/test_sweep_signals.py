"""Sweeps stopped from outside, and sweeps that race: a joblib sweep whose launcher gets
SIGTERM or SIGKILL takes its workers with it (no worker goes on with queued jobs), every
run it leaves is KILLED or FAILED with the signal named, and a rerun with
``tracking.skip_finished=true`` completes the grid with exactly one FINISHED run per
configuration. Two identical sweeps started together with ``skip_finished`` run each
configuration once."""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dp2pub.interrupts import GRACE
from dp2pub.resume import PID_TAG, process_alive
from tests.conftest import runs_in, start_cli

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

#: Jobs of about 15 s each here (3 million users, 20 attributes, 1- to 3-way marginals): long
#: enough that the jobs seen RUNNING are still running when the signal comes (with jobs of a
#: few seconds they could finish in between, and the test saw nothing to stop).
JOB = ["dataset.n=3000000", "dataset.d=20", "metrics.ways=[1,2,3]", "metrics.max_subsets=20"]
GRID = "epsilon=1,2,3,4"


def sweep(tmp_path: Path, uri: str, *extra: str, **popen: object) -> subprocess.Popen:
    return start_cli(
        [
            "-m",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            *JOB,
            GRID,
            f"tracking.uri={uri}",
            "tracking.experiment=sweeps",
            f"paths.outputs={tmp_path / 'out'}",
            *extra,
        ],
        tmp_path,
        **popen,
    )


def jobs(uri: str) -> list:
    return [run for run in runs_in(uri, "sweeps") if run.data.tags.get("dp2pub.sweep") != "parent"]


def wait_for_running_jobs(uri: str, proc: subprocess.Popen, count: int, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        if sum(run.info.status == "RUNNING" for run in jobs(uri)) >= count:
            time.sleep(1.0)
            return
        time.sleep(0.3)
    raise AssertionError(f"{count} RUNNING jobs did not appear")


def wait_until_workers_are_gone(pids: set[int], timeout: float = 30) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if not any(process_alive(pid, None) for pid in pids):
            return time.monotonic() - start
        time.sleep(0.2)
    raise AssertionError(f"workers {sorted(pids)} still run {timeout} s after their launcher ended")


def rerun_completes_the_grid(tmp_path: Path, uri: str) -> None:
    rerun = sweep(tmp_path, uri, "tracking.skip_finished=true")
    assert rerun.wait(timeout=600) == 0, rerun.communicate()[1]
    statuses = collections.defaultdict(list)
    for run in jobs(uri):
        statuses[float(run.data.params["epsilon"])].append(run.info.status)
    assert sorted(statuses) == [1, 2, 3, 4]
    assert all(status.count("FINISHED") == 1 for status in statuses.values()), dict(statuses)
    assert not any("RUNNING" in status for status in statuses.values()), dict(statuses)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_stopped_sweep_takes_its_workers_along_and_a_rerun_completes_it(tmp_path, signum):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = sweep(tmp_path, uri, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_running_jobs(uri, proc, 2)
    workers = {int(run.data.tags[PID_TAG]) for run in jobs(uri) if run.info.status == "RUNNING"}
    assert proc.pid not in workers  # the jobs run in loky worker processes
    started = time.monotonic()
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    stopped_in = time.monotonic() - started
    wait_until_workers_are_gone(workers)
    stopped = [run for run in jobs(uri) if run.info.status != "FINISHED"]
    assert stopped and all(run.info.status == "KILLED" for run in stopped), [r.info.status for r in stopped]
    assert all(run.data.tags["error"] == "stopped by SIGTERM" for run in stopped)
    assert len(jobs(uri)) < 4  # the queued jobs did not run after their launcher ended
    if signum == signal.SIGTERM:  # the stopped sweep still sums up (SIGKILL leaves no chance to)
        assert proc.returncode == 143
        assert stderr.strip().splitlines() == ["dp2pub: stopped by SIGTERM; a job that was running is marked KILLED"]
        # joblib's resource trackers ignore SIGTERM: waiting for them took the whole grace period
        assert stopped_in < GRACE, stopped_in
        finished = len(jobs(uri)) - len(stopped)
        not_run = 4 - len(jobs(uri))
        assert (
            f"sweep: 4 jobs: {finished} finished, 0 failed, 0 skipped, {len(stopped)} stopped, {not_run} not run"
            in stdout
        )
    rerun_completes_the_grid(tmp_path, uri)


def test_two_identical_sweeps_started_together_run_each_configuration_once(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = sweep(tmp_path, uri, "tracking.skip_finished=true")
    second = sweep(tmp_path, uri, "tracking.skip_finished=true")
    for proc in (first, second):
        assert proc.wait(timeout=600) == 0, proc.communicate()[1]
    finished = collections.Counter(
        float(run.data.params["epsilon"]) for run in jobs(uri) if run.info.status == "FINISHED"
    )
    assert finished == {e: 1 for e in range(1, 5)}
    assert all(run.info.status == "FINISHED" for run in jobs(uri))  # the losers deleted theirs


#: A process that ends its work as dp2pub's command line does, then exits while a thread still
#: runs (joblib's, joined by the interpreter's shutdown), and gets SIGTERM during that join.
LATE = """
import atexit, os, signal, sys, threading, time
from dp2pub.interrupts import note_signals_at_exit, report_late_signal
atexit.register(report_late_signal)
def late():
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.5)
threading.Thread(target=late).start()
note_signals_at_exit()
print("work done", flush=True)
"""


def test_a_signal_during_the_exit_ends_in_one_line_and_a_failing_status():
    done = subprocess.run([sys.executable, "-c", LATE], capture_output=True, text=True, timeout=60)
    assert done.stdout == "work done\n"
    assert done.stderr.strip().splitlines() == ["dp2pub: stopped by SIGTERM while exiting, after its work was done"]
    assert done.returncode == 143
