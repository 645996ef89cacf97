"""The built-in studies' figures, and a throw-away MLflow store holding fake fo_variance runs,
logged as the real jobs log them."""

from __future__ import annotations

import mlflow
import numpy as np
import pytest
from mlflow.entities import Metric, Param

from dp2pub.figures.load import builtin_figures
from dp2pub.mechanisms import ORACLES

#: Every figure of dp2pub's own studies (their configs' figures: sections) by name.
STUDIES = builtin_figures()

N, D, K = 1000, 1, 4
#: What every job logs about its data (fo_variance's data is not split).
SIZES = {"n_records": float(N), "n_attributes": float(D)}
#: mse_freq of each (mechanism, epsilon) per seed: hand-picked so means are easy to check.
VALUES = {
    ("grr", 1.0): (1.0e-3, 3.0e-3),
    ("grr", 4.0): (1.0e-4, 2.0e-4, 6.0e-4),
    ("rappor", 1.0): (2.0e-3, 4.0e-3),
    ("rappor", 4.0): (5.0e-4,),
}
RAPPOR_PARAMS = {
    "mechanism.num_bits": "64",
    "mechanism.num_hashes": "2",
    "mechanism.hash_seed": "0",
    "mechanism.f": "None",
    "mechanism.p": "None",
    "mechanism.q": "None",
    "mechanism.guarantee": "permanent",
}


def job_params(mechanism: str, epsilon: float, seed: int) -> dict[str, str]:
    """The flattened params a fo_variance job logs (as strings)."""
    params = {
        "epsilon": str(epsilon),
        "seed": str(seed),
        "save_published": "False",
        "mechanism.name": mechanism,
        "mechanism.estimator": "unbiased",
        "mechanism.strategy": "split",
        "dataset.name": "synthetic",
        "dataset.n": str(N),
        "dataset.d": str(D),
        "dataset.k_min": str(K),
        "dataset.k_max": str(K),
        "dataset.seed": "None",
        "metrics.ways": "[1]",
        "tracking.experiment": "fo_variance",
        "tracking.uri": "None",
    }
    return {**params, **(RAPPOR_PARAMS if mechanism == "rappor" else {})}


def theory(mechanism: str, epsilon: float) -> float:
    options = {"num_bits": 64, "num_hashes": 2} if mechanism == "rappor" else {}
    return ORACLES[mechanism](epsilon=epsilon / D, k=K, **options).expected_mse(N, np.full(K, 1 / K))


def log_run(
    client: mlflow.MlflowClient,
    experiment_id: str,
    start: int,
    params: dict[str, str],
    metrics: dict[str, float],
    tags: dict[str, str] | None = None,
    status: str = "FINISHED",
) -> str:
    run = client.create_run(experiment_id, start_time=start, tags=tags or {})
    run_id = run.info.run_id
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, start, 0) for k, v in metrics.items()],
        params=[Param(k, v) for k, v in params.items()],
    )
    client.set_terminated(run_id, status=status, end_time=start + 1)
    return run_id


@pytest.fixture(scope="package")
def fake_store(tmp_path_factory) -> dict:
    """A SQLite store with one sweep parent, its children (VALUES), a stale duplicate of one
    configuration (older, other value), a newer rerun of it (written to another place), and
    a FAILED run."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('figures_store') / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    exp = client.create_experiment("fo_variance")
    start = 1_700_000_000_000
    stale = log_run(client, exp, start, job_params("grr", 1.0, 0), {"mse_freq": 99.0, "mse_theory": 1.0})
    parent = log_run(client, exp, start + 10, {}, {"n_jobs": 9.0}, tags={"dp2pub.sweep": "parent"})
    child_tags = {"mlflow.parentRunId": parent, "dp2pub.sweep": "child"}
    kept = []
    for (mechanism, epsilon), values in VALUES.items():
        for seed, value in enumerate(values):
            start += 100
            metrics = {"mse_freq": value, "mse_theory": theory(mechanism, epsilon), "tvd_1way": 0.1, **SIZES}
            kept.append(log_run(client, exp, start, job_params(mechanism, epsilon, seed), metrics, child_tags))
    # The same configuration as the first grr run of the sweep, run again later: it replaces it.
    # Where the results went (tracking.*, paths.*) does not make it another configuration.
    rerun = log_run(
        client,
        exp,
        start + 1000,
        {**job_params("grr", 1.0, 0), "tracking.uri": uri, "paths.outputs": "/elsewhere"},
        {"mse_freq": 1.0e-3, "mse_theory": theory("grr", 1.0), **SIZES},
    )
    failed = log_run(client, exp, start + 2000, job_params("grr", 4.0, 9), {"mse_freq": 5.0}, status="FAILED")
    return {
        "uri": uri,
        "parent": parent,
        "stale": stale,
        "rerun": rerun,
        "failed": failed,
        "replaced": kept[0],
        "kept": [*kept[1:], rerun],
    }
