"""A user's study in a --config-dir of its own, its overlays, a study without figures, and the
ad hoc form: drawn from small MLflow stores, refused in one line with status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from dp2pub.figures.aggregate import aggregate
from dp2pub.figures.cli import main
from dp2pub.figures.collect import collect
from dp2pub.figures.load import config_dirs, load_study
from dp2pub.figures.plot import build_figure
from tests.conftest import ROOT
from tests.figures.conftest import log_run

STUDY = """\
# @package _global_
defaults:
  - override /dataset: synthetic
  - override /mechanism: grr

dataset:
  n: 500

tracking:
  experiment: my_runs

hydra:
  sweeper:
    params:
      mechanism: grr,oue
      epsilon: 1,4

figures:
  my_figure:
    title: my oracles on uniform data
    x: epsilon
    metrics: [tvd_1way]
    hue: mechanism.name
    facets: [dataset.n]
    log_x: true
    data_labels:
      synthetic: my uniform table
    overlays:
      - name: marks
        label: Smith et al.
        points:
          - {x: 1, value: 0.2, dataset.n: 500}
          - {x: 4, value: 0.3, dataset.n: 999}
      - _target_: OVERLAYS:flat
        label: a flat line
        level: 0.05
"""
OVERLAY = '''\
import pandas as pd


def flat(spec, summary, level):
    """A curve per hue at ``level``."""
    rows = summary[summary["metric"].isin(spec.metrics)]
    return rows[[spec.hue, *spec.facets, spec.x, "metric"]].assign(value=level)


def not_a_frame(spec, summary):
    return [1, 2]


def fails(spec, summary):
    return {}["missing"]
'''
#: (mechanism, epsilon) -> tvd_1way of seeds 0 and 1.
RUNS = {("grr", 1.0): (0.3, 0.32), ("grr", 4.0): (0.1, 0.12), ("oue", 1.0): (0.25, 0.27), ("oue", 4.0): (0.08, 0.1)}


def params(mechanism: str, epsilon: float, seed: int) -> dict[str, str]:
    return {
        "epsilon": str(epsilon),
        "seed": str(seed),
        "mechanism.name": mechanism,
        "dataset.name": "synthetic",
        "dataset.n": "500",
        "dataset.d": "3",
        "tracking.experiment": "my_runs",
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """A store whose experiment my_runs holds the finished runs of :data:`RUNS`."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('user_store') / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("my_runs")
    start = 1_700_000_000_000
    for (mechanism, epsilon), values in RUNS.items():
        for seed, value in enumerate(values):
            start += 10
            metrics = {"tvd_1way": value, "n_records": 500.0, "n_attributes": 3.0}
            log_run(client, experiment, start, params(mechanism, epsilon, seed), metrics)
    return uri


@pytest.fixture(scope="module")
def configs(tmp_path_factory) -> Path:
    """A config folder: experiment/my_study.yaml (with figures), plain.yaml (without),
    broken.yaml (a bad section); the overlay module beside it."""
    folder = tmp_path_factory.mktemp("my_configs")
    (folder / "my_overlays.py").write_text(OVERLAY)
    (folder / "experiment").mkdir()
    (folder / "experiment" / "my_study.yaml").write_text(STUDY.replace("OVERLAYS", str(folder / "my_overlays.py")))
    plain = STUDY.split("figures:")[0].replace("my_runs", "plain_runs")
    (folder / "experiment" / "plain.yaml").write_text(plain)
    broken = STUDY.replace("log_x: true", "log_x: yes please").replace("OVERLAYS", str(folder / "my_overlays.py"))
    (folder / "experiment" / "broken.yaml").write_text(broken)
    return folder


