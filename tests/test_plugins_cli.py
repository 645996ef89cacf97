"""A user's mechanism and dataset from the command line: their own config directory
(``-cd``), a ``_target_`` module in their working directory, swept on the basic and the
joblib launcher with the same results, recorded, and rerun when their data changes."""

from __future__ import annotations

import hashlib

import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import run_cli, runs_in
from tests.test_plugins import FLIP

#: Runs the command line end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow


def deterministic(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if not k.startswith("time_")}


@pytest.fixture
def user(tmp_path):
    """A user's folder: their module, their table and their configs, nothing of dp2pub's."""
    (tmp_path / "flipmech.py").write_text(FLIP)
    (tmp_path / "codes.txt").write_text("0 1 2\n2 0 1\n1 1 0\n0 2 2\n" * 100)
    conf = tmp_path / "myconf"
    (conf / "mechanism").mkdir(parents=True)
    (conf / "dataset").mkdir()
    (conf / "mechanism" / "flip.yaml").write_text(
        "# GRR under another name, from the user's module\n_target_: flipmech.Flip\nestimator: norm_sub\n"
    )
    (conf / "dataset" / "codes.yaml").write_text("_target_: flipmech.load\nname: codes\npath: codes.txt\nk: 3\n")
    return tmp_path


def sweep(user, experiment: str, *extra: str):
    uri = f"sqlite:///{user / 'mlflow.db'}"
    args = [
        "-cd",
        "myconf",
        "-m",
        "mechanism=flip",
        "dataset=codes",
        "epsilon=1,4",
        "metrics.models=[]",
        f"tracking.uri={uri}",
        f"tracking.experiment={experiment}",
        "paths.outputs=out",
        *extra,
    ]
    done = run_cli(args, cwd=user)
    assert done.returncode == 0, done.stderr[-3000:]
    return uri, done


def jobs(uri: str, experiment: str) -> dict:
    runs = [r for r in runs_in(uri, experiment) if r.data.tags.get("dp2pub.sweep") != "parent"]
    return {r.data.params["epsilon"]: r for r in runs if r.info.status == "FINISHED"}


def test_a_users_mechanism_and_table_sweep_alike_on_basic_and_joblib(user):
    uri, _ = sweep(user, "basic")
    sweep(user, "joblib", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    basic, joblib = jobs(uri, "basic"), jobs(uri, "joblib")
    assert set(basic) == set(joblib) == {"1.0", "4.0"}
    for epsilon, run in basic.items():
        assert deterministic(run.data.metrics) == deterministic(joblib[epsilon].data.metrics)
        assert run.data.params["mechanism.name"] == "flip" and run.data.params["dataset.name"] == "codes"
        tags = run.data.tags
        assert tags["dp2pub.mechanism.module"] == "flipmech" and tags["dp2pub.mechanism.qualname"] == "Flip"
        source = hashlib.sha256((user / "flipmech.py").read_bytes()).hexdigest()
        assert tags["dp2pub.mechanism.source_sha256"] == source
        assert run.data.metrics["n_records"] == 400
    assert "flip codes ε1 s0" in {r.info.run_name for r in basic.values()}


def test_skip_finished_reruns_a_job_whose_table_changed(user):
    uri, _ = sweep(user, "resume", "tracking.skip_finished=true")
    _, again = sweep(user, "resume", "tracking.skip_finished=true")
    assert again.stdout.count("skipped (flip on codes") == 2
    table = user / "codes.txt"
    table.write_bytes(table.read_bytes()[:-2] + b"1\n")  # one byte of the last record
    _, changed = sweep(user, "resume", "tracking.skip_finished=true")
    assert "skipped (flip on codes" not in changed.stdout and "2 finished, 0 failed, 0 skipped" in changed.stdout
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("resume").experiment_id
    finished = [r for r in client.search_runs([experiment]) if r.data.tags.get("dp2pub.sweep") != "parent"]
    assert len(finished) == 4  # two budgets, each on the table before and after the change


def test_a_target_that_does_not_import_fails_its_run_in_one_line(user):
    (user / "myconf" / "mechanism" / "broken.yaml").write_text("_target_: flipmech.Missing\n")
    uri = f"sqlite:///{user / 'mlflow.db'}"
    args = ["-cd", "myconf", "mechanism=broken", f"tracking.uri={uri}", "tracking.experiment=bad", "paths.outputs=out"]
    done = run_cli(args, cwd=user)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.startswith("dp2pub: error:")]
    assert lines == [
        "dp2pub: error: mechanism._target_='flipmech.Missing' is invalid: "
        "expected a name defined in flipmech (it has no 'Missing')"
    ]
    (run,) = runs_in(uri, "bad")
    assert run.info.status == "FAILED"


@pytest.mark.parametrize("launcher", ["ray", "submitit_local"])
def test_a_users_mechanism_runs_alike_on_ray_and_submitit(user, mlflow_server, request, launcher):
    """The jobs resolve the user's ``_target_`` where they run (a Ray worker, a Submitit
    process), from the launching directory, with the basic launcher's results."""
    env: dict[str, str] = {}
    args = ["hydra/launcher=submitit_local"]
    if launcher == "ray":
        args, env = request.getfixturevalue("ray_launcher")
    common = ["-cd", "myconf", "-m", "mechanism=flip", "dataset=codes", "epsilon=1,4", "metrics.models=[]"]
    where = [f"tracking.uri={mlflow_server}", "paths.outputs=out"]
    done = run_cli([*common, *args, *where, f"tracking.experiment={launcher}"], cwd=user, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    basic = run_cli([*common, *where, "tracking.experiment=basic"], cwd=user)
    assert basic.returncode == 0, basic.stderr[-3000:]
    there, here = jobs(mlflow_server, launcher), jobs(mlflow_server, "basic")
    assert set(there) == set(here) == {"1.0", "4.0"}
    for epsilon, run in there.items():
        assert deterministic(run.data.metrics) == deterministic(here[epsilon].data.metrics)
        assert run.data.tags["dp2pub.mechanism.qualname"] == "Flip"


def test_help_lists_the_options_a_config_dir_adds(user):
    done = run_cli(["-cd", "myconf", "--help"], cwd=user)
    assert done.returncode == 0, done.stderr
    added = done.stdout.split("== Options added by installed plugins and --config-dir ==")[1].split("==")[0]
    assert added.split("\n") == [
        "",
        "",
        "dataset       codes  (from myconf)",
        "mechanism     flip  (from myconf)",
        "",
        "",
    ]
