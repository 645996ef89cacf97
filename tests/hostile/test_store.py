"""A new SQLite store opened by several processes at once, and stores that cannot be used.

Without the lock of :mod:`dp2pub.store`, four processes opening a new store together failed
in 5 of 5 tries here (``Online migration expected to match one row``, leftover
``_alembic_tmp_*`` tables) and left it unusable in 4 of them; with it, 0 of 20.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys

import pytest

from dp2pub.services import free_port
from dp2pub.store import HTTP_RETRIES, StoreError, lost_server, mlflow_defaults, open_store
from tests.conftest import run_cli, runs_in, start_cli

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

REPEATS = int(os.environ.get("DP2PUB_RACE_REPEATS", "5"))


@pytest.mark.parametrize("repeat", range(REPEATS))
@pytest.mark.parametrize("template", ["1", "0"], ids=["from the template", "migrated by MLflow"])
def test_processes_opening_a_new_store_together_all_succeed(tmp_path, template, repeat):
    """Four processes forked with dp2pub and MLflow imported (tests/warm_cli.py), so that they
    reach the new store within milliseconds of each other. With dp2pub's lock taken out, the
    stores MLflow migrated failed in 13 of 15 tries here; those filled from the template, in
    one transaction, in none (that case checks the copy, not the lock)."""
    from tests import warm_cli

    uri = f"sqlite:///{tmp_path / 'new.db'}"
    env = {**os.environ, "DP2PUB_STORE_TEMPLATE": template}
    errors = [tmp_path / f"stderr-{i}" for i in range(4)]
    procs = [warm_cli.start(open_store, (uri,), tmp_path, env, err=err) for err in errors]
    try:
        for process in procs:
            process.join(120)
    finally:
        for process in procs:
            if process.exitcode is None:
                process.kill()
                process.join()
    assert [p.exitcode for p in procs] == [0] * 4, [err.read_text()[-2000:] for err in errors if err.exists()]
    open_store(uri).search_experiments()  # and the store is complete


def test_runs_and_a_sweep_started_together_on_a_new_store_all_land(tmp_path):
    uri = f"sqlite:///{tmp_path / 'new.db'}"
    common = [
        "dataset.n=300",
        "dataset.d=3",
        f"tracking.uri={uri}",
        "tracking.experiment=race",
        f"paths.outputs={tmp_path / 'out'}",
    ]
    commands = [[*common, f"seed={s}"] for s in range(3)] + [["-m", *common, "seed=10,11"]]
    procs = [start_cli(args, tmp_path) for args in commands]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    runs = runs_in(uri, "race")
    jobs = [r for r in runs if r.data.tags.get("dp2pub.sweep") != "parent"]
    assert sorted(r.data.params["seed"] for r in jobs) == ["0", "1", "10", "11", "2"]
    assert all(r.info.status == "FINISHED" for r in runs) and len(runs) == 6


#: Opens the store argv[1] and logs a run into it.
WITH_A_RUN = "import sys; from dp2pub.store import open_store; open_store(sys.argv[1]).create_run('0')"


def half_migrate(path) -> None:
    """A store holding a run whose migration stopped, made in another process (this one must
    not hold it open: a store others hold is not judged at once, see dp2pub.migration)."""
    subprocess.run([sys.executable, "-c", WITH_A_RUN, f"sqlite:///{path}"], check=True)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE _alembic_tmp_runs (x INTEGER)")


def test_a_half_migrated_store_is_refused_in_one_line_with_a_repair_that_works(tmp_path):
    path = tmp_path / "broken.db"
    half_migrate(path)
    uri = f"sqlite:///{path}"
    done = run_cli(["dataset.n=100", f"tracking.uri={uri}", f"paths.outputs={tmp_path / 'out'}"], cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        f"dp2pub: error: tracking store {uri} is half-migrated (leftover migration table(s) _alembic_tmp_runs)"
    )
    assert f"sqlite3 {path} 'DROP TABLE _alembic_tmp_runs'" in line and f"mlflow db upgrade {uri}" in line
    with contextlib.closing(sqlite3.connect(path)) as db, db:  # the repair the line gives
        db.execute("DROP TABLE _alembic_tmp_runs")
    mlflow_cli = os.path.join(os.path.dirname(sys.executable), "mlflow")
    subprocess.run([mlflow_cli, "db", "upgrade", uri], check=True, capture_output=True)
    open_store(uri).search_experiments()


def test_a_sweep_on_a_half_migrated_store_stops_in_one_line(tmp_path):
    path = tmp_path / "broken.db"
    half_migrate(path)
    done = run_cli(
        ["-m", "dataset.n=100", "seed=0,1", f"tracking.uri=sqlite:///{path}", f"paths.outputs={tmp_path / 'out'}"],
        cwd=tmp_path,
    )
    assert done.returncode == 2
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("dp2pub: error:")]
    assert len(errors) == 1 and "half-migrated" in errors[0] and "Traceback" not in done.stderr


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    with pytest.raises(StoreError, match=r"is not an SQLite database"):
        open_store(f"sqlite:///{text}")


def test_a_server_that_stopped_answering_is_named_with_the_run_it_left_open():
    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    lost = lost_server(uri, "abc123")
    assert isinstance(lost, StoreError)
    assert str(lost).startswith(
        f"tracking server {uri} stopped answering (Connection refused) during the job: its run abc123 stays RUNNING"
    )
    assert str(lost_server(uri, None)).endswith("before the job's run was created")
    assert lost_server("sqlite:///anything.db", "abc123") is None  # not a server: the error is something else


def test_a_server_that_stops_between_the_check_and_the_first_request_is_called_unreachable(monkeypatch):
    """The server answered check_uri, then stopped before the client's first request (seen in
    a sweep whose server was killed as a job started): the same one line as a server down."""
    import dp2pub.store

    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setattr(dp2pub.store, "check_uri", lambda _: None)  # it answered a moment ago
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with pytest.raises(StoreError) as refused:
        open_store(uri)
    assert str(refused.value).startswith(f"tracking store {uri} is unreachable (Connection refused); start")
    assert "\n" not in str(refused.value)


def test_a_server_that_answers_is_not_called_lost(mlflow_server):
    assert lost_server(mlflow_server, "abc123") is None


def test_mlflows_retries_are_bounded_and_telemetry_off_unless_the_user_set_them(monkeypatch):
    from mlflow.telemetry.utils import is_telemetry_disabled

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "9")
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", raising=False)
    monkeypatch.delenv("MLFLOW_DISABLE_TELEMETRY", raising=False)
    mlflow_defaults()
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "9"
    assert os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] == HTTP_RETRIES["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"]
    assert is_telemetry_disabled()
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "false")
    mlflow_defaults()
    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "false"
