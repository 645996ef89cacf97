"""New SQLite stores copied from a migrated template (:func:`dp2pub.store_template.create_from_template`)
are the stores MLflow would have created at their place: same schema, Alembic version and rows,
the default experiment made by MLflow where and when the store is first opened."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest

import dp2pub.store_template
from dp2pub.store import StoreError, open_store
from dp2pub.store_template import CACHE_ENV, TEMPLATE_ENV, schema_head, template_path

#: Pragmas a new database gets from the process that creates it.
PRAGMAS = ("user_version", "application_id", "page_size", "journal_mode", "auto_vacuum", "encoding")
#: The columns of the default experiment that hold the time the store was created.
TIMES = ("creation_time", "last_update_time")
#: The artifact root ``mlflow server`` gives the stores of its workers (else ``./mlruns``).
SERVER_ROOT = "_MLFLOW_SERVER_ARTIFACT_ROOT"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Iterator[Path]:
    """A cache directory whose template was made once, from another working directory than
    the tests' (so that nothing of where it was made can pass for where a store is)."""
    folder = tmp_path_factory.mktemp("cache")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(folder))
        patch.chdir(elsewhere)
        patch.delenv(TEMPLATE_ENV, raising=False)
        dp2pub.store_template.ensure_template()
    yield folder


@pytest.fixture
def copies(cache, tmp_path, monkeypatch) -> list[Path]:
    """The stores copied from the template during the test (in order); the test runs in
    ``tmp_path/work`` with :func:`cache` and templates on, MLflow's artifact root unset."""
    monkeypatch.setenv(CACHE_ENV, str(cache))
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    monkeypatch.delenv(SERVER_ROOT, raising=False)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    made: list[Path] = []
    copy = dp2pub.store_template.copy_template

    def recorded(template: Path, path: Path) -> bool:
        copied = copy(template, path)
        if copied:
            made.append(path)
        return copied

    monkeypatch.setattr(dp2pub.store_template, "copy_template", recorded)
    return made


def uri_of(path: Path) -> str:
    return f"sqlite:///{path}"


def direct(path: Path, monkeypatch) -> None:
    """Have MLflow create the store ``path`` itself, as before templates."""
    with monkeypatch.context() as patch:
        patch.setenv(TEMPLATE_ENV, "0")
        open_store(uri_of(path))


