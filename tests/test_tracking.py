"""What the MLflow dashboard shows of a job: the experiment's kind, the run's name, its dataset
input and the link to its experiment's runs (in process, on throw-away SQLite stores)."""

from __future__ import annotations

import json
import logging

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from dp2pub.job import run_job
from dp2pub.tracking import (
    EXPERIMENT_KIND_TAG,
    MODEL_TRAINING,
    NOTES_TAG,
    dashboard_hint,
    open_experiment,
    run_name,
    run_tracked,
    ui_url,
)
from tests.test_job import plain


def job_config(tmp_path, experiment: str, *overrides: str) -> dict:
    """A small job logging to ``experiment`` of a SQLite store under ``tmp_path``."""
    return plain(
        [
            "dataset.n=500",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"tracking.experiment={experiment}",
            f"paths.outputs={tmp_path / 'out'}",
            *overrides,
        ]
    )


def test_a_new_experiment_is_a_model_training_experiment(tmp_path):
    uri, experiment_id = open_experiment(job_config(tmp_path, "new"))
    assert (
        MlflowClient(uri).get_experiment(experiment_id).tags[EXPERIMENT_KIND_TAG]
        == MODEL_TRAINING
        == ("custom_model_development")
    )


def test_an_existing_experiment_gets_the_kind_it_lacks_and_keeps_the_one_its_user_chose(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    location = (tmp_path / "art").as_uri()
    client.create_experiment("older", artifact_location=location)
    client.create_experiment("genai", artifact_location=location, tags={EXPERIMENT_KIND_TAG: "genai_development"})
    for name in ("older", "genai"):
        open_experiment(job_config(tmp_path, name))
    assert client.get_experiment_by_name("older").tags[EXPERIMENT_KIND_TAG] == MODEL_TRAINING
    assert client.get_experiment_by_name("genai").tags[EXPERIMENT_KIND_TAG] == "genai_development"


@pytest.mark.parametrize(
    "overrides,name",
    [
        ([], "grr synthetic ε1 s0"),
        (["mechanism=dp2pub_trusted", "dataset=br2000", "epsilon=0.4", "seed=3"], "dp2pub_trusted br2000 ε0.4 s3"),
        (["mechanism=dp2pub_ibu", "dataset=nltcs"], "dp2pub_ibu nltcs ε1 s0"),
        (["mechanism=dp2pub", "mechanism.trust=local_two_phase"], "dp2pub_local_two_phase synthetic ε1 s0"),
        (["mechanism=oue", "epsilon=0.25", "seed=12"], "oue synthetic ε0.25 s12"),
        (["mechanism=dppro"], "dppro synthetic ε1 s0"),  # its k is a projection's size: DPPro has a budget
        (["mechanism=samarati", "dataset=adult", "mechanism.k=5"], "samarati adult k5 s0"),
        (["mechanism=mondrian", "dataset=adult", "seed=2"], "mondrian adult k10 s2"),
    ],
)
def test_run_names_say_mechanism_dataset_and_budget_first(overrides, name):
    assert run_name(plain(overrides)) == name


def test_a_run_has_the_table_it_loaded_as_dataset_input(tmp_path):
    cfg = job_config(tmp_path, "inputs", "dataset.d=4")
    run_id, result = run_tracked(cfg, run_job)
    assert result is not None and result.dataset is not None
    info = result.dataset
    (entry,) = MlflowClient(cfg["tracking"]["uri"]).get_run(run_id).inputs.dataset_inputs
    dataset = entry.dataset
    assert (dataset.name, dataset.digest) == ("synthetic", info.digest[:8])
    assert dataset.source_type == "code"
    assert json.loads(dataset.source)["tags"] == {
        "dataset.name": "synthetic",
        "dataset.n": "500",
        "dataset.d": "4",
        "dataset.k_min": "2",
        "dataset.k_max": "10",
    }
    columns = json.loads(dataset.schema)["mlflow_colspec"]
    assert [(c["name"], c["type"]) for c in columns] == [(name, "string") for name in info.names]
    profile = json.loads(dataset.profile)
    assert profile["num_rows"] == 500 and profile["num_elements"] == 2000
    assert profile["domain_sizes"] == dict(zip(info.names, info.sizes)) and profile["target"] is None


def test_the_dashboard_link_opens_the_runs_of_the_experiment_in_the_model_training_view(tmp_path):
    assert ui_url("http://server:5000/", "7") == "http://server:5000/#/experiments/7/runs?workflowType=machine_learning"
    cfg = job_config(tmp_path, "linked")
    run_id, _ = run_tracked(cfg, run_job)
    uri = cfg["tracking"]["uri"]
    experiment_id = MlflowClient(uri).get_run(run_id).info.experiment_id
    command, page = dashboard_hint(uri, experiment_id).splitlines()
    assert command.endswith(f"mlflow ui --backend-store-uri {uri}")
    assert page.endswith(f"http://127.0.0.1:5000/#/experiments/{experiment_id}/runs?workflowType=machine_learning")


def test_a_runs_notes_are_logged_as_a_tag(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    noted, result = run_tracked(job_config(tmp_path, "notes", "mechanism.estimator=unbiased"), run_job)
    assert result is not None and result.notes
    assert client.get_run(noted).data.tags[NOTES_TAG] == "\n".join(result.notes)
    plain_run, result = run_tracked(job_config(tmp_path, "notes"), run_job)
    assert result is not None and not result.notes and NOTES_TAG not in client.get_run(plain_run).data.tags


def test_a_dataset_input_lost_to_a_parallel_job_is_retried_and_never_fails_the_run(tmp_path, monkeypatch, caplog):
    """Two sweep jobs logging the same table race on the store's unique key (seen on an mlflow
    server with two joblib workers): the loser retries and links the row; a store that keeps
    refusing leaves the run FINISHED without its dataset input, with a warning."""
    real, calls = mlflow.log_input, []
    monkeypatch.setattr("dp2pub.tracking.DATASET_RETRY_S", 0.0)

    def lose_once(dataset, *args, **kwargs):
        calls.append(dataset.name)
        if len(calls) == 1:
            raise mlflow.exceptions.MlflowException("UNIQUE constraint failed: datasets.experiment_id")
        return real(dataset, *args, **kwargs)

    monkeypatch.setattr(mlflow, "log_input", lose_once)
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    retried, _ = run_tracked(job_config(tmp_path, "race"), run_job)
    run = client.get_run(retried)
    assert calls == ["synthetic", "synthetic"] and run.info.status == "FINISHED"
    assert [d.dataset.name for d in run.inputs.dataset_inputs] == ["synthetic"]

    def refuse(dataset, *args, **kwargs):
        raise mlflow.exceptions.MlflowException("the store refuses")

    monkeypatch.setattr(mlflow, "log_input", refuse)
    with caplog.at_level(logging.WARNING, logger="dp2pub.tracking"):
        refused, result = run_tracked(job_config(tmp_path, "race", "seed=1"), run_job)
    run = client.get_run(refused)
    assert result is not None and run.info.status == "FINISHED" and not run.inputs.dataset_inputs
    assert "dataset input was not logged after 4 attempts: the store refuses" in caplog.text
