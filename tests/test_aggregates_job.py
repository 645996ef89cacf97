"""``mechanism.simulate=aggregates`` through the library job and the command line: a billion
users, the same study results as records in distribution, and clear refusals of what needs
records."""

from __future__ import annotations

import numpy as np
import pytest
from omegaconf import OmegaConf
from scipy import stats

from dp2pub.data import Domain, make_synthetic
from dp2pub.data.synthetic import tally_synthetic
from dp2pub.data.tally import Tally
from dp2pub.job import run_job
from dp2pub.limits import TooLarge
from dp2pub.mechanisms import GRR
from dp2pub.registry import build_publisher
from dp2pub.validation import ConfigError
from tests.conftest import compose_config, run_cli, runs_in

#: fo_variance's single attribute, one oracle, the unbiased estimate.
STUDY = ["experiment=fo_variance", "mechanism.estimator=unbiased"]
AGGREGATES = "mechanism.simulate=aggregates"


def plain(overrides: list[str]) -> dict:
    return OmegaConf.to_container(compose_config(overrides), resolve=True)


def test_a_job_of_a_billion_users_runs_from_the_histogram():
    result = run_job(plain([*STUDY, "dataset.n=1000000000", AGGREGATES]))
    metrics = result.metrics
    assert metrics["n_records"] == 1e9 and metrics["epsilon_spent"] == 1.0
    # one job's MSE over 16 values: within a factor 4 of the closed form (its spread is ~ +-35%)
    assert metrics["mse_theory"] / 4 < metrics["mse_freq"] < 4 * metrics["mse_theory"]
    assert result.dataset is not None and result.dataset.n == 10**9 and result.published is None


@pytest.mark.parametrize("oracle", ["grr", "oue", "rappor"])
def test_records_and_aggregates_give_one_distribution_of_mse_freq(oracle):
    """Over 200 seeds at n = 20,000 both paths' mse_freq have the closed-form mean (within
    4.5 standard errors) and pass a two-sample Kolmogorov-Smirnov test at 1e-3."""
    records_cfg = plain([*STUDY, f"mechanism={oracle}", "dataset.n=20000"])
    aggregates_cfg = plain([*STUDY, f"mechanism={oracle}", "dataset.n=20000", AGGREGATES])
    seeds = range(200)
    records = np.array([run_job({**records_cfg, "seed": s}).metrics["mse_freq"] for s in seeds])
    aggregates = np.array([run_job({**aggregates_cfg, "seed": s}).metrics["mse_freq"] for s in seeds])
    theory = run_job(aggregates_cfg).metrics["mse_theory"]
    for errors in (records, aggregates):
        assert abs(errors.mean() - theory) <= 4.5 * errors.std(ddof=1) / np.sqrt(len(seeds))
    assert stats.ks_2samp(records, aggregates).pvalue > 1e-3


@pytest.mark.parametrize(
    "overrides,key,allowed",
    [
        (["mechanism=olh"], "mechanism.simulate", "records for olh: each user's random hash ties"),
        (["mechanism=rappor", "mechanism.estimator=ibu"], "mechanism.estimator", "rappor's ibu needs every report"),
        (["mechanism.strategy=sample"], "mechanism.strategy", "split with simulate=aggregates"),
        (["mechanism=sue", "mechanism.estimator=ibu"], "mechanism.estimator", "sue's ibu needs every report"),
        (["metrics.ways=[1,2]", "dataset.d=3"], "metrics.ways", "[1] with mechanism.simulate=aggregates"),
        (
            ["dataset=car", "metrics.ways=[1]", "metrics.models=[nb]"],
            "mechanism.simulate",
            "records when classifiers are trained",
        ),
        (["save_published=true"], "save_published", "false with mechanism.simulate=aggregates"),
    ],
)
def test_what_needs_records_is_refused_naming_the_key(overrides, key, allowed):
    with pytest.raises(ConfigError) as refused:
        run_job(plain(["mechanism.estimator=unbiased", *overrides, AGGREGATES]))
    assert refused.value.key == key and allowed in refused.value.allowed


