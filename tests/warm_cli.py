"""``python -m dp2pub ARGS`` in a process forked from one that has imported the command line,
the job and MLflow already (multiprocessing's forkserver, which preloads this module): the
same ``main()`` in a process of its own (its working directory, environment, memory cap,
signal handlers, exit handlers and exit status), without the 2-3 s that every command spends
importing them under the suite's load (0.5 s a refusal instead of 2.7-3.8 s, idle).

The commands the tests start with :func:`tests.conftest.start_cli` (signals, concurrent
commands, sweeps stopped midway) and those of tests/test_packaging.py and one refusal of
tests/hostile/test_refusals.py still start as new programs, and tests/test_layers.py checks
what a command imports; ``python -m dp2pub.bench overhead`` times a command's own start.
Not for a command whose interpreter must start otherwise (``PYTHON*`` or ``LD_*`` variables
of its own, a wrapping command): :func:`tests.conftest.run_cli` starts those as new programs."""

from __future__ import annotations

import atexit
import importlib
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

import dp2pub.cli

#: What a job imports on its way (the command line, the job, MLflow's SQL store and the
#: environment tags), imported once in the forkserver with this module.
PRELOAD = (
    "dp2pub.job",
    "dp2pub.registry",
    "dp2pub.store",
    "dp2pub.tracking",
    "git",
    "mlflow.store.db.utils",
    "mlflow.store.tracking.sqlalchemy_store",
    "sqlalchemy.dialects.sqlite",
)
for _module in PRELOAD:
    importlib.import_module(_module)

#: Variables read when an interpreter starts, which a forked process cannot take.
STARTUP_PREFIXES = ("PYTHON", "LD_")


def needs_new_interpreter(env: dict[str, str]) -> bool:
    """Whether ``env`` sets a start-up variable (:data:`STARTUP_PREFIXES`) otherwise than this
    process's environment."""
    keys = {key for key in {*env, *os.environ} if key.startswith(STARTUP_PREFIXES)}
    return any(env.get(key) != os.environ.get(key) for key in keys)


def _main(args: list[str], cwd: str, env: dict[str, str], memory_cap: int | None, out: str, err: str) -> None:
    """The forked process: ``python -m dp2pub ARGS`` in ``cwd`` with the environment ``env``
    and an address space of at most ``memory_cap`` bytes if given, its output in the files
    ``out`` and ``err``, its exit status as the interpreter's would be, after the exit
    handlers ran."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    if memory_cap is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))
    sys.argv = [dp2pub.cli.__file__, *args]
    status = 0
    try:
        dp2pub.cli.main()
    except SystemExit as done:
        if isinstance(done.code, int) or done.code is None:
            status = done.code or 0
        else:
            print(done.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    # the interpreter's own exit (Py_FinalizeEx): threads joined and the exit hooks of the
    # thread pools run (loky's stops a sweep's workers), then the atexit handlers
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def forked() -> multiprocessing.context.BaseContext:
    """Multiprocessing's forkserver, preloading this module: a process it starts has the
    command line, the job and MLflow imported (:func:`run`; a race of processes that start
    within milliseconds of each other)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def in_environment(env: dict[str, str], function: Callable[..., object], *args: object) -> None:
    """``function(*args)`` with the environment ``env`` (a target of :func:`forked`'s
    processes, which otherwise have the forkserver's)."""
    os.environ.clear()
    os.environ.update(env)
    function(*args)


def run(
    args: list[str], cwd: Path, env: dict[str, str], memory_cap: int | None, timeout: float
) -> subprocess.CompletedProcess:
    """:func:`_main` in a process of the forkserver, as ``subprocess.run`` would report it
    (subprocess.TimeoutExpired after ``timeout`` seconds, the process killed)."""
    command = [sys.executable, "-m", "dp2pub", *args]
    with tempfile.TemporaryDirectory(prefix="dp2pub-cli-") as folder:
        out, err = os.path.join(folder, "stdout"), os.path.join(folder, "stderr")
        process = forked().Process(target=_main, args=(args, str(cwd), env, memory_cap, out, err))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(command, timeout)
        return subprocess.CompletedProcess(command, process.exitcode, Path(out).read_text(), Path(err).read_text())
