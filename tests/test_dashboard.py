"""The MLflow dashboard in a real browser: the page dp2pub prints opens the experiment's runs
table (MLflow 3's model-training view), not its GenAI overview. Needs ``chromium`` on PATH
(Debian: ``apt-get install chromium``); skipped without it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from dp2pub.job import run_job
from dp2pub.tracking import run_name, run_tracked, ui_url
from tests.conftest import compose_config

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH")]


def rendered(url: str, profile: Path) -> str:
    """The DOM of ``url`` after its scripts ran (headless Chromium with a fresh profile, as a
    first visit: no view remembered from an earlier one)."""
    assert CHROMIUM is not None
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]
    done = subprocess.run(
        [*command, "--virtual-time-budget=20000", "--dump-dom", url], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_printed_page_shows_the_runs_table_with_names_and_datasets(mlflow_server, tmp_path):
    cfg = OmegaConf.to_container(
        compose_config(
            [
                "dataset.n=500",
                f"tracking.uri={mlflow_server}",
                "tracking.experiment=dashboard",
                f"paths.outputs={tmp_path / 'out'}",
            ]
        ),
        resolve=True,
    )
    run_id, result = run_tracked(cfg, run_job)
    assert result is not None and result.dataset is not None
    experiment_id = MlflowClient(mlflow_server).get_run(run_id).info.experiment_id
    page = rendered(ui_url(mlflow_server, experiment_id), tmp_path / "profile")
    assert "Run Name" in page and "matching run" in page  # the runs table ...
    assert run_name(cfg) in page and result.dataset.digest[:8] in page  # ... with the run and its dataset
    assert "Detect Issues" not in page  # not the GenAI overview (traces, latency, token usage)
