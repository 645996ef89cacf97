"""Stopping a job on SIGTERM or Ctrl-C without leaving its run RUNNING.

Python turns SIGINT into :class:`KeyboardInterrupt`; :func:`raise_terminated`, installed as
the SIGTERM handler, does the same for SIGTERM with :class:`Terminated`. Both unwind through
the job, so the run's ``with`` block sees them: :func:`dp2pub.tracking.run_tracked` marks the
run KILLED with the signal in its ``error`` tag, and the command line prints one line and
exits with 128 + the signal number (143 for SIGTERM, 130 for SIGINT), as a shell expects.

A sweep's worker processes (joblib's loky workers) follow their launcher:
:func:`follow_launcher` asks the kernel to send the worker SIGTERM when the process that
started it dies (Linux ``prctl(PR_SET_PDEATHSIG)``), even by SIGKILL. A worker that gets
SIGTERM during a job ends that job's run KILLED and exits; between jobs it exits at once, so
no worker goes on with queued jobs of a sweep that is gone. A launcher that gets SIGTERM
(:func:`terminate_sweep`) passes it on to its workers and waits for them to close their runs
before it stops.

Once the command's work is done, a signal no longer raises (:func:`note_signals_at_exit`):
the interpreter's shutdown, where joblib joins its threads, would print the exception as an
ignored traceback and exit 0. It is noted instead, the exit goes on (a sweep's parent run is
ended by its own exit hook), and :func:`report_late_signal` ends the process with one line and
128 + the signal.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator

#: Environment variable naming the pid of the process that launched a sweep.
LAUNCHER_ENV = "DP2PUB_SWEEP_LAUNCHER"
#: ``PR_SET_PDEATHSIG`` of Linux's prctl(2).
PR_SET_PDEATHSIG = 1
#: Seconds a stopped launcher waits for its workers to close their runs.
GRACE = 30.0

_job_running = False
#: The signal that came after the command's work was done (see :func:`note_signals_at_exit`).
_late_signal: int | None = None


class Terminated(BaseException):
    """A termination signal arrived (a BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` swallows it)."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")


def raise_terminated(signum: int, frame: object) -> None:
    """Signal handler: raise :class:`Terminated` where the program is. Once: a second
    SIGTERM while the first unwinds would interrupt the closing of the run."""
    signal.signal(signum, _ignore)  # not SIG_IGN: a launcher waits for workers that do not ignore it
    raise Terminated(signum)


def _ignore(signum: int, frame: object) -> None:
    """A handler that does nothing (a process stopping already)."""


def signal_number(error: BaseException) -> int:
    """The signal behind a :class:`Terminated` or a KeyboardInterrupt (SIGINT)."""
    return error.signum if isinstance(error, Terminated) else int(signal.SIGINT)


def describe(error: BaseException) -> str:
    """``SIGTERM`` or ``SIGINT``."""
    return signal.Signals(signal_number(error)).name


def mark_launcher() -> None:
    """Record this process (``host:pid``) as the launcher of a sweep, for the workers it starts."""
    os.environ[LAUNCHER_ENV] = f"{socket.gethostname()}:{os.getpid()}"


def follow_launcher() -> bool:
    """In a worker process that the sweep's launcher started on this machine (joblib's loky
    workers): end with SIGTERM when the launcher dies (see :func:`_worker_signal`), or at
    once if it is already gone. Returns whether this process is such a worker: False in the
    launcher itself, outside a sweep, on another host (a Slurm job inherits the submitting
    shell's environment), for a process the launcher did not start, or without ``prctl``."""
    host, _, pid = os.environ.get(LAUNCHER_ENV, "").rpartition(":")
    if not pid.isdigit() or host != socket.gethostname() or int(pid) == os.getpid():
        return False
    launcher = int(pid)
    if os.getppid() != launcher:
        try:
            os.kill(launcher, 0)
        except ProcessLookupError:  # an orphan of a sweep that is gone: take no job
            os._exit(128 + int(signal.SIGTERM))
        except PermissionError:
            pass
        return False
    libc = _libc()
    if libc is None:
        return False
    signal.signal(signal.SIGTERM, _worker_signal)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
        return False
    if os.getppid() != launcher:  # the launcher died before prctl: do not outlive it
        os._exit(128 + int(signal.SIGTERM))
    return True


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library, for ``prctl`` (None without one). Looked up once per process: finding it
    runs ``ldconfig``, tens of milliseconds that a sweep's worker would pay for every job."""
    name = ctypes.util.find_library("c")
    return None if not name else ctypes.CDLL(name, use_errno=True)


@contextlib.contextmanager
def running_job() -> Iterator[None]:
    """Mark the block as a job's work: a worker's SIGTERM then stops the job (its run ends
    KILLED) instead of ending the process at once."""
    global _job_running
    _job_running = True
    try:
        yield
    finally:
        _job_running = False


def _worker_signal(signum: int, frame: object) -> None:
    """A sweep worker's SIGTERM handler: stop the running job, or exit if there is none."""
    if _job_running:
        raise_terminated(signum, frame)
    os._exit(128 + signum)


def child_pids() -> list[int]:
    """The live child processes of this process (Linux ``/proc``; [] elsewhere)."""
    children = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            children.append(int(entry))
    return children


def ignores(pid: int, signum: int) -> bool:
    """Whether the process ``pid`` ignores the signal ``signum`` (``SigIgn`` of Linux's
    ``/proc/<pid>/status``; False where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError):
        pass
    return False


def terminate_sweep(signum: int, frame: object) -> None:
    """A sweep launcher's SIGTERM handler: pass the signal on to the worker processes, give
    them :data:`GRACE` seconds to close their runs, then stop the launcher. Children that
    ignore the signal are not waited for: joblib's and multiprocessing's resource trackers
    ignore SIGTERM and SIGINT, and end when the launcher does (waiting for them kept every
    stopped sweep for the whole grace period, 31 s)."""
    children = [pid for pid in child_pids() if not ignores(pid, signum)]
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    deadline = time.monotonic() + GRACE
    while children and time.monotonic() < deadline:
        time.sleep(0.1)
        children = [pid for pid in children if pid in child_pids()]
    raise_terminated(signum, frame)


def note_signals_at_exit(stopped: int | None = None) -> None:
    """From now on, SIGTERM and SIGINT are noted, not raised (see the module docstring); a
    second one ends the process at once (an exit that hangs can still be interrupted). When
    the command is already stopping on the signal ``stopped`` (its line printed), a later
    signal ends it at once, with that signal's status and no further line."""
    global _stopped
    _stopped = stopped
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _note)


_stopped: int | None = None


def _note(signum: int, frame: object) -> None:
    global _late_signal
    if _stopped is not None:
        os._exit(128 + _stopped)
    if _late_signal is not None:
        report_late_signal()
    _late_signal = signum


def report_late_signal() -> None:
    """An exit hook, registered before dp2pub's others so that it runs after them: after a
    signal noted by :func:`note_signals_at_exit`, print one line and end with 128 + its number."""
    if _late_signal is not None:
        name = signal.Signals(_late_signal).name
        print(f"dp2pub: stopped by {name} while exiting, after its work was done", file=sys.stderr)
        sys.stderr.flush()
        os._exit(128 + _late_signal)
