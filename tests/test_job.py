"""The library-level job: determinism, budget and input validation, without Hydra or MLflow."""

import math

import pytest
from omegaconf import OmegaConf

from dp2pub.job import run_job
from dp2pub.settings import JobSettings
from dp2pub.validation import ConfigError
from tests.conftest import CONTRACT, compose_config


def plain(overrides):
    return OmegaConf.to_container(compose_config(overrides), resolve=True)


def untimed(metrics):
    return {k: v for k, v in metrics.items() if not k.startswith("time_")}


def test_default_job_reports_the_contract_metrics():
    result = run_job(plain([]))
    for name in CONTRACT:
        assert name in result.metrics
    assert result.metrics["n_records"] == 10_000 and result.metrics["n_attributes"] == 10
    assert result.metrics["epsilon_spent"] == pytest.approx(1.0)
    assert len(result.per_attribute) == 10
    assert result.guarantee == "epsilon=1.0"


def test_same_config_and_seed_give_identical_metrics():
    cfg = plain(["epsilon=2", "seed=7", "dataset.n=3000"])
    assert untimed(run_job(cfg).metrics) == untimed(run_job(cfg).metrics)
    other = plain(["epsilon=2", "seed=8", "dataset.n=3000"])
    assert untimed(run_job(cfg).metrics) != untimed(run_job(other).metrics)


def test_dataset_seed_fixes_the_data_across_job_seeds():
    a = run_job(plain(["seed=1", "dataset.seed=5", "mechanism.estimator=none"]))
    b = run_job(plain(["seed=2", "dataset.seed=5", "mechanism.estimator=none"]))
    assert a.per_attribute["domain_size"].tolist() == b.per_attribute["domain_size"].tolist()
    assert a.metrics["tvd_1way"] != b.metrics["tvd_1way"]


def test_the_result_describes_the_table_it_loaded_before_the_split():
    info = run_job(plain(["dataset=car", "mechanism=ldp_nb"])).dataset
    assert info is not None
    assert (info.name, info.n, info.target) == ("car", 1728, "class")  # all 1728 records, not the training part
    assert info.names[-1] == "class" and info.sizes == (4, 4, 4, 3, 3, 3, 4)
    again = run_job(plain(["dataset=car", "mechanism=grr", "seed=5"])).dataset
    assert again is not None and again.digest == info.digest  # the same table whatever the job
    small = run_job(plain(["dataset.n=300"])).dataset
    other = run_job(plain(["dataset.n=300", "seed=1"])).dataset
    assert small is not None and other is not None and small.digest != other.digest  # other seed, other records


def test_mse_theory_matches_mse_freq_on_a_large_sample():
    result = run_job(
        plain(
            [
                "epsilon=4",
                "dataset.n=200000",
                "dataset.d=4",
                "dataset.k_min=16",
                "dataset.k_max=16",
                "mechanism.estimator=unbiased",
            ]
        )
    )
    ratio = result.metrics["mse_freq"] / result.metrics["mse_theory"]
    # 64 per-value squared errors: relative sd of their mean is about sqrt(2 / 64) = 0.18
    assert 0.5 < ratio < 1.5


BAD = [
    (["epsilon=-1"], "epsilon=-1"),
    (["epsilon=0"], "epsilon=0"),
    (["epsilon=nan"], "epsilon=nan"),
    (["epsilon=inf"], "epsilon=inf"),
    (["epsilon=abc"], "epsilon='abc'"),
    (["seed=-5"], "seed=-5"),
    (["dataset.n=0"], "dataset.n=0"),
    (["dataset.d=0"], "dataset.d=0"),
    (["dataset.k_min=1"], "dataset.k_min=1"),
    (["dataset.k_min=20", "dataset.k_max=10"], "dataset.k_min=20"),
    (["mechanism.estimator=mle"], "mechanism.estimator='mle'"),
    (["metrics.ways=[1,20]"], "metrics.ways=20"),
]


@pytest.mark.parametrize("overrides,message", BAD)
def test_bad_input_names_key_value_and_range(overrides, message):
    with pytest.raises(ConfigError) as caught:
        run_job(plain(overrides))
    assert message in str(caught.value) and "expected" in str(caught.value)


def test_a_given_epsilon_is_checked_whatever_the_mechanism():
    """A publisher without a budget (k-anonymity) ignores a valid epsilon and an absent one,
    and refuses a malformed one, as a budgeted one does (a typo in a sweep is never silent)."""
    assert JobSettings.parse({"epsilon": 2, "seed": 0}, uses_budget=False).epsilon is None
    assert JobSettings.parse({"epsilon": None, "seed": 0}, uses_budget=False).epsilon is None
    assert JobSettings.parse({"epsilon": 2, "seed": 0}).epsilon == 2.0
    for bad in ("abc", -1, 0, float("nan")):
        with pytest.raises(ConfigError, match="epsilon="):
            JobSettings.parse({"epsilon": bad, "seed": 0}, uses_budget=False)
    with pytest.raises(ConfigError, match="epsilon=None"):
        JobSettings.parse({"epsilon": None, "seed": 0})


def test_epsilon_nan_is_nan_not_a_string():
    assert math.isnan(plain(["epsilon=nan"])["epsilon"])


@pytest.mark.parametrize("mechanism", ["grr", "sue", "oue", "olh", "rappor"])
def test_every_oracle_meets_its_closed_form_on_the_issue_configuration(mechanism):
    result = run_job(
        plain(
            [
                f"mechanism={mechanism}",
                "mechanism.estimator=unbiased",
                "epsilon=4",
                "dataset.n=200000",
                "dataset.d=4",
                "dataset.k_min=16",
                "dataset.k_max=16",
                "metrics.ways=[1]",
            ]
        )
    )
    assert 0.75 <= result.metrics["mse_freq"] / result.metrics["mse_theory"] <= 1.33
    assert result.metrics["epsilon_spent"] <= 4.0
    assert "time_perturb_s" in result.metrics


def test_rappor_over_budget_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match="mechanism.f=0.01"):
        run_job(plain(["mechanism=rappor", "mechanism.f=0.01"]))


def test_a_release_that_is_not_a_distribution_gets_a_note_and_the_default_is_one():
    unbiased = run_job(plain(["mechanism.estimator=unbiased"]))
    assert unbiased.metrics["tvd_2way"] > 1  # eps 0.1 per attribute: joint estimates far off the simplex
    (note,) = unbiased.notes
    assert "not distributions" in note and "can exceed 1" in note and "mechanism.estimator=norm_sub" in note
    default = run_job(plain([]))
    assert default.notes == [] and 0 <= default.metrics["tvd_1way"] <= 1 and 0 <= default.metrics["tvd_2way"] <= 1
