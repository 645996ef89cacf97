"""Sweeps on the launchers a team uses, against an MLflow tracking server on a real PostgreSQL
(a throwaway cluster from the system's binaries, on 127.0.0.1): joblib with 4 workers, a local
Ray instance of 2 CPUs and Submitit's local executor (the code path of Slurm) each land every
job exactly once under one parent, with bit-identical metrics on every launcher; a server
killed in the middle of a sweep and a Ray worker killed in the middle of a job leave no run
RUNNING, and a rerun with ``tracking.skip_finished=true`` completes the sweep."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from dp2pub.services import MlflowServer, local_ray
from dp2pub.tracking import PARENT_TAG
from tests.conftest import run_cli, runs_in, start_cli

pytestmark = pytest.mark.slow

#: 16 jobs (4 budgets x 4 seeds) and the 4 of seed 0, of a small default job.
EPSILONS = ("0.5", "1.0", "2.0", "4.0")
GRID = ["epsilon=0.5,1,2,4", "seed=0,1,2,3", "dataset.n=2000"]
SMALL = ["epsilon=0.5,1,2,4", "seed=0", "dataset.n=2000"]
LAUNCHERS = {
    "basic": (SMALL, ["hydra/launcher=basic"]),
    "joblib": (GRID, ["hydra/launcher=joblib", "hydra.launcher.n_jobs=4"]),
    "ray": (GRID, []),  # ray_arguments, per module
    "submitit_local": (SMALL, ["hydra/launcher=submitit_local"]),
}


def by_role(uri: str, experiment: str) -> tuple[list, list]:
    """(parents, children) of an experiment."""
    runs = runs_in(uri, experiment)
    return [r for r in runs if PARENT_TAG not in r.data.tags], [r for r in runs if PARENT_TAG in r.data.tags]


def job_key(run) -> tuple[str, str]:
    return run.data.params["epsilon"], run.data.params["seed"]


def results(run) -> dict[str, float]:
    """A run's metrics without its timings (the only ones that differ between launchers)."""
    return {k: v for k, v in run.data.metrics.items() if not k.startswith("time_")}


@pytest.fixture(scope="module")
def server(postgres, tmp_path_factory):
    """An MLflow server (one worker) on a fresh database of the session's PostgreSQL cluster,
    shared by the module's tests (each logs to its own experiment)."""
    postgres.create_database("distributed")
    folder = tmp_path_factory.mktemp("server")
    with MlflowServer(
        postgres.uri("distributed"), folder / "artifacts", workers=1, log=folder / "server.log"
    ) as server:
        yield server


@pytest.fixture(scope="module")
def ray_folder():
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'dp2pub[ray]'")
    folder = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def sweeps(server, ray_folder, tmp_path_factory):
    """Run each launcher's sweep once, on first use, into its own experiment."""
    done: dict[str, tuple] = {}

    def sweep(launcher: str):
        if launcher not in done:
            grid, args = LAUNCHERS[launcher]
            env = {}
            if launcher == "ray":
                args, env = local_ray(ray_folder, num_cpus=2)
            cwd = tmp_path_factory.mktemp(launcher)
            common = [f"tracking.uri={server.uri}", f"tracking.experiment={launcher}", f"paths.outputs={cwd / 'out'}"]
            finished = run_cli(["-m", *grid, *args, *common], cwd=cwd, env=env)
            done[launcher] = (finished, *by_role(server.uri, launcher))
        return done[launcher]

    return sweep


@pytest.mark.parametrize("launcher", ["joblib", "ray"])
def test_a_sweep_of_16_jobs_lands_every_job_exactly_once(sweeps, server, launcher):
    finished, parents, children = sweeps(launcher)
    assert finished.returncode == 0, finished.stderr[-3000:]
    (parent,) = parents
    assert parent.info.status == "FINISHED"
    assert parent.data.metrics["n_jobs"] == 16 and parent.data.metrics["n_jobs_finished"] == 16
    assert parent.data.metrics["n_jobs_failed"] == 0 and parent.data.metrics["n_jobs_running"] == 0
    assert Counter(job_key(c) for c in children) == {(e, str(s)): 1 for e in EPSILONS for s in range(4)}
    assert {c.info.status for c in children} == {"FINISHED"}
    assert {c.data.tags[PARENT_TAG] for c in children} == {parent.info.run_id}
    assert f"sweep: 16 jobs: 16 finished, 0 failed, 0 skipped; parent run {parent.info.run_id}" in finished.stdout


def test_submitit_local_lands_4_runs_under_one_parent(sweeps):
    finished, (parent,), children = sweeps("submitit_local")
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert parent.info.status == "FINISHED" and parent.data.metrics["n_jobs_finished"] == 4
    assert sorted(job_key(c) for c in children) == [(e, "0") for e in EPSILONS]
    assert {c.info.status for c in children} == {"FINISHED"}
    assert {c.data.tags[PARENT_TAG] for c in children} == {parent.info.run_id}
    assert parent.data.tags["launcher"].endswith("submitit_launcher.LocalLauncher")


def test_every_launcher_gives_bit_identical_metrics(sweeps):
    reference = {job_key(c): results(c) for c in sweeps("basic")[2]}
    assert len(reference) == 4 and all(len(m) > 5 for m in reference.values())
    for launcher in ("joblib", "ray", "submitit_local"):
        found = {job_key(c): results(c) for c in sweeps(launcher)[2] if job_key(c) in reference}
        assert found == reference, launcher  # exact equality: no tolerance


