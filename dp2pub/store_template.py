"""New SQLite tracking stores filled from a migrated template instead of migrated in place.

MLflow creates the schema of a new SQLite store by running every Alembic migration, 4-9 s
here, and a migration that stops halfway (a full disk, a kill) leaves the store
half-migrated. dp2pub runs MLflow's migration once per user and MLflow version, into a
template in the cache directory (:func:`cache_dir`; made in a temporary file and moved into
place, :func:`make_template`), and fills each new store from it in one SQLite transaction
(:func:`copy_template`): a few milliseconds, and a failure rolls back to the empty store it
found. MLflow itself adds the one row that depends on where and when the store is created
(see :func:`make_template`). ``DP2PUB_STORE_TEMPLATE=0`` turns this off; a template that
cannot be made (say, a cache that cannot be written) leaves the store to MLflow's own
migration, except when the disk is full (:class:`NoSpace`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import logging
import os
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from dp2pub.data.files import default_cache_dir
from dp2pub.faults import disk_full
from dp2pub.migration import read_schema
from dp2pub.units import human

log = logging.getLogger(__name__)

LOCK_SUFFIX = ".dp2pub-lock"
#: The directory of dp2pub's per-user cache when set (else ``$XDG_CACHE_HOME/dp2pub``).
CACHE_ENV = "DP2PUB_CACHE_DIR"
#: ``DP2PUB_STORE_TEMPLATE=0`` (or false, no, off): new SQLite stores are migrated by MLflow.
TEMPLATE_ENV = "DP2PUB_STORE_TEMPLATE"
#: Bumped when the way a template is made changes (part of its file name).
TEMPLATE_FORMAT = 2
#: Bytes a new store needs when no template tells (MLflow 3.17's schema takes 0.93 MiB; twice that).
NEW_STORE_BYTES = 2 << 20
#: The order in which a template's objects are created after its tables and their rows: a
#: view before the triggers on it, triggers last so that none fires on the copied rows.
KINDS = ("view", "index", "trigger")


class NoSpace(OSError):
    """Too little free space for a new store (``errno.ENOSPC``)."""


@contextlib.contextmanager
def held(handle: IO[str]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the open file ``handle``."""
    fcntl.flock(handle, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)


def templates_enabled() -> bool:
    """Whether new SQLite stores are filled from a template (not ``DP2PUB_STORE_TEMPLATE=0``)."""
    return os.environ.get(TEMPLATE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def cache_dir() -> Path:
    """dp2pub's per-user cache directory: ``$DP2PUB_CACHE_DIR`` if set, else
    ``$XDG_CACHE_HOME/dp2pub``, else ``~/.cache/dp2pub``."""
    given = os.environ.get(CACHE_ENV, "").strip()
    return Path(given).expanduser() if given else default_cache_dir()


@functools.lru_cache(maxsize=1)
def schema_head() -> str:
    """The Alembic head revision of this MLflow's tracking schema (read from its migration
    scripts, once per process: 20-50 ms, which MLflow spends again verifying any store)."""
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
        schema = read_schema(path)
        if schema is None or not schema.current(head):
            return False
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            experiments = db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
    except sqlite3.Error:
        return False
    return experiments == 0


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
    with open(template.with_name(template.name + LOCK_SUFFIX), "a+") as handle, held(handle):
        if not is_template(template, head):
            make_template(template)
    if not is_template(template, head):
        raise OSError(f"the store template {template} is incomplete")
    return template


def check_space(path: Path, need: int) -> None:
    """Refuse (:class:`NoSpace`) to create the store ``path`` when its directory has less than
    ``need`` bytes free."""
    free = shutil.disk_usage(path.parent).free
    if free < need:
        raise NoSpace(errno.ENOSPC, f"{path.parent} has {human(free)} free, a new store needs about {human(need)}")


def copy_template(template: Path, path: Path) -> bool:
    """Fill the empty database ``path`` (created if missing) with the schema and rows of
    ``template`` in one SQLite transaction; whether it did.

    The transaction is taken (``BEGIN IMMEDIATE``) before the database is looked at, so an
    MLflow client that creates the schema meanwhile without dp2pub's lock either finds the
    whole schema or has filled the database first, which is then left as it is (False). A
    failure rolls the transaction back and leaves the database empty; a full disk raises
    :class:`NoSpace`. The objects are created from the template's own SQL text: the tables,
    their rows (a template has two), then :data:`KINDS`.
    """
    source = f"{template.resolve().as_uri()}?mode=ro"
    target = path.absolute().as_uri()  # URIs on, whatever SQLite's build: ATTACH reads the template's as one
    with contextlib.closing(sqlite3.connect(target, uri=True, timeout=30, isolation_level=None)) as db:
        db.execute("ATTACH DATABASE ? AS template", (source,))
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute("SELECT COUNT(*) FROM main.sqlite_master").fetchone()[0]:
                db.execute("ROLLBACK")
                return False
            objects = db.execute(
                "SELECT type, name, sql FROM template.sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
            ).fetchall()
            tables = [name for kind, name, _ in objects if kind == "table"]
            for kind in ("table", *KINDS):
                for _, _, sql in (o for o in objects if o[0] == kind):
                    db.execute(sql)
                if kind == "table":
                    for name in tables:
                        _copy_rows(db, name)
            db.execute("COMMIT")
        except sqlite3.Error as error:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if disk_full(error):
                raise NoSpace(errno.ENOSPC, f"the disk of {path} filled while the store was created") from None
            raise
    return True


def _copy_rows(db: sqlite3.Connection, table: str) -> None:
    """Copy the rows of ``table`` from the attached ``template`` into ``main``, without its
    generated columns (``PRAGMA table_xinfo``: hidden 2 and 3), which SQLite computes."""
    if db.execute(f'SELECT EXISTS (SELECT 1 FROM template."{table}")').fetchone()[0]:
        columns = ", ".join(f'"{c[1]}"' for c in db.execute(f'PRAGMA template.table_xinfo("{table}")') if c[6] == 0)
        db.execute(f'INSERT INTO main."{table}" ({columns}) SELECT {columns} FROM template."{table}"')


def create_from_template(uri: str, path: Path) -> bool:
    """Create the new SQLite store ``uri`` at ``path`` from the template
    (:func:`ensure_template`, :func:`copy_template`) instead of having MLflow migrate it;
    whether it did. Only for a URI without options, unless ``DP2PUB_STORE_TEMPLATE=0``; a
    template that cannot be made leaves the store to MLflow. Call it under dp2pub's store
    lock, on an empty or missing database.

    Raises:
        NoSpace: the store's directory has too little space for it.
    """
    if path.name == ":memory:" or str(path).startswith("file:"):
        return False
    if not templates_enabled() or "?" in uri:
        check_space(path, NEW_STORE_BYTES)
        return False
    try:
        template = ensure_template()
    except Exception:  # any failure: MLflow migrates the store as it would without a template
        log.debug("tracking store %s: no template, MLflow creates the schema", uri, exc_info=True)
        check_space(path, NEW_STORE_BYTES)
        return False
    check_space(path, template.stat().st_size)
    return copy_template(template, path)