def clauses(body: str) -> list[str]:
    """The comma-separated parts of ``body`` outside parentheses and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, char in enumerate(body):
        if char == "'":
            quoted = not quoted
        elif not quoted and char in "()":
            depth += 1 if char == "(" else -1
        elif not quoted and depth == 0 and char == ",":
            parts.append(body[start:i].strip())
            start = i + 1
    return [*parts, body[start:].strip()]


def normalised(sql: str | None) -> str:
    """``sql`` with its whitespace collapsed and, in a CREATE TABLE, the table constraints
    sorted: MLflow's own migrations write the CHECK constraints of ``runs`` in an order
    that changes with the process's hash seed (two stores MLflow created in two processes
    differ so); the columns keep their order."""
    text = " ".join((sql or "").split())
    if not text.startswith("CREATE TABLE") or "(" not in text:
        return text
    head, body = text.split("(", 1)
    body, tail = body.rsplit(")", 1)
    parts = clauses(body)
    keywords = ("CONSTRAINT ", "PRIMARY KEY", "UNIQUE ", "CHECK ", "FOREIGN KEY")
    columns = [p for p in parts if not p.startswith(keywords)]
    constraints = sorted(p for p in parts if p.startswith(keywords))
    return f"{head}({', '.join(columns + constraints)}){tail}"


def schema(db: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """Every object of the database with its SQL, normalised (no page numbers)."""
    rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
    return [(kind, name, table, normalised(sql)) for kind, name, table, sql in rows]


def rows(db: sqlite3.Connection, table: str) -> list[dict]:
    """The rows of ``table`` as dicts, in a stable order."""
    cursor = db.execute(f'SELECT * FROM "{table}"')
    names = [c[0] for c in cursor.description]
    return sorted((dict(zip(names, row)) for row in cursor), key=repr)


def contents(path: Path, created: tuple[int, int]) -> dict:
    """Schema, pragmas and rows of the database ``path``; the default experiment's times are
    checked to lie in ``created`` (ms) and then left out."""
    with sqlite3.connect(path) as db:
        tables = [name for kind, name, _, _ in schema(db) if kind == "table"]
        found = {table: rows(db, table) for table in tables}
        pragmas = {p: db.execute(f"PRAGMA {p}").fetchone()[0] for p in PRAGMAS}
        result = {"schema": schema(db), "pragmas": pragmas, "rows": found}
    (default,) = found["experiments"]
    for column in TIMES:
        assert created[0] <= default.pop(column) <= created[1], column
    return result


def now_ms() -> int:
    return int(time.time() * 1000)


def test_a_store_copied_from_the_template_is_the_store_mlflow_creates(copies, tmp_path, monkeypatch):
    copied, made = tmp_path / "a" / "mlflow.db", tmp_path / "b" / "mlflow.db"
    copied.parent.mkdir()
    made.parent.mkdir()
    start = now_ms()
    open_store(uri_of(copied))
    direct(made, monkeypatch)
    window = (start, now_ms())
    assert copies == [copied]
    ours, theirs = contents(copied, window), contents(made, window)
    assert ours["schema"] == theirs["schema"] and len(ours["schema"]) > 60
    assert ours["pragmas"] == theirs["pragmas"]
    assert ours["rows"]["alembic_version"] == theirs["rows"]["alembic_version"] == [{"version_num": schema_head()}]
    assert ours["rows"] == theirs["rows"]
    default = ours["rows"]["experiments"][0]
    assert default["name"] == "Default" and default["experiment_id"] == 0
    assert default["artifact_location"] == str(tmp_path / "work" / "mlruns" / "0")  # this cwd, not the template's


def test_the_default_experiment_follows_mlflows_artifact_root_of_the_opening_process(copies, tmp_path, monkeypatch):
    """MLflow's artifact root of a store opened in ``mlflow server``'s workers (the variable
    it sets for them) instead of ``./mlruns``: the copy's default experiment uses it too."""
    root = (tmp_path / "server-artifacts").as_uri()
    monkeypatch.setenv(SERVER_ROOT, root)
    copied, made = tmp_path / "copied.db", tmp_path / "made.db"
    open_store(uri_of(copied))
    direct(made, monkeypatch)
    assert copies == [copied]
    locations = [mlflow.MlflowClient(uri_of(p)).get_experiment("0").artifact_location for p in (copied, made)]
    assert locations == [f"{root}/0"] * 2


def test_a_run_logged_into_a_copied_store_reads_back(copies, tmp_path):
    uri = uri_of(tmp_path / "mlflow.db")
    client = open_store(uri)
    experiment = client.create_experiment("logged", artifact_location=(tmp_path / "art").as_uri())
    run = client.create_run(experiment)
    client.log_param(run.info.run_id, "epsilon", "1.0")
    client.log_metric(run.info.run_id, "tvd_1way", 0.125, step=3)
    client.set_tag(run.info.run_id, "dp2pub.test", "yes")
    client.set_terminated(run.info.run_id)
    open_store(uri)  # an existing store: opened, not copied again
    assert copies == [tmp_path / "mlflow.db"]
    found = mlflow.MlflowClient(uri).get_run(run.info.run_id)
    assert found.info.status == "FINISHED" and found.info.experiment_id == experiment == "1"
    assert found.data.params == {"epsilon": "1.0"} and found.data.metrics == {"tvd_1way": 0.125}
    assert found.data.tags["dp2pub.test"] == "yes"
    history = mlflow.MlflowClient(uri).get_metric_history(run.info.run_id, "tvd_1way")
    assert [(m.value, m.step) for m in history] == [(0.125, 3)]


