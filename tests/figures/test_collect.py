"""collect: finished job runs only, newest run per configuration, typed params, tidy rows."""

import os

import mlflow
import pandas as pd
import pytest

from dp2pub.figures.collect import EmptyStudyError, collect, numeric_or_text, one_per_label, read_runs, write_csv
from tests.figures.conftest import STUDIES, VALUES

SPEC = STUDIES["fo_variance"]


def test_collect_drops_parent_failed_and_older_duplicates(fake_store):
    table = collect(SPEC, fake_store["uri"])
    runs = set(table["run_id"])
    assert runs == set(fake_store["kept"])
    for dropped in ("parent", "stale", "replaced", "failed"):
        assert fake_store[dropped] not in runs
    assert len(runs) == sum(len(v) for v in VALUES.values())


def test_runs_are_read_page_by_page(fake_store, monkeypatch):
    # pages of 2 runs: every page must be read, none twice
    whole = collect(SPEC, fake_store["uri"])
    monkeypatch.setattr("dp2pub.figures.collect.PAGE", 2)
    assert collect(SPEC, fake_store["uri"]).equals(whole)


def test_collect_gives_one_typed_row_per_run_and_metric(fake_store):
    table = collect(SPEC, fake_store["uri"])
    assert list(table.columns) == ["run_id", "study", *SPEC.params, "metric", "value"]
    # tvd_1way is not the study's; every study keeps the data's size
    assert set(table["metric"]) == {"mse_freq", "mse_theory", "n_records", "n_attributes"}
    assert (table["study"] == "fo_variance").all()
    assert table["epsilon"].dtype == float and table["dataset.n"].dtype.kind == "i"
    assert table["mechanism.num_bits"].dropna().eq(64).all()  # logged by RAPPOR runs only
    assert table.loc[table["mechanism.name"] == "grr", "mechanism.f"].isna().all()
    means = table[table["metric"] == "mse_freq"].groupby(["mechanism.name", "epsilon"])["value"].mean()
    assert means.to_dict() == pytest.approx({key: sum(v) / len(v) for key, v in VALUES.items()})


def test_runs_csv_reads_back_to_the_same_table(fake_store, tmp_path):
    table = collect(SPEC, fake_store["uri"])
    path = write_csv(table, tmp_path / "fo_variance_runs.csv")
    pd.testing.assert_frame_equal(read_runs(SPEC, path), table)
    with pytest.raises(ValueError, match="not a runs CSV of nb_car"):
        read_runs(STUDIES["nb_car"], path)


def test_numeric_or_text():
    assert numeric_or_text(pd.Series(["1", "None", "2.5"])).tolist()[::2] == [1.0, 2.5]
    assert numeric_or_text(pd.Series(["1", "2"])).dtype.kind == "i"
    text = numeric_or_text(pd.Series(["grr", "", None]))
    assert text.iloc[0] == "grr" and text.iloc[1:].isna().all()


def test_missing_store_or_experiment_is_empty_and_not_created(tmp_path, fake_store):
    db = tmp_path / "none" / "mlflow.db"
    with pytest.raises(EmptyStudyError, match="experiment 'fo_variance' in sqlite:///.*has no finished runs"):
        collect(SPEC, f"sqlite:///{db}")
    assert not db.exists()
    with pytest.raises(EmptyStudyError, match="dp2pub -m experiment=nb_car"):
        collect(STUDIES["nb_car"], fake_store["uri"])


def test_job_runs_keeps_the_newest_run_per_config_hash_and_falls_back_to_params():
    import pandas as pd

    from dp2pub.figures.collect import job_runs

    runs = pd.DataFrame(
        {
            "run_id": ["a", "b", "c", "d", "e"],
            "start_time": pd.to_datetime([1, 2, 3, 4, 5], unit="s"),
            "params.epsilon": ["1.0", "1.0", "2.0", "2.0", "2.0"],
            "params.tracking.uri": ["x", "y", "x", "x", "y"],
            "tags.dp2pub.config_hash": ["h1", "h1", "h2", None, None],
            "tags.dp2pub.sweep": ["child", "child", "child", None, "parent"],
        }
    )
    # a, b: one hash -> newest (b); c: its own hash; d: untagged, identified by its params; e: a parent
    assert sorted(job_runs(runs)["run_id"]) == ["b", "c", "d"]


def test_collecting_leaves_the_tracking_uri_as_it_was(fake_store, monkeypatch):
    # mlflow.set_tracking_uri would pin MLflow's global URI and set MLFLOW_TRACKING_URI: a
    # second figure of the same command would then resolve its store from them
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    before = mlflow.get_tracking_uri()
    collect(SPEC, fake_store["uri"])
    assert "MLFLOW_TRACKING_URI" not in os.environ and mlflow.get_tracking_uri() == before
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////somewhere/else.db")
    collect(SPEC, fake_store["uri"])
    assert mlflow.get_tracking_uri() == "sqlite:////somewhere/else.db"


def test_hue_values_that_share_a_legend_label_are_one_line():
    labels = {"ldp/adaptive": "ours, adaptive", "ldp/all": "ours, all", "ldp/adaptive/uniform/gum": "ours, adaptive"}
    hue = pd.Series(["ldp/adaptive/uniform/gum", "ldp/adaptive", "ldp/all", "other", None])
    assert one_per_label(hue, labels).tolist()[:4] == ["ldp/adaptive", "ldp/adaptive", "ldp/all", "other"]
    assert one_per_label(hue, {}).tolist()[:4] == hue.tolist()[:4]  # no labels: as they are
