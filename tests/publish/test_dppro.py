"""DPPro: the noise scale by hand and against the exact tails, the projection's distribution,
the ledger, the keys, and the classifier trained on the release."""

import math

import numpy as np
import pytest
from omegaconf import OmegaConf
from scipy.stats import chi2, norm

from dp2pub.data import load_car, make_synthetic
from dp2pub.job import run_job
from dp2pub.learn.split import split_train_test
from dp2pub.learn.utility import classifier_metrics, split_xy
from dp2pub.mechanisms.dppro import (
    dppro_sigma,
    gaussian_scale,
    one_hot_sensitivity,
    project_codes,
    projected_norm_factor,
    projection_matrix,
    release_projection,
)
from dp2pub.metrics import evaluate_marginals
from dp2pub.publish.dppro import DPProPublisher
from dp2pub.registry import build_publisher
from dp2pub.validation import ConfigError
from tests.conftest import compose_config


def test_sigma_by_hand():
    # epsilon 1, delta 1e-5, k 4, three one-hot attributes: Delta = sqrt(2 * 3) = sqrt(6).
    # chi-square bound at delta/2: t = ln(2 / 1e-5) = 12.206072645530174,
    #   q = 4 + 2 sqrt(4 t) + 2 t = 4 + 2 * 6.987438055691134 + 24.412145291060348 = 42.38702140244261
    # Gaussian mechanism at delta/2 = 5e-6: ln(1 / (2 * 5e-6)) = ln(1e5) = 11.512925464970229,
    #   sqrt(2 (11.512925464970229 + 1)) / 1 = 5.002584425068752
    # sigma = sqrt(6) * sqrt(q / 4) * 5.002584425068752
    expected = math.sqrt(6) * math.sqrt(42.38702140244261 / 4) * 5.002584425068752
    assert expected == pytest.approx(39.8893083228, rel=1e-10)
    assert dppro_sigma(1.0, 1e-5, 4, one_hot_sensitivity(3)) == pytest.approx(expected, rel=1e-12)
    assert projected_norm_factor(4, 1e-5) == pytest.approx(math.sqrt(42.38702140244261 / 4), rel=1e-12)
    assert gaussian_scale(1.0, 5e-6, 1.0) == pytest.approx(5.002584425068752, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.05, 0.4, 1.6, 10.0, 200.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 0.01, 0.4])
@pytest.mark.parametrize("k", [1, 8, 64, 1000])
def test_sigma_meets_the_exact_chi_square_and_gaussian_tails(epsilon, delta, k):
    """Each half of delta, computed exactly: Pr over P of ||v P|| above the bound, and the
    Gaussian mechanism's exact delta(epsilon) at that bound (Balle & Wang 2018, Theorem 8)."""
    factor = projected_norm_factor(k, delta)
    assert chi2.sf(k * factor**2, k) <= delta / 2
    w = one_hot_sensitivity(5) * factor  # the sensitivity the noise must cover
    sigma = dppro_sigma(epsilon, delta, k, one_hot_sensitivity(5))
    exact = norm.cdf(w / (2 * sigma) - epsilon * sigma / w) - math.exp(epsilon) * norm.cdf(
        -w / (2 * sigma) - epsilon * sigma / w
    )
    assert exact <= delta / 2


def test_projection_entries_are_normal_with_variance_1_over_k():
    dim, k = 400, 25
    entries = projection_matrix(dim, k, np.random.default_rng(0)).ravel()
    m, var = entries.size, 1 / k
    # 5 standard errors: of the mean sqrt(var / m), of the sample variance var sqrt(2 / m)
    assert abs(entries.mean()) < 5 * math.sqrt(var / m)
    assert abs(entries.var() - var) < 5 * var * math.sqrt(2 / m)
    fourth = np.mean(entries**4) / var**2  # 3 for a normal; its sd is sqrt(96 / m)
    assert abs(fourth - 3) < 5 * math.sqrt(96 / m)
    again = projection_matrix(dim, k, np.random.default_rng(0))
    assert np.array_equal(again.ravel(), entries)  # the generator passed in, nothing global


def test_projecting_codes_is_multiplying_the_one_hot_vectors():
    rng = np.random.default_rng(1)
    sizes = [3, 2, 5]
    codes = np.column_stack([rng.integers(0, s, size=50) for s in sizes])
    one_hot = np.hstack([np.eye(s)[codes[:, j]] for j, s in enumerate(sizes)])
    projection = projection_matrix(sum(sizes), 7, rng)
    assert np.allclose(project_codes(codes, sizes, projection), one_hot @ projection)
    noisy = release_projection(codes, sizes, projection, 3.0, np.random.default_rng(2))
    noise = noisy - one_hot @ projection
    assert abs(noise.std() - 3.0) < 5 * 3.0 / math.sqrt(2 * noise.size)


