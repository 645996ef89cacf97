"""docs/tutorials/your-own-study.md, followed start to finish in a folder of the user's own: their table,
their mechanism, their study swept on two workers, its figure and the conformance test. The
tutorial prints these very files (tests/test_docs.py checks it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli, runs_in

#: Runs the command line end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "examples" / "tutorial"
TABLES = ROOT / "examples" / "kss_plugin" / "kss_plugin" / "tables"
TABLE = ["dataset=csv", "dataset.path=survey.csv", "dataset.domain=survey_domain.yaml"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The user's folder after the tutorial's ``cp`` steps."""
    here = tmp_path_factory.mktemp("my-study")
    shutil.copytree(TUTORIAL, here, dirs_exist_ok=True)
    for name in ("survey.csv", "survey_domain.yaml"):
        shutil.copy(TABLES / name, here)
    return here


def ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_step_1_a_built_in_mechanism_on_the_table(folder):
    out = ok(run_cli([*TABLE, "dataset.target=health", "mechanism=oue", "tracking.experiment=step1"], cwd=folder))
    assert "(oue on csv, epsilon=1.0, seed=0)" in out and "n_records" in out


def test_step_2_the_mechanism_runs_and_a_bad_value_is_one_line(folder):
    out = ok(run_cli(["-cd", "myconf", "mechanism=independent", *TABLE, "tracking.experiment=step2"], cwd=folder))
    assert "(independent on csv, epsilon=1.0, seed=0)" in out
    bad = run_cli(["-cd", "myconf", "mechanism=independent", "mechanism.min_count=-1", *TABLE], cwd=folder)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1] == (
        "dp2pub: error: mechanism.min_count=-1 is invalid: expected a number in [0, inf)"
    )


def test_steps_4_to_6_sweep_figure_and_conformance(folder):
    sweep = ["-cd", "myconf", "-m", "experiment=my_study", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    assert "sweep: 36 jobs: 36 finished, 0 failed, 0 skipped" in ok(run_cli(sweep, cwd=folder))
    uri = f"sqlite:///{folder / 'outputs' / 'mlflow.db'}"
    names = {r.data.params.get("mechanism.name") for r in runs_in(uri, "my_study") if "mechanism.name" in r.data.params}
    assert names == {"independent", "privbayes", "grr"}
    figure = subprocess.run(
        [sys.executable, "-c", "from dp2pub.figures.cli import main; main()", "my_study", "--config-dir", "myconf"],
        cwd=folder,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "outputs/figures/my_study.png" in ok(figure)
    assert (folder / "outputs" / "figures" / "my_study.png").stat().st_size > 10_000
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_independent.py"],
        cwd=folder,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert tests.stdout.splitlines()[-1].startswith("6 passed")
