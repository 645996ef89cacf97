"""``python -m dp2pub ARGS`` in a process forked from one that has imported the command line,
the job and MLflow already (multiprocessing's forkserver, which preloads this module): the
same ``main()`` in a process of its own, set up as a new interpreter would be (its working
directory first on the module path, its environment, memory cap, exit handlers and exit
status; its output read from pipes until every process holding them closed them), without
the 2-3 s that every command spends importing under the suite's load (0.9 s a refusal
instead of 2.7-3.8 s, idle).

What a fork cannot show: what happens while those modules are imported (the order of
imports, and what they read from the environment then: MLflow's telemetry choice, numpy's
thread pools, the locale, which are the forkserver's), and an interpreter's own shutdown
(module teardown, ``__del__`` output). So the commands the tests start with
:func:`tests.conftest.start_cli` (signals, concurrent commands, sweeps stopped midway), those
of tests/test_packaging.py and tests/test_examples.py and one refusal of
tests/hostile/test_refusals.py start as new programs, tests/test_layers.py checks what a
command imports, and ``python -m dp2pub.bench overhead`` times a command's own start.
:func:`tests.conftest.run_cli` starts a command as a new program when its interpreter must
start otherwise: a wrapping command, or start-up variables of its own (:data:`STARTUP_PREFIXES`)."""

from __future__ import annotations

import atexit
import importlib
import locale
import multiprocessing
import multiprocessing.forkserver
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
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

ROOT = Path(__file__).resolve().parent.parent
#: The module path of a new interpreter's ``python -m`` (its working directory comes first):
#: the forkserver's own, without the folder it was started in (this clone, see :func:`forked`).
BASE_PATH = [entry for entry in sys.path if entry not in ("", str(ROOT))]
#: Variables read when an interpreter starts or a preloaded module is imported (the locale,
#: the thread pools of numpy's BLAS, the allocator, MLflow's telemetry, GitPython's git),
#: which a forked process keeps from the forkserver's start.
STARTUP_PREFIXES = (
    "PYTHON",
    "LD_",
    "LC_",
    "LANG",
    "OMP_",
    "OPENBLAS_",
    "MKL_",
    "MALLOC_",
    "GLIBC_TUNABLES",
    "MLFLOW_DISABLE_TELEMETRY",
    "DO_NOT_TRACK",
    "GIT_PYTHON",
)
#: The environment the forkserver started with (None until it does).
_server_environment: dict[str, str] | None = None


def forked() -> ForkServerContext:
    """Multiprocessing's forkserver, preloading this module: a process it starts has the
    command line, the job and MLflow imported. The forkserver imports the module from the
    folder it starts in, so it is started in this clone's root (anywhere else it would
    silently preload nothing)."""
    global _server_environment
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    if _server_environment is None:
        here = os.getcwd()
        os.chdir(ROOT)
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            os.chdir(here)
        _server_environment = dict(os.environ)
    return context


def needs_new_interpreter(env: dict[str, str]) -> bool:
    """Whether ``env`` sets a start-up variable (:data:`STARTUP_PREFIXES`) otherwise than the
    forkserver's environment (this process's before the forkserver starts)."""
    started = os.environ if _server_environment is None else _server_environment
    keys = {key for key in {*env, *started} if key.startswith(STARTUP_PREFIXES)}
    return any(env.get(key) != started.get(key) for key in keys)


def exit_status(done: SystemExit) -> int:
    """The exit status of an interpreter that ends on ``done`` (a code that is not an integer
    is printed, status 1)."""
    if done.code is None or isinstance(done.code, int):
        return done.code or 0
    print(done.code, file=sys.stderr)
    return 1


def _child(
    function: Callable[..., object],
    args: tuple,
    cwd: str,
    env: dict[str, str],
    memory_cap: int | None,
    out: str,
    err: str,
) -> None:
    """A forked process as a new interpreter would run ``function(*args)``: in ``cwd``,
    with the environment ``env``, the module path of ``python -m`` there, an address space
    of at most ``memory_cap`` bytes if given, its output to the files (or FIFOs) ``out`` and
    ``err``; its exit status that of the interpreter, after its exit handlers ran."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.path[:] = [cwd, *BASE_PATH]
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    if memory_cap is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))
    status = 0
    try:
        function(*args)
    except SystemExit as done:
        status = exit_status(done)
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


def _cli(args: list[str]) -> None:
    """``python -m dp2pub ARGS``."""
    sys.argv = [str(Path(dp2pub.__file__).with_name("__main__.py")), *args]
    dp2pub.cli.main()


def start(
    function: Callable[..., object],
    args: tuple,
    cwd: Path,
    env: dict[str, str],
    out: str | Path = os.devnull,
    err: str | Path = os.devnull,
    memory_cap: int | None = None,
) -> BaseProcess:
    """A process of the forkserver running ``function(*args)`` as :func:`_child` does."""
    process = forked().Process(target=_child, args=(function, args, str(cwd), env, memory_cap, str(out), str(err)))
    process.start()
    return process


def _pipe(path: str, chunks: list[bytes]) -> tuple[threading.Thread, int]:
    """A FIFO at ``path`` read into ``chunks`` by a thread until every writer closed it, and
    a write end held open meanwhile (the caller closes it once its writer is known to have
    opened the FIFO or died: until then no end of file can be read)."""
    os.mkfifo(path)
    reading = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    holding = os.open(path, os.O_WRONLY)
    os.set_blocking(reading, True)

    def read() -> None:
        with open(reading, "rb") as fifo:
            chunks.append(fifo.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, holding


def text(data: bytes) -> str:
    """``data`` as ``subprocess.run(text=True)`` decodes it (the locale's encoding, universal newlines)."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def run(
    args: list[str], cwd: Path, env: dict[str, str], memory_cap: int | None, timeout: float
) -> subprocess.CompletedProcess:
    """``python -m dp2pub ARGS`` in a process of the forkserver, as ``subprocess.run`` with
    ``capture_output=True, text=True, timeout=timeout`` runs it: its output read from pipes
    until every process holding them closed them (a process it left behind keeps them open),
    subprocess.TimeoutExpired after ``timeout`` seconds, the process killed."""
    command = [sys.executable, "-m", "dp2pub", *args]
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="dp2pub-cli-") as folder:
        paths = [os.path.join(folder, "stdout"), os.path.join(folder, "stderr")]
        chunks: list[list[bytes]] = [[], []]
        pipes = [_pipe(path, got) for path, got in zip(paths, chunks)]
        process = start(_cli, (args,), cwd, env, *paths, memory_cap=memory_cap)
        try:
            process.join(timeout)
            timed_out = process.exitcode is None
        finally:
            if process.exitcode is None:
                process.kill()
                process.join()
            for _, holding in pipes:
                os.close(holding)
        for reader, _ in pipes:
            reader.join(max(deadline - time.monotonic(), 0.0))
        output, errors = (text(b"".join(got)) for got in chunks)
        if timed_out or any(reader.is_alive() for reader, _ in pipes):
            raise subprocess.TimeoutExpired(command, timeout, output, errors)
        return subprocess.CompletedProcess(command, process.exitcode, output, errors)
