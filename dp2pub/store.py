"""Opening an MLflow tracking store without racing another process, on a machine that fails.

MLflow creates the schema of a new SQLite store the first time a process opens it
(``SqlAlchemyStore.__init__`` -> ``_initialize_tables``: create the tables, then run every
Alembic migration), and nothing stops two processes from doing that at once: their
migrations collide (``table _alembic_tmp_... already exists``, ``duplicate column name``),
one of them fails, and the store can be left half-migrated for good. :func:`open_store`
therefore opens a SQLite store while holding an exclusive ``flock`` on a lock file beside the
database (``<db>.dp2pub-lock``), and MLflow's own lock of a database's initialization
(:func:`mlflow_init_lock`): of dp2pub's processes, the first creates the schema, the others
wait and then find it complete. A new store is filled from a migrated template in one SQLite
transaction (:mod:`dp2pub.store_template`), which MLflow clients that take no lock respect too.

An existing database is looked at before MLflow touches it (:func:`dp2pub.migration.settle`):
one that another process is migrating (an ``mlflow ui`` or notebook beside a sweep) is waited
for; one whose migration was interrupted, one MLflow refuses (an older schema), a damaged
file (``database disk image is malformed``) and a disk too full for a new store are reported
in one line with the path and the remedy instead of a traceback, and nothing is written to
them. A repair that drops tables is recommended only when no other process holds the store.

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
import hashlib
import logging
import os
import shlex
import sqlite3
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dp2pub.faults import DAMAGE, SQLITE_NOTADB, damage, disk_full, free_bytes
from dp2pub.migration import Migrating, Schema, read_schema, settle
from dp2pub.store_template import LOCK_SUFFIX, NoSpace, create_from_template, held, schema_head
from dp2pub.units import human

if TYPE_CHECKING:
    import mlflow

# MLflow (a second or two to import) is imported by the functions that open a store or an
# artifact location, not with this module: the command line refuses a bad value, and raises
# StoreError, without it (tests/test_layers.py, DEFERRED).

log = logging.getLogger(__name__)

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
    with handle, held(handle):
        yield


@contextlib.contextmanager
def mlflow_init_lock(uri: str) -> Iterator[None]:
    """Hold the lock MLflow takes to initialize a database's tables in its job and workspace
    stores (``_safe_initialize_tables``, mlflow/store/db/utils.py:93-107, MLflow 3.17:
    ``flock`` of ``<tempdir>/db_init_lock-<md5 of the URI>``), so that an MLflow server
    beside dp2pub does not initialize the store while dp2pub creates or checks it. Its
    tracking store takes no lock; :func:`dp2pub.migration.settle` watches for that. Held
    only while dp2pub looks at or fills the database, never while MLflow's own store is built
    (its workspace store takes this lock through another file handle: ``flock`` would wait
    on itself)."""
    digest = hashlib.md5(uri.encode(), usedforsecurity=False).hexdigest()
    try:
        handle = open(Path(tempfile.gettempdir()) / f"db_init_lock-{digest}", "a+")  # noqa: SIM115
    except OSError:  # another user's lock file: MLflow of that user cannot open it either
        yield
        return
    with handle, held(handle):
        yield


def repair_hint(uri: str, path: Path | None, leftovers: Sequence[str] = ()) -> str:
    """The repair commands, one line: back up, drop the leftover tables, upgrade. (Measured
    on stores damaged by concurrent first use: ``mlflow db upgrade`` alone failed on all 8,
    dropping the leftover tables first repaired all 8.)"""
    backup = f"copy {path} aside, " if path is not None else "take a backup, "
    drop = ""
    if leftovers and path is not None:
        statements = "; ".join(f"DROP TABLE {t}" for t in leftovers)
        drop = f"run: sqlite3 {shlex.quote(str(path))} '{statements}', then "
    return f"to repair it {backup}{drop}run: mlflow db upgrade {shlex.quote(uri)}"


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
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

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
    """A client of the store ``uri`` whose schema is complete and current, created (a new
    SQLite store from the template, :func:`dp2pub.store_template.create_from_template`) or
    verified (:func:`prepare_sqlite`) under :func:`store_lock`, after :func:`check_uri`.

    Raises:
        StoreError: in one line, naming the store, what is wrong and the remedy.
    """
    import mlflow
    from mlflow.exceptions import MlflowException

    check_uri(uri)
    path = sqlite_path(uri)
    with store_lock(uri):
        if path is not None:
            with mlflow_init_lock(uri):
                prepare_sqlite(uri, path)
        try:
            client = mlflow.MlflowClient(uri)  # MLflow 3 builds the store (and any schema) here
            client.search_experiments(max_results=1)  # and verifies it here
        except Exception as error:
            fault = machine_fault(uri, error)
            if fault is None and not isinstance(error, MlflowException):
                raise
            raise (fault or store_failure(uri, path, error)) from None
    return client


def prepare_sqlite(uri: str, path: Path) -> None:
    """Make the SQLite store at ``path`` ready for MLflow: fill a new one from the template;
    wait while another process migrates an existing one (:func:`dp2pub.migration.settle`);
    refuse, naming the remedy, one that is damaged, half-migrated, older or newer than this
    MLflow, or still held by processes that may be migrating it (then without a repair that
    drops tables). Nothing is written to a store that is refused.

    Raises:
        StoreError: in one line.
    """
    try:
        schema = read_schema(path)
        if schema is not None and schema.empty:
            create_from_template(uri, path)  # or another client filled it first: settled below
            if (schema := read_schema(path)) is not None and schema.empty:
                return  # left to MLflow
        schema, others = settle(path, schema_head)
    except NoSpace as error:
        raise StoreError(f"tracking store {uri}: no space for a new store ({error.strerror}); {FREE_SPACE}") from None
    except Migrating as error:
        raise StoreError(
            f"tracking store {uri} is being migrated by another process ({error}); retry once it has finished"
        ) from None
    except ValueError as error:  # DP2PUB_MIGRATION_QUIET
        raise StoreError(f"tracking store {uri} cannot be checked: {error}") from None
    except sqlite3.DatabaseError as error:
        raise (machine_fault(uri, error) or StoreError(f"tracking store {uri} cannot be read ({error})")) from None
    if schema.empty or schema.current(schema_head()):
        return
    refuse_incomplete(uri, path, schema, others)


def refuse_incomplete(uri: str, path: Path, schema: Schema, others: list[str] | None) -> None:
    """Raise the one-line :class:`StoreError` of a store that is not current once nobody
    changes it any more (``others``: the processes that hold it, None if unknown); return for
    tables MLflow's own initialization completes."""
    damage, versions = schema.damage(), schema.versions
    if damage is None and len(versions) == 1 and not known_revision(versions[0]):
        raise StoreError(
            f"tracking store {uri} was migrated by a newer MLflow (revision {versions[0]}, unknown to this "
            f"MLflow {mlflow_version()}); use that MLflow version, or a new store"
        )
    what = damage or (f"at revision {versions[0]}, not {schema_head()}" if len(versions) == 1 else None)
    if what is None:
        return
    if others:
        raise StoreError(
            f"tracking store {uri} is incomplete ({what}) and held open by {', '.join(others)}, "
            "which may be migrating it: let it finish or stop it, then retry"
        )
    unsure = "" if others == [] else "if no other process has it open, "
    if not holds_runs(path):  # a store whose creation stopped: made anew, whatever step it stopped in
        remedy = (
            f"it holds no runs: move it aside (mv {shlex.quote(str(path))} {shlex.quote(str(path))}.broken) and retry"
        )
    else:
        remedy = repair_hint(uri, path, schema.leftovers if damage is not None else ())
    if damage is not None:
        raise StoreError(
            f"tracking store {uri} is half-migrated ({what}): an earlier schema migration was interrupted; "
            f"{unsure}{remedy}"
        )
    raise StoreError(f"tracking store {uri} has an older schema than this MLflow ({what}); {unsure}{remedy}")


