"""A single run stopped by SIGTERM or Ctrl-C (SIGINT): one line, the shell's exit status,
and its run KILLED with the signal named, never left RUNNING."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.conftest import runs_in, start_cli

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

#: A job of about 15 s here (3 million users, 20 attributes, 1- to 3-way marginals).
SLOW = ["dataset.n=3000000", "dataset.d=20", "metrics.ways=[1,2,3]"]


def sigint_as_in_a_terminal() -> None:
    """In the command's process before Python starts: Ctrl-C's SIGINT at its default action, as
    in a terminal, even when the suite runs in a shell's background, where SIGINT is ignored
    and the ignoring inherited (Python then installs no KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for_running(uri: str, experiment: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        if any(run.info.status == "RUNNING" for run in runs_in(uri, experiment)):
            time.sleep(1.0)  # into the job's work
            return
        time.sleep(0.2)
    raise AssertionError("no RUNNING run appeared")


@pytest.mark.parametrize("signum,status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signalled_run_exits_in_one_line_and_is_marked_killed(tmp_path, signum, status, calibration):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = start_cli(
        [*SLOW, f"tracking.uri={uri}", "tracking.experiment=signals", f"paths.outputs={tmp_path / 'out'}"],
        tmp_path,
        preexec_fn=sigint_as_in_a_terminal,
    )
    wait_for_running(uri, "signals", proc)
    started = time.monotonic()
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert time.monotonic() - started < 10 * calibration  # stops at once: not after its work (minutes)
    name = signal.Signals(signum).name
    assert proc.returncode == status
    assert stderr.strip().splitlines() == [f"dp2pub: stopped by {name}; a job that was running is marked KILLED"]
    (run,) = runs_in(uri, "signals")
    assert run.info.status == "KILLED" and run.data.tags["error"] == f"stopped by {name}"
