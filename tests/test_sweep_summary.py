"""A sweep summarizes itself: its jobs' main metrics in one table (mean ± 95% t interval over
seeds), printed, and logged with a figure on the parent run, which is named by what the
sweep varied; each job prints one line."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dp2pub.cli import job_line
from dp2pub.figures.sweep_summary import (
    CSV,
    FIGURE,
    NOTE_CHARS,
    NOTE_TAG,
    TABLE,
    _note,
    figure_spec,
    summarize,
    varied_keys,
    with_swept_params,
)
from dp2pub.metrics.main import DEFAULT_PATTERNS, chosen_patterns, main_metrics
from dp2pub.sweep import labelled_logs, sweep_name
from tests.conftest import run_cli, runs_in


def runs_frame(rows: list[dict]) -> pd.DataFrame:
    """A frame as :func:`dp2pub.figures.sweep_summary.sweep_runs` returns it: params as text."""
    frame = []
    for number, row in enumerate(rows):
        params = {f"params.{k}": str(v) for k, v in row.items() if not k.startswith(("metrics.", "tags."))}
        others = {k: v for k, v in row.items() if k.startswith(("metrics.", "tags."))}
        key = {"tags.dp2pub.config_key": f"key{number}"}  # a configuration each, as the job tags it
        frame.append({"run_id": f"r{number}", "start_time": number, **key, **params, **others})
    return pd.DataFrame(frame)


def test_the_table_is_the_mean_and_t_interval_over_seeds_per_swept_configuration():
    rng = np.random.default_rng(5)
    values = {(eps, seed): rng.random() for eps in (0.5, 1.0) for seed in range(4)}
    runs = runs_frame(
        [
            {
                "epsilon": eps,
                "seed": seed,
                "metrics.tvd_1way": value,
                "metrics.epsilon_spent": eps,
                "metrics.time_total_s": 0.1,
            }
            for (eps, seed), value in values.items()
        ]
    )
    summary = summarize(runs, {"epsilon": ["0.5", "1"], "seed": ["0", "1", "2", "3"]}, [])
    assert summary is not None and summary.keys == ("epsilon",) and summary.seeds
    assert summary.metrics == ("tvd_1way", "epsilon_spent")  # no wall time: not a main metric
    table = summary.table.set_index("epsilon")
    for eps in (0.5, 1.0):
        sample = np.array([values[eps, seed] for seed in range(4)])
        half = stats.t.ppf(0.975, 3) * sample.std(ddof=1) / np.sqrt(4)
        assert table.loc[eps, "n"] == 4
        assert table.loc[eps, "tvd_1way"] == pytest.approx(sample.mean(), rel=1e-12)
        assert table.loc[eps, "tvd_1way_ci95"] == pytest.approx(half, rel=1e-12)
        assert table.loc[eps, "epsilon_spent_ci95"] == 0
    lines = summary.text().splitlines()
    assert lines[0].split() == ["epsilon", "n", "tvd_1way", "epsilon_spent"]
    mean, half = table.loc[0.5, "tvd_1way"], table.loc[0.5, "tvd_1way_ci95"]
    assert lines[2].split() == ["0.5", "4", f"{mean:.4g}", "±", f"{half:.2g}", "0.5"]  # a spread of 0: no ±


def test_without_swept_seeds_a_row_is_one_run_and_a_config_group_is_read_from_the_overrides():
    runs = runs_frame(
        [
            {"mechanism.name": name, "seed": 0, "metrics.accuracy_nb": acc, "tags.hydra_overrides": f"mechanism={m}"}
            for m, name, acc in [("dp2pub", "dp2pub", 0.5), ("dp2pub_trusted", "dp2pub", 0.75)]
        ]
    )
    summary = summarize(runs, {"mechanism": ["dp2pub_trusted", "dp2pub"]}, [])
    assert summary is not None and not summary.seeds
    assert summary.table[["mechanism", "n", "accuracy_nb"]].values.tolist() == [  # in the sweep's order
        ["dp2pub_trusted", 1, 0.75],
        ["dp2pub", 1, 0.5],
    ]
    assert "±" not in summary.text()
    assert "| dp2pub_trusted | 1 | 0.75 |" in summary.markdown()


def test_a_configuration_without_a_finished_run_has_no_row():
    # mechanism x dataset, one cell failed (samarati on car): three rows, not a row of NaN
    runs = runs_frame(
        [
            {"mechanism.name": m, "dataset.name": d, "metrics.tvd_1way": v, "tags.hydra_overrides": f"mechanism={m}"}
            for m, d, v in [("grr", "car", 0.1), ("grr", "adult", 0.2), ("samarati", "adult", 0.3)]
        ]
    )
    summary = summarize(runs, {"mechanism": ["grr", "samarati"], "dataset.name": ["car", "adult"]}, [])
    assert summary is not None
    assert summary.table[["mechanism", "dataset.name", "n", "tvd_1way"]].values.tolist() == [
        ["grr", "car", 1, 0.1],  # in the sweep's order
        ["grr", "adult", 1, 0.2],
        ["samarati", "adult", 1, 0.3],
    ]
    assert len(summary.text().splitlines()) == 5


def test_a_run_that_a_skipped_job_found_without_the_groups_override_is_placed_by_its_name():
    runs = runs_frame(
        [
            {"mechanism.name": "grr", "epsilon": 1.0, "metrics.tvd_1way": 0.5, "tags.hydra_overrides": "epsilon=1"},
            {"mechanism.name": "oue", "epsilon": 1.0, "metrics.tvd_1way": 0.4, "tags.hydra_overrides": "mechanism=oue"},
        ]
    )
    summary = summarize(runs, {"mechanism": ["grr", "oue"]}, [])
    assert summary is not None
    assert summary.table[["mechanism", "tvd_1way"]].values.tolist() == [["grr", 0.5], ["oue", 0.4]]


def test_what_a_sweep_varied_is_read_from_its_runs_when_its_sweeper_does_not_say():
    runs = runs_frame(
        [
            {"epsilon": e, "seed": s, "tags.hydra_overrides": f"epsilon={e} seed={s} dataset.n=500"}
            for e in (1, 2)
            for s in (0, 1)
        ]
    )
    assert varied_keys(runs) == {"epsilon": ["1", "2"], "seed": ["0", "1"]}
    assert sweep_name(None, Path("out/2026-11-26/22-14-46-1")) == "sweep · 2026-11-26 22:14:46"


def test_a_long_description_is_cut_after_whole_rows_within_its_bound():
    runs = runs_frame([{"epsilon": e, "metrics.tvd_1way": e / 1000} for e in range(1, 400)])
    summary = summarize(runs, {"epsilon": [str(e) for e in range(1, 400)]}, [])
    assert summary is not None
    note = _note(summary, "#/experiments/1/runs?x")
    assert len(note) <= NOTE_CHARS and note.endswith(f"(cut: the whole table is {CSV})")
    assert note.split("\n\n(cut")[0].splitlines()[-1].startswith("| ")  # a whole row before the cut


def test_a_sweep_of_seeds_alone_is_one_row():
    runs = runs_frame([{"seed": seed, "metrics.mse_freq": value} for seed, value in enumerate([0.1, 0.2, 0.6])])
    summary = summarize(runs, {"seed": ["0", "1", "2"]}, [])
    assert summary is not None and summary.keys == () and summary.seeds
    assert summary.table[["n", "mse_freq"]].values.tolist() == [[3, pytest.approx(0.3)]]
    assert summary.text().splitlines()[2].split()[:3] == ["3", "0.3", "±"]


def test_the_study_names_the_main_metrics_else_the_metric_contracts():
    logged = ["tvd_1way", "tvd_2way", "tvd_3way", "accuracy_nb", "accuracy_majority", "epsilon_spent", "time_total_s"]
    assert main_metrics(logged) == [
        "tvd_1way",
        "tvd_2way",
        "tvd_3way",
        "accuracy_majority",
        "accuracy_nb",
        "epsilon_spent",
    ]
    assert list(DEFAULT_PATTERNS) == ["tvd_*", "mse_freq", "accuracy_*", "epsilon_spent"]
    study = {"figures": {"a": {"metrics": ["tvd"], "families": [{"metric": "tvd", "pattern": "tvd_([2-9])way"}]}}}
    assert main_metrics(logged, chosen_patterns(study)) == ["tvd_2way", "tvd_3way"]
    named = {**study, "tracking": {"main_metrics": ["accuracy_*"]}}  # the sweep's own choice wins
    assert main_metrics(logged, chosen_patterns(named)) == ["accuracy_majority", "accuracy_nb"]
    assert main_metrics(logged, ["nothing_logged"]) == main_metrics(logged)  # a study metric not logged


def test_a_job_line_names_its_swept_values_and_main_metrics():
    line = job_line("[3/8] ", "epsilon=1 seed=2", {"tvd_1way": 0.471111, "time_total_s": 3.0, "epsilon_spent": 1.0}, [])
    assert line == "[3/8] epsilon=1 seed=2: tvd_1way 0.4711  epsilon_spent 1"


@pytest.mark.parametrize(
    ("varied", "name"),
    [
        ({"epsilon": ["0.5", "1", "2"], "seed": ["0", "1"]}, "ε 0.5,1,2 · seed 0,1 · 2026-11-26 22:14:46"),
        (
            {"mechanism": ["grr", "sue", "oue", "olh", "rappor", "hdg", "mst", "aim"]},
            "mechanism grr,sue,oue,olh,rappor,hdg,mst…(8) · ",
        ),
        ({"mechanism": ["grr", "sue", "oue", "olh", "rappor", "hdg"]}, "mechanism grr,sue,oue,olh,rappor,hdg · "),
        ({"seed": [str(s) for s in range(10)], "dataset.n": ["100", "1000"]}, "seed 0-9 · dataset.n 100,1000 · "),
        ({"mechanism.oracle": ["grr", "oue"]}, "oracle grr,oue · 2026-11-26 22:14:46"),
        ({}, "1 job · 2026-11-26 22:14:46"),
    ],
)
def test_a_parent_is_named_by_what_its_sweep_varied_first(varied, name):
    found = sweep_name(varied, Path("outputs/hydra/multirun/2026-11-26/22-14-46-123456"))
    assert found.startswith(name) and found.endswith("2026-11-26 22:14:46")


def test_a_long_name_keeps_its_date_and_time():
    varied = {f"key{i}.abc": [str(j) * 40 for j in range(3)] for i in range(12)}
    name = sweep_name(varied, Path("out/2026-11-26/22-14-46-1"))
    assert len(name) == 250 and name.endswith("… · 2026-11-26 22:14:46") and name.startswith("abc 0000")


def test_two_sweeps_are_told_apart_in_twenty_characters():
    when = Path("out/2026-11-26/22-14-46-1")
    names = [
        sweep_name({"epsilon": ["0.5", "1", "2"], "seed": ["0", "1"]}, when),
        sweep_name({"mechanism": ["grr", "oue"], "epsilon": ["1", "2"]}, when),
        sweep_name({"mechanism.strategy": ["split", "sample"], "epsilon": ["1", "4"]}, when),
    ]
    assert len({name[:20] for name in names}) == len(names)


def test_the_figure_puts_epsilon_on_x_and_draws_a_line_per_other_swept_value():
    runs = with_swept_params(
        runs_frame(
            [
                {"epsilon": e, "seed": 0, "mechanism.name": m, "tags.hydra_overrides": f"mechanism={m} epsilon={e}"}
                for e in (0.5, 4)
                for m in ("grr", "oue")
            ]
        ),
        ["mechanism", "epsilon"],
    )
    spec = figure_spec(["mechanism", "epsilon"], ["tvd_1way", "epsilon_spent"], runs)
    assert spec is not None
    assert (spec.x, spec.hue, spec.metrics, spec.log_x) == ("epsilon", "mechanism", ("tvd_1way",), True)
    assert figure_spec(["mechanism"], ["tvd_1way"], runs) is None  # nothing numeric to draw against


def test_a_quiet_job_keeps_its_progress_lines_in_its_log_file_not_on_the_console(tmp_path):
    console, logfile = io.StringIO(), tmp_path / "job.log"
    handlers = [logging.StreamHandler(console), logging.FileHandler(logfile)]
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    for handler in handlers:
        root.addHandler(handler)
    try:
        with labelled_logs("[2/3]", quiet=True):
            logging.getLogger("dp2pub.job").info("publishing")
            logging.getLogger("dp2pub.job").warning("a warning")
            logging.getLogger("other").info("not ours")
        logging.getLogger("dp2pub.job").info("after")
    finally:
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)
    assert console.getvalue().splitlines() == ["[2/3] a warning", "[2/3] not ours", "after"]
    assert logfile.read_text().splitlines() == ["[2/3] publishing", "[2/3] a warning", "[2/3] not ours", "after"]


@pytest.mark.slow
def test_a_sweep_prints_its_table_and_logs_it_with_a_figure_on_its_parent(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["dataset.n=400", f"tracking.uri={uri}", "tracking.experiment=sum", f"paths.outputs={tmp_path / 'out'}"]
    done = run_cli(["-m", "mechanism=grr,oue", "epsilon=1,2", "seed=0,1,2", *args], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    runs = runs_in(uri, "sum")
    (parent,) = [r for r in runs if r.data.tags.get("dp2pub.sweep") == "parent"]
    children = [r for r in runs if r is not parent]
    assert parent.info.run_name.startswith("mechanism grr,oue · ε 1,2 · seed 0-2 · ")
    # one line per job, 12 jobs
    assert len([line for line in done.stdout.splitlines() if re.match(r"\[\d+/12\] mechanism=", line)]) == 12
    # the table: per mechanism and epsilon, the mean and interval of the children's metrics
    csv = next((tmp_path / "out" / "hydra" / "multirun").glob(f"*/*/{CSV}"))
    table = pd.read_csv(csv)
    assert table.columns.tolist()[:3] == ["mechanism", "epsilon", "n"]
    for (mechanism, epsilon), row in table.set_index(["mechanism", "epsilon"]).iterrows():
        values = [
            c.data.metrics["tvd_1way"]
            for c in children
            if c.data.params["mechanism.name"] == mechanism and float(c.data.params["epsilon"]) == epsilon
        ]
        assert row["n"] == len(values) == 3
        assert row["tvd_1way"] == pytest.approx(np.mean(values), rel=1e-12)
        assert row["tvd_1way_ci95"] == pytest.approx(stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / np.sqrt(3))
    printed = done.stdout.split("\nsweep: ")[0].splitlines()
    assert printed[-1] == "(4 configurations, 12 runs; mean ± half-width of the 95% t interval over seeds)"
    header = printed[-7].split()
    assert header == ["mechanism", "epsilon", "n", "tvd_1way", "tvd_2way", "mse_freq", "epsilon_spent"]
    # the parent run holds the table (CSV, MLflow table, description) and the figure
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    assert sorted(a.path for a in client.list_artifacts(parent.info.run_id)) == sorted([CSV, TABLE, FIGURE])
    assert parent.data.tags[NOTE_TAG].startswith("**Sweep summary** (mean ± 95% t interval over seeds")
    png = Path(client.download_artifacts(parent.info.run_id, FIGURE, str(tmp_path / "dl")))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_figure_that_cannot_be_drawn_costs_the_figure_only(tmp_path, monkeypatch, capsys):
    from mlflow import MlflowClient

    from dp2pub.figures import sweep_summary
    from dp2pub.sweep import SweepParentCallback

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("figure")
    parent = client.create_run(experiment).info.run_id
    for epsilon in (1.0, 2.0):
        child = client.create_run(experiment, tags={"mlflow.parentRunId": parent}).info.run_id
        client.log_param(child, "epsilon", epsilon)
        client.log_metric(child, "tvd_1way", epsilon / 10)
        client.set_terminated(child)
    callback = SweepParentCallback()
    callback.client, callback.experiment_id, callback.sweep_dir = client, experiment, tmp_path
    callback.varied, callback.job_cfg = {"epsilon": ["1", "2"]}, {}

    def broken(*args, **kwargs):
        raise RuntimeError("no figure today")

    monkeypatch.setattr(sweep_summary, "draw", broken)
    callback._summarize(parent, kept=True)
    captured = capsys.readouterr()
    assert "the sweep's figure was not drawn: RuntimeError: no figure today" in captured.err
    assert "(2 configurations, 2 runs; one run each)" in captured.out
    assert sorted(a.path for a in client.list_artifacts(parent)) == [CSV, TABLE]  # the table, logged
    assert callback.view == parent  # and the view saved
