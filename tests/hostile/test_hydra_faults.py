"""Failures that come from Hydra's side of the command line, each refused in one line with
exit status 2 instead of a traceback or a silently wrong job: an output folder that cannot be
created (a path under a file, a read-only directory, a folder name longer than the file
system allows), an experiment name MLflow would refuse, a huge value echoed whole, a
non-ASCII value Hydra's grammar refuses unquoted, ``metrics.ways=[]``, and
``dataset.name=car`` written for ``dataset=car``. None of these leaves a run in the store."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dp2pub.cli import check_group_options
from dp2pub.hydra_errors import quoting_hint
from dp2pub.settings import MAX_EXPERIMENT_NAME_LENGTH
from dp2pub.validation import ConfigError, echo, shorten
from tests.conftest import calibrate, compose_config, run_cli, runs_in
from tests.hostile.test_refusals import REFUSED_WITHIN, without_root_override

#: Runs the command line end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

PREFIX = "dp2pub: error: "


def refused(
    overrides: list[str], tmp_path: Path, prefix: tuple[str, ...] = (), outputs: str | None = None
) -> tuple[str, bool]:
    """Run the command line on a store in ``tmp_path``; assert exit status 2, one stderr line
    and no run in the store; return the line (without its prefix) and whether the store's
    file was created (before this test looked into it)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_cli(
        [
            f"tracking.uri={uri}",
            "tracking.experiment=hostile",
            f"paths.outputs={outputs or tmp_path / 'out'}",
            "dataset.n=500",
            *overrides,
        ],
        cwd=tmp_path,
        capped=True,
        prefix=prefix,
        timeout=REFUSED_WITHIN * calibrate(),
    )
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), done.stderr[-3000:]
    opened = (tmp_path / "mlflow.db").exists()
    assert runs_in(uri, "hostile") == []
    return lines[0][len(PREFIX) :], opened


# --- 1. an output folder that cannot be created --------------------------------------------


def test_outputs_under_a_file_is_refused_naming_the_key_and_the_path(tmp_path):
    (tmp_path / "file.txt").write_text("")
    outputs = tmp_path / "file.txt" / "out"
    line, _ = refused([], tmp_path, outputs=str(outputs))
    assert line.startswith(f"paths.outputs='{outputs}' is invalid: expected a directory where Hydra can create")
    assert f"({outputs}/hydra/runs/" in line and line.endswith(": Not a directory)")


def test_a_read_only_outputs_directory_is_refused(tmp_path):
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv (util-linux): a read-only directory is writable")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    line, _ = refused([], tmp_path, prefix=tuple(without_root_override()), outputs=str(locked / "out"))
    assert line == (
        f"paths.outputs='{locked / 'out'}' is invalid: expected a directory where Hydra can create and write "
        f"the job's output folder ({locked / 'out'}: Permission denied)"
    )


def test_outputs_in_proc_is_refused(tmp_path):
    line, _ = refused([], tmp_path, outputs="/proc/dp2pub-outputs")
    assert line.startswith("paths.outputs='/proc/dp2pub-outputs' is invalid: expected a directory where Hydra")
    assert "(/proc/dp2pub-outputs: " in line


# --- 2. a folder name longer than the file system allows -----------------------------------


def test_a_300_character_folder_name_is_refused(tmp_path):
    outputs = tmp_path / ("a" * 300)
    line, _ = refused([], tmp_path, outputs=str(outputs))
    assert line.startswith(f"paths.outputs='{str(outputs)[:99]}... ({len(str(outputs))} characters) is invalid")
    assert "File name too long: a folder name of 300 characters, where the file system allows 255)" in line
    assert len(line) < 600


# --- 3. an experiment name over MLflow's limit ---------------------------------------------


def test_the_experiment_name_limit_is_mlflows():
    from mlflow.utils.validation import MAX_EXPERIMENT_NAME_LENGTH as MLFLOW_LIMIT

    assert MAX_EXPERIMENT_NAME_LENGTH == MLFLOW_LIMIT == 500


def test_an_experiment_name_over_the_limit_is_refused_before_the_store_is_opened(tmp_path):
    line, opened = refused(["tracking.experiment=" + "e" * 600], tmp_path)
    assert line == (
        f"tracking.experiment='{'e' * 99}... (600 characters) is invalid: "
        "expected a non-empty name of at most 500 characters (MLflow's limit)"
    )
    assert not opened


def test_an_experiment_name_at_the_limit_composes():
    from dp2pub.settings import tracking_settings

    assert tracking_settings({"tracking": {"experiment": "e" * 500}}).experiment == "e" * 500
    with pytest.raises(ConfigError, match=r"tracking.experiment='e.*\(501 characters\) is invalid"):
        tracking_settings({"tracking": {"experiment": "e" * 501}})


# --- 4. a 50,000-character value is not echoed whole ---------------------------------------

HUGE = "v" * 50_000