def error_of(capsys, argv: list[str]) -> str:
    """The one line ``main(argv)`` exits with, status 2 (after the progress line of a figure
    whose runs were read)."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("dp2pub-figures: error: ") and all(" runs from " in line for line in lines[:-1]), lines
    assert len(lines) <= 2, lines
    return lines[-1] + "\n"


def test_a_users_study_draws_its_figure_from_its_config_dir(store, configs, tmp_path, capsys):
    argv = ["my_study", "--config-dir", str(configs), f"tracking.uri={store}", f"figures.dir={tmp_path}"]
    assert main(argv) == 0
    names = ["my_figure_runs.csv", "my_figure_summary.csv", "my_figure.png", "my_figure.pdf"]
    assert capsys.readouterr().out.split() == [str(tmp_path / name) for name in names]
    runs = pd.read_csv(tmp_path / "my_figure_runs.csv")
    assert runs["run_id"].nunique() == 8 and set(runs["study"]) == {"my_figure"}
    assert set(runs["metric"]) == {"tvd_1way", "n_records", "n_attributes"}
    # and the figure of the same name alone
    assert (
        main(["my_figure", "--config-dir", str(configs), f"tracking.uri={store}", f"figures.dir={tmp_path / 'b'}"]) == 0
    )
    assert (tmp_path / "b" / "my_figure.png").read_bytes() == (tmp_path / "my_figure.png").read_bytes()


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ("metrics: [tvd_1way]", "metrics: [tvd_1wya]"),
            "figures.my_figure.metrics: no finished run of experiment 'my_runs' logged 'tvd_1wya'",
        ),
        (
            ("hue: mechanism.name", "hue: mechanism.nmae"),
            "figures.my_figure.hue=mechanism.nmae: no finished run of experiment 'my_runs' has this parameter",
        ),
    ],
)
def test_a_misspelled_metric_or_hue_is_refused_not_drawn_empty(store, configs, tmp_path, capsys, change, message):
    folder = tmp_path / "conf"
    (folder / "experiment").mkdir(parents=True)
    study = (configs / "experiment" / "my_study.yaml").read_text().replace(*change)
    (folder / "experiment" / "typo.yaml").write_text(study)
    argv = ["typo", "--config-dir", str(folder), f"tracking.uri={store}", f"figures.dir={tmp_path}"]
    assert error_of(capsys, argv) == f"dp2pub-figures: error: {message}\n"
    assert not (tmp_path / "my_figure.png").exists()


def test_the_users_overlays_and_caption(store, configs):
    study = load_study("my_study", config_dirs(configs))
    assert (study.experiment, study.uri, study.outputs) == ("my_runs", None, "outputs")
    spec = study.figures[0]
    fig = build_figure(spec, aggregate(collect(spec, store)), seeds=[0, 1])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["GRR", "OUE", "a flat line", "Smith et al.", "95% t-interval of the mean"]
    (panel,) = [ax for ax in fig.axes if ax.get_visible()]
    marks = [line for line in panel.get_lines() if line.get_marker() == "D" and line.get_linestyle() == "None"]
    assert [tuple(line.get_xydata()[0]) for line in marks] == [(1.0, 0.2)]  # the point of n = 999 is in no panel
    flat = [line for line in panel.get_lines() if line.get_linestyle() == "--"]
    assert len(flat) == 2 and {y for line in flat for y in line.get_ydata()} == {0.05}
    assert fig.subfigs[0].get_suptitle().startswith("my uniform table, n = 500 records, d = 3")


def test_an_empty_experiment_names_the_sweep_with_its_config_dir(configs, tmp_path, capsys):
    err = error_of(capsys, ["my_study", "--config-dir", str(configs), f"paths.outputs={tmp_path}"])
    assert f"experiment 'my_runs' in sqlite:///{tmp_path}/mlflow.db has no finished runs" in err
    assert f"fill it with: dp2pub -m experiment=my_study --config-dir {configs} paths.outputs={tmp_path}\n" in err


def test_a_study_without_figures_points_at_the_ad_hoc_form(configs, capsys):
    err = error_of(capsys, ["plain", "--config-dir", str(configs)])
    assert f"study 'plain' has no figures: section in {configs / 'experiment' / 'plain.yaml'}" in err
    assert "draw its runs ad hoc: dp2pub-figures experiment=plain_runs x=epsilon y=<metric> hue=mechanism.name" in err


def test_a_bad_section_is_refused_naming_the_key(configs, capsys):
    err = error_of(capsys, ["broken", "--config-dir", str(configs)])
    assert "figures.my_figure.log_x='yes please' is invalid: expected true or false" in err


def test_an_overlay_that_returns_no_frame_is_named(configs, store, tmp_path, capsys):
    folder = tmp_path / "conf"
    (folder / "experiment").mkdir(parents=True)
    text = STUDY.replace("OVERLAYS:flat", f"{configs / 'my_overlays.py'}:not_a_frame").replace(
        "        level: 0.05\n", ""
    )
    (folder / "experiment" / "mine.yaml").write_text(text)
    err = error_of(capsys, ["mine", "-cd", str(folder), f"tracking.uri={store}", f"figures.dir={tmp_path}"])
    assert "overlay figures.my_figure.overlays[1] (" in err and "returned a list, not a pandas DataFrame" in err


def test_an_overlay_that_raises_is_one_line(configs, store, tmp_path, capsys):
    folder = tmp_path / "conf"
    (folder / "experiment").mkdir(parents=True)
    text = STUDY.replace("OVERLAYS:flat", f"{configs / 'my_overlays.py'}:fails").replace("        level: 0.05\n", "")
    (folder / "experiment" / "mine.yaml").write_text(text)
    err = error_of(capsys, ["mine", "-cd", str(folder), f"tracking.uri={store}", f"figures.dir={tmp_path}"])
    assert "overlay figures.my_figure.overlays[1] (" in err and "failed: KeyError: 'missing'" in err


def test_unknown_study_and_missing_config_dir(configs, capsys, tmp_path):
    err = error_of(capsys, ["nosuch", "--config-dir", str(configs)])
    assert "unknown study 'nosuch'; available: " in err and "my_figure" in err and "nb_car" in err
    assert "(not read: broken; dp2pub-figures <study> says why)" in err  # ... and in the help:
    assert "no such directory" in error_of(capsys, ["nb_car", "--config-dir", str(tmp_path / "none")])


def test_the_help_lists_the_forms_overlays_and_the_users_studies(configs, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help", "--config-dir", str(configs)])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for text in ("experiment=NAME x=PARAM y=METRIC", "figures.from_csv", "fo_theory", "dp2pub_repository", "marks"):
        assert text in out, text
    assert "  my_figure  " in out and "  plain: no figures: section (draw it ad hoc)" in out
    assert "  broken: cannot be read (" in out and "log_x" in out


ADHOC = ["experiment=my_runs", "x=epsilon", "y=tvd_1way", "hue=mechanism.name"]


def test_the_ad_hoc_form_draws_any_sweep(store, tmp_path, capsys):
    argv = [*ADHOC, "facet=dataset.n", "logx=true", "logy=true", f"tracking.uri={store}", f"figures.dir={tmp_path}"]
    assert main(argv) == 0
    names = ["my_runs_runs.csv", "my_runs_summary.csv", "my_runs.png", "my_runs.pdf"]
    assert capsys.readouterr().out.split() == [str(tmp_path / name) for name in names]
    summary = pd.read_csv(tmp_path / "my_runs_summary.csv")
    means = summary[summary["metric"] == "tvd_1way"].set_index(["mechanism.name", "epsilon"])["mean"]
    assert means.to_dict() == pytest.approx({key: sum(v) / 2 for key, v in RUNS.items()})
    # rebuilt from its runs CSV, named otherwise
    csv = tmp_path / "my_runs_runs.csv"
    rebuilt = [*ADHOC, "name=my_runs", f"figures.from_csv={csv}", f"figures.dir={tmp_path / 'again'}"]
    assert main(rebuilt) == 0
    assert (tmp_path / "again" / "my_runs.png").is_file()


def test_the_ad_hoc_figure(store):
    from dp2pub.figures.cli import adhoc_spec, parse_overrides

    settings = parse_overrides(
        ["experiment=my_runs", "x=epsilon", "y=tvd_1way,tvd_2way", "logy=true"], ["experiment", "x", "y", "logy"]
    )
    spec = adhoc_spec(settings)
    assert (spec.name, spec.hue, spec.metrics, spec.log_x, spec.log_y) == (
        "my_runs",
        "mechanism.name",
        ("tvd_1way", "tvd_2way"),
        False,
        True,
    )
    assert spec.title == "tvd_1way, tvd_2way against epsilon" and spec.x_label == "privacy budget ε (per user)"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["experiment=my_runs", "y=tvd_1way"], "the ad hoc form needs x=..."),
        (["experiment=my_runs", "x=epsilon"], "the ad hoc form needs y=..."),
        (["x=epsilon", "y=tvd_1way"], "the ad hoc form needs experiment=..."),
        ([*ADHOC, "logx=yes"], "logx='yes' is invalid: expected true or false"),
        ([*ADHOC, "colour=red"], "unknown key 'colour'; known keys: experiment, x, y, hue"),
        ([*ADHOC, "x=epsilon,seed"], "x='epsilon,seed' is invalid: expected one name"),
        (
            [*ADHOC, "x=nosuch"],
            "x=nosuch: no finished run of experiment 'my_runs' has this parameter; its runs have: dataset.d, dataset.n",
        ),
        ([*ADHOC, "facet=dataset.k"], "facet=dataset.k: no finished run of experiment 'my_runs' has this parameter"),
        (
            [*ADHOC, "y=tvd_9way"],
            "y=tvd_9way: no finished run of experiment 'my_runs' logged this metric; its runs have: n_attributes, n_records, tvd_1way",
        ),
    ],
)
def test_the_ad_hoc_form_refuses_in_one_line(store, tmp_path, capsys, argv, message):
    assert message in error_of(capsys, [*argv, f"tracking.uri={store}", f"figures.dir={tmp_path}"])
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_ad_hoc_form_reads_no_config(capsys, configs):
    assert "the ad hoc form (experiment=...) reads no config" in error_of(
        capsys, [*ADHOC, "--config-dir", str(configs)]
    )


@pytest.mark.slow
def test_the_command_draws_a_users_study(store, configs, tmp_path):
    figures = Path(sys.executable).parent / "dp2pub-figures"
    argv = [str(figures), "my_study", "--config-dir", str(configs), f"tracking.uri={store}", f"figures.dir={tmp_path}"]
    drawn = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stdout.split()[-1] == str(tmp_path / "my_figure.pdf")
    assert "my_figure: 8 runs from experiment 'my_runs'" in drawn.stderr
