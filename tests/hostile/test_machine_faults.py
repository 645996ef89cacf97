"""Faults of the machine, created for real: another MLflow client migrating a new store while
dp2pub starts on it, a migration killed halfway, a store file with pages overwritten, and full
filesystems (a small tmpfs, mounted as root) under a new store and under a run's artifacts.

Each asserts the one line, the exit status, the run's final status, and that the store is
intact afterwards (``PRAGMA integrity_check``, Alembic at head, no ``_alembic_tmp_*`` table,
every earlier run still there) or, when it was damaged before, untouched."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import dp2pub.store_template
from dp2pub.migration import read_schema
from dp2pub.store_template import NoSpace, copy_template, schema_head
from tests.conftest import UNDER_CI, run_cli, runs_in, start_cli

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

#: A plain MLflow client opening the store given as argument: it creates a new store's schema
#: itself, taking no lock (what ``mlflow ui`` or a notebook does beside a sweep).
STRANGER = "import sys, mlflow; mlflow.MlflowClient(sys.argv[1]).search_experiments()"
JOB = ["dataset.n=200", "dataset.d=3", "tracking.experiment=faults"]


def look(path: Path) -> dict:
    """What the store at ``path`` holds of its schema and runs, read without holding it."""
    schema = read_schema(path)
    assert schema is not None
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
        runs = db.execute("SELECT status FROM runs") if "runs" in schema.tables else []
        return {
            "integrity": db.execute("PRAGMA integrity_check").fetchall(),
            "versions": list(schema.versions),
            "leftovers": schema.leftovers,
            "runs": sorted(r[0] for r in runs),
        }


def tables(path: Path) -> int:
    """How many tables the database ``path`` has (0 while it is missing or locked)."""
    try:
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5)) as db:
            return db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    except sqlite3.Error:
        return 0


def stranger_midway(path: Path, at_least: int = 1, timeout: float = 120) -> subprocess.Popen:
    """A plain MLflow client creating the new store ``path``, returned once it has made
    ``at_least`` tables (its migration under way: MLflow 3.17 makes 65)."""
    stranger = subprocess.Popen(
        [sys.executable, "-c", STRANGER, f"sqlite:///{path}"], stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + timeout
    while tables(path) < at_least:
        assert stranger.poll() is None, stranger.communicate()[1]
        assert time.monotonic() < deadline, "the client made no table"
        time.sleep(0.01)
    return stranger


def test_a_sweep_started_while_another_client_migrates_the_new_store_waits_and_lands(tmp_path):
    path = tmp_path / "mlflow.db"
    stranger = stranger_midway(path)
    assert look(path)["versions"] != [schema_head()]  # caught before it finished (4-9 s here)
    sweep = start_cli(
        ["-m", *JOB, "seed=0,1", f"tracking.uri=sqlite:///{path}", f"paths.outputs={tmp_path / 'out'}"], tmp_path
    )
    _, errors = sweep.communicate(timeout=300)
    assert sweep.returncode == 0, errors
    assert errors.strip() == ""
    assert stranger.wait(timeout=120) == 0, stranger.communicate()[1]
    assert look(path) == {
        "integrity": [("ok",)],
        "versions": [schema_head()],
        "leftovers": [],
        "runs": ["FINISHED"] * 3,
    }


def killed_midway(path: Path, at_least: int) -> None:
    """A new store whose creation by a plain MLflow client was killed after ``at_least`` tables."""
    stranger = stranger_midway(path, at_least)
    stranger.send_signal(signal.SIGKILL)
    stranger.wait()


def test_a_new_store_whose_migration_was_killed_is_refused_at_once_with_a_remedy_that_works(tmp_path):
    """Killed inside a migration step, a store is left in a state ``mlflow db upgrade`` cannot
    finish (1 of 4 here): a store without runs is made anew instead."""
    path, uri = tmp_path / "mlflow.db", f"sqlite:///{tmp_path / 'mlflow.db'}"
    killed_midway(path, 10)
    before = look(path)
    done = run_cli([*JOB, f"tracking.uri={uri}", f"paths.outputs={tmp_path / 'out'}"], cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    kind = "is half-migrated (" if before["leftovers"] else "has an older schema than this MLflow (at revision "
    assert line.startswith(f"dp2pub: error: tracking store {uri} {kind}"), line
    assert line.endswith(f"it holds no runs: move it aside (mv {path} {path}.broken) and retry"), line
    assert look(path) == before  # nothing written
    path.rename(f"{path}.broken")  # the remedy the line gives
    again = run_cli([*JOB, f"tracking.uri={uri}", f"paths.outputs={tmp_path / 'out'}"], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert look(path) == {"integrity": [("ok",)], "versions": [schema_head()], "leftovers": [], "runs": ["FINISHED"]}


def test_a_half_migrated_store_another_process_holds_is_not_given_a_destructive_repair(tmp_path):
    path, uri = tmp_path / "mlflow.db", f"sqlite:///{tmp_path / 'mlflow.db'}"
    subprocess.run([sys.executable, "-c", STRANGER, uri], check=True, capture_output=True)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE _alembic_tmp_runs (x INTEGER)")
    holder = subprocess.Popen(  # holds the store open and changes nothing
        [
            sys.executable,
            "-c",
            f"import sqlite3, time; db = sqlite3.connect({str(path)!r}); print(flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        holder.stdout.readline()
        started = time.monotonic()
        done = run_cli(
            [*JOB, f"tracking.uri={uri}", f"paths.outputs={tmp_path / 'out'}"],
            cwd=tmp_path,
            env={"DP2PUB_MIGRATION_QUIET": "2"},
        )
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        f"dp2pub: error: tracking store {uri} is incomplete (leftover migration table(s) _alembic_tmp_runs) and held open by {holder.pid} ("
    )
    assert line.endswith("which may be migrating it: let it finish or stop it, then retry")
    assert "DROP" not in line and waited >= 2  # watched for the quiet period before judging
    assert look(path)["leftovers"] == ["_alembic_tmp_runs"]


def damage(path: Path, tables: tuple[str, ...]) -> None:
    """Overwrite the root pages of ``tables`` in the SQLite file ``path``."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        page = db.execute("PRAGMA page_size").fetchone()[0]
        roots = [
            r[0]
            for r in db.execute(
                f"SELECT rootpage FROM sqlite_master WHERE name IN ({','.join('?' * len(tables))})", tables
            )
        ]
    with open(path, "r+b") as handle:
        for root in roots:
            handle.seek((root - 1) * page)
            handle.write(b"\xff" * page)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("sweep", [False, True], ids=["job", "sweep"])