def test_echo_shortens_long_values_only():
    assert echo("abc") == "'abc'" and echo(2.5) == "2.5" and shorten("x" * 100) == "x" * 100
    assert echo(HUGE) == f"'{'v' * 99}... (50000 characters)"
    assert shorten(HUGE) == f"{'v' * 100}... (50000 characters)"
    assert str(ConfigError("epsilon", HUGE, "a finite number > 0")).endswith(
        "... (50000 characters) is invalid: expected a finite number > 0"
    )


@pytest.mark.parametrize(
    "override,start",
    [
        (f"epsilon={HUGE}", "epsilon='vvv"),
        (f"foo={HUGE}", "foo=vvv"),
        (f"tracking.experiment={HUGE}", "tracking.experiment='vvv"),
        (f"dataset={HUGE}", "dataset='vvv"),
        (f"+dataset.{HUGE}=1", "dataset.vvv"),
    ],
    ids=["epsilon", "unknown key", "experiment", "group option", "huge key"],
)
def test_a_huge_value_is_echoed_shortened(override, start, tmp_path):
    line, _ = refused([override], tmp_path)
    length = len(override.lstrip("+").split("=")[0]) if override.startswith("+") else len(HUGE)
    assert line.startswith(start) and f"... ({length} characters)" in line, line[:300]
    assert len(line) < 600, len(line)


# --- 5. non-ASCII values must be quoted ----------------------------------------------------


@pytest.mark.parametrize(
    "override,quoted",
    [
        ("tracking.experiment=café", """'tracking.experiment="café"'"""),
        ("dataset.name=données", """'dataset.name="données"'"""),
    ],
)
def test_an_unquoted_non_ascii_value_is_refused_with_its_quoted_form(override, quoted, tmp_path):
    line, _ = refused([override], tmp_path)
    assert line == (
        f"{override} is invalid: expected a value in quotes, as Hydra's override grammar takes non-ASCII "
        f"characters only in a quoted string: write {quoted}"
    )


def test_the_quoted_form_is_what_hydra_takes():
    hint = quoting_hint("tracking.experiment=café")
    assert hint == """'tracking.experiment="café"'"""
    assert compose_config([hint.strip("'")]).tracking.experiment == "café"  # what the shell passes on
    assert quoting_hint("-m") is None and quoting_hint("epsilon=2") is None
    assert quoting_hint('tracking.experiment="café"') is None
    assert quoting_hint("tracking.experiment=a,é") == """'tracking.experiment=a,"é"'"""  # a sweep's values


# --- 6. metrics.ways=[] --------------------------------------------------------------------


def test_an_empty_list_of_ways_is_refused(tmp_path):
    line, _ = refused(["metrics.ways=[]"], tmp_path)
    assert line == (
        "metrics.ways=[] is invalid: expected a list of at least one way between 1 and the number of "
        "attributes, e.g. [1, 2]"
    )


# --- 7. dataset.name=car written for dataset=car -------------------------------------------


@pytest.mark.parametrize(
    "overrides,line",
    [
        (
            ["dataset.name=car"],
            "dataset.name='car' is invalid: expected the name of the selected dataset option (dataset=synthetic), "
            "as dataset.name only names the code that reads that option's keys: to use car, select its config "
            "with dataset=car",
        ),
        (
            ["mechanism.name=oue"],
            "mechanism.name='oue' is invalid: expected the name of the selected mechanism option (mechanism=grr), "
            "as mechanism.name only names the code that reads that option's keys: to use oue, select its config "
            "with mechanism=oue",
        ),
        (
            ["-m", "dataset=car,adult", "dataset.name=car"],
            "dataset.name='car' is invalid: expected the name of the selected dataset option (dataset=adult)",
        ),
    ],
    ids=["dataset.name", "mechanism.name", "sweep"],
)
def test_a_name_override_that_selects_another_option_is_refused(overrides, line, tmp_path):
    found, _ = refused(overrides, tmp_path)
    assert found.startswith(line), found


@pytest.mark.parametrize(
    "argv",
    [
        ["dataset=car", "dataset.name=car"],
        ["dataset=synthetic_bn_tree", "dataset.name=synthetic_bn"],  # the name the option sets itself
        ["mechanism=grr_table", "mechanism.name=grr"],
        ["experiment=nb_car", "dataset.name=car"],  # the experiment selects dataset=car
        ["dataset.name=cars"],  # no option: the job refuses it with the registered names
    ],
)
def test_a_name_override_that_agrees_with_the_selection_passes(argv):
    check_group_options(argv)


def test_a_name_override_against_an_experiments_selection_is_refused():
    with pytest.raises(ConfigError, match=r"\(mechanism=ldp_nb\).*select its config with mechanism=grr"):
        check_group_options(["experiment=nb_car", "mechanism.name=grr"])


def test_the_quoted_form_runs(tmp_path):
    """The suggested form of case 5 runs to a FINISHED run of experiment ``café``."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ran = run_cli(
        [f"tracking.uri={uri}", 'tracking.experiment="café"', f"paths.outputs={tmp_path / 'out'}", "dataset.n=500"],
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    (run,) = runs_in(uri, "café")
    assert run.info.status == "FINISHED"
