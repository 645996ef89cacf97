"""Reliability of sweeps: parallel jobs against one SQLite store, identical metrics whatever
the launcher, skipping finished configurations, and recovering from a killed job."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from mlflow.tracking import MlflowClient

from dp2pub.resume import (
    HASH_TAG,
    HOST_TAG,
    PID_TAG,
    PIDNS_TAG,
    START_TAG,
    config_hash,
    pid_namespace,
    process_start,
    reap_stale_runs,
)
from tests.conftest import run_cli, runs_in, start_cli

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow


def children(uri: str, experiment: str, statuses=("FINISHED",)):
    """Runs of ``experiment`` that are not sweep parents, with one of ``statuses``."""
    return [
        r for r in runs_in(uri, experiment) if r.data.tags.get("dp2pub.sweep") != "parent" and r.info.status in statuses
    ]


def deterministic(metrics: dict[str, float]) -> dict[str, float]:
    return {name: value for name, value in metrics.items() if not name.startswith("time_")}


def test_config_hash_is_the_job_not_where_it_is_logged():
    cfg = {
        "epsilon": 1.0,
        "seed": 0,
        "dataset": {"name": "synthetic", "n": 10},
        "mechanism": {"name": "grr"},
        "tracking": {"uri": "a", "experiment": "x"},
        "paths": {"outputs": "o"},
    }
    moved = {**cfg, "tracking": {"uri": "b", "experiment": "y"}, "paths": {"outputs": "elsewhere"}}
    assert config_hash(cfg) == config_hash(moved)
    assert config_hash(cfg) != config_hash({**cfg, "seed": 1})
    assert config_hash(cfg) != config_hash({**cfg, "dataset": {"name": "synthetic", "n": 11}})


def test_a_key_added_at_its_neutral_value_keeps_the_identity_of_earlier_runs():
    earlier = {
        "epsilon": 1.0,
        "seed": 0,
        "dataset": {"name": "synthetic"},
        "mechanism": {"name": "grr", "strategy": "split"},
    }
    records = {**earlier, "mechanism": {**earlier["mechanism"], "simulate": "records"}}
    aggregates = {**earlier, "mechanism": {**earlier["mechanism"], "simulate": "aggregates"}}
    assert config_hash(records) == config_hash(earlier)  # mechanism.simulate added later, at records
    assert config_hash(aggregates) != config_hash(earlier)
    # the hash of a config without the key is the one runs logged before it existed
    assert config_hash(earlier) == hashlib.sha256(json.dumps(earlier, sort_keys=True).encode()).hexdigest()


def test_eight_jobs_on_two_joblib_workers_land_eight_finished_runs(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        [
            "-m",
            "epsilon=0.5,1,2,4",
            "seed=0,1",
            "dataset.n=300",
            "metrics.ways=[1]",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            f"tracking.uri={uri}",
            "tracking.experiment=conc",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    runs = children(uri, "conc", statuses=("FINISHED", "FAILED", "RUNNING", "KILLED"))
    assert len(runs) == 8 and all(r.info.status == "FINISHED" for r in runs)
    assert len({r.data.tags[HASH_TAG] for r in runs}) == 8  # none lost, none duplicated


def test_metrics_are_bit_identical_whatever_the_launcher_and_the_sweep(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    common = [
        "dataset=synthetic_bn",
        "dataset.n=2000",
        "mechanism=oue",
        "seed=7",
        f"tracking.uri={uri}",
        f"paths.outputs={tmp_path / 'out'}",
    ]
    assert run_cli([*common, "epsilon=2", "tracking.experiment=alone"], cwd=tmp_path).returncode == 0
    done = run_cli(
        [
            "-m",
            *common,
            "epsilon=1,2,4",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            "tracking.experiment=swept",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (alone,) = children(uri, "alone")
    (swept,) = [r for r in children(uri, "swept") if r.data.params["epsilon"] == "2.0"]
    assert deterministic(alone.data.metrics) == deterministic(swept.data.metrics)
    assert len(deterministic(alone.data.metrics)) > 5
    assert alone.data.tags[HASH_TAG] == swept.data.tags[HASH_TAG]
    assert alone.data.tags["seed_entropy"] == "7"


def test_a_repeated_sweep_with_skip_finished_adds_no_runs(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = [
        "-m",
        "epsilon=1,2",
        "seed=0,1",
        "dataset.n=300",
        "tracking.skip_finished=true",
        f"tracking.uri={uri}",
        "tracking.experiment=again",
        f"paths.outputs={tmp_path / 'out'}",
    ]
    assert run_cli(args, cwd=tmp_path).returncode == 0
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("again").experiment_id
    before = {r.info.run_id for r in client.search_runs([experiment])}
    assert len(before) == 5  # four jobs and their parent
    again = run_cli(args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("skipped (grr on synthetic") == 4
    assert "sweep: 4 jobs: 0 finished, 0 failed, 4 skipped; no parent run kept (every job was skipped)" in again.stdout
    assert {r.info.run_id for r in client.search_runs([experiment])} == before
    # without the flag the same sweep runs again
    assert run_cli([a for a in args if "skip_finished" not in a], cwd=tmp_path).returncode == 0
    assert len(children(uri, "again")) == 8


def test_runs_of_dead_processes_on_this_host_are_marked_killed(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("reap", artifact_location=(tmp_path / "art").as_uri())
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    me = str(os.getpid())

    def running(tags):
        return client.create_run(experiment, tags=tags).info.run_id

    ns = {PIDNS_TAG: pid_namespace()}
    stale = running({HOST_TAG: host, PID_TAG: str(dead.pid), **ns})
    reused = running({HOST_TAG: host, PID_TAG: me, START_TAG: "1", **ns})  # our pid, but an earlier process
    alive = running({HOST_TAG: host, PID_TAG: me, START_TAG: process_start(os.getpid()) or "", **ns})
    remote = running({HOST_TAG: "another-host", PID_TAG: str(dead.pid), **ns})
    container = running({HOST_TAG: host, PID_TAG: str(dead.pid), PIDNS_TAG: "pid:[1]"})  # same name, other pids
    untagged = running({})
    assert sorted(reap_stale_runs(client, experiment)) == sorted([stale, reused])
    left = (alive, remote, container, untagged)
    status = {run_id: client.get_run(run_id).info.status for run_id in (stale, reused, *left)}
    assert status == {stale: "KILLED", reused: "KILLED", **{run_id: "RUNNING" for run_id in left}}
    assert "killed" in client.get_run(stale).data.tags["error"]


def seed_of(run) -> str:
    """The seed of a job's run: its param, or the tag it is created with (a run killed between
    its creation and its params has none)."""
    return run.data.params.get("seed", run.data.tags["seed_entropy"])


def test_a_killed_sweep_resumes_redoing_only_what_did_not_finish(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = [
        "-m",
        "seed=0,1,2",
        "dataset.n=4000000",
        "metrics.ways=[1]",
        "tracking.skip_finished=true",
        f"tracking.uri={uri}",
        "tracking.experiment=fault",
        f"paths.outputs={tmp_path / 'out'}",
    ]
    sweep = start_cli(args, tmp_path, stderr=subprocess.DEVNULL, start_new_session=True)
    try:  # kill the sweep while its second job is running
        deadline = time.monotonic() + 240
        # polled by a plain MLflow client from the start: it may create the store's schema
        # beside the sweep, which waits for it (dp2pub.migration)
        while not (children(uri, "fault") and children(uri, "fault", statuses=("RUNNING",))):
            assert sweep.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no job started within 240 s"
            time.sleep(0.2)
    finally:
        os.killpg(sweep.pid, signal.SIGKILL)
        sweep.wait()
    finished = children(uri, "fault")  # usually one, two if a job ended between the poll and the kill
    stale = children(uri, "fault", statuses=("RUNNING",))
    assert 1 <= len(finished) <= 2 and len(stale) <= 1

    resumed = run_cli(args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.count("skipped (") == len(finished)
    client = MlflowClient(uri)
    assert all(client.get_run(r.info.run_id).info.status == "KILLED" for r in stale)
    runs = children(uri, "fault", statuses=("FINISHED", "FAILED", "RUNNING", "KILLED", "SCHEDULED"))
    by_status = sorted((r.info.status, seed_of(r)) for r in runs)
    assert by_status == sorted([("KILLED", seed_of(r)) for r in stale] + [("FINISHED", s) for s in "012"])
    assert {r.info.run_id for r in finished} <= {r.info.run_id for r in runs}  # kept, not redone
    parents = [
        r for r in client.search_runs([runs[0].info.experiment_id]) if r.data.tags.get("dp2pub.sweep") == "parent"
    ]
    assert sorted(p.info.status for p in parents) == ["FINISHED", "KILLED"]