def wait_for(condition, timeout: float, what: str):
    """Poll ``condition`` every 0.3 s until it returns something true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.3)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}")


def statuses(uri: str, experiment: str) -> Counter:
    return Counter(r.info.status for r in by_role(uri, experiment)[1])


#: Jobs of a few seconds each (a million records), so that a fault lands in the middle.
SLOW = ["epsilon=1,2", "seed=0,1", "dataset.n=3000000", "metrics.ways=[1]"]


def test_a_server_killed_mid_sweep_fails_the_jobs_in_one_line_and_a_rerun_completes_the_sweep(server, tmp_path):
    common = [f"tracking.uri={server.uri}", "tracking.experiment=server_killed", f"paths.outputs={tmp_path / 'out'}"]
    args = ["-m", *SLOW, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *common]
    sweep = start_cli(args, tmp_path)

    def mid_sweep() -> bool:
        """A job finished and another one computes: its run has no metrics yet (a RUNNING run
        with metrics may close any moment, and the server's death would then touch no job)."""
        children = by_role(server.uri, "server_killed")[1]
        computing = [c for c in children if c.info.status == "RUNNING" and not c.data.metrics]
        return any(c.info.status == "FINISHED" for c in children) and bool(computing)

    wait_for(mid_sweep, 120, "a finished job and a computing one")
    server.kill()
    try:
        _, stderr = sweep.communicate(timeout=240)
    finally:
        server.start()  # the same database, the same address (the module's later tests need it)
    assert sweep.returncode == 2, stderr[-3000:]
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("dp2pub: error: ")]
    kinds = {
        "lost": f"dp2pub: error: tracking server {server.uri} stopped answering (Connection refused) ",
        "refused": f"dp2pub: error: tracking store {server.uri} is unreachable (Connection refused)",
        "sweep": "dp2pub: error: the sweep finished with a failed job (first: ",
        "parent": "dp2pub: error: cannot close the sweep's parent run ",
    }
    kind = [next((k for k, start in kinds.items() if line.startswith(start)), line) for line in errors]
    assert set(kind) <= set(kinds) and {"lost", "sweep", "parent"} <= set(kind), stderr[-3000:]
    assert "during the job: its run " in stderr  # the job that was running when the server died

    again = run_cli(["-m", *SLOW, "tracking.skip_finished=true", *common], cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    parents, children = by_role(server.uri, "server_killed")
    assert not [r for r in parents + children if r.info.status == "RUNNING"]
    finished = Counter(job_key(c) for c in children if c.info.status == "FINISHED")
    assert finished == {(e, s): 1 for e in ("1.0", "2.0") for s in ("0", "1")}  # no duplicates
    killed = [c for c in children if c.info.status == "KILLED"]  # left RUNNING by the dead server, then reaped
    assert all("ended without closing this run" in c.data.tags["error"] for c in killed)


def test_a_ray_worker_killed_mid_job_fails_that_job_and_a_rerun_completes_it(server, ray_folder, tmp_path):
    ray_args, env = local_ray(ray_folder, num_cpus=2)
    common = [f"tracking.uri={server.uri}", "tracking.experiment=worker_killed", f"paths.outputs={tmp_path / 'out'}"]
    grid = ["epsilon=1,2", "seed=0", "dataset.n=3000000", "metrics.ways=[1]"]
    sweep = start_cli(["-m", *grid, *ray_args, *common], tmp_path, env=env)

    def running_job():
        children = by_role(server.uri, "worker_killed")[1]
        computing = [c for c in children if c.info.status == "RUNNING" and not c.data.metrics]  # not closing
        return computing[0] if computing else None

    victim = wait_for(running_job, 120, "a computing job")
    os.kill(int(victim.data.tags["dp2pub.pid"]), signal.SIGKILL)
    _, stderr = sweep.communicate(timeout=240)
    assert sweep.returncode == 2, stderr[-3000:]
    assert "ended without a result on Ray" in stderr, stderr[-3000:]
    runs = {c.info.run_id: c for c in by_role(server.uri, "worker_killed")[1]}
    assert runs[victim.info.run_id].info.status == "KILLED"  # reaped by the sweep's end
    assert Counter(c.info.status for c in runs.values()) == {"KILLED": 1, "FINISHED": 1}

    again = run_cli(["-m", *grid, "tracking.skip_finished=true", *ray_args, *common], cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    children = by_role(server.uri, "worker_killed")[1]
    assert Counter(job_key(c) for c in children if c.info.status == "FINISHED") == {("1.0", "0"): 1, ("2.0", "0"): 1}
    assert not [c for c in children if c.info.status == "RUNNING"]
    assert MlflowClient(server.uri).get_run(victim.info.run_id).info.status == "KILLED"


def test_cluster_ray_joins_a_cluster_that_ray_start_started(server, ray_folder, tmp_path):
    _, env = local_ray(ray_folder, num_cpus=2)  # the token, for the cluster and the sweep
    ray = [str(Path(sys.executable).parent / "ray")]
    head = [*ray, "start", "--head", "--num-cpus", "2", "--node-ip-address", "127.0.0.1"]
    head += ["--temp-dir", str(ray_folder / "head"), "--include-dashboard", "false"]
    started = subprocess.run(head, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        common = [f"tracking.uri={server.uri}", "tracking.experiment=ray_cluster", f"paths.outputs={tmp_path / 'out'}"]
        done = run_cli(["-m", "epsilon=1,2", "dataset.n=500", "cluster=ray", *common], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Ray (2 CPUs on 1 node) is launching 2 jobs" in done.stdout + done.stderr
        (parent,), children = by_role(server.uri, "ray_cluster")
        assert parent.info.status == "FINISHED" and sorted(job_key(c) for c in children) == [("1.0", "0"), ("2.0", "0")]
        assert {c.info.status for c in children} == {"FINISHED"}
    finally:
        subprocess.run([*ray, "stop"], env={**os.environ, **env}, capture_output=True, timeout=120)
