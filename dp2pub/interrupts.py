"""Stopping a job on SIGTERM or Ctrl-C without leaving its run RUNNING.

Python turns SIGINT into :class:`KeyboardInterrupt`; :func:`raise_terminated`, installed as
the SIGTERM handler, does the same for SIGTERM with :class:`Terminated`. Both unwind through
the job, so the run's ``with`` block sees them: :func:`dp2pub.tracking.run_tracked` marks the
run KILLED with the signal in its ``error`` tag, and the command line prints one line and
exits with 128 + the signal number (143 for SIGTERM, 130 for SIGINT), as a shell expects.
"""

from __future__ import annotations

import signal


class Terminated(BaseException):
    """A termination signal arrived (a BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` swallows it)."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")


def raise_terminated(signum: int, frame: object) -> None:
    """Signal handler: raise :class:`Terminated` where the program is."""
    raise Terminated(signum)


def signal_number(error: BaseException) -> int:
    """The signal behind a :class:`Terminated` or a KeyboardInterrupt (SIGINT)."""
    return error.signum if isinstance(error, Terminated) else int(signal.SIGINT)


def describe(error: BaseException) -> str:
    """``SIGTERM`` or ``SIGINT``."""
    return signal.Signals(signal_number(error)).name