def test_a_damaged_store_is_refused_in_one_line_with_the_recovery_and_left_untouched(tmp_path, sweep):
    path, uri = tmp_path / "mlflow.db", f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = [*JOB, f"tracking.uri={uri}", f"paths.outputs={tmp_path / 'out'}"]
    assert run_cli(args, cwd=tmp_path).returncode == 0
    damage(path, ("runs", "tags"))
    before = digest(path)
    done = run_cli(["-m", *args, "seed=0,1"] if sweep else args, cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    recovered = tmp_path / "mlflow-recovered.db"
    assert (
        f"tracking store {uri} is damaged (database disk image is malformed); dp2pub stopped at the first damaged page "
        f"it read. Recover what the store holds into a new store: sqlite3 {path} .recover | sqlite3 {recovered} "
        f"and set tracking.uri=sqlite:///{recovered}; or start a new store"
    ) in line
    assert digest(path) == before


@pytest.fixture
def tmpfs(tmp_path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted at ``tmp_path/fs`` for the test (root only: skipped otherwise,
    failing under CI, which must run it)."""
    if os.geteuid() != 0:
        if UNDER_CI:
            pytest.fail("CI must run the full-disk tests as root (they mount a tmpfs)")
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "fs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path, leave: int) -> None:
    """Fill the filesystem at ``mount`` until ``leave`` bytes are free (a file ``filler``)."""
    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
    (mount / "filler").write_bytes(b"\0" * max(free - leave, 0))


def test_a_new_store_on_a_full_disk_is_refused_and_not_created(tmpfs, tmp_path):
    fill(tmpfs, 200 * 1024)
    uri = f"sqlite:///{tmpfs / 'mlflow.db'}"
    done = run_cli([*JOB, f"tracking.uri={uri}", f"paths.outputs={tmp_path / 'out'}"], cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        f"dp2pub: error: tracking store {uri}: no space for a new store ({tmpfs} has 200 KiB free, a new store needs about "
    )
    assert line.endswith("free space on that disk or set tracking.uri to a store on another one")
    assert not (tmpfs / "mlflow.db").exists()


def test_a_disk_that_fills_while_a_store_is_copied_leaves_it_empty(tmpfs, cache_dir):
    template = dp2pub.store_template.ensure_template()
    fill(tmpfs, template.stat().st_size // 2)
    with pytest.raises(NoSpace):
        copy_template(template, tmpfs / "mlflow.db")  # no check of the space first
    assert tables(tmpfs / "mlflow.db") == 0 and not Path(f"{tmpfs / 'mlflow.db'}-journal").exists()


def test_artifacts_on_a_full_disk_fail_the_run_in_one_line_and_leave_nothing(tmpfs, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    common = [
        *JOB,
        f"tracking.uri={uri}",
        f"tracking.artifact_location={(tmpfs / 'art').as_uri()}",
        f"paths.outputs={tmp_path / 'out'}",
    ]
    assert run_cli(common, cwd=tmp_path).returncode == 0  # an earlier run, kept
    fill(tmpfs, 16 * 1024)
    done = run_cli([*common, "dataset.n=20000", "save_published=true", "seed=1"], cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"dp2pub: error: no space left for the run's artifacts in {tmpfs / 'art'}/")
    assert "KiB is free; free space there, or log to a new tracking.experiment" in line
    runs = {r.data.params.get("seed"): r for r in runs_in(uri, "faults")}
    assert (
        runs["1"].info.status == "FAILED"
        and runs["1"].data.tags["error"] == f"NoRoom: {line.removeprefix('dp2pub: error: ')}"
    )
    assert runs["0"].info.status == "FINISHED"
    assert not (tmpfs / "art" / runs["1"].info.run_id / "artifacts").exists() or not any(
        (tmpfs / "art" / runs["1"].info.run_id / "artifacts").iterdir()
    )
    assert look(tmp_path / "mlflow.db")["integrity"] == [("ok",)]


def test_a_disk_that_fills_during_the_copy_of_artifacts_leaves_none(tmpfs, tmp_path, monkeypatch):
    import mlflow

    import dp2pub.artifacts

    monkeypatch.setattr(dp2pub.artifacts, "free_bytes", lambda _: 1 << 40)  # the check passes; the copy fills the disk
    folder = tmp_path / "files"
    folder.mkdir()
    for name in "abc":
        (folder / f"{name}.bin").write_bytes(os.urandom(400 * 1024))
    fill(tmpfs, 600 * 1024)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = mlflow.create_experiment("fill", artifact_location=(tmpfs / "art").as_uri())
    with (
        mlflow.start_run(experiment_id=experiment) as run,
        pytest.raises(dp2pub.artifacts.NoRoom, match=r"they need 1\.17 MiB"),
    ):
        dp2pub.artifacts.log_folder(folder)
    assert not (tmpfs / "art" / run.info.run_id / "artifacts").exists()
