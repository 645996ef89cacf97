"""End to end: the Hydra app writes MLflow runs that can be read back."""

import hashlib

import mlflow
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from dp2pub.cli import execute, preflight
from dp2pub.config import plain_config
from dp2pub.validation import ConfigError
from tests.conftest import CONTRACT, ROOT, compose_config, run_cli, runs_in
from tests.test_job import BAD

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow


def test_single_run_lands_finished_with_params_tags_and_artifacts(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        [
            "epsilon=2",
            "seed=3",
            "dataset.n=2000",
            "save_published=true",
            f"tracking.uri={uri}",
            "tracking.experiment=e2e",
            f"tracking.artifact_location={(tmp_path / 'art').as_uri()}",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "tvd_1way" in done.stdout and f"mlflow ui --backend-store-uri {uri}" in done.stdout
    assert "\nrun " in done.stdout and "sweep: " not in done.stdout  # no [k/N] label, no sweep summary
    (run,) = runs_in(uri, "e2e")
    assert run.info.status == "FINISHED"
    assert set(CONTRACT) <= set(run.data.metrics)
    assert run.data.params["epsilon"] == "2.0" and run.data.params["seed"] == "3"
    assert run.data.params["dataset.name"] == "synthetic" and run.data.params["mechanism.name"] == "grr"
    assert run.data.tags["hydra_overrides"].startswith("epsilon=2 seed=3")
    assert "version.numpy" in run.data.tags
    lock = hashlib.sha256((ROOT / "requirements.lock").read_bytes()).hexdigest()
    assert run.data.tags["dp2pub.lock_sha256"] == lock and len(run.data.tags["dp2pub.env_sha256"]) == 64
    assert run.data.tags["dp2pub.env_matches_lock"] in ("true", "false")
    artifacts = {a.path for a in MlflowClient(uri).list_artifacts(run.info.run_id)}
    assert {"config.yaml", "per_attribute_metrics.csv", "budget_ledger.csv", "published.csv.gz"} <= artifacts
    assert (tmp_path / "out" / "hydra").is_dir()


def test_multirun_lands_one_run_per_job(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        [
            "-m",
            "epsilon=0.5,2",
            "dataset.n=1000",
            f"tracking.uri={uri}",
            "tracking.experiment=sweep",
            f"paths.outputs={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    runs = runs_in(uri, "sweep")
    (parent,) = [r for r in runs if r.data.tags.get("dp2pub.sweep") == "parent"]
    children = [r for r in runs if r is not parent]
    assert sorted(r.data.params["epsilon"] for r in children) == ["0.5", "2.0"]
    assert all(r.info.status == "FINISHED" for r in runs)
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
    assert parent.data.metrics["n_jobs"] == parent.data.metrics["n_jobs_finished"] == 2
    assert done.stdout.count("Open the MLflow dashboard") == 1  # once, under the sweep's summary


def test_default_store_is_sqlite_under_outputs(tmp_path):
    done = run_cli(["dataset.n=500", "tracking.experiment=default-store"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "outputs" / "mlflow.db"
    assert db.is_file()
    (run,) = runs_in(f"sqlite:///{db}", "default-store")
    assert run.info.artifact_uri.startswith((tmp_path / "outputs" / "mlartifacts").as_uri())


def test_a_bad_job_level_value_is_refused_before_the_store_is_opened(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        ["epsilon=nan", f"tracking.uri={uri}", "tracking.experiment=bad", f"paths.outputs={tmp_path / 'out'}"],
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["dp2pub: error: epsilon=nan is invalid: expected a finite number > 0"]
    assert not (tmp_path / "mlflow.db").exists()  # no store made, no run left


def test_a_bad_mechanism_value_exits_nonzero_and_leaves_the_run_failed(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        ["mechanism.estimator=mle", f"tracking.uri={uri}", "tracking.experiment=bad", f"paths.outputs={tmp_path}"],
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "mechanism.estimator='mle' is invalid" in done.stderr
    (run,) = runs_in(uri, "bad")
    assert run.info.status == "FAILED"
    assert "mechanism.estimator='mle'" in run.data.tags["error"]


@pytest.mark.parametrize("overrides,message", BAD)
def test_every_bad_input_is_refused_and_leaves_no_run_or_a_failed_one(store, overrides, message, tmp_path):
    experiment = "bad-" + "".join(c if c.isalnum() else "_" for c in " ".join(overrides))
    cfg = compose_config(
        [*overrides, f"tracking.uri={store}", f"tracking.experiment={experiment}", f"paths.outputs={tmp_path}"]
    )
    try:  # what the command line checks before it opens the store (the job-level keys)
        preflight(plain_config(cfg))
        early = False
    except ConfigError:
        early = True
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        execute(cfg)
    runs = runs_in(store, experiment)
    assert early == message.startswith(("epsilon", "seed"))  # the others need the mechanism or data
    if early:
        assert runs == []
    else:
        (run,) = runs
        assert run.info.status == "FAILED" and message in run.data.tags["error"]
    assert mlflow.active_run() is None


def test_mlflow_tracking_uri_environment_variable_selects_the_store(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    cfg = compose_config(["dataset.n=300", "tracking.experiment=env", f"paths.outputs={tmp_path}"])
    execute(cfg)
    (run,) = runs_in(uri, "env")
    assert run.info.status == "FINISHED"
    assert OmegaConf.select(cfg, "tracking.uri") is None


def test_a_users_config_dir_adds_group_options(tmp_path):
    mine = tmp_path / "myconf" / "dataset"
    mine.mkdir(parents=True)
    (mine / "tiny.yaml").write_text("name: synthetic\nn: 50\nd: 2\nk_min: 2\nk_max: 3\nseed: null\n")
    done = run_cli(["-cd", str(tmp_path / "myconf"), "dataset=tiny", "--cfg", "job"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert OmegaConf.create(done.stdout).dataset.n == 50
    refused = run_cli([f"--config-dir={tmp_path / 'myconf'}", "dataset=tinyy"], cwd=tmp_path)
    assert refused.returncode == 2
    assert "dataset='tinyy' is invalid: expected one of" in refused.stderr and ", tiny" in refused.stderr