def holds_runs(path: Path) -> bool:
    """Whether the SQLite store ``path`` holds a run. (A migration killed inside one of its steps
    leaves a store ``mlflow db upgrade`` cannot finish, 1 of 4 killed here; one without runs is
    better made anew.)"""
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            return db.execute("SELECT EXISTS (SELECT 1 FROM runs)").fetchone()[0] == 1
    except sqlite3.Error:  # no runs table
        return False


def known_revision(revision: str) -> bool:
    """Whether ``revision`` is one of this MLflow's Alembic revisions of the tracking schema."""
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError
    from mlflow.store.db.utils import _get_alembic_config

    try:
        return ScriptDirectory.from_config(_get_alembic_config(db_url="")).get_revision(revision) is not None
    except CommandError:
        return False


def mlflow_version() -> str:
    """The installed MLflow's version."""
    import mlflow

    return str(mlflow.__version__)


#: The remedy of a full disk.
FREE_SPACE = "free space on that disk or set tracking.uri to a store on another one"


def store_failure(uri: str, path: Path | None, error: BaseException) -> StoreError:
    """The one-line :class:`StoreError` of an ``error`` raised while opening the store ``uri``
    (database file ``path`` when SQLite): a full disk, a damaged or foreign file, an older
    schema, a server gone, else the error's first line."""
    fault = machine_fault(uri, error)
    if fault is not None:
        return fault
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    if "out-of-date database schema" in first:
        return StoreError(
            f"tracking store {uri} has an older schema than this MLflow "
            f"({first.split('(', 1)[-1].split(')')[0]}); {repair_hint(uri, path)}"
        )
    reason = unreachable(uri)  # the server may have stopped since check_uri
    if reason is not None:
        return _unreachable_store(uri, reason)
    return StoreError(f"tracking store {uri} cannot be used: {first}")


