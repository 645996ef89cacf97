"""Opening an MLflow tracking store without racing another dp2pub process.

MLflow creates the schema of a new SQLite store the first time a process opens it
(``SqlAlchemyStore.__init__`` -> ``_initialize_tables``: create the tables, then run every
Alembic migration), and nothing stops two processes from doing that at once: their
migrations collide (``table _alembic_tmp_... already exists``, ``duplicate column name``),
one of them fails, and the store can be left half-migrated for good. :func:`open_store`
therefore opens a SQLite store while holding an exclusive ``flock`` on a lock file beside the
database (``<db>.dp2pub-lock``): the first process creates the schema, the others wait and
then find it complete. Before MLflow touches an existing database, it is checked for the
marks of an interrupted migration (leftover ``_alembic_tmp_*`` tables, tables without an
Alembic version); such a store, and one MLflow refuses (an older schema), is reported in one
line with the repair command instead of a traceback.

Stores other than ``sqlite:///`` (a tracking server, PostgreSQL) are opened as they are: a
server migrates its own database.

A store that cannot be used is refused within seconds, in one line naming the URI and the
reason, before the job's work: an unknown scheme, a tracking server that does not answer
within :data:`TIMEOUT` seconds (MLflow itself would retry for minutes), a SQLite path that is
a directory or a file that cannot be written. :func:`check_artifact_root` does the same for
an experiment's artifact location (created and written once for a local directory; listed,
with the same time limit, for a remote one).

A server that stops answering during a job would keep MLflow's client retrying each request
for minutes (its defaults suit rate-limited hosted servers: a job here took 8 min 22 s to
fail); :func:`bound_http_retries` shortens that to seconds unless the user set MLflow's
variables, and :func:`lost_server` words what happened to the job's run.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import os
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

LOCK_SUFFIX = ".dp2pub-lock"
#: Seconds a tracking server or a remote artifact store has to answer the first request.
TIMEOUT = 10.0
#: URI schemes of MLflow's tracking stores ("" and file: a local folder store).
SCHEMES = ("", "file", "sqlite", "postgresql", "mysql", "mssql", "http", "https", "databricks", "databricks-uc", "uc")


#: MLflow's HTTP retry settings for dp2pub's processes, unless the environment sets them: 3
#: retries 2 and 4 s apart (urllib3's backoff; MLflow's defaults, 7 retries at factor 2,
#: wait about 4 minutes per request for a server that refuses connections).
HTTP_RETRIES = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}
#: MLflow settings of dp2pub's processes (and of the servers it starts) unless the environment
#: sets them: the bounded retries, and no usage records sent to MLflow's telemetry service
#: (MLflow 3 sends them by default; a privacy tool does not phone home unasked:
#: MLFLOW_DISABLE_TELEMETRY=false turns them on).
MLFLOW_DEFAULTS = {**HTTP_RETRIES, "MLFLOW_DISABLE_TELEMETRY": "true"}


class StoreError(ValueError):
    """A tracking store that cannot be used; the message is one line with the remedy."""


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI, else None."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///") :].split("?", 1)[0])


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Hold an exclusive lock on the store's lock file (SQLite stores only)."""
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    lock = path.with_name(path.name + LOCK_SUFFIX)
    try:
        handle = open(lock, "a+")  # noqa: SIM115 (held for the duration of the block)
    except OSError as error:
        raise StoreError(
            f"tracking store {uri}: cannot create the lock file {lock} "
            f"({error.strerror or error}); use a writable directory"
        ) from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def interrupted_migration(path: Path) -> tuple[str, list[str]] | None:
    """What marks the SQLite database ``path`` as half-migrated and the leftover migration
    tables, or None if nothing does (also for a missing or empty file, which MLflow
    initializes)."""
    if not path.is_file() or path.stat().st_size == 0:
        return None
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        leftovers = sorted(t for t in tables if t.startswith("_alembic_tmp_"))
        if leftovers:
            return f"leftover migration table(s) {', '.join(leftovers)}", leftovers
        if "experiments" in tables:
            if "alembic_version" not in tables:
                return "tables without an alembic_version", []
            versions = [row[0] for row in db.execute("SELECT version_num FROM alembic_version")]
            if len(versions) != 1:
                return f"{len(versions)} alembic versions", []
    return None


