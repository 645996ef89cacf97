"""Local services a sweep logs to or runs on: a PostgreSQL cluster, an MLflow tracking server
on it, and the settings of a local Ray instance.

:class:`Postgres` keeps a cluster in a directory of its own (``DIR/data``, log
``DIR/postgres.log``) and runs the system's server programs (:func:`postgres_bin`): ``initdb``
once, then ``postgres`` itself, listening on 127.0.0.1 only, with ``trust`` authentication for
the role ``postgres`` (no password: anyone who can reach that address and port can use it) and
no Unix socket. Run as root, the programs run as the user ``postgres`` (PostgreSQL refuses to
run as root), which must then own the directory and be able to reach it. :class:`MlflowServer`
runs ``mlflow server`` on a backend store (such a cluster's database, or any store MLflow
takes) and waits until it answers ``/health``. Both start their process in a new session, so
they can stop it with everything it started, and both are context managers that stop it on exit.

Nothing here needs Hydra; the command ``python -m dp2pub.server`` (``make server``) and the
test fixtures are built on it.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Environment variable naming the directory of PostgreSQL's server programs; when it is set,
#: no other directory is searched.
PG_BIN_ENV = "DP2PUB_PG_BIN"
#: What to install when PostgreSQL's server programs are missing.
INSTALL_HINT = "Debian, Ubuntu: apt-get install postgresql"
#: The role dp2pub's clusters are created with (and, run as root, the user they run as).
PG_USER = "postgres"
#: initdb's options besides the directory, role and authentication: UTF-8, no locale of the system's.
INITDB_OPTIONS = ("-E", "UTF8", "--locale=C.UTF-8", "--no-instructions")
#: Database names :meth:`Postgres.create_database` accepts (no quoting needed anywhere).
DATABASE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def local_ray(folder: Path, num_cpus: int) -> tuple[list[str], dict[str, str]]:
    """Command-line arguments and environment of a sweep on a local Ray instance of
    ``num_cpus`` CPUs (dp2pub's Ray launcher) whose node address is 127.0.0.1, with its session
    files in ``folder`` (Ray's socket paths must stay under 108 characters: a short folder) and
    a token for Ray's authentication in the environment, so that Ray writes none into the home
    directory (Ray 2.60 creates ``~/.ray/auth_token`` for a new local instance otherwise)."""
    args = [
        "hydra/launcher=ray",
        f"hydra.launcher.ray.init.num_cpus={num_cpus}",
        "+hydra.launcher.ray.init._node_ip_address=127.0.0.1",
        f"+hydra.launcher.ray.init._temp_dir={folder}",
    ]
    return args, {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


#: The environment of ``mlflow server`` unless the caller's sets these: MLflow 3's job
#: execution (GenAI scorers, trace archival) is left off; it starts seven worker processes
#: (huey consumers) that take CPU from the jobs of a small machine and slow the start. No
#: telemetry, as in dp2pub's own processes (:data:`dp2pub.store.MLFLOW_DEFAULTS`).
SERVER_ENV = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}


class ServiceError(RuntimeError):
    """A service could not be set up, started or reached; the message says why in one line
    (a log's last lines follow it when there is a log)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that is free now (another process may take it before it is used)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on ``host:port`` now."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _has_server_programs(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in ("initdb", "postgres"))


def postgres_bin() -> Path | None:
    """The directory of the system's PostgreSQL server programs (``initdb``, ``postgres``):
    ``$DP2PUB_PG_BIN`` when set, else ``pg_config --bindir`` when ``pg_config`` is on PATH,
    else the newest ``/usr/lib/postgresql/*/bin`` (Debian, Ubuntu); None when none holds them."""
    if PG_BIN_ENV in os.environ:
        directory = Path(os.environ[PG_BIN_ENV])
        return directory if _has_server_programs(directory) else None
    candidates: list[Path] = []
    if pg_config := shutil.which("pg_config"):
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidates += [Path(found.stdout.strip())] if found.returncode == 0 and found.stdout.strip() else []
    versions = Path("/usr/lib/postgresql").glob("*/bin")
    candidates += sorted(versions, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else -1, reverse=True)
    return next((directory for directory in candidates if _has_server_programs(directory)), None)


def missing_postgres() -> str:
    """The one-line reason :func:`postgres_bin` found nothing, naming what to install."""
    where = f" in {PG_BIN_ENV}={os.environ[PG_BIN_ENV]}" if PG_BIN_ENV in os.environ else ""
    return f"PostgreSQL's server programs (initdb, postgres) were not found{where}: install PostgreSQL ({INSTALL_HINT}) or set {PG_BIN_ENV} to their directory"


def log_tail(path: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a log file, indented, for an error message."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "".join(f"\n    {line}" for line in text.splitlines()[-lines:])


def _popen_logged(command: Sequence[str], log: Path | None, **popen: Any) -> subprocess.Popen:
    """Start ``command`` in a new session, its output appended to ``log`` (None: inherited)."""
    if log is None:
        return subprocess.Popen(command, start_new_session=True, **popen)
    with log.open("a") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **popen)


def group_members(group: int) -> list[int]:
    """The pids of the processes of process group ``group`` that have not exited (zombies,
    which the kernel keeps until a parent reaps them, are left out). Linux: read from /proc."""
    members = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rpartition(")")[2].split()  # state ppid pgrp ...
            if int(fields[2]) == group and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def _stop_group(process: subprocess.Popen, first: signal.Signals | None, grace: float) -> None:
    """Send ``first`` (None: nothing) to the process, the leader of its own session, wait up
    to ``grace`` seconds, then SIGKILL its whole process group, leftovers included, reap the
    leader and wait (10 s at most) until the others have exited too: then the ports they
    listened on are free again."""
    if process.poll() is None and first is not None:
        process.send_signal(first)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 10
    while group_members(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)


class Postgres:
    """A PostgreSQL cluster kept in ``directory`` and run with the system's server programs.

    ``init()`` creates the cluster if the directory holds none yet, ``start()`` runs it on
    127.0.0.1, ``create_database()`` and ``uri()`` give MLflow a database, ``stop()`` shuts it
    down. ``fsync=False`` is for throwaway clusters (tests): faster, but a crash of the machine
    can lose or corrupt data. As a context manager it initializes and starts the cluster (on
    ``port``, or a free one) and stops it on exit.
    """

    def __init__(self, directory: Path, *, port: int | None = None, fsync: bool = True) -> None:
        bin_dir = postgres_bin()
        if bin_dir is None:
            raise ServiceError(missing_postgres())
        self.bin_dir = bin_dir
        self.directory = Path(directory).resolve()
        self.data = self.directory / "data"
        self.log = self.directory / "postgres.log"
        self.port = port
        self.fsync = fsync
        self.account = self._account()
        self.process: subprocess.Popen | None = None

    @staticmethod
    def _account() -> pwd.struct_passwd | None:
        """The user the server programs run as: ``postgres`` when this process is root, else
        None (this process's own user)."""
        if os.geteuid() != 0:
            return None
        try:
            return pwd.getpwnam(PG_USER)
        except KeyError:
            raise ServiceError(
                f"PostgreSQL cannot run as root and there is no user {PG_USER!r} to run it as: install PostgreSQL ({INSTALL_HINT}), which creates it"
            ) from None

    def _as_account(self) -> dict[str, Any]:
        """Popen's arguments that run a server program as :attr:`account`."""
        if self.account is None:
            return {"cwd": self.directory}
        return {"user": self.account.pw_uid, "group": self.account.pw_gid, "extra_groups": [], "cwd": self.directory}

    def _program(self, name: str) -> str:
        return str(self.bin_dir / name)

    @property
    def running(self) -> bool:
        """Whether the server process started by :meth:`start` is alive."""
        return self.process is not None and self.process.poll() is None

    def _check_reachable(self) -> None:
        """Refuse a directory that :attr:`account` could not reach through its parents."""
        assert self.account is not None
        groups = {self.account.pw_gid} | {g.gr_gid for g in grp.getgrall() if self.account.pw_name in g.gr_mem}
        for parent in self.directory.parents:
            info = parent.stat()
            if info.st_uid == self.account.pw_uid:
                allowed = info.st_mode & stat.S_IXUSR
            elif info.st_gid in groups:
                allowed = info.st_mode & stat.S_IXGRP
            else:
                allowed = info.st_mode & stat.S_IXOTH
            if not allowed:
                raise ServiceError(
                    f"the PostgreSQL directory {self.directory} is inside {parent} (mode {stat.filemode(info.st_mode)}), which the user {PG_USER} cannot enter: choose a directory it can reach (for example under /tmp)"
                )

    def init(self) -> None:
        """Create the cluster (``initdb``: role ``postgres``, trust authentication, UTF-8) unless
        the directory holds one already; run as root, hand the directory to ``postgres`` first."""
        if (self.data / "PG_VERSION").exists():
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.account is not None:
            self._check_reachable()
            os.chown(self.directory, self.account.pw_uid, self.account.pw_gid)
        self.directory.chmod(0o700)
        done = subprocess.run(
            [self._program("initdb"), "-D", str(self.data), "-U", PG_USER, "-A", "trust", *INITDB_OPTIONS],
            capture_output=True,
            text=True,
            check=False,
            **self._as_account(),
        )
        if done.returncode != 0:
            output = "".join(f"\n    {line}" for line in (done.stdout + done.stderr).splitlines()[-15:])
            raise ServiceError(f"initdb failed to create a PostgreSQL cluster in {self.data}:{output}")

    def start(self, port: int | None = None, timeout: float = 60.0) -> None:
        """Run the cluster's server on 127.0.0.1:``port`` (default: the port given before, or a
        free one) and return once it accepts connections; raise :class:`ServiceError` with the
        log's last lines if it exits or is not ready within ``timeout`` seconds."""
        if self.running:
            raise ServiceError(f"PostgreSQL in {self.directory} is running already, on port {self.port}")
        if not (self.data / "PG_VERSION").exists():
            raise ServiceError(f"{self.directory} holds no PostgreSQL cluster: call init() first")
        self.port = port or self.port or free_port()
        command = [self._program("postgres"), "-D", str(self.data), "-p", str(self.port)]
        command += ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="]
        command += [] if self.fsync else ["-c", "fsync=off"]
        self.process = _popen_logged(command, self.log, **self._as_account())
        deadline = time.monotonic() + timeout
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                status = "exited" if self.process.poll() is not None else f"was not ready after {timeout:g} s"
                self.stop()
                raise ServiceError(f"PostgreSQL in {self.directory} {status}; {self.log}:{log_tail(self.log)}")
            time.sleep(0.1)

    def _ready(self) -> bool:
        """Whether the server accepts connections (``pg_isready``)."""
        check = [self._program("pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", PG_USER]
        return subprocess.run([*check, "-d", "postgres"], check=False, timeout=10).returncode == 0

    def _psql(self, sql: str) -> str:
        """Run one SQL statement in the database ``postgres``; its output, unaligned."""
        connection = ["-h", "127.0.0.1", "-p", str(self.port), "-U", PG_USER, "-d", "postgres"]
        done = subprocess.run(
            [self._program("psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", *connection, "-c", sql],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise ServiceError(f"PostgreSQL on port {self.port} refused {sql!r}: {done.stderr.strip()}")
        return done.stdout.strip()

    def create_database(self, name: str) -> None:
        """Create the database ``name`` unless it exists; ``name`` is lower-case letters, digits
        and ``_``, not starting with a digit, at most 63 characters."""
        if not DATABASE_NAME.fullmatch(name):
            raise ServiceError(
                f"database={name!r} is invalid: expected lower-case letters, digits and _, not starting with a digit, at most 63 characters"
            )
        if not self.running:
            raise ServiceError(f"PostgreSQL in {self.directory} is not running: call start() first")
        if self._psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}'") != "1":
            self._psql(f"CREATE DATABASE {name}")

    def uri(self, database: str) -> str:
        """The SQLAlchemy URI of ``database`` on this running cluster (role ``postgres``, no password)."""
        if self.port is None:
            raise ServiceError(f"PostgreSQL in {self.directory} has no port yet: call start() first")
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def stop(self, grace: float = 30.0) -> None:
        """Shut the server down (SIGINT: PostgreSQL's fast shutdown, which ends open sessions),
        SIGKILL its process group after ``grace`` seconds; nothing happens if it is not running."""
        if self.process is not None:
            _stop_group(self.process, signal.SIGINT, grace)
            self.process = None

    def __enter__(self) -> Postgres:
        self.init()
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class MlflowServer:
    """``mlflow server`` on ``backend_store_uri``, artifacts under ``artifacts`` (served by the
    server itself), on ``host:port`` (default port: a free one).

    ``start()`` returns once ``/health`` answers; ``stop()`` ends it with SIGTERM, ``kill()`` with
    SIGKILL (what tests do to a server in the middle of a sweep), and ``start()`` runs it again
    on the same port. ``workers`` is passed to ``--workers`` (None: MLflow's default); ``log``
    receives its output (None: this process's stdout and stderr). As a context manager it starts
    the server and stops it on exit.
    """

    def __init__(
        self,
        backend_store_uri: str,
        artifacts: Path,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        workers: int | None = None,
        log: Path | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.backend_store_uri = backend_store_uri
        self.artifacts = Path(artifacts).resolve()
        self.host = host
        self.port = port or free_port()
        self.workers = workers
        self.log = log
        self.timeout = timeout
        self.process: subprocess.Popen | None = None
        self.seconds_to_health: float | None = None

    @property
    def uri(self) -> str:
        """The tracking URI of the server, as a client on this machine reaches it."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server process started by :meth:`start` is alive."""
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        """The ``mlflow server`` command line (the ``mlflow`` beside this Python)."""
        command = [str(Path(sys.executable).parent / "mlflow"), "server", "--backend-store-uri", self.backend_store_uri]
        command += ["--artifacts-destination", str(self.artifacts), "--host", self.host, "--port", str(self.port)]
        return command + ([] if self.workers is None else ["--workers", str(self.workers)])

    def start(self) -> None:
        """Run the server and return once ``GET /health`` answers 200; raise :class:`ServiceError`
        (with the log's last lines) if it exits first or does not answer within ``timeout`` seconds."""
        if self.running:
            raise ServiceError(f"mlflow server on port {self.port} is running already")
        began = time.monotonic()
        self.process = _popen_logged(self.command(), self.log, env={**SERVER_ENV, **os.environ})
        while not self._healthy():
            elapsed = time.monotonic() - began
            if self.process.poll() is not None or elapsed > self.timeout:
                status = (
                    f"exited with status {self.process.poll()}"
                    if self.process.poll() is not None
                    else f"did not answer /health within {self.timeout:g} s"
                )
                self.stop()
                where = f"; {self.log}:{log_tail(self.log)}" if self.log else " (its output is above)"
                raise ServiceError(f"mlflow server on {self.uri} {status}{where}")
            time.sleep(0.25)
        self.seconds_to_health = time.monotonic() - began

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def wait(self) -> int:
        """Wait until the server process ends on its own; its exit status."""
        if self.process is None:
            raise ServiceError("mlflow server was not started")
        return self.process.wait()

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM the server's process group, SIGKILL it after ``grace`` seconds."""
        if self.process is not None:
            _stop_group(self.process, signal.SIGTERM, grace)
            self.process = None

    def kill(self) -> None:
        """SIGKILL the server's process group (the server and its workers) at once, as a crash would."""
        if self.process is not None:
            _stop_group(self.process, None, 0)
            self.process = None

    def __enter__(self) -> MlflowServer:
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
