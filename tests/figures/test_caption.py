"""What a figure says about itself: the caption (data, n, d, runs, bands) derived from the runs,
bands inside the metric's range, the majority-class reference and the published marks."""

import numpy as np
import pandas as pd
import pytest

from dp2pub.figures.aggregate import aggregate
from dp2pub.figures.caption import seed_text
from dp2pub.figures.overlays import DP2PUB_REPOSITORY_TVD
from dp2pub.figures.plot import build_figure, panel_title
from tests.figures.conftest import STUDIES


def tidy_runs(configs: list[dict], metrics: dict[str, list[float]], seeds: int) -> pd.DataFrame:
    """Tidy runs (as collect returns them): every config run with each seed, the metric
    values of seed s the s-th of each list (cycled)."""
    rows = []
    for c, config in enumerate(configs):
        for seed in range(seeds):
            for metric, values in metrics.items():
                value = values[seed % len(values)]
                rows.append({"run_id": f"r{c}-{seed}", **config, "seed": seed, "metric": metric, "value": value})
    return pd.DataFrame(rows)


def caption_of(fig) -> str:
    """The caption under the title, its lines joined as its parts are."""
    return fig.subfigs[0].get_suptitle().replace("\n", " · ")


def adult_runs(n_train: float, d: float, seeds: int) -> pd.DataFrame:
    configs = [
        {"epsilon": e, "mechanism.name": m, "dataset.name": "adult"} for e in (1.0, 2.0) for m in ("grr", "pram")
    ]
    metrics = {
        "tvd_1way": [0.01, 0.02, 0.5],
        "accuracy_logreg": [0.99, 0.97, 0.6],
        "accuracy_logreg_baseline": [0.85],
        "accuracy_majority": [0.75],
        "n_records": [n_train + 1000],
        "n_train": [n_train],
        "n_attributes": [d],
    }
    return tidy_runs(configs, metrics, seeds)


@pytest.mark.parametrize(("n_train", "d", "seeds"), [(30162.0, 14.0, 3), (1209.0, 7.0, 10)])
def test_the_caption_states_data_n_d_runs_and_the_clipped_bands_of_the_runs(n_train, d, seeds):
    spec = STUDIES["dp2pub_adult"]
    fig = build_figure(spec, aggregate(adult_runs(n_train, d, seeds)), seeds=list(range(seeds)))
    assert caption_of(fig) == (
        f"UCI Adult, n = {int(n_train):,} training records, d = {int(d)} · {seeds} runs per point "
        f"(seeds 0–{seeds - 1}) · bands: 95% t-interval of the mean, clipped to [0, 1]"
    )


def test_drawn_bands_stay_inside_zero_and_one():
    spec = STUDIES["dp2pub_adult"]
    fig = build_figure(spec, aggregate(adult_runs(100.0, 3.0, 3)), seeds=[0, 1, 2])
    bands = [c for ax in fig.axes for c in ax.collections]
    assert bands  # one band per line and panel
    ys = np.concatenate([path.vertices[:, 1] for band in bands for path in band.get_paths()])
    assert ys.min() == 0.0 and ys.max() == 1.0  # the t intervals of 3 seeds reach past both ends


def test_every_accuracy_panel_draws_the_majority_class():
    for spec in STUDIES.values():
        for metric in (m for m in spec.metrics if m.startswith("accuracy_")):
            assert spec.references(metric)[-1] == "accuracy_majority", (spec.name, metric)
            assert "accuracy_majority" in spec.collected_metrics
    fig = build_figure(STUDIES["dp2pub_adult"], aggregate(adult_runs(100.0, 3.0, 3)), seeds=[0, 1, 2])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend.count("majority class") == 1
    panel = next(ax for ax in fig.axes if ax.get_ylabel().startswith("logistic regression"))
    assert ("-.", (0.75, 0.75)) in [(line.get_linestyle(), tuple(line.get_ydata())) for line in panel.get_lines()]