def test_an_empty_file_is_filled_from_the_template_and_keeps_its_mode(copies, tmp_path):
    path = tmp_path / "empty.db"
    path.touch()
    path.chmod(0o640)
    open_store(uri_of(path)).search_experiments()
    assert copies == [path] and (path.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir() if ".part" in p.name] == []


def test_memory_and_uri_options_are_left_to_mlflow(copies, tmp_path):
    assert not dp2pub.store_template.create_from_template(f"{uri_of(tmp_path / 'x.db')}?timeout=5", tmp_path / "x.db")
    assert not dp2pub.store_template.create_from_template("sqlite:///:memory:", Path(":memory:"))
    assert copies == [] and not (tmp_path / "x.db").exists()


@pytest.mark.slow
def test_without_templates_mlflow_migrates_the_store(copies, tmp_path, monkeypatch):
    monkeypatch.setenv(TEMPLATE_ENV, "0")
    open_store(uri_of(tmp_path / "mlflow.db")).search_experiments()
    assert copies == []


@pytest.mark.slow
def test_a_cache_that_cannot_be_written_falls_back_to_mlflow(copies, tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the cache directory would be\n")
    monkeypatch.setenv(CACHE_ENV, str(blocked / "dp2pub"))
    open_store(uri_of(tmp_path / "mlflow.db")).search_experiments()
    assert copies == []


def test_a_copy_that_fails_halfway_leaves_an_empty_store(copies, tmp_path, monkeypatch):
    """The copy is one transaction: a failure after some tables rolls them all back."""
    path = tmp_path / "mlflow.db"
    execute = sqlite3.Connection.execute
    calls = []

    class Failing(sqlite3.Connection):
        def execute(self, sql, *args):
            calls.append(sql)
            if len(calls) == 20:  # among the CREATE TABLEs
                raise sqlite3.OperationalError("an error halfway")
            return execute(self, sql, *args)

    template, connect = dp2pub.store_template.ensure_template(), sqlite3.connect
    with monkeypatch.context() as patch, pytest.raises(sqlite3.OperationalError, match="halfway"):
        patch.setattr(sqlite3, "connect", lambda *args, **kwargs: connect(*args, **kwargs, factory=Failing))
        dp2pub.store_template.copy_template(template, path)
    assert any(sql.startswith("CREATE TABLE") for sql in calls[:19])
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlflow.db", "work"]


def test_a_store_another_client_filled_first_is_not_copied_over(copies, tmp_path):
    path = tmp_path / "mlflow.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE theirs (x INTEGER)")
    assert not dp2pub.store_template.copy_template(dp2pub.store_template.ensure_template(), path)
    with sqlite3.connect(path) as db:
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["theirs"]


def test_a_new_store_on_a_disk_without_room_is_refused_and_not_created(copies, tmp_path, monkeypatch):
    free = type("Usage", (), {"free": 4096})
    monkeypatch.setattr(dp2pub.store_template.shutil, "disk_usage", lambda _: free)
    path = tmp_path / "mlflow.db"
    with pytest.raises(StoreError) as refused:
        open_store(uri_of(path))
    assert f"tracking store {uri_of(path)}: no space for a new store ({tmp_path} has 4 KiB free" in str(refused.value)
    assert "\n" not in str(refused.value) and not path.exists() and copies == []


@pytest.mark.slow
def test_an_incomplete_template_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    template = template_path(tmp_path / "cache", schema_head())
    template.parent.mkdir()
    with sqlite3.connect(template) as db:  # an older schema under this name
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.execute("INSERT INTO alembic_version VALUES ('0000')")
    open_store(uri_of(tmp_path / "mlflow.db")).search_experiments()
    assert dp2pub.store_template.is_template(template, schema_head())
    assert [p.name for p in template.parent.iterdir() if p.name.endswith(".part")] == []
    assert os.path.getsize(tmp_path / "mlflow.db") > 0
