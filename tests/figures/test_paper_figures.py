"""The DP2-Pub paper's two figures: joined hues, metric families, two references, wrapped panels."""

from dataclasses import replace

import mlflow
import numpy as np
import pandas as pd
import pytest

from dp2pub.figures.aggregate import aggregate
from dp2pub.figures.cli import main
from dp2pub.figures.collect import collect, read_runs, runs_csv, write_csv
from dp2pub.figures.plot import build_figure, tick_labels
from tests.figures.conftest import STUDIES, log_run

FIG5, FIG6 = STUDIES["dp2pub_paper"], STUDIES["dp2pub_paper_svm"]
#: (mechanism.name, trust, prior): the lines; a mechanism without a key does not log it.
LINES = (
    ("dp2pub", "local", "ibu"),
    ("dp2pub", "trusted", "inverse"),
    ("privbayes", None, None),
    ("pram", None, "inverse"),
)
#: dataset -> its alpha-way AVDs and one SVM task.
DATASETS = {"nltcs": ((1, 3, 4), "a3"), "br2000": ((1, 2, 3), "a5")}


def metrics(line: int, dataset: str, seed: int) -> dict[str, float]:
    """Hand-made metrics: AVD alpha/10 + line/100 + seed/1000; misclass 0.3 + line/100 + seed/1000."""
    ways, task = DATASETS[dataset]
    shift = line / 100 + seed / 1000
    values = {f"tvd_{a}way": a / 10 + shift for a in ways}
    return {
        **values,
        f"misclass_svm.{task}": 0.3 + shift,
        f"misclass_svm_baseline.{task}": 0.2,
        f"misclass_majority.{task}": 0.45,
        "epsilon_spent": 1.0,
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    uri = f"sqlite:///{tmp_path_factory.mktemp('paper_store') / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("dp2pub_paper")
    start = 1_700_000_000_000
    for i, (name, trust, prior) in enumerate(LINES):
        for dataset in DATASETS:
            for seed in (0, 1):
                params = {"epsilon": "0.4", "seed": str(seed), "dataset.name": dataset, "mechanism.name": name}
                params |= {"mechanism.trust": trust} if trust else {}
                params |= {"mechanism.prior": prior} if prior else {}
                start += 10
                log_run(client, experiment, start, params, metrics(i, dataset, seed))
    return uri


def test_lines_join_the_params_a_mechanism_has(store):
    table = collect(FIG5, store)
    assert set(table["variant"]) == {"dp2pub/local/ibu", "dp2pub/trusted/inverse", "privbayes", "pram/inverse"}
    assert set(FIG5.hue_labels) >= set(table["variant"])  # every line of the study has a label


def test_tvd_family_reads_each_alpha_above_one_as_one_metric(store):
    table = collect(FIG5, store)
    assert set(table["metric"]) == {"tvd"}
    assert set(zip(table["dataset.name"], table["alpha"])) == {("nltcs", 3), ("nltcs", 4), ("br2000", 2), ("br2000", 3)}
    row = table[(table["variant"] == "privbayes") & (table["dataset.name"] == "nltcs") & (table["alpha"] == 4)]
    assert sorted(row["value"]) == pytest.approx([0.4 + 0.02, 0.4 + 0.02 + 0.001])


def test_svm_family_keeps_the_task_and_both_references(store):
    table = collect(FIG6, store)
    assert set(table["metric"]) == {"misclass_svm", "misclass_svm_baseline", "misclass_majority"}
    assert set(zip(table["dataset.name"], table["task"])) == {("nltcs", "a3"), ("br2000", "a5")}
    summary = aggregate(table)
    svm = summary[(summary["metric"] == "misclass_svm") & (summary["variant"] == "dp2pub/local/ibu")]
    assert sorted(svm["mean"]) == pytest.approx([0.3005, 0.3005])
    assert set(summary.loc[summary["metric"] == "misclass_majority", "mean"]) == {0.45}


def test_runs_csv_of_a_family_reads_back_to_the_same_table(store, tmp_path):
    table = collect(FIG6, store)
    path = write_csv(table, runs_csv(tmp_path, FIG6.name))
    assert read_runs(FIG6, path).equals(table)


def test_figure5_wraps_one_panel_per_dataset_and_alpha(store):
    fig = build_figure(FIG5, aggregate(collect(FIG5, store)))
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == [
        "data = br2000, alpha = 2",
        "data = br2000, alpha = 3",
        "data = nltcs, alpha = 3",
        "data = nltcs, alpha = 4",
    ]
    assert all(len(ax.get_lines()) == len(LINES) for ax in visible)


def test_figure6_draws_non_private_and_majority_lines(store):
    fig = build_figure(FIG6, aggregate(collect(FIG6, store)))
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[-3:] == ["non-private", "majority class", "95% t-interval of the mean"]
    panel = next(ax for ax in fig.axes if ax.get_title() == "data = nltcs, task = a3")
    styles = [(line.get_linestyle(), tuple(line.get_ydata())) for line in panel.get_lines()]
    assert (":", (0.2,)) in styles and ("-.", (0.45,)) in styles


def test_the_study_command_draws_both_figures(store, tmp_path, capsys, monkeypatch):
    # the store found from paths.outputs for both figures (collecting must not leave
    # MLFLOW_TRACKING_URI pointing elsewhere for the second)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    outputs = store.removeprefix("sqlite:///").removesuffix("/mlflow.db")
    assert main(["dp2pub_paper", f"paths.outputs={outputs}", f"figures.dir={tmp_path}"]) == 0
    written = capsys.readouterr().out.split()
    assert [p.rsplit("/", 1)[1] for p in written] == [
        f"{name}{suffix}"
        for name in ("dp2pub_paper", "dp2pub_paper_svm")
        for suffix in ("_runs.csv", "_summary.csv", ".png", ".pdf")
    ]
    # rebuilt from one runs CSV: that figure only
    csv = tmp_path / "dp2pub_paper_svm_runs.csv"
    assert main(["dp2pub_paper_svm", f"figures.from_csv={csv}", f"figures.dir={tmp_path / 'again'}"]) == 0
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == [
        "dp2pub_paper_svm.pdf",
        "dp2pub_paper_svm.png",
        "dp2pub_paper_svm_summary.csv",
    ]


def test_more_panels_than_wrap_go_on_several_lines(store):
    fig = build_figure(replace(FIG5, wrap=3), aggregate(collect(FIG5, store)))
    axes = fig.axes
    assert len(axes) == 6 and [ax.get_visible() for ax in axes] == [True] * 4 + [False] * 2
    # x labels under the last panel of each column, y labels at the start of each line
    assert [bool(ax.get_xlabel()) for ax in axes[:4]] == [False, True, True, True]
    assert [bool(ax.get_ylabel()) for ax in axes[:4]] == [True, False, False, True]


def test_legend_lists_the_lines_in_the_specs_order_then_each_reference_once(store):
    fig = build_figure(FIG6, aggregate(collect(FIG6, store)))
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    order = [FIG6.hue_labels[v] for v in ("dp2pub/local/ibu", "dp2pub/trusted/inverse", "privbayes", "pram/inverse")]
    assert legend[:4] == order
    assert legend.count("non-private") == 1 and legend.count("majority class") == 1


def test_a_spec_refuses_more_references_than_line_styles_and_a_wrap_below_one():
    with pytest.raises(ValueError, match="at most 2 references"):
        replace(FIG6, baselines={"misclass_svm": ("a", "b", "c")})
    with pytest.raises(ValueError, match="wrap must be >= 1"):
        replace(FIG5, wrap=0)


def test_references_of_several_metrics_share_one_legend_entry():
    spec = STUDIES["dp2pub_adult"]
    rows = [
        {"mechanism.name": "pram", "epsilon": e, "dataset.name": "adult", "metric": m, "n": 2, "mean": 0.8}
        for e in (1.0, 2.0)
        for m in ("accuracy_logreg", "accuracy_logreg_baseline", "accuracy_nb", "accuracy_nb_baseline")
    ]
    summary = pd.DataFrame(rows).assign(ci_low=0.7, ci_high=0.9)
    legend = [t.get_text() for t in build_figure(spec, summary).legends[0].get_texts()]
    assert legend.count("non-private") == 1


def test_log_axis_labels_ticks_no_closer_than_a_tenth_of_its_range():
    grid = np.array([0.2, 0.4, 0.6, 0.8, 1, 1.2, 1.4, 1.6, 2, 4, 8])
    assert tick_labels(grid, log=True) == ["0.2", "0.4", "0.6", "", "1", "", "", "1.6", "", "4", "8"]
    assert tick_labels(grid, log=False) == [f"{x:g}" for x in grid]
    # a grid spaced wider than the gap keeps every label (the studies' doubling budgets)
    assert tick_labels(np.array([0.5, 1, 2, 4, 8]), log=True) == ["0.5", "1", "2", "4", "8"]


def test_a_log_x_figure_draws_every_budget_as_a_tick_and_labels_some():
    spec = STUDIES["dp2pub_adult"]
    grid = [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 2.0, 4.0, 8.0]
    rows = [
        {"mechanism.name": "pram", "epsilon": e, "dataset.name": "adult", "metric": "tvd_2way", "n": 2, "mean": 0.5}
        for e in grid
    ]
    fig = build_figure(spec, pd.DataFrame(rows).assign(ci_low=0.4, ci_high=0.6))
    ax = next(ax for ax in fig.axes if ax.get_visible() and ax.get_lines())
    assert ax.get_xscale() == "log" and list(ax.get_xticks()) == grid
    assert [t.get_text() for t in ax.get_xticklabels()] == tick_labels(np.array(grid), log=True)