def repair_hint(uri: str, path: Path | None, leftovers: Sequence[str] = ()) -> str:
    """The repair commands, one line: back up, drop the leftover tables, upgrade. (Measured
    on stores damaged by concurrent first use: ``mlflow db upgrade`` alone failed on all 8,
    dropping the leftover tables first repaired all 8.)"""
    backup = f"copy {path} aside, " if path is not None else "take a backup, "
    drop = ""
    if leftovers and path is not None:
        statements = "; ".join(f"DROP TABLE {t}" for t in leftovers)
        drop = f"run: sqlite3 {path} '{statements}', then "
    return f"to repair it {backup}{drop}run: mlflow db upgrade {uri}"


def _reason(error: BaseException) -> str:
    """The last, most specific part of a chained network error, in one line."""
    text = " ".join(str(getattr(error, "reason", error)).split())
    for marker in ("] ", "Errno "):
        if marker in text:
            text = text.rsplit(marker, 1)[-1]
    return text.strip("'\")(") or type(error).__name__


def _ask(uri: str, timeout: float) -> None:
    """One request to the MLflow API of the server at ``uri`` (raises what urllib raises)."""
    url = f"{uri.rstrip('/')}/api/2.0/mlflow/experiments/search?max_results=1"
    with urllib.request.urlopen(url, timeout=timeout):
        pass


def check_server(uri: str, timeout: float = TIMEOUT) -> None:
    """Refuse a tracking server that does not answer MLflow's API within ``timeout``
    seconds (an answer that asks for credentials counts: MLflow's client sends them)."""
    try:
        _ask(uri, timeout)
    except urllib.error.HTTPError as error:
        if error.code not in (401, 403):
            raise StoreError(
                f"tracking store {uri} answered HTTP {error.code} to MLflow's API ({error.reason}); "
                "is it an MLflow tracking server? fix tracking.uri / MLFLOW_TRACKING_URI"
            ) from None
    except (urllib.error.URLError, OSError) as error:
        raise _unreachable_store(uri, _reason(error)) from None


def _unreachable_store(uri: str, reason: str) -> StoreError:
    """The one-line error of a tracking server that does not answer (``reason``)."""
    return StoreError(
        f"tracking store {uri} is unreachable ({reason}); start the tracking "
        "server or fix tracking.uri / MLFLOW_TRACKING_URI"
    )


def mlflow_defaults() -> None:
    """Apply :data:`MLFLOW_DEFAULTS` to this process and the workers it starts (a value the
    environment already has is kept)."""
    for name, value in MLFLOW_DEFAULTS.items():
        os.environ.setdefault(name, value)


def unreachable(uri: str) -> str | None:
    """Why the tracking server at ``uri`` does not answer (``Connection refused``), or None when
    it answers or ``uri`` is not a server (http, https)."""
    if urllib.parse.urlparse(uri).scheme not in ("http", "https"):
        return None
    try:
        _ask(uri, TIMEOUT)
    except urllib.error.HTTPError:
        return None  # it answers
    except (urllib.error.URLError, OSError) as error:
        return _reason(error)
    return None


def lost_server(uri: str, run_id: str | None) -> StoreError | None:
    """The error of a job whose tracking request failed, when the server behind ``uri`` no
    longer answers: one line naming the run left RUNNING and what closes it. None when the
    store is not a server or the server still answers (the failure was something else)."""
    reason = unreachable(uri)
    if reason is None:
        return None
    down = f"tracking server {uri} stopped answering ({reason})"
    if run_id is None:
        return StoreError(f"{down} before the job's run was created")
    return StoreError(
        f"{down} during the job: its run {run_id} stays RUNNING until a job or sweep started on this host "
        "once the server is back marks it KILLED; tracking.skip_finished=true then redoes only what did not finish"
    )


