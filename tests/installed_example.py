"""The example plugin, used as a researcher uses it: dp2pub and ``examples/kss_plugin``
installed from their wheels (not editable) into a venv, and run from a folder outside the
clone that holds only the researcher's table.

:func:`check_installed_example` is the scenario: the plugin's study swept on joblib with 2
workers and on the basic launcher (identical metrics), its figure drawn, the plugin's tests
(dp2pub's conformance suite among them) run against the installed package, and one byte of
the table changed so that ``tracking.skip_finished=true`` reruns every job. The slow test
(tests/test_examples.py) runs it in a venv built offline; ``.ci/run`` runs it in a venv
installed from the package index::

    python -m tests.installed_example VENV_BIN WORKDIR
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "kss_plugin"
TABLES = PLUGIN / "kss_plugin" / "tables"
#: What a source distribution of dp2pub holds: its wheel is built from a copy of exactly this
#: (a build in the clone would leave build/ and *.egg-info there, which later builds reuse).
SOURCE = ("pyproject.toml", "README.md", "LICENSE", "NOTICE", "dp2pub", "conf", "hydra_plugins")
#: The study's grid narrowed on the command line: 4 mechanisms x 2 budgets x 1 seed.
GRID = ["-m", "experiment=kss_survey", "epsilon=1,4", "seed=0"]


def copy_tree(source: Path, names: tuple[str, ...], destination: Path) -> Path:
    """Copy ``names`` of ``source`` (files or folders, without caches and build output) into
    ``destination``; returns it."""
    ignore = shutil.ignore_patterns("__pycache__", "build", "*.egg-info", ".pytest_cache")
    for name in names:
        if (source / name).is_dir():
            shutil.copytree(source / name, destination / name, ignore=ignore)
        else:
            destination.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, destination / name)
    return destination


def run(command: list[str], cwd: Path) -> str:
    """Run ``command`` in ``cwd`` (the store in the folder, progress lines off); its output,
    or AssertionError with its last lines."""
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "DP2PUB_DATA_DIR", "PYTHONPATH")}
    done = subprocess.run(
        command, cwd=cwd, env={**env, "CI": "1", "MPLBACKEND": "Agg"}, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def finished_jobs(folder: Path, experiment: str) -> dict[tuple[str, str], dict[str, float]]:
    """``(mechanism, epsilon) -> metrics without timings`` of the experiment's FINISHED jobs."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{folder / 'outputs' / 'mlflow.db'}")
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment}"
    runs = client.search_runs([found.experiment_id], "attributes.status = 'FINISHED'", max_results=1000)
    jobs = [r for r in runs if r.data.tags.get("dp2pub.sweep") == "child"]
    return {
        (r.data.params["mechanism.name"], r.data.params["epsilon"]): {
            k: v for k, v in r.data.metrics.items() if not k.startswith("time_")
        }
        for r in jobs
    }


def change_one_byte(table: Path) -> None:
    """Move one respondent's age by a year within its public range (one digit changes)."""
    lines = table.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines[1:], 1):
        age = line.split(",", 1)[0]
        if age.isdigit() and 20 <= int(age) <= 88:
            lines[i] = age[:-1] + str(int(age[-1]) ^ 1) + line[len(age) :]
            break
    table.write_text("".join(lines))


def check_installed_example(bin_dir: Path, folder: Path) -> None:
    """The scenario of the module docstring, with the installed ``dp2pub``, ``dp2pub-figures``
    and ``python`` of ``bin_dir``, in ``folder`` (created; outside the clone)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("survey.csv", "survey_domain.yaml"):
        shutil.copy(TABLES / name, folder)
    dp2pub = [str(bin_dir / "dp2pub")]
    joblib = run([*dp2pub, *GRID, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], folder)
    assert "sweep: 8 jobs: 8 finished, 0 failed, 0 skipped" in joblib, joblib[-2000:]
    run([*dp2pub, *GRID, "tracking.experiment=kss_survey_basic"], folder)
    on_joblib, on_basic = finished_jobs(folder, "kss_survey"), finished_jobs(folder, "kss_survey_basic")
    assert set(on_joblib) == {(m, e) for m in ("kss", "grr", "oue", "olh") for e in ("1.0", "4.0")}
    assert on_joblib == on_basic, "the launchers gave different metrics"
    print("kss_survey: 8 jobs on joblib (2 workers) and on basic, identical metrics")

    figure = run([str(bin_dir / "dp2pub-figures"), "kss_survey"], folder)
    assert (folder / "outputs" / "figures" / "kss_survey.png").stat().st_size > 10_000, figure
    print(f"figure: {folder / 'outputs' / 'figures' / 'kss_survey.png'}")

    tests = folder / "plugin_tests"
    tests.mkdir(exist_ok=True)
    shutil.copy(PLUGIN / "tests" / "test_kss.py", tests)  # without its conftest: the installed package
    where = run([str(bin_dir / "python"), "-c", "import kss_plugin; print(kss_plugin.__file__)"], folder)
    assert str(ROOT) not in where, f"kss_plugin imported from the clone: {where}"
    passed = run([str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)], folder)
    assert passed.strip().splitlines()[-1].split()[1] == "passed", passed[-2000:]
    print(f"the plugin's tests on the installed package: {passed.strip().splitlines()[-1]}")

    again = run([*dp2pub, *GRID, "tracking.skip_finished=true"], folder)
    assert "sweep: 8 jobs: 0 finished, 0 failed, 8 skipped" in again, again[-2000:]
    change_one_byte(folder / "survey.csv")
    changed = run([*dp2pub, *GRID, "tracking.skip_finished=true"], folder)
    assert "sweep: 8 jobs: 8 finished, 0 failed, 0 skipped" in changed, changed[-2000:]
    print("skip_finished: 8 skipped as FINISHED; after one byte of survey.csv changed, 8 run again")


if __name__ == "__main__":
    check_installed_example(Path(sys.argv[1]), Path(sys.argv[2]))