def test_the_memory_check_counts_a_table_unless_the_counts_are_drawn_without_one():
    """A billion users fit in 1 GiB as drawn histograms; synthetic_bn builds its table first
    (5 GB at n = 10^9, d = 5): refused before anything is built."""
    small = [
        "metrics.ways=[1]",
        "dataset.n=1000000000",
        "dataset.d=5",
        "dataset.k_min=8",
        "dataset.k_max=8",
        "limits.memory_gib=1",
    ]
    assert run_job(plain([*small, AGGREGATES])).metrics["n_records"] == 1e9
    with pytest.raises(TooLarge, match=r"job too large: .* \(table 4\.\d+ GiB"):
        run_job(plain(["dataset=synthetic_bn", *small, AGGREGATES]))


def test_a_histogram_that_does_not_fit_the_domain_is_refused_in_one_line():
    with pytest.raises(ValueError) as refused:
        GRR(epsilon=1.0, k=16).simulate_counts(np.full(17, 62_500_000), np.random.default_rng(0))
    assert (
        str(refused.value) == "true_counts must be 16 non-negative integers, got shape (17,) dtype int64, min 62500000"
    )


def test_grr_ibu_and_a_real_table_run_from_counts():
    result = run_job(
        plain(["dataset=car", "metrics.models=[]", "metrics.ways=[1]", "mechanism.estimator=ibu", AGGREGATES])
    )
    assert result.metrics["n_records"] == 1728 and result.metrics["ibu_estimates"] == 7
    assert 0 <= result.metrics["tvd_1way"] <= 1


def test_a_tally_counts_its_table_and_a_synthetic_one_is_drawn_like_it():
    data = make_synthetic(n=5000, d=3, k_min=2, k_max=9, rng=np.random.default_rng(0))
    tally = Tally.of(data)
    assert tally.n == 5000 and tally.d == 3
    for j in range(3):
        np.testing.assert_array_equal(
            tally.one_way_counts(j), np.bincount(data.codes[:, j], minlength=tally.counts[j].size)
        )
    drawn = tally_synthetic(n=5000, d=3, k_min=2, k_max=9, rng=np.random.default_rng(0))
    assert list(drawn.domain.sizes) == list(data.domain.sizes)  # the same sizes from the same seed
    assert all(c.sum() == 5000 for c in drawn.counts) and drawn.fingerprint() != tally.fingerprint()
    with pytest.raises(ValueError, match="the same n >= 1 users"):
        Tally((np.array([1, 2]), np.array([2, 2])), Domain.from_sizes([2, 2]))


def test_a_records_publisher_refuses_a_tally_and_an_aggregates_one_tallies_a_table():
    data = make_synthetic(n=500, d=2, k_min=4, k_max=4, rng=np.random.default_rng(0))
    records = build_publisher({"name": "grr", "estimator": "unbiased"})
    with pytest.raises(ValueError, match="a Tally needs simulate=aggregates"):
        records.publish_tally(Tally.of(data), 1.0, np.random.default_rng(0))
    counted = build_publisher({"name": "oue", "estimator": "unbiased", "simulate": "aggregates"})
    outcome = counted.publish(data, 1.0, np.random.default_rng(0))
    assert outcome.release.max_way == 1 and outcome.epsilon_spent == 1.0
    assert outcome.release.marginal((1,)).shape == (4,)


@pytest.mark.slow
def test_the_billion_user_study_runs_through_the_command_line(tmp_path):
    done = run_cli(
        [
            "-m",
            *STUDY,
            "dataset.n=1000000000",
            AGGREGATES,
            "mechanism=grr,sue,oue",
            "epsilon=1",
            "seed=0",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"paths.outputs={tmp_path}",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    runs = [r for r in runs_in(f"sqlite:///{tmp_path / 'mlflow.db'}", "fo_variance") if "n_records" in r.data.metrics]
    assert sorted(r.data.params["mechanism.name"] for r in runs) == ["grr", "oue", "sue"]
    assert all(r.data.metrics["n_records"] == 1e9 for r in runs)
    assert "(3 configurations, 3 runs; one run each)" in done.stdout  # the sweep's table, mse_freq per oracle


def test_olh_with_aggregates_is_refused_by_the_registry():
    with pytest.raises(ConfigError, match=r"mechanism.simulate='aggregates' is invalid: expected records for olh"):
        build_publisher({"name": "olh", "simulate": "aggregates"})
