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

A new SQLite store is not migrated but copied (:func:`create_from_template`): MLflow's schema
creation runs every Alembic migration, 4-9 s here, once per user and MLflow version into a
template in the cache directory (:func:`cache_dir`), which each new store then copies in
milliseconds; MLflow itself adds the one row that depends on where and when the store is
created (see :func:`make_template`). ``DP2PUB_STORE_TEMPLATE=0`` turns this off, and any
failure of the template falls back to MLflow's own migration.

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
import hashlib
import logging
import os
import shutil
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from dp2pub.data.files import default_cache_dir

if TYPE_CHECKING:
    import mlflow

# MLflow (a second or two to import) is imported by the functions that open a store or an
# artifact location, not with this module: the command line refuses a bad value, and raises
# StoreError, without it (tests/test_layers.py, DEFERRED).

log = logging.getLogger(__name__)

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

#: The directory of dp2pub's per-user cache when set (else ``$XDG_CACHE_HOME/dp2pub``).
CACHE_ENV = "DP2PUB_CACHE_DIR"
#: ``DP2PUB_STORE_TEMPLATE=0`` (or false, no, off): new SQLite stores are migrated by MLflow.
TEMPLATE_ENV = "DP2PUB_STORE_TEMPLATE"
#: Bumped when the way a template is made changes (part of its file name).
TEMPLATE_FORMAT = 1


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
    with handle, _held(handle):
        yield


@contextlib.contextmanager
def _held(handle: IO[str]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the open file ``handle``."""
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


def templates_enabled() -> bool:
    """Whether new SQLite stores are copied from a template (not ``DP2PUB_STORE_TEMPLATE=0``)."""
    return os.environ.get(TEMPLATE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def cache_dir() -> Path:
    """dp2pub's per-user cache directory: ``$DP2PUB_CACHE_DIR`` if set, else
    ``$XDG_CACHE_HOME/dp2pub``, else ``~/.cache/dp2pub``."""
    given = os.environ.get(CACHE_ENV, "").strip()
    return Path(given).expanduser() if given else default_cache_dir()


def schema_head() -> str:
    """The Alembic head revision of this MLflow's tracking schema (read from its migration
    scripts: about 40 ms, which MLflow spends again verifying the schema of any store)."""
    from mlflow.store.db.utils import _get_latest_schema_revision

    return str(_get_latest_schema_revision())


def template_path(directory: Path, head: str) -> Path:
    """The template in ``directory`` of this MLflow (version, schema ``head``) as written by
    these SQLAlchemy, Alembic and SQLite (their DDL text may differ) and this dp2pub
    (:data:`TEMPLATE_FORMAT`): ``store-template-mlflow-<version>-<head>-<digest>.db``."""
    import alembic
    import mlflow
    import sqlalchemy

    tools = f"{TEMPLATE_FORMAT} {sqlalchemy.__version__} {alembic.__version__} {sqlite3.sqlite_version}"
    digest = hashlib.sha256(tools.encode()).hexdigest()[:8]
    return directory / f"store-template-mlflow-{mlflow.__version__}-{head}-{digest}.db"


def is_template(path: Path, head: str) -> bool:
    """Whether ``path`` is a complete template: a database at Alembic revision ``head``
    without leftover migration tables or experiments."""
    if not path.is_file():
        return False
    try:
        if interrupted_migration(path) is not None:
            return False
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            versions = [row[0] for row in db.execute("SELECT version_num FROM alembic_version")]
            experiments = db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
    except sqlite3.Error:
        return False
    return versions == [head] and experiments == 0


def make_template(template: Path) -> None:
    """Create ``template``: a new database in a temporary file beside it, given its schema by
    MLflow's own store (``SqlAlchemyStore``: create the tables, run every Alembic migration),
    without the default experiment; then moved into place (``os.replace``), so that no
    reader sees a half-made template.

    What MLflow 3.17 writes into a new SQLite database, read in its source
    (``mlflow/store/tracking/sqlalchemy_store.py``, ``mlflow/store/db/utils.py``) and checked
    by ``tests/test_store_template.py``: the schema and ``alembic_version`` (the same for
    every new store of one MLflow), one ``workspaces`` row (a constant, written by migration
    ``1b5f0d9ad7c1``), and the default experiment (id 0, "Default"), the only row that
    depends on where and when: its ``artifact_location`` is the store's artifact root + ``/0``
    (``_get_artifact_location``, sqlalchemy_store.py:609-610; the root is
    ``resolve_uri_if_local(default_artifact_root)``, sqlalchemy_store.py:403, i.e.
    ``./mlruns`` under the working directory of the process that creates the store, or in
    ``mlflow server``'s workers ``$_MLFLOW_SERVER_ARTIFACT_ROOT``,
    tracking/_tracking_service/utils.py:192-198) and its
    ``creation_time``/``last_update_time`` are the time of creation (sqlalchemy_store.py:552-559).
    Every construction of the store, not only the first, calls ``_initialize_store_state``
    (sqlalchemy_store.py:441), which looks for experiment 0 and creates it when missing
    (sqlalchemy_store.py:510-517; the workspace-aware store does the same,
    sqlalchemy_workspace_store.py:187-189, 495-525). The template is therefore stored
    without it, and the first open of a copy, by the process that asked for the new store,
    creates it exactly as on a store MLflow created there itself. Migrations' time-dependent
    column defaults apply only to rows they insert or update, of which a new database has none.
    """
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    part = template.with_name(f"{template.name}.{uuid.uuid4().hex}.part")
    artifacts = part.with_name(part.name + "-artifacts")  # MLflow 2 creates it; the template has no experiment
    try:
        store = SqlAlchemyStore(f"sqlite:///{part}", str(artifacts))
        store.engine.dispose()
        with contextlib.closing(sqlite3.connect(part)) as db, db:
            db.execute("DELETE FROM experiments WHERE experiment_id = 0")
        os.replace(part, template)
    finally:
        part.unlink(missing_ok=True)
        shutil.rmtree(artifacts, ignore_errors=True)


def ensure_template() -> Path:
    """The template of this MLflow in :func:`cache_dir`, made first (under its own lock,
    so that one process migrates and the others wait) if missing or incomplete.

    Raises:
        OSError, sqlite3.Error, MlflowException: the cache cannot hold a template.
    """
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    head = schema_head()
    template = template_path(directory, head)
    if is_template(template, head):
        return template
    with open(template.with_name(template.name + LOCK_SUFFIX), "a+") as handle, _held(handle):
        if not is_template(template, head):
            make_template(template)
    if not is_template(template, head):
        raise OSError(f"the store template {template} is incomplete")
    return template


def new_database(path: Path) -> bool:
    """Whether ``path`` names a database that MLflow would create: no file there (nor a
    link), or an empty regular file; not SQLite's ``:memory:`` or ``file:`` names."""
    if path.name == ":memory:" or str(path).startswith("file:") or path.is_symlink():
        return False
    if not path.exists():
        return True
    return path.is_file() and path.stat().st_size == 0


