"""Classifier utility (``accuracy_<model>``): split, publish the training part only, test
on the untouched held-out part; generalized tables recoded by their covers."""

import numpy as np
import pytest

from dp2pub.data.car import load_car
from dp2pub.data.dataset import Dataset
from dp2pub.data.domain import Domain
from dp2pub.job import run_job
from dp2pub.learn.split import split_train_test
from dp2pub.learn.utility import below_majority, classifier_metrics, majority_rate, recoders
from dp2pub.publish.release import TableRelease
from dp2pub.seeding import phase_rng
from dp2pub.validation import ConfigError
from tests.learn.conftest import plain


def car(*overrides):
    return run_job(plain(["dataset=car", *overrides]))


def assert_accuracies(metrics, models=("logreg", "nb")):
    for model in models:
        for name in (f"accuracy_{model}", f"accuracy_{model}_baseline"):
            assert 0.0 <= metrics[name] <= 1.0, name
    assert 0.0 < metrics["accuracy_majority"] <= 1.0


def test_the_majority_rate_is_logged_beside_the_accuracies_and_a_classifier_below_it_gets_a_note():
    result = car("mechanism=grr", "epsilon=2")  # eps 2/7 per attribute: the classifiers learn noise
    train, test = split_train_test(load_car(), 0.3, phase_rng(0, "split"))  # the job's split (seed 0)
    majority = result.metrics["accuracy_majority"]
    assert majority == majority_rate(train, test) and 0.6 < majority < 0.8  # car: 70% unacc
    below = [m for m in ("logreg", "nb") if result.metrics[f"accuracy_{m}"] < majority]
    assert below  # measured: logreg 0.35, nb 0.36 against 0.70
    assert [note.split()[0] for note in result.notes] == [f"accuracy_{m}" for m in below]
    assert all(f"is below accuracy_majority {majority:.4g}" in note for note in result.notes)
    assert not car("mechanism=grr", "epsilon=2", "metrics.models=[]").notes  # nothing learned, no note


def test_below_majority_compares_the_releases_classifiers_only():
    metrics = {
        "accuracy_nb": 0.3,
        "accuracy_nb_baseline": 0.2,  # the original data's model: not the release's
        "accuracy_logreg": 0.8,
        "accuracy_majority": 0.7,
        "misclass_svm.x": 0.5,
        "misclass_svm_baseline.x": 0.9,
        "misclass_majority.x": 0.4,
        "misclass_svm.y": 0.1,
        "misclass_majority.y": 0.4,
        "misclass_svm.z": 0.9,  # no majority rate of task z: nothing to compare with
    }
    notes = below_majority(metrics)
    assert [note.split()[0] for note in notes] == ["accuracy_nb", "misclass_svm.x"]
    assert notes[0].startswith("accuracy_nb 0.3 is below accuracy_majority 0.7")
    assert notes[1].startswith("misclass_svm.x 0.5 is above misclass_majority.x 0.4")
    assert below_majority({"accuracy_nb": 0.7, "accuracy_majority": 0.7}) == []  # equal is not below


def test_majority_rate_by_hand():
    domain = Domain.from_sizes([2, 3])
    train = Dataset(np.array([[0, 0], [1, 2], [0, 2], [1, 1]]), domain, target="a1")  # majority: 2
    test = Dataset(np.array([[0, 2], [1, 0], [0, 2], [1, 2]]), domain, target="a1")
    assert majority_rate(train, test) == 0.75


@pytest.mark.parametrize("overrides", [["mechanism=grr", "mechanism.estimator=none"], ["mechanism=pram"]])
def test_ldp_publishers_on_car_publish_only_the_training_part(overrides):
    result = car(*overrides, "epsilon=2")
    m = result.metrics
    assert_accuracies(m)
    assert result.published.n == m["n_train"] == 1209 and m["n_test"] == 519
    assert m["n_records"] == 1728
    assert m["accuracy_logreg_baseline"] > 0.85  # car is nearly separable for logistic regression


def test_more_epsilon_gives_better_classifiers():
    low = car("mechanism=grr", "mechanism.estimator=none", "epsilon=0.5").metrics
    high = car("mechanism=grr", "mechanism.estimator=none", "epsilon=60").metrics
    assert high["accuracy_logreg"] == pytest.approx(high["accuracy_logreg_baseline"], abs=0.02)
    assert low["accuracy_logreg"] < high["accuracy_logreg"] - 0.2


@pytest.mark.parametrize("mechanism", ["samarati", "mondrian"])
def test_k_anonymous_tables_are_scored_on_recoded_test_records(mechanism):
    m = car(
        f"mechanism={mechanism}", "mechanism.quasi_identifiers=null", "mechanism.k=5", "metrics.models=[logreg,nb,svm]"
    ).metrics
    assert_accuracies(m, ("logreg", "nb", "svm"))
    assert m["accuracy_logreg"] > 0.6


def test_frequency_oracles_without_a_table_skip_the_classifiers():
    m = car("mechanism=oue").metrics
    assert not any(name.startswith("accuracy_") for name in m)


