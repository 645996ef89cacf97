"""dp2pub.services and ``python -m dp2pub.server``: a PostgreSQL cluster of the system's
binaries, an MLflow server on it, and the command that serves a team's sweeps; all on
127.0.0.1, all stopped again (no postgres or mlflow process left)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psycopg
import pytest
from mlflow.tracking import MlflowClient

from dp2pub import services
from dp2pub.services import PG_BIN_ENV, Postgres, ServiceError, free_port, group_members, postgres_bin
from tests.conftest import CONTRACT, cli_env, reachable_tempdir, require_postgres, run_cli, runs_in


def server_command(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m dp2pub.server ARGS`` to its end (a refusal) and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "dp2pub.server", *args],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def processes_running(fragment: str) -> list[str]:
    """The command lines of the running processes whose command line contains ``fragment``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if fragment in command:
                found.append(command)
    return found


def test_group_members_sees_a_live_group_and_not_a_killed_one():
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    assert group_members(process.pid) == [process.pid]
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert group_members(process.pid) == []


def test_postgres_bin_reads_the_variable_and_needs_initdb_and_postgres(tmp_path, monkeypatch):
    monkeypatch.setenv(PG_BIN_ENV, str(tmp_path))
    assert postgres_bin() is None
    for name in ("initdb", "postgres"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    assert postgres_bin() == tmp_path


def test_a_cluster_is_refused_in_one_line_without_postgresql(tmp_path, monkeypatch):
    monkeypatch.setattr(services, "postgres_bin", lambda: None)
    with pytest.raises(
        ServiceError, match=r"not found: install PostgreSQL \(Debian, Ubuntu: apt-get install postgresql\)"
    ):
        Postgres(tmp_path / "cluster")
    assert not (tmp_path / "cluster").exists()


def test_a_database_name_that_would_need_quoting_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(services, "postgres_bin", lambda: tmp_path)
    cluster = Postgres(tmp_path / "cluster")
    for name in ("Runs", "1runs", "runs; DROP TABLE runs", "a" * 64):
        with pytest.raises(ServiceError, match=r"^database=.* is invalid: expected lower-case letters"):
            cluster.create_database(name)


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: the server then runs as the user postgres")
def test_a_directory_the_user_postgres_cannot_enter_is_refused_before_initdb():
    require_postgres()
    hidden = Path(os.path.realpath(os.environ.get("TMPDIR", "/tmp"))) / f"dp2pub-hidden-{os.getpid()}"
    hidden.mkdir(mode=0o700)
    try:
        with pytest.raises(
            ServiceError, match=rf"inside {hidden} \(mode drwx------\), which the user postgres cannot enter"
        ):
            Postgres(hidden / "cluster").init()
        assert not (hidden / "cluster" / "data").exists()
    finally:
        shutil.rmtree(hidden)


@pytest.mark.slow
def test_a_cluster_is_created_started_stopped_and_reused():
    require_postgres()
    directory = reachable_tempdir()
    try:
        cluster = Postgres(directory / "cluster", fsync=False)
        cluster.init()
        assert (cluster.data / "PG_VERSION").is_file()
        if os.geteuid() == 0:
            assert cluster.directory.stat().st_uid == cluster.account.pw_uid
            assert stat.S_IMODE(cluster.directory.stat().st_mode) == 0o700
        cluster.start()
        cluster.create_database("kept")
        cluster.create_database("kept")  # exists: nothing to do
        with psycopg.connect(cluster.uri("kept")) as connection:
            connection.execute("CREATE TABLE notes (x integer)")
            connection.execute("INSERT INTO notes VALUES (7)")
        assert cluster.uri("kept") == f"postgresql://postgres@127.0.0.1:{cluster.port}/kept"
        cluster.stop()
        assert not cluster.running and processes_running(str(cluster.data)) == []
        assert not (cluster.data / "postmaster.pid").exists()  # a clean shutdown removes it
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(cluster.uri("kept"), connect_timeout=5)

        again = Postgres(directory / "cluster", fsync=False)
        with again, psycopg.connect(again.uri("kept")) as connection:  # init() finds the cluster
            assert connection.execute("SELECT x FROM notes").fetchall() == [(7,)]
        assert processes_running(str(cluster.data)) == []
    finally:
        shutil.rmtree(directory)


def test_the_server_command_without_postgresql_exits_2_in_one_line(tmp_path):
    done = server_command([], tmp_path, {PG_BIN_ENV: str(tmp_path / "none")})
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("python -m dp2pub.server: error: PostgreSQL's server programs (initdb, postgres)")
    assert "apt-get install postgresql" in done.stderr and "--backend-store-uri" in done.stderr
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize(
    ("port", "message"),  # port, then any other option
    [
        ("70000", "--port=70000 is invalid: expected an integer in [1, 65535]"),
        ("0", "--port=0 is invalid: expected an integer in [1, 65535]"),
        ("http", "--port='http' is invalid: expected an integer in [1, 65535]"),
        ("5000 --workers 0", "--workers=0 is invalid: expected an integer >= 1"),
        (
            "5000 --host no.such.host.invalid",
            "--host='no.such.host.invalid' is invalid: expected an address or name of this machine",
        ),
    ],
)
def test_the_server_command_refuses_a_bad_port_in_one_line(tmp_path, port, message):
    done = server_command(["--port", *port.split()], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"python -m dp2pub.server: error: {message}\n"


def test_the_server_command_refuses_a_port_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = server_command(["--port", str(port)], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"python -m dp2pub.server: error: --port={port} is invalid: expected a port free on 127.0.0.1, this one is in use\n"
    )


@pytest.mark.slow
def test_a_killed_server_restarts_on_the_same_port_with_its_runs(pg_mlflow_server):
    client = MlflowClient(pg_mlflow_server.uri)
    run = client.create_run(client.create_experiment("kept"))
    client.log_metric(run.info.run_id, "m", 0.5)
    port, group = pg_mlflow_server.port, pg_mlflow_server.process.pid

    pg_mlflow_server.kill()
    assert not pg_mlflow_server.running
    assert group_members(group) == []  # the server and its workers are gone
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{pg_mlflow_server.uri}/health", timeout=2)

    pg_mlflow_server.start()
    assert pg_mlflow_server.port == port
    assert MlflowClient(pg_mlflow_server.uri).get_run(run.info.run_id).data.metrics == {"m": 0.5}


def wait_for_line(path: Path, pattern: str, process: subprocess.Popen, seconds: float) -> re.Match:
    """The first match of ``pattern`` in the growing file ``path``; fails if ``process`` exits
    or ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while not (found := re.search(pattern, path.read_text())):
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"no {pattern!r} (status {process.poll()}): {path.read_text()[-3000:]}")
        time.sleep(0.5)
    return found


@pytest.mark.slow
def test_the_server_command_serves_a_job_on_postgresql_and_stops_on_sigterm(tmp_path):
    require_postgres()
    outputs = reachable_tempdir()  # holds the cluster, which the user postgres must reach
    port, log = free_port(), tmp_path / "server.out"
    command = [sys.executable, "-m", "dp2pub.server", "--port", str(port), "--workers", "1"]
    command += ["--data", str(outputs / "postgres")]
    with log.open("w") as out:
        server = subprocess.Popen(
            [*command, "--artifacts", str(tmp_path / "artifacts")],
            cwd=tmp_path,
            env=cli_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        pg_port = wait_for_line(log, r"database mlflow on 127\.0\.0\.1:(\d+)", server, 60).group(1)
        uri = f"http://127.0.0.1:{port}"
        wait_for_line(log, rf"\n    tracking\.uri={re.escape(uri)}\n", server, 180)

        done = run_cli(
            ["dataset.n=500", f"tracking.uri={uri}", "tracking.experiment=served", f"paths.outputs={tmp_path / 'out'}"],
            tmp_path,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        (run,) = runs_in(uri, "served")
        assert run.info.status == "FINISHED" and set(CONTRACT) <= set(run.data.metrics)
        assert "config.yaml" in {a.path for a in MlflowClient(uri).list_artifacts(run.info.run_id)}
        assert [p.name for p in (tmp_path / "artifacts").rglob("config.yaml")] == [
            "config.yaml"
        ]  # served from --artifacts
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{pg_port}/mlflow") as connection:
            rows = connection.execute("SELECT run_uuid, status FROM runs").fetchall()
        assert rows == [(run.info.run_id, "FINISHED")]
    finally:
        server.send_signal(signal.SIGTERM)
        status = server.wait(timeout=90)
    try:
        assert status == 0, log.read_text()[-3000:]
        assert "stopped by SIGTERM" in log.read_text()
        assert processes_running(str(outputs / "postgres")) == []
        assert processes_running(f"--port {port}") == []
        assert not (outputs / "postgres" / "data" / "postmaster.pid").exists()
    finally:
        shutil.rmtree(outputs)
