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
"""

from __future__ import annotations

import contextlib
import fcntl
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import mlflow
from mlflow.exceptions import MlflowException

LOCK_SUFFIX = ".dp2pub-lock"


class StoreError(ValueError):
    """A tracking store that cannot be used; the message is one line with the remedy."""


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI, else None."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):].split("?", 1)[0])


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
        raise StoreError(f"tracking store {uri}: cannot create the lock file {lock} "
                         f"({error.strerror or error}); use a writable directory") from None
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


def repair_hint(uri: str, path: Path | None, leftovers: list[str] = ()) -> str:
    """The repair commands, one line: back up, drop the leftover tables, upgrade. (Measured
    on stores damaged by concurrent first use: ``mlflow db upgrade`` alone failed on all 8,
    dropping the leftover tables first repaired all 8.)"""
    backup = f"copy {path} aside, " if path is not None else "take a backup, "
    drop = ""
    if leftovers and path is not None:
        statements = "; ".join(f"DROP TABLE {t}" for t in leftovers)
        drop = f"run: sqlite3 {path} '{statements}', then "
    return f"to repair it {backup}{drop}run: mlflow db upgrade {uri}"


def open_store(uri: str) -> mlflow.MlflowClient:
    """A client of the store ``uri`` whose schema is complete and current, created or
    verified under :func:`store_lock`.

    Raises:
        StoreError: in one line, naming the store, what is wrong and the repair command.
    """
    path = sqlite_path(uri)
    with store_lock(uri):
        if path is not None:
            try:
                damage = interrupted_migration(path)
            except sqlite3.DatabaseError as error:
                raise StoreError(f"tracking store {uri} is not an SQLite database ({error})") from None
            if damage is not None:
                raise StoreError(f"tracking store {uri} is half-migrated ({damage[0]}): an earlier schema "
                                 f"migration was interrupted; {repair_hint(uri, path, damage[1])}")
        client = mlflow.MlflowClient(uri)
        try:
            client.search_experiments(max_results=1)  # creates or verifies the schema
        except MlflowException as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            if "out-of-date database schema" in first:
                raise StoreError(f"tracking store {uri} has an older schema than this MLflow "
                                 f"({first.split('(', 1)[-1].split(')')[0]}); {repair_hint(uri, path)}") from None
            raise
    return client