def test_no_models_publish_the_whole_table():
    result = car("metrics.models=[]")
    assert result.published.n == 1728 and "n_train" not in result.metrics


def test_split_is_stratified_seeded_and_keeps_adults_own_split():
    data = load_car()
    train, test = split_train_test(data, 0.3, np.random.default_rng(0))
    again, _ = split_train_test(data, 0.3, np.random.default_rng(0))
    np.testing.assert_array_equal(train.codes, again.codes)
    share = lambda d: np.bincount(d.column("class"), minlength=4) / d.n  # noqa: E731
    np.testing.assert_allclose(share(train), share(test), atol=0.01)
    with pytest.raises(ConfigError, match="metrics.test_size=1.5"):
        run_job(plain(["dataset=car", "metrics.test_size=1.5"]))


def test_unknown_model_is_refused():
    with pytest.raises(ConfigError, match="metrics.models='forest'"):
        run_job(plain(["metrics.models=[forest]"]))


def test_recoders_take_the_first_cover_and_an_unknown_code():
    original = Domain(("a", "y"), (("0", "1", "2", "3"), ("n", "p")))
    published = Domain(("a", "y"), (("[0..1]", "[1..2]"), ("n", "p")))
    covers = [np.array([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]]), np.eye(2)]
    maps = recoders(published, original, covers)
    assert maps[0].tolist() == [0, 0, 1, 2] and maps[1].tolist() == [0, 1]


def test_classifier_metrics_on_a_generalized_table():
    from dp2pub.data.dataset import Dataset

    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, 400)
    y = (x >= 2).astype(np.int64)
    original = Domain(("a", "y"), (("0", "1", "2", "3"), ("n", "p")))
    train = Dataset(np.column_stack([x, y]), original, target="y")
    test = Dataset(np.column_stack([x[:100], y[:100]]), original, target="y")
    published = Dataset(
        np.column_stack([x // 2, y]), Domain(("a", "y"), (("[0..1]", "[2..3]"), ("n", "p"))), target="y"
    )
    covers = [np.repeat(np.eye(2), 2, axis=1) / 2, np.eye(2)]
    m = classifier_metrics(TableRelease(published, covers=tuple(covers)), train, test, ["nb", "logreg"], rng)
    assert m["accuracy_nb"] == m["accuracy_nb_baseline"] == 1.0 and m["accuracy_logreg"] == 1.0


def test_adult_dp2pub_logs_classifier_accuracy():
    m = run_job(plain(["dataset=adult", "mechanism=dp2pub", "epsilon=4"])).metrics
    assert_accuracies(m)
    assert (m["n_train"], m["n_test"]) == (30162, 15060)
    assert m["accuracy_logreg_baseline"] > 0.8


def test_tasks_give_misclassification_per_task_with_baseline_and_majority():
    m = car(
        "mechanism=grr", "mechanism.estimator=none", "epsilon=60", "metrics.models=[nb]", "metrics.tasks=[class,safety]"
    ).metrics
    assert "accuracy_nb" not in m
    for task in ("class", "safety"):
        for name in (f"misclass_nb.{task}", f"misclass_nb_baseline.{task}", f"misclass_majority.{task}"):
            assert 0.0 <= m[name] <= 1.0, name
    # at epsilon 60 the table is the original: the same model errs the same
    assert m["misclass_nb.class"] == pytest.approx(m["misclass_nb_baseline.class"], abs=0.02)
    assert m["misclass_nb_baseline.class"] < m["misclass_majority.class"] - 0.1  # car's class is learnable
    # safety is uniform over 3 values and stratification was on the target (class): majority errs ~2/3
    assert m["misclass_majority.safety"] == pytest.approx(2 / 3, abs=0.05)


def test_tasks_split_a_table_without_a_target_and_refuse_unknown_attributes():
    m = run_job(
        plain(
            [
                "dataset=synthetic_bn",
                "dataset.n=2000",
                "mechanism=pram",
                "epsilon=4",
                "metrics.models=[logreg]",
                "metrics.tasks=[a0]",
                "metrics.test_size=0.2",
            ]
        )
    ).metrics
    assert (m["n_train"], m["n_test"]) == (1600, 400)
    assert {"misclass_logreg.a0", "misclass_logreg_baseline.a0", "misclass_majority.a0"} <= set(m)
    with pytest.raises(ConfigError, match="metrics.tasks='income' .*attributes of synthetic_bn: a0, a1"):
        run_job(plain(["dataset=synthetic_bn", "dataset.n=2000", "metrics.tasks=[income]"]))
    for bad in ("income", "[]"):
        with pytest.raises(ConfigError, match="metrics.tasks=.*a list of attribute names"):
            run_job(plain(["dataset=car", f"metrics.tasks={bad}"]))


def test_a_model_the_release_is_answers_only_its_own_target():
    m = car("mechanism=ldp_nb", "epsilon=4", "metrics.models=[]", "metrics.tasks=[class,safety]").metrics
    assert "misclass_nb.class" in m and "misclass_nb.safety" not in m
    assert "misclass_majority.safety" in m