def paper_runs(sizes: dict[str, tuple[float, float]]) -> pd.DataFrame:
    configs = [
        {"epsilon": 1.0, "variant": "privbayes", "mechanism.name": "privbayes", "dataset.name": n} for n in sizes
    ]
    frames = []
    for config, (n, d) in zip(configs, sizes.values()):
        # as collect reads the tvd family: metric tvd, its alpha in a column (none for the sizes)
        frames.append(tidy_runs([{**config, "alpha": 2.0}], {"tvd": [0.3, 0.35]}, 2))
        frames.append(tidy_runs([config], {"n_records": [n / 0.8], "n_train": [n], "n_attributes": [d]}, 2))
    return pd.concat(frames, ignore_index=True)


def test_several_datasets_put_n_and_d_in_the_panel_titles():
    spec = STUDIES["dp2pub_paper"]
    summary = aggregate(paper_runs({"acs": (40000.0, 23.0), "nltcs": (17259.0, 16.0)}))
    fig = build_figure(spec, summary, seeds=[0, 1])
    assert caption_of(fig).startswith("data, n (training records), d per panel · 2 runs per point (seeds 0–1)")
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["acs (n = 40,000, d = 23), alpha = 2", "nltcs (n = 17,259, d = 16), alpha = 2"]


def test_seed_text():
    assert seed_text([0]) == "seed 0"
    assert seed_text([0, 1, 2]) == "seeds 0–2"
    assert seed_text([0, 2, 5]) == "seeds 0, 2, 5"


def seed_table_runs() -> pd.DataFrame:
    configs = [
        {"epsilon": e, "mechanism.estimator": est, "dataset.n": n, "dataset.d": d, "dataset.name": data}
        for e in (1.0, 5.0, 10.0)
        for est in ("none", "norm_sub")
        for n, d in ((1000, 50), (10000, 100))
        for data in ("synthetic", "synthetic_bn")
    ]
    rows = tidy_runs(configs, {"tvd_1way": [0.2, 0.21], "mse_count": [16.0]}, 2)
    sizes = [
        tidy_runs([c], {"n_records": [float(c["dataset.n"])], "n_attributes": [float(c["dataset.d"])]}, 2)
        for c in configs
    ]
    return pd.concat([rows, *sizes], ignore_index=True)


def test_seed_tables_marks_the_repository_numbers_in_their_panels_only():
    spec = STUDIES["seed_tables"]
    fig = build_figure(spec, aggregate(seed_table_runs()), seeds=[0, 1])
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 4 and {ax.get_yscale() for ax in visible} == {"linear"}
    assert all(ax.get_ylim() == (0.0, 1.0) for ax in visible)

    def marks(ax) -> list[tuple[float, float]]:
        found = [line for line in ax.get_lines() if line.get_marker() == "D" and line.get_linestyle() == "None"]
        return sorted((float(x), float(y)) for line in found for x, y in zip(*line.get_data()))

    by_title = {ax.get_title(): marks(ax) for ax in visible}
    published = DP2PUB_REPOSITORY_TVD[(1000, 50)]
    assert by_title == {
        "n = 1,000, d = 50; data = synthetic": sorted((float(e), v) for e, v in published.items()),
        "n = 10,000, d = 100; data = synthetic": [],  # the repository has no such table
        "n = 1,000, d = 50; data = synthetic_bn": [],  # nor correlated data
        "n = 10,000, d = 100; data = synthetic_bn": [],
    }
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "DP2-Pub repository's table" in legend
    assert "mse_count" not in {ax.get_ylabel() for ax in visible}
    assert caption_of(fig).startswith("data, n (records), d per panel · 2 runs per point")


def test_one_run_per_point_says_there_is_no_interval():
    spec = STUDIES["dp2pub_adult"]
    fig = build_figure(spec, aggregate(adult_runs(500.0, 4.0, 1)), seeds=[0])
    assert caption_of(fig) == "UCI Adult, n = 500 training records, d = 4 · 1 run per point (seed 0) · no interval"


def test_a_panel_title_too_long_for_its_panel_takes_two_lines():
    # nb_uci's 48 characters on one line ran into the next panel
    assert (
        panel_title("connect4 (n = 47,289, d = 43)", "strategy = sample")
        == "connect4 (n = 47,289, d = 43)\nstrategy = sample"
    )
    assert panel_title("car (n = 1,209, d = 7)", "strategy = sample") == "car (n = 1,209, d = 7); strategy = sample"
