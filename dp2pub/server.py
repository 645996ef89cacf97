"""``python -m dp2pub.server`` (``make server``): a team MLflow tracking server on PostgreSQL.

With no arguments it keeps a PostgreSQL cluster in ``outputs/postgres`` (created on first use,
reused after) with a database ``mlflow``, stores artifacts in ``outputs/server-artifacts``, and
serves MLflow on 127.0.0.1:5000 in the foreground until Ctrl-C or SIGTERM, then stops
PostgreSQL too. ``--backend-store-uri postgresql://user:password@host:port/db`` uses an
existing PostgreSQL instead (no local cluster). A bad option or a missing PostgreSQL is
refused in one line with exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from dp2pub.interrupts import Terminated, raise_terminated
from dp2pub.services import MlflowServer, Postgres, ServiceError, missing_postgres, port_is_free, postgres_bin
from dp2pub.validation import ConfigError, check_int

PROG = "python -m dp2pub.server"
#: The database of the local cluster that holds MLflow's tables.
DATABASE = "mlflow"


class UsageError(Exception):
    """An option or the machine cannot serve; the message is the one line printed."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but an error is one line (``prog: error: ...``) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    """The command's options."""
    parse = OneLineParser(
        prog=PROG,
        description="Serve MLflow on PostgreSQL in the foreground until Ctrl-C or SIGTERM: a local cluster in --data "
        "(created on first use, database mlflow), or the existing database --backend-store-uri.",
    )
    parse.add_argument("--port", default="5000", help="port of the MLflow server (default 5000)")
    parse.add_argument("--host", default="127.0.0.1", help="address it listens on (default 127.0.0.1)")
    parse.add_argument(
        "--backend-store-uri",
        help="an existing PostgreSQL database, postgresql://user:password@host:port/db (default: a local cluster)",
    )
    parse.add_argument("--workers", default=None, help="MLflow's worker processes (default: MLflow's, 4)")
    parse.add_argument("--data", type=Path, default=Path("outputs/postgres"), help="the local cluster's directory")
    parse.add_argument("--artifacts", type=Path, default=Path("outputs/server-artifacts"), help="artifact directory")
    return parse


def _number(text: str) -> int | str:
    """``text`` as an integer if it is one, else as it is (for the error message)."""
    try:
        return int(text)
    except ValueError:
        return text


def check_options(args: argparse.Namespace) -> tuple[int, int | None]:
    """Refuse what cannot serve before starting anything; the port and the workers, as numbers."""
    try:
        port = check_int(_number(args.port), "--port", 1, 65535)
        workers = None if args.workers is None else check_int(_number(args.workers), "--workers", 1)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    try:
        socket.getaddrinfo(args.host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise UsageError(f"--host={args.host!r} is invalid: expected an address or name of this machine") from None
    if not port_is_free(port, args.host):
        raise UsageError(f"--port={port} is invalid: expected a port free on {args.host}, this one is in use")
    uri = args.backend_store_uri
    if uri is None and postgres_bin() is None:
        raise UsageError(f"{missing_postgres()}, or give --backend-store-uri")
    if (uri is None or uri.startswith("postgresql")) and importlib.util.find_spec("psycopg") is None:
        raise UsageError("MLflow needs the PostgreSQL driver psycopg 3: pip install 'dp2pub[server]'")
    return port, workers


@contextlib.contextmanager
def backend(args: argparse.Namespace) -> Iterator[str]:
    """The backend store URI: the one given, or the database ``mlflow`` of the local cluster
    in ``--data``, running while the block runs."""
    if args.backend_store_uri is not None:
        yield args.backend_store_uri
        return
    with Postgres(args.data) as cluster:
        cluster.create_database(DATABASE)
        print(
            f"PostgreSQL ({cluster.bin_dir}): cluster {cluster.directory}, database {DATABASE} on 127.0.0.1:{cluster.port}"
        )
        yield cluster.uri(DATABASE)


def serve(args: argparse.Namespace, port: int, workers: int | None) -> int:
    """Run the server in the foreground until it exits or a signal stops it; the exit status."""
    with backend(args) as uri:
        server = MlflowServer(uri, args.artifacts, port=port, host=args.host, workers=workers)
        print(f"mlflow server starting on {args.host}:{port} (artifacts in {server.artifacts}) ...", flush=True)
        with server:
            print(f"\nServing; run dp2pub with\n\n    tracking.uri={server.uri}\n\nCtrl-C stops it.", flush=True)
            status = server.wait()
    print(f"{PROG}: error: mlflow server exited with status {status}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    """Parse, check, serve; 0 once stopped by Ctrl-C or SIGTERM, 2 on a refused option. The
    first SIGTERM or SIGINT stops the server, then PostgreSQL; the same signal again is ignored
    meanwhile."""
    args = parser().parse_args(argv)
    try:
        port, workers = check_options(args)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, raise_terminated)
    try:
        return serve(args, port, workers)
    except Terminated as stopped:
        print(f"\nstopped by {signal.Signals(stopped.signum).name}", flush=True)
        return 0
    except ServiceError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