@pytest.fixture(scope="module")
def car():
    return split_train_test(load_car(), 0.2, np.random.default_rng(0))


def test_at_a_huge_budget_the_svm_is_as_accurate_as_on_one_hot_features(car):
    train, test = car
    outcome = DPProPublisher(k=64).publish(train, 1e6, np.random.default_rng(3))
    metrics = classifier_metrics(outcome.release, train, test, ["svm", "logreg", "nb"], np.random.default_rng(4))
    assert metrics["accuracy_svm_baseline"] > 0.85
    assert abs(metrics["accuracy_svm"] - metrics["accuracy_svm_baseline"]) < 0.03
    assert abs(metrics["accuracy_logreg"] - metrics["accuracy_logreg_baseline"]) < 0.03
    assert "accuracy_nb" not in metrics  # naive Bayes takes categories, not projected vectors
    x_test, _ = split_xy(test)
    assert outcome.release.classifier("svm", train, 0).predict(x_test).shape == (test.n,)
    assert outcome.release.classifier("svm", train.with_target("safety"), 0) is None  # labels of class only


def test_at_a_small_budget_the_noise_is_real(car):
    train, test = car
    outcome = DPProPublisher().publish(train, 0.1, np.random.default_rng(3))
    assert outcome.extra_metrics["sigma"] > 100
    metrics = classifier_metrics(outcome.release, train, test, ["svm"], np.random.default_rng(4))
    assert metrics["accuracy_svm"] < metrics["accuracy_svm_baseline"] - 0.1


@pytest.mark.parametrize("epsilon", [0.1, 0.4, 1.0, 1.6, 3.0, 1e-3, 7.3])
@pytest.mark.parametrize("label_share", [0.5, 0.3, 0.1, 0.77])
def test_the_ledger_sums_exactly_to_epsilon_and_delta_is_logged(car, epsilon, label_share):
    train, _ = car
    outcome = DPProPublisher(label_share=label_share, delta=1e-6).publish(train, epsilon, np.random.default_rng(0))
    assert [item.phase for item in outcome.ledger] == ["project", "label"]
    assert outcome.ledger[1].attribute == "class"
    assert math.fsum(item.epsilon for item in outcome.ledger) == epsilon
    assert outcome.epsilon_spent == epsilon
    assert outcome.ledger[1].epsilon == pytest.approx(label_share * epsilon, rel=1e-12)
    assert outcome.extra_metrics["delta"] == 1e-6


def test_a_table_without_target_projects_everything_and_gives_no_classifier():
    data = make_synthetic(n=500, d=4, k_min=2, k_max=5, rng=np.random.default_rng(0))
    outcome = DPProPublisher(k=8).publish(data, 1.0, np.random.default_rng(1))
    assert [(item.phase, item.epsilon) for item in outcome.ledger] == [("project", 1.0)]
    assert outcome.release.released.shape == (500, 8)
    assert outcome.release.projection.shape == (int(data.domain.sizes.sum()), 8)
    sigma = dppro_sigma(1.0, 1e-5, 8, math.sqrt(2 * 4))
    assert outcome.extra_metrics["sigma"] == sigma
    assert outcome.release.classifier("svm", data, 0) is None


def test_the_release_answers_no_marginal_and_the_metrics_skip_it(car):
    train, _ = car
    release = DPProPublisher().publish(train, 1.0, np.random.default_rng(0)).release
    assert release.max_way == 0 and release.published is None
    with pytest.raises(ValueError, match="no marginal"):
        release.marginal((0,))
    evaluation = evaluate_marginals(train, release, np.random.default_rng(0), ways=(1, 2))
    assert evaluation.metrics == {} and evaluation.per_attribute.empty
    assert list(evaluation.per_attribute.columns) == [
        "attribute",
        "domain_size",
        "tvd",
        "mse_freq",
        "mse_count",
        "mse_theory",
    ]


@pytest.mark.parametrize(
    "kwargs,key",
    [
        ({"k": 0}, "k=0"),
        ({"k": -3}, "k=-3"),
        ({"k": 2.5}, "k=2.5"),
        ({"delta": 0}, "delta=0"),
        ({"delta": 1}, "delta=1"),
        ({"delta": -1e-5}, "delta=-1e-05"),
        ({"delta": 1.5}, "delta=1.5"),
        ({"label_share": 0.0}, "label_share=0.0"),
        ({"label_share": 1.0}, "label_share=1.0"),
    ],
)
def test_bad_keys_are_refused_naming_the_key(kwargs, key):
    with pytest.raises(ConfigError) as caught:
        DPProPublisher(**kwargs)
    assert key in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        build_publisher({"name": "dppro", **kwargs})
    assert f"mechanism.{key}" in str(caught.value)


