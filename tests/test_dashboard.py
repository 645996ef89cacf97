"""The MLflow dashboard in a real browser: every link dp2pub prints opens the runs table in
MLflow 3's model-training view (not its GenAI overview), with the main metrics as columns; a
sweep's link shows that sweep's runs and no other's. Needs ``chromium`` on PATH (Debian:
``apt-get install chromium``): skipped without it, failed under CI (``.ci/run`` installs it)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import UNDER_CI, run_cli, runs_in

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None and not UNDER_CI, reason="chromium is not on PATH"),
]


def rendered(url: str, profile: Path) -> str:
    """The DOM of ``url`` after its scripts ran (headless Chromium with a fresh profile, as a
    first visit: no view remembered from an earlier one)."""
    assert CHROMIUM is not None, "chromium is not on PATH (Debian: apt-get install chromium)"
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",  # a closed network refuses its connections
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1600,1000",
    ]
    done = subprocess.run(
        [*command, "--virtual-time-budget=20000", "--dump-dom", url], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def printed_link(stdout: str) -> str:
    """The address of the command's last line, ``Open the MLflow dashboard: <url>``."""
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("Open the MLflow dashboard: http"), last
    return last.split(": ", 1)[1]


def text(page: str) -> str:
    """The page's text, without its markup."""
    return " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"<(style|script)\b.*?</\1>", "", page, flags=re.DOTALL)).split())


def headers(shown: str) -> set[str]:
    """The words of the runs table's column headers in the page's text (between "Run Name"
    and the first row)."""
    assert "Run Name" in shown, shown[:3000]
    return set(shown.split("Run Name", 1)[1].split("Hide run", 1)[0].split())


def test_the_printed_links_open_the_runs_and_their_main_metrics(mlflow_server, tmp_path):
    args = [f"tracking.uri={mlflow_server}", "tracking.experiment=dashboard", f"paths.outputs={tmp_path / 'out'}"]
    single = run_cli(["dataset.n=500", "epsilon=3", *args], cwd=tmp_path)
    first = run_cli(["-m", "mechanism=grr,oue", "epsilon=1,2", "dataset.n=500", *args], cwd=tmp_path)
    other = run_cli(["-m", "epsilon=0.5,4", "dataset.n=500", *args], cwd=tmp_path)
    for done in (single, first, other):
        assert done.returncode == 0, done.stderr
    runs = runs_in(mlflow_server, "dashboard")
    parent = next(r for r in runs if r.data.tags.get("dp2pub.sweep") == "parent" and "mechanism" in r.info.run_name)
    mine = sorted(r.info.run_name for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id)
    others = [r.info.run_name for r in runs if r.info.run_name not in mine and r.info.run_id != parent.info.run_id]
    assert len(mine) == 4 and others

    shown = text(rendered(printed_link(first.stdout), tmp_path / "profile-sweep"))
    assert "Model training" in shown and "Detect Issues" not in shown  # not the GenAI overview
    assert "4 matching runs" in shown, shown[:3000]  # the sweep's four runs, flat ...
    assert all(name in shown for name in mine)
    assert not any(name in shown for name in others)  # ... and no run of another sweep or job
    assert {"tvd_1way", "tvd_2way", "mse_freq", "epsilon_spent", "mechanism.name", "epsilon"} <= headers(shown)

    shown = text(rendered(printed_link(single.stdout), tmp_path / "profile-single"))
    assert "Detect Issues" not in shown and "matching run" in shown
    assert "grr synthetic ε3 s0" in shown and parent.info.run_name[:12] in shown  # the run, the sweeps' parents
    # (the table draws only the columns in its 1,600 pixels: seed, the last, is further right)
    assert {"tvd_1way", "mse_freq", "mechanism.name", "dataset.name", "epsilon"} <= headers(shown)