def check_uri(uri: str) -> None:
    """Refuse, in one line and without waiting, a store URI that cannot work: an unknown
    scheme, an unreachable server, a SQLite path that is a directory or cannot be written."""
    scheme = urllib.parse.urlparse(uri).scheme
    if scheme not in SCHEMES:
        known = ", ".join(s for s in SCHEMES if s)
        raise StoreError(f"tracking store {uri} has an unknown scheme {scheme!r}: expected one of {known}")
    if scheme in ("http", "https"):
        check_server(uri)
    path = sqlite_path(uri)
    if path is None:
        return
    if path.is_dir():
        raise StoreError(
            f"tracking store {uri}: {path} is a directory; name a database file in it, "
            f"e.g. sqlite:///{path / 'mlflow.db'}"
        )
    if not path.parent.is_dir():
        raise StoreError(f"tracking store {uri}: the directory {path.parent} does not exist")
    if path.exists() and not os.access(path, os.W_OK):
        raise StoreError(f"tracking store {uri}: {path} cannot be written (read-only)")


def _within(seconds: float, action: Callable[[], Any]) -> Any:
    """``action()``, or TimeoutError if it has not returned after ``seconds`` (it then goes on
    in a daemon thread that the process does not wait for)."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(action).result(timeout=seconds)
    finally:
        pool.shutdown(wait=False)


def check_artifact_root(location: str, timeout: float = TIMEOUT) -> None:
    """Refuse an artifact location that cannot be written before the job runs: a local
    directory is created and a file written and removed in it; a remote one must be known
    to MLflow and answer a listing within ``timeout`` seconds (``mlflow-artifacts:``, served
    by the tracking server, is checked with the server).

    Raises:
        StoreError: one line naming the location and the reason.
    """
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme in ("", "file"):
        folder = Path(urllib.parse.unquote(parsed.path) if parsed.scheme else location)
        probe = folder / f".dp2pub-write-test-{uuid.uuid4().hex}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as error:
            raise StoreError(
                f"artifact location {location} cannot be written ({error.strerror or error}); "
                "set tracking.artifact_location to a writable directory"
            ) from None
        return
    if parsed.scheme == "mlflow-artifacts":
        return
    try:
        _within(timeout, lambda: get_artifact_repository(location).list_artifacts())
    except concurrent.futures.TimeoutError:
        raise StoreError(
            f"artifact location {location} did not answer within {timeout:g} s; "
            "check the network or set tracking.artifact_location"
        ) from None
    except Exception as error:
        reason = " ".join(str(error).split())[:300] or type(error).__name__
        raise StoreError(f"artifact location {location} cannot be used ({type(error).__name__}: {reason})") from None


def open_store(uri: str) -> mlflow.MlflowClient:
    """A client of the store ``uri`` whose schema is complete and current, created or
    verified under :func:`store_lock`, after :func:`check_uri`.

    Raises:
        StoreError: in one line, naming the store, what is wrong and the repair command.
    """
    check_uri(uri)
    path = sqlite_path(uri)
    with store_lock(uri):
        if path is not None:
            try:
                damage = interrupted_migration(path)
            except sqlite3.DatabaseError as error:
                raise StoreError(f"tracking store {uri} is not an SQLite database ({error})") from None
            if damage is not None:
                raise StoreError(
                    f"tracking store {uri} is half-migrated ({damage[0]}): an earlier schema "
                    f"migration was interrupted; {repair_hint(uri, path, damage[1])}"
                )
        client = mlflow.MlflowClient(uri)
        try:
            client.search_experiments(max_results=1)  # creates or verifies the schema
        except MlflowException as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            if "out-of-date database schema" in first:
                raise StoreError(
                    f"tracking store {uri} has an older schema than this MLflow "
                    f"({first.split('(', 1)[-1].split(')')[0]}); {repair_hint(uri, path)}"
                ) from None
            reason = unreachable(uri)  # the server may have stopped since check_uri
            if reason is not None:
                raise _unreachable_store(uri, reason) from None
            raise StoreError(f"tracking store {uri} cannot be used: {first}") from None
    return client