def test_a_job_on_car_logs_the_svm_accuracy_and_no_marginal_metric():
    cfg = OmegaConf.to_container(
        compose_config(["dataset=car", "mechanism=dppro", "metrics.models=[svm]", "epsilon=1.6"]), resolve=True
    )
    result = run_job(cfg)
    metrics = result.metrics
    assert 0 <= metrics["accuracy_svm"] <= 1 and metrics["accuracy_svm_baseline"] > 0.85
    assert metrics["epsilon_spent"] == 1.6 and metrics["delta"] == 1e-5 and metrics["sigma"] > 0
    assert not any(name.startswith(("tvd_", "mse_")) for name in metrics)
    assert result.per_attribute.empty and result.published is None
    assert result.ledger["phase"].tolist() == ["project", "label"]
    assert math.fsum(result.ledger["epsilon"]) == 1.6
    assert {"time_project_s", "time_label_s", "time_learn_s"} <= set(metrics)


def test_the_study_tasks_are_the_labels_each_at_an_equal_part_of_the_label_budget(car):
    train, test = car
    publisher = DPProPublisher(labels=["class", "buying"], label_share=0.3)
    outcome = publisher.publish(train, 2.0, np.random.default_rng(0))
    labels = [(item.attribute, item.epsilon) for item in outcome.ledger if item.phase == "label"]
    assert [name for name, _ in labels] == ["buying", "class"]  # in column order
    assert labels[0][1] == labels[1][1] == pytest.approx(0.3, rel=1e-12)
    assert math.fsum(item.epsilon for item in outcome.ledger) <= 2.0
    release = outcome.release
    buying, target = train.domain.index("buying"), train.target_column
    assert buying == 0 and set(release.labels) == {buying, target}
    assert release.features == tuple(j for j in range(train.d) if j not in (buying, target))
    assert release.projection.shape[0] == sum(int(train.domain.sizes[j]) for j in release.features)
    # the first column is a label: a task's features sit at other positions of x for each task
    for task in ("buying", "class"):
        original = train.with_target(task)
        classifier = release.classifier("svm", original, 0)
        # a record is classified from its projected attributes, wherever they sit among its features
        x_test, _ = split_xy(test.with_target(task))
        direct = project_codes(test.codes[:, list(release.features)], release.sizes, release.projection)
        assert np.array_equal(classifier.predict(x_test), classifier.model.predict(direct))
    assert release.classifier("svm", train.with_target("safety"), 0) is None  # not a label


@pytest.mark.parametrize("labels", [[], ["class", 3], "class"])
def test_bad_labels_are_refused(labels):
    with pytest.raises(ConfigError, match="mechanism.labels"):
        build_publisher({"name": "dppro", "labels": labels})


def test_an_unknown_label_is_refused_naming_the_attributes(car):
    with pytest.raises(ConfigError, match=r"mechanism.labels=\['nosuch'\].*buying"):
        DPProPublisher(labels=["nosuch"]).publish(car[0], 1.0, np.random.default_rng(0))


def test_the_config_takes_the_study_tasks_as_labels():
    paper = OmegaConf.to_container(compose_config(["+paper=nltcs", "mechanism=dppro"]), resolve=True)
    assert paper["mechanism"]["labels"] == ["a3", "a5", "a15", "a11"]
    car = OmegaConf.to_container(compose_config(["dataset=car", "mechanism=dppro"]), resolve=True)
    assert car["mechanism"]["labels"] is None


@pytest.mark.parametrize(
    "labels,label_share,epsilon",
    [
        (["buying", "safety", "class"], 0.7802791218767311, 7.982116609167682),
        (["maint", "doors", "persons", "lug_boot", "safety"], 0.73, 0.9),
    ],
)
def test_several_labels_never_spend_more_than_epsilon(car, labels, label_share, epsilon):
    # an equal split of eps_labels, rounded, can sum to one ulp more than epsilon with eps_f
    outcome = DPProPublisher(labels=labels, label_share=label_share).publish(car[0], epsilon, np.random.default_rng(0))
    assert outcome.epsilon_spent <= epsilon
    shares = {item.epsilon for item in outcome.ledger if item.phase == "label"}
    assert len(shares) == 1
