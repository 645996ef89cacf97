"""Telling a schema migration another process is running from one that was interrupted.

dp2pub's processes create a new SQLite store one at a time (:func:`dp2pub.store.store_lock`),
but other MLflow clients do not take dp2pub's lock: the ``mlflow ui`` a user opens beside a
sweep, a notebook's ``MlflowClient``. MLflow's ``SqlAlchemyStore`` creates the schema of a
store whose tables are missing (the initial tables, then every Alembic migration; MLflow
3.17, ``mlflow/store/tracking/sqlalchemy_store.py:408-409``) without any lock. While it runs,
the database passes through the states that also mark an interrupted migration: tables
without an ``alembic_version``, a revision older than MLflow's head, leftover
``_alembic_tmp_*`` tables. Opening the store then (MLflow would start a second migration
beside the first) or recommending the repair (``DROP TABLE`` of a table the other process is
filling) can destroy the store.

:func:`settle` tells the two apart by who holds the database open and whether it changes:

* no other process holds the file open (Linux: ``/proc/<pid>/fd``): nobody can be
  migrating it, and what is found is final at once;
* others hold it open: the store is watched while it changes, up to :data:`WAIT` seconds,
  until it is current, or until it has not changed for :data:`QUIET` seconds (a migration
  that stalled, or a holder that is not migrating); the caller then names the holders and
  recommends no repair while they remain.

Where ``/proc`` is missing (not Linux) the holders are unknown and every incomplete store is
watched for :data:`QUIET` seconds before it is judged.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: Seconds a store that another process is migrating is waited for, at most.
WAIT = 120.0
#: Seconds without any change after which an incomplete store that others hold open is
#: judged (``DP2PUB_MIGRATION_QUIET`` sets it: a slow network filesystem may need more).
QUIET = 15.0
QUIET_ENV = "DP2PUB_MIGRATION_QUIET"
#: Seconds between two looks at a store being migrated.
POLL = 0.2
#: Prefix of the tables Alembic's batch migrations (SQLite) copy a table into.
TMP_PREFIX = "_alembic_tmp_"


@dataclass(frozen=True)
class Schema:
    """What a SQLite database holds of MLflow's schema: its tables and Alembic revisions."""

    tables: frozenset[str]
    versions: tuple[str, ...]

    @property
    def empty(self) -> bool:
        """No table at all: a database MLflow (or a template) still has to create."""
        return not self.tables

    @property
    def leftovers(self) -> list[str]:
        """The tables of an unfinished batch migration, sorted."""
        return sorted(t for t in self.tables if t.startswith(TMP_PREFIX))

    def current(self, head: str) -> bool:
        """At revision ``head`` with no migration under way."""
        return not self.leftovers and self.versions == (head,)

    def damage(self) -> str | None:
        """What marks the schema as half-migrated, or None (an empty database, a complete one
        at any single revision, or tables MLflow's own initialization completes)."""
        if self.leftovers:
            return f"leftover migration table(s) {', '.join(self.leftovers)}"
        if "experiments" in self.tables:
            if "alembic_version" not in self.tables:
                return "tables without an alembic_version"
            if len(self.versions) != 1:
                return f"{len(self.versions)} alembic versions"
        return None


def read_schema(path: Path, timeout: float = 1.0) -> Schema | None:
    """The schema of the database ``path`` read-only (an empty one for a missing or empty
    file), or None when a writer keeps it locked for ``timeout`` seconds. A hot journal (left
    by a writer that was killed: SQLite cannot read the database read-only before it rolls
    the journal back) is rolled back first, by one read-write open, as MLflow's would.

    Raises:
        sqlite3.DatabaseError: not an SQLite database, or a damaged one.
    """
    if not path.is_file() or path.stat().st_size == 0:
        return Schema(frozenset(), ())
    try:
        return _read(f"{path.resolve().as_uri()}?mode=ro", timeout)
    except sqlite3.OperationalError as error:
        if "locked" in str(error) or "busy" in str(error):
            return None
        if not (getattr(error, "sqlite_errorcode", None) == SQLITE_READONLY_ROLLBACK or "readonly" in str(error)):
            raise
    return _read(path.resolve().as_uri(), timeout)  # rolls the hot journal back


#: SQLite's extended result code of a read-only open that meets a hot journal.
SQLITE_READONLY_ROLLBACK = 776


