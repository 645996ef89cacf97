"""A tiny real fo_variance sweep through `dp2pub -m`, then `dp2pub-figures` on its store."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT, run_cli

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

FIGURES = Path(sys.executable).parent / "dp2pub-figures"


def test_sweep_then_figures(tmp_path):
    out = tmp_path / "out"
    done = run_cli(
        [
            "-m",
            "experiment=fo_variance",
            'hydra.sweeper.params.mechanism="grr,oue"',
            'hydra.sweeper.params.epsilon="1,4"',
            'hydra.sweeper.params.seed="0,1"',
            "dataset.n=2000",
            f"paths.outputs={out}",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    drawn = subprocess.run(
        [str(FIGURES), "fo_variance", f"paths.outputs={out}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert drawn.returncode == 0, drawn.stderr
    folder = out / "figures"
    names = ["fo_variance_runs.csv", "fo_variance_summary.csv", "fo_variance.png", "fo_variance.pdf"]
    assert drawn.stdout.split() == [str(folder / name) for name in names]
    runs = pd.read_csv(folder / "fo_variance_runs.csv")
    assert runs["run_id"].nunique() == 8  # 2 oracles x 2 budgets x 2 seeds; the parent run is left out
    assert set(runs["mechanism.name"]) == {"grr", "oue"} and set(runs["dataset.n"]) == {2000}
    summary = pd.read_csv(folder / "fo_variance_summary.csv")
    assert (summary["n"] == 2).all()
    assert set(summary["metric"]) == {"mse_freq", "mse_theory", "n_records", "n_attributes"}
    assert (folder / "fo_variance.png").stat().st_size > 10_000