def copy_template(template: Path, path: Path) -> None:
    """Copy ``template`` to ``path`` through a temporary file beside it, flushed to disk and
    moved into place (``os.replace``): a crash leaves no store or a whole one. An empty file
    at ``path`` is replaced, its permissions kept."""
    part = path.with_name(f"{path.name}.dp2pub-{uuid.uuid4().hex}.part")
    try:
        shutil.copyfile(template, part)
        if path.exists():
            shutil.copymode(path, part)
        with open(part, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def create_from_template(uri: str, path: Path) -> bool:
    """Create the new SQLite store ``uri`` at ``path`` as a copy of the template
    (:func:`ensure_template`) instead of having MLflow migrate it; whether it did. Only for
    a missing or empty file and a URI without options, unless ``DP2PUB_STORE_TEMPLATE=0``;
    any failure (say, a cache that cannot be written) leaves the store to MLflow. Call it
    under :func:`store_lock`."""
    if not templates_enabled() or "?" in uri or not new_database(path):
        return False
    try:
        copy_template(ensure_template(), path)
    except Exception:  # any failure: MLflow migrates the store as it would without a template
        log.debug("tracking store %s: no template, MLflow creates the schema", uri, exc_info=True)
        return False
    return True


def open_store(uri: str) -> mlflow.MlflowClient:
    """A client of the store ``uri`` whose schema is complete and current, created (a new
    SQLite store from the template, :func:`create_from_template`) or verified under
    :func:`store_lock`, after :func:`check_uri`.

    Raises:
        StoreError: in one line, naming the store, what is wrong and the repair command.
    """
    import mlflow
    from mlflow.exceptions import MlflowException

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
            create_from_template(uri, path)
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