def _read(uri: str, timeout: float) -> Schema:
    """The tables and Alembic revisions of the database at the SQLite URI ``uri``."""
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=timeout)) as db:
        tables = frozenset(row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        versions: tuple[str, ...] = ()
        if "alembic_version" in tables:
            versions = tuple(str(row[0]) for row in db.execute("SELECT version_num FROM alembic_version"))
    return Schema(tables, versions)


def holders(path: Path) -> list[str] | None:
    """The other processes that hold the file ``path`` open, as ``<pid> (<command>)``, found
    by the device and inode of their open files (Linux ``/proc/<pid>/fd``); None where this
    cannot be known: no ``/proc``, or a process of this user whose files cannot be listed.
    Other users' processes are seen by root only (they cannot write a store that is not
    shared with them)."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    try:
        info = os.stat(path)
    except OSError:
        return []
    target, found, unknown = (info.st_dev, info.st_ino), [], False
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except PermissionError:
            with contextlib.suppress(OSError):
                unknown = unknown or entry.stat().st_uid == os.getuid()
            continue
        except OSError:  # the process ended
            continue
        if any(_opens(fd, target) for fd in fds):
            found.append(f"{entry.name} ({_command(entry)})")
    return None if unknown and not found else found


def _opens(fd: Path, target: tuple[int, int]) -> bool:
    """Whether the open file ``/proc/<pid>/fd/<n>`` is the file of device and inode ``target``
    (False when it was closed meanwhile)."""
    try:
        info = os.stat(fd)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == target


def _command(entry: Path) -> str:
    """The command line of the process ``/proc/<pid>``, shortened to 60 characters."""
    with contextlib.suppress(OSError):
        words = (entry / "cmdline").read_bytes().split(b"\0")
        text = " ".join(" ".join(w.decode(errors="replace") for w in words).split())  # one line
        return text if len(text) <= 60 else text[:57] + "..."
    return "?"


def _stamp(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """Size and modification time of the database and its journals (what a writer changes)."""
    stamps: list[tuple[int, int] | None] = []
    for suffix in ("", "-journal", "-wal"):
        try:
            info = os.stat(f"{path}{suffix}")
            stamps.append((info.st_size, info.st_mtime_ns))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def quiet_seconds() -> float:
    """:data:`QUIET`, or the seconds ``$DP2PUB_MIGRATION_QUIET`` gives.

    Raises:
        ValueError: a value that is not a number of seconds >= 0, in one line.
    """
    given = os.environ.get(QUIET_ENV, "").strip()
    if not given:
        return QUIET
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(f"{QUIET_ENV}={given!r} is invalid: expected a number of seconds >= 0")
    return seconds


class Migrating(RuntimeError):
    """A store that another process kept changing for :data:`WAIT` seconds."""


def settle(
    path: Path,
    head: Callable[[], str],
    wait: float = WAIT,
    quiet: float | None = None,
) -> tuple[Schema, list[str] | None]:
    """The schema of ``path`` once no other process is migrating it, and the other processes
    that still hold it open (empty when none does, or when it is current; None when they
    cannot be known, see :func:`holders`).

    Returns at once when the store is current (at revision ``head()``, called only when the
    store has one revision) or when no other process holds it open; else looks every
    :data:`POLL` seconds, and returns when the store is current or has not changed for
    ``quiet`` seconds (default :data:`QUIET`, or ``$DP2PUB_MIGRATION_QUIET``).

    Raises:
        Migrating: the store still changes after ``wait`` seconds.
        sqlite3.DatabaseError: not an SQLite database, or a damaged one.
    """
    quiet = quiet_seconds() if quiet is None else quiet
    wait = max(wait, quiet + POLL)  # a store that stopped changing is judged, not called busy
    start = changed = time.monotonic()
    seen: tuple[object, ...] | None = None
    while True:
        schema = read_schema(path)
        if schema is not None and len(schema.versions) == 1 and schema.current(head()):
            return schema, []
        others = holders(path)
        if schema is not None and others == []:
            return schema, []
        now, look = time.monotonic(), (schema, _stamp(path))
        if look != seen:
            seen, changed = look, now
        elif schema is not None and now - changed >= quiet:
            return schema, others
        if now - start >= wait:
            who = ", ".join(others) if others else "another process"
            raise Migrating(f"{who} kept changing it for {wait:g} s")
        time.sleep(POLL)
