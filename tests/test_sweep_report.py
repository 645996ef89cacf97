"""How a sweep reports, piece by piece: its size counted from the overrides as Hydra's
BasicSweeper expands them, the jobs' ``[k/N]`` labels on their log lines, the outcome
records and the summary's counts, and the MLflow UI addresses (the whole sweep's output is
checked end to end in tests/test_sweep.py)."""

from __future__ import annotations

import io
import logging

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf

from dp2pub.sweep import (
    FAILED,
    FINISHED,
    PARENT_FILE,
    SKIPPED,
    count_line,
    job_label,
    labelled_logs,
    outcomes,
    record_outcome,
    sweep_size,
)
from dp2pub.tracking import dashboard_hint, ui_url
from tests.conftest import CONF


def multirun_hydra_config(overrides: list[str]):
    """The ``hydra`` node of the config ``dp2pub -m OVERRIDES`` composes in the launching process."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        hydra = GlobalHydra.instance().hydra
        assert hydra is not None
        cfg = hydra.compose_config("config", overrides, run_mode=RunMode.MULTIRUN, with_log_configuration=False)
        return cfg.hydra, sweep_size(cfg.hydra)  # glob() needs Hydra, initialised only in here


@pytest.mark.parametrize(
    "overrides,size",
    [
        (["epsilon=0.5,1,2", "seed=0,1"], 6),
        (["epsilon=1"], 1),
        ([], 1),
        (["seed=range(5)", "hydra.sweeper.max_batch_size=2"], 5),  # batches do not change the count
        (["mechanism=glob(grr*)", "epsilon=1,2"], 4),  # grr, grr_table
        (["experiment=dp2pub_paper"], 2240),  # the grid of hydra.sweeper.params
        (["experiment=fo_variance", "seed=0,1"], 50),  # the command line replaces a param's list
        (["epsilon=interval(0,1)"], None),  # BasicSweeper refuses it itself
    ],
)
def test_the_sweep_size_is_counted_as_basic_sweeper_expands_the_overrides(overrides, size):
    assert multirun_hydra_config(overrides)[1] == size


def test_another_sweeper_has_no_size():
    hydra_cfg = OmegaConf.create({"sweeper": {"_target_": "hydra_plugins.optuna.OptunaSweeper"}, "overrides": {}})
    assert sweep_size(hydra_cfg) is None


@pytest.mark.parametrize(
    "total,ended,stopped,line",
    [
        (3, {FINISHED: 2, FAILED: 1}, 0, "3 jobs: 2 finished, 1 failed, 0 skipped"),
        (250, {FINISHED: 248, FAILED: 1, SKIPPED: 1}, 0, "250 jobs: 248 finished, 1 failed, 1 skipped"),
        (4, {FINISHED: 1}, 1, "4 jobs: 1 finished, 0 failed, 0 skipped, 1 stopped, 2 not run"),
        (None, {FINISHED: 1, SKIPPED: 1}, 0, "2 jobs: 1 finished, 0 failed, 1 skipped"),
        (1, {SKIPPED: 1}, 0, "1 job: 0 finished, 0 failed, 1 skipped"),
    ],
)
def test_the_count_line(total, ended, stopped, line):
    assert count_line(total, ended, stopped) == line


def test_outcomes_count_only_the_jobs_of_this_sweep(tmp_path):
    (tmp_path / PARENT_FILE).write_text('{"run_id": "old"}')
    record_outcome(tmp_path, 0, FINISHED)  # an earlier sweep in the same directory
    (tmp_path / PARENT_FILE).write_text('{"run_id": "new", "n_jobs": 3}')
    for num, outcome in [(1, FAILED), (2, SKIPPED), (3, SKIPPED)]:
        record_outcome(tmp_path, num, outcome)
    assert outcomes(tmp_path, "new") == {FAILED: 1, SKIPPED: 2}
    assert outcomes(tmp_path / "elsewhere", "new") == {}


def test_a_job_that_cannot_read_the_parent_file_records_nothing(tmp_path):
    record_outcome(tmp_path, 0, FINISHED)
    assert not any(tmp_path.iterdir())


def test_every_ui_address_opens_the_model_training_view():
    training = "workflowType=machine_learning"
    assert ui_url("sqlite:////x/mlflow.db", "1", "abc") == f"http://127.0.0.1:5000/#/experiments/1/runs/abc?{training}"
    assert ui_url("http://server:5000/", "7", "abc") == f"http://server:5000/#/experiments/7/runs/abc?{training}"
    assert ui_url("https://server", "7") == f"https://server/#/experiments/7/runs?{training}"
    assert (
        ui_url("https://server", "7", view="a b")
        == f"https://server/#/experiments/7/runs?{training}&viewStateShareKey=a%20b"
    )


def test_the_dashboard_hint_starts_the_ui_on_a_local_store_and_links_a_server():
    local = dashboard_hint("sqlite:////x/mlflow.db", "1", view="abc").splitlines()
    assert local[0].startswith("Open the MLflow dashboard: ") and local[0].endswith(
        "mlflow ui --backend-store-uri sqlite:////x/mlflow.db"
    )
    assert (
        local[1]
        == "  then http://127.0.0.1:5000/#/experiments/1/runs?workflowType=machine_learning&viewStateShareKey=abc"
    )
    served = dashboard_hint("http://server:5000", "2", None)
    assert served == "Open the MLflow dashboard: http://server:5000/#/experiments/2/runs?workflowType=machine_learning"


def test_labelled_logs_prefix_each_line_once_and_only_within_the_block():
    root, logger = logging.getLogger(), logging.getLogger("dp2pub.test_sweep_report")
    streams = [io.StringIO(), io.StringIO()]
    handlers = [logging.StreamHandler(stream) for stream in streams]  # like Hydra's console and file
    for handler in handlers:
        root.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with labelled_logs("[2/3]"):
            logger.info("grr: publishing %d records", 500)
        logger.info("after")
        with labelled_logs(""):
            logger.info("no label")
    finally:
        for handler in handlers:
            root.removeHandler(handler)
    for stream in streams:
        assert stream.getvalue().splitlines() == ["[2/3] grr: publishing 500 records", "after", "no label"]


def test_a_job_outside_a_sweep_has_no_label():
    assert job_label() == ""