def store_errors() -> tuple[type[BaseException], ...]:
    """The exception types a store raises (MLflow's, SQLite's), which :func:`machine_fault`
    may word; an OSError of another file (a sweep's folder on another disk) is not one."""
    from mlflow.exceptions import MlflowException

    return (MlflowException, sqlite3.Error)


def machine_fault(uri: str, error: BaseException, run_id: str | None = None) -> StoreError | None:
    """The one-line :class:`StoreError` of an ``error`` of the SQLite store ``uri`` that comes
    from the machine: a full disk, a damaged or foreign file; else None. ``run_id``: the job's
    run, which the store could not close either."""
    path = sqlite_path(uri)
    if path is None:
        return None
    if disk_full(error):
        fault = StoreError(f"tracking store {uri}: the disk is full ({human(free_bytes(path))} free); {FREE_SPACE}")
    elif (found := damage(error)) is not None:
        fault = damaged_store(uri, path, found)
    else:
        return None
    if run_id is not None:
        return StoreError(
            f"{fault}; the job's run {run_id} may stay RUNNING until a job or sweep started on this host "
            "marks it KILLED"
        )
    return fault


def damaged_store(uri: str, path: Path, found: str) -> StoreError:
    """The one-line error of a SQLite file that is not a database or is damaged (``found``:
    SQLite's words), with the recovery: SQLite's ``.recover`` into a new file."""
    if found == DAMAGE[SQLITE_NOTADB]:
        return StoreError(f"tracking store {uri} is not an SQLite database ({found}); set tracking.uri to a store")
    recovered = path.with_name(f"{path.stem}-recovered{path.suffix or '.db'}")
    return StoreError(
        f"tracking store {uri} is damaged ({found}); dp2pub stopped at the first damaged page it read. Recover "
        f"what the store holds into a new store: sqlite3 {shlex.quote(str(path))} .recover | sqlite3 "
        f"{shlex.quote(str(recovered))} and set tracking.uri=sqlite:///{recovered}; or start a new store"
    )
