"""Sweeps: one parent MLflow run per multirun, parallel launchers, cluster launcher configs,
and a sweep against a real ``mlflow server`` on 127.0.0.1."""

from __future__ import annotations

import re

import pytest
from hydra.utils import instantiate
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from dp2pub.sweep import PARENT_FILE, read_parent
from dp2pub.tracking import ui_command
from tests.conftest import CONF, run_cli, runs_in

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow


def runs_by_role(uri: str, experiment: str):
    """(parent runs, child runs) of ``experiment``."""
    runs = runs_in(uri, experiment)
    parents = [r for r in runs if r.data.tags.get("dp2pub.sweep") == "parent"]
    return parents, [r for r in runs if r not in parents]


def test_joblib_sweep_lands_every_job_under_one_parent(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        [
            "-m",
            "epsilon=0.5,1,2",
            "seed=0,1",
            "dataset.n=500",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            f"tracking.uri={uri}",
            "tracking.experiment=par",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (parent,), children = runs_by_role(uri, "par")
    assert len(children) == 6
    assert sorted((r.data.params["epsilon"], r.data.params["seed"]) for r in children) == [
        (e, s) for e in ("0.5", "1.0", "2.0") for s in ("0", "1")
    ]
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
    assert all(r.info.status == "FINISHED" for r in [parent, *children])
    assert parent.data.metrics == {"n_jobs": 6, "n_jobs_finished": 6, "n_jobs_failed": 0, "n_jobs_running": 0}
    assert "JoblibLauncher" in parent.data.tags["launcher"]
    (record,) = (tmp_path / "out" / "hydra" / "multirun").glob(f"*/*/{PARENT_FILE}")
    assert read_parent(record.parent)["run_id"] == parent.info.run_id
    assert read_parent(record.parent)["n_jobs"] == 6
    assert sorted(job_lines(done.stdout)) == [f"[{k}/6]" for k in range(1, 7)]  # the workers know the size too
    assert summary(done.stdout) == f"sweep: 6 jobs: 6 finished, 0 failed, 0 skipped; parent run {parent.info.run_id}"


def job_lines(stdout: str) -> dict[str, str]:
    """The label of every job's line (``[2/3] epsilon=1: tvd_1way 0.4711 ...``) -> the
    overrides it names."""
    found = (re.match(r"(\[\d+/\d+\]) ([^:(]*): ", line) for line in stdout.splitlines())
    return {match[1]: match[2] for match in found if match}


def skipped_lines(stdout: str) -> list[str]:
    """The labels of the lines of skipped jobs (``[2/3] skipped (...)``)."""
    found = (re.match(r"(\[\d+/\d+\]) skipped \(", line) for line in stdout.splitlines())
    return sorted(match[1] for match in found if match)


def summary(stdout: str) -> str:
    """The sweep's summary line, up to the experiment."""
    (line,) = [line for line in stdout.splitlines() if line.startswith("sweep: ")]
    return line.split(" in experiment ")[0]


def test_a_sweep_reports_once_with_its_jobs_numbered_and_a_rerun_counts_the_skipped_jobs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the sweep runs: ui_command names mlflow relative to it
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    common = [
        "dataset.n=300",
        "tracking.skip_finished=true",
        f"tracking.uri={uri}",
        "tracking.experiment=report",
        f"paths.outputs={tmp_path / 'out'}",
    ]
    done = run_cli(["-m", "epsilon=0.5,1,2", *common], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (parent,), children = runs_by_role(uri, "report")
    lines = done.stdout.splitlines()
    assert any(line.endswith("checking the configs of 3 jobs before launching them ...") for line in lines)
    assert job_lines(done.stdout) == {"[1/3]": "epsilon=0.5", "[2/3]": "epsilon=1", "[3/3]": "epsilon=2"}
    by_epsilon = {r.data.params["epsilon"]: r.data.metrics for r in children}
    (line,) = [line for line in lines if line.startswith("[2/3] ")]  # one line per job, its main metrics
    metrics = by_epsilon["1.0"]
    assert line == f"[2/3] epsilon=1: tvd_1way {metrics['tvd_1way']:.4g}  tvd_2way {metrics['tvd_2way']:.4g}  " + (
        f"mse_freq {metrics['mse_freq']:.4g}  epsilon_spent 1"
    )
    # the job's progress lines are in its log file, not on the console (tracking.verbose=true prints them)
    assert "synthetic: 300 records" not in done.stdout
    (log,) = (tmp_path / "out" / "hydra" / "multirun").glob("*/*/1/*.log")
    assert "[2/3] synthetic: 300 records" in log.read_text()
    experiment = parent.info.experiment_id
    assert lines[-3:] == [
        f"sweep: 3 jobs: 3 finished, 0 failed, 0 skipped; parent run {parent.info.run_id} in experiment report "
        f"(id {experiment})",
        f"Open the MLflow dashboard: {ui_command(uri)}",
        f"  then http://127.0.0.1:5000/#/experiments/{experiment}/runs?workflowType=machine_learning"
        f"&viewStateShareKey={parent.info.run_id}",
    ]
    assert done.stdout.count("Open the MLflow dashboard") == 1

    again = run_cli(["-m", "epsilon=0.5,1,2,4", *common], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    (new,) = [p for p in runs_by_role(uri, "report")[0] if p.info.run_id != parent.info.run_id]
    assert summary(again.stdout) == f"sweep: 4 jobs: 1 finished, 0 failed, 3 skipped; parent run {new.info.run_id}"
    assert skipped_lines(again.stdout) == ["[1/4]", "[2/4]", "[3/4]"]
    # the table holds the runs the skipped jobs found too: the whole sweep
    assert "(4 configurations, 4 runs; one run each)" in again.stdout


@pytest.mark.parametrize("launcher", ["basic", "joblib", "ray"])
def test_a_failing_job_fails_alone_and_the_parent_says_so(tmp_path, launcher, request):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args, env = request.getfixturevalue("ray_launcher") if launcher == "ray" else ([f"hydra/launcher={launcher}"], {})
    done = run_cli(
        [
            "-m",
            "epsilon=1,-1,2",
            "dataset.n=500",
            *args,
            f"tracking.uri={uri}",
            "tracking.experiment=fail",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode != 0
    assert "dp2pub: error: epsilon=-1.0 is invalid: expected a finite number > 0" in done.stderr
    (parent,), children = runs_by_role(uri, "fail")
    status = {r.data.params["epsilon"]: r.info.status for r in children}
    assert status == {"1.0": "FINISHED", "-1.0": "FAILED", "2.0": "FINISHED"}
    assert parent.info.status == "FAILED"
    assert parent.data.metrics["n_jobs_failed"] == 1 and parent.data.metrics["n_jobs_finished"] == 2
    # Hydra raises on the failed job: the summary still comes, from the exit of the sweep
    assert summary(done.stdout) == f"sweep: 3 jobs: 2 finished, 1 failed, 0 skipped; parent run {parent.info.run_id}"
    assert done.stdout.count("Open the MLflow dashboard") == 1


def test_a_single_run_has_no_parent(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        ["dataset.n=500", f"tracking.uri={uri}", "tracking.experiment=single", f"paths.outputs={tmp_path / 'out'}"],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    parents, (run,) = runs_by_role(uri, "single")
    assert parents == [] and "mlflow.parentRunId" not in run.data.tags


def compose_hydra(overrides: list[str]):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=overrides, return_hydra_config=True)


def test_slurm_cluster_config_composes_and_builds_submitits_launcher():
    cfg = compose_hydra(["cluster=slurm", "tracking.uri=http://tracking:5000", "hydra.launcher.partition=cpu"])
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert (launcher.cpus_per_task, launcher.mem_gb, launcher.partition) == (1, 4, "cpu")
    assert cfg.tracking.uri == "http://tracking:5000"
    own = [k for k in launcher if k not in ("submitit_folder", "name")]  # these two point into the job's hydra node
    built = instantiate(OmegaConf.masked_copy(launcher, own), submitit_folder="/tmp/never-used", name="job")
    assert type(built).__name__ == "SlurmLauncher"


def test_ray_cluster_config_joins_a_cluster_with_dp2pubs_own_launcher():
    cfg = compose_hydra(["cluster=ray", "tracking.uri=http://tracking:5000"])
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.dp2pub_ray_launcher.ray_launcher.RayLauncher"
    # the shape of Hydra's RayLauncherConf (ray.init, ray.remote); no object_store_memory, which Ray
    # refuses when joining a cluster; no retries, which would open a second run for one job
    assert OmegaConf.to_container(launcher.ray) == {
        "init": {"address": "auto", "num_cpus": None, "include_dashboard": False},
        "remote": {"num_cpus": 1, "max_retries": 0},
    }
    assert cfg.tracking.uri == "http://tracking:5000"
    assert type(instantiate(launcher)).__name__ == "RayLauncher"


def test_cluster_configs_require_a_tracking_server(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://from-env:5000")
    assert compose_hydra(["cluster=ray"]).tracking.uri == "http://from-env:5000"
    done = run_cli(["cluster=slurm", f"paths.outputs={tmp_path}"], cwd=tmp_path)  # run_cli unsets the variable
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "dp2pub: error: tracking.uri='${oc.env:MLFLOW_TRACKING_URI}' is invalid: expected a value that "
        "resolves (Environment variable 'MLFLOW_TRACKING_URI' not found); set tracking.uri=... on the command line"
    )
    assert not (tmp_path / "mlflow.db").exists()


def test_sweep_against_a_tracking_server(mlflow_server, tmp_path):
    done = run_cli(
        [
            "-m",
            "epsilon=1,4",
            "dataset.n=500",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            f"tracking.uri={mlflow_server}",
            "tracking.experiment=served",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (parent,), children = runs_by_role(mlflow_server, "served")
    assert sorted(r.data.params["epsilon"] for r in children) == ["1.0", "4.0"]
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
    assert all(r.info.status == "FINISHED" for r in [parent, *children])
    view = f"workflowType=machine_learning&viewStateShareKey={parent.info.run_id}"
    url = f"{mlflow_server}/#/experiments/{parent.info.experiment_id}/runs?{view}"
    assert done.stdout.strip().splitlines()[-1] == f"Open the MLflow dashboard: {url}"
    assert "View run" not in done.stdout  # MLflow's own line per run: the summary says where to look
    artifacts = {a.path for a in MlflowClient(mlflow_server).list_artifacts(children[0].info.run_id)}
    assert "config.yaml" in artifacts
    assert not (tmp_path / "out" / "mlflow.db").exists()  # nothing went to the local default store


def test_a_job_that_fails_before_its_run_exists_still_fails_the_parent(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        [
            "-m",
            "tracking.skip_finished=false,maybe",
            "dataset.n=300",
            f"tracking.uri={uri}",
            "tracking.experiment=early",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "tracking.skip_finished='maybe' is invalid: expected true or false" in done.stderr
    (parent,), children = runs_by_role(uri, "early")
    assert [r.info.status for r in children] == ["FINISHED"]  # the bad job never opened a run
    assert parent.info.status == "FAILED"
    assert summary(done.stdout) == f"sweep: 2 jobs: 1 finished, 1 failed, 0 skipped; parent run {parent.info.run_id}"


def test_a_sweep_whose_parent_cannot_open_stops_before_any_job(tmp_path):
    done = run_cli(["-m", "cluster=slurm", "epsilon=1,2", f"paths.outputs={tmp_path}"], cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "dp2pub: error: cannot open the sweep's parent run: tracking.uri='${oc.env:MLFLOW_TRACKING_URI}' is "
        "invalid: expected a value that resolves (Environment variable 'MLFLOW_TRACKING_URI' not found); set "
        "tracking.uri=... on the command line"
    )
    assert "Launching" not in done.stdout + done.stderr and not (tmp_path / "mlflow.db").exists()
    assert "composing" not in done.stdout + done.stderr and "sweep: " not in done.stdout
