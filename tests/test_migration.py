"""Telling a migration another process runs from one that was interrupted (dp2pub.migration),
with real processes holding a real SQLite file: who holds it, whether it changes, how long
it is watched, paths SQLite would misread as URIs, and a hot journal left by a killed writer."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from dp2pub.migration import QUIET_ENV, Migrating, Schema, holders, quiet_seconds, read_schema, settle

HEAD = "head0001"


def half_migrated(path: Path) -> None:
    """A database as an interrupted MLflow migration leaves it: tables, a revision, a leftover."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE experiments (x INTEGER)")
        db.execute("CREATE TABLE alembic_version (version_num TEXT)")
        db.execute("INSERT INTO alembic_version VALUES ('old00001')")
        db.execute("CREATE TABLE _alembic_tmp_runs (x INTEGER)")


#: A process that opens the database argv[1] and then, by argv[2]: ``idle`` (holds it),
#: ``busy`` (inserts a row every 50 ms, without end), ``finish`` (after 1 s, drops the
#: leftover and sets the head revision, as a migration that completes).
HOLDER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
print("open", flush=True)
if sys.argv[2] == "busy":
    while True:
        db.execute("INSERT INTO _alembic_tmp_runs VALUES (1)")
        time.sleep(0.05)
if sys.argv[2] == "finish":
    time.sleep(1.0)
    db.execute("DROP TABLE _alembic_tmp_runs")
    db.execute("UPDATE alembic_version SET version_num = 'head0001'")
time.sleep(600)
"""


@contextlib.contextmanager
def holder(path: Path, mode: str) -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), mode], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "open\n"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_store_nobody_holds_is_judged_at_once(tmp_path, monkeypatch):
    path = tmp_path / "m.db"
    half_migrated(path)

    def no_wait(seconds: float) -> None:
        raise AssertionError(f"settle waited {seconds} s for a store nobody holds")

    # not watched for the quiet period: the module's clock never sleeps
    monkeypatch.setattr("dp2pub.migration.time", types.SimpleNamespace(monotonic=time.monotonic, sleep=no_wait))
    schema, others = settle(path, lambda: HEAD, quiet=30)
    assert others == [] and schema.leftovers == ["_alembic_tmp_runs"] and schema.versions == ("old00001",)


def test_a_holder_is_named_and_a_store_that_stops_changing_is_judged_after_the_quiet_period(tmp_path):
    path = tmp_path / "m.db"
    half_migrated(path)
    with holder(path, "idle") as proc:
        (found,) = holders(path)
        assert found.startswith(f"{proc.pid} ({sys.executable} -c"[:60])
        started = time.monotonic()
        schema, others = settle(path, lambda: HEAD, quiet=1.0)
        waited = time.monotonic() - started
    assert others is not None and len(others) == 1 and others[0].startswith(f"{proc.pid} (")
    assert waited >= 1.0 and schema.leftovers == ["_alembic_tmp_runs"]


def test_a_migration_that_completes_meanwhile_is_waited_for(tmp_path):
    path = tmp_path / "m.db"
    half_migrated(path)
    with holder(path, "finish"):
        schema, others = settle(path, lambda: HEAD, quiet=30)
    assert schema.current(HEAD) and others == []


def test_a_store_that_keeps_changing_is_refused_after_the_wait(tmp_path):
    path = tmp_path / "m.db"
    half_migrated(path)
    with holder(path, "busy") as proc, pytest.raises(Migrating, match=rf"^{proc.pid} \(.*kept changing it for 1\.5 s$"):
        settle(path, lambda: HEAD, wait=1.5, quiet=1.0)


def test_the_wait_is_never_shorter_than_the_quiet_period(tmp_path):
    """An idle holder is judged (returned), not called busy, whatever the two durations."""
    path = tmp_path / "m.db"
    half_migrated(path)
    with holder(path, "idle"):
        schema, others = settle(path, lambda: HEAD, wait=0.5, quiet=1.0)
    assert others and schema.leftovers


@pytest.mark.parametrize("folder", ["run#1", "p%41", "a?b"])
def test_a_path_sqlite_could_read_as_a_uri_is_read_where_it_is(tmp_path, folder):
    path = tmp_path / folder / "m.db"
    path.parent.mkdir()
    half_migrated(path)
    assert read_schema(path) == Schema(
        frozenset({"experiments", "alembic_version", "_alembic_tmp_runs"}), ("old00001",)
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]  # nothing created beside it


#: A writer killed inside a transaction: it leaves a hot journal.
KILLED_WRITER = """
import sqlite3, sys, os, signal
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size = 1")
db.execute("BEGIN")
db.execute("CREATE TABLE extra (x BLOB)")
db.executemany("INSERT INTO extra VALUES (?)", [(os.urandom(4000),) for _ in range(200)])
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_hot_journal_of_a_killed_writer_is_rolled_back_and_the_store_read(tmp_path):
    path = tmp_path / "m.db"
    half_migrated(path)
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path)], check=False)
    assert killed.returncode == -signal.SIGKILL
    assert Path(f"{path}-journal").exists()
    schema = read_schema(path)
    assert schema is not None and "extra" not in schema.tables and schema.versions == ("old00001",)


def test_an_empty_or_missing_file_is_an_empty_schema(tmp_path):
    assert read_schema(tmp_path / "missing.db") == Schema(frozenset(), ())
    (tmp_path / "empty.db").touch()
    assert read_schema(tmp_path / "empty.db") == Schema(frozenset(), ())
    assert holders(tmp_path / "missing.db") == []


@pytest.mark.parametrize("given,seconds", [("", 15.0), ("2.5", 2.5), ("0", 0.0)])
def test_the_quiet_period_is_read_from_the_environment(monkeypatch, given, seconds):
    monkeypatch.setenv(QUIET_ENV, given)
    assert quiet_seconds() == seconds


@pytest.mark.parametrize("given", ["-1", "abc", "nan", "inf"])
def test_a_bad_quiet_period_is_refused_in_one_line(monkeypatch, given):
    monkeypatch.setenv(QUIET_ENV, given)
    with pytest.raises(ValueError, match=rf"^{QUIET_ENV}='{given}' is invalid: expected a number of seconds >= 0$"):
        quiet_seconds()


def test_this_process_does_not_count_as_a_holder(tmp_path):
    path = tmp_path / "m.db"
    half_migrated(path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("SELECT 1").fetchall()
        assert holders(path) == []
