"""LDP naive Bayes (Yilmaz, Al-Rubaie & Chang, arXiv:1905.01039): estimates, prediction,
budget, and its accuracy on car against non-private naive Bayes."""

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score

from dp2pub.job import run_job
from dp2pub.learn.ldp_nb import LDPNaiveBayes
from dp2pub.validation import ConfigError
from tests.learn.conftest import plain

PRIOR = np.array([0.6, 0.4])
#: COND[j][v, c] = P(x_j = v | c) of three features with 4, 3 and 5 values.
COND = [
    np.array([[0.5, 0.1], [0.3, 0.2], [0.1, 0.3], [0.1, 0.4]]),
    np.array([[0.7, 0.2], [0.2, 0.3], [0.1, 0.5]]),
    np.array([[0.2, 0.2], [0.2, 0.1], [0.2, 0.1], [0.2, 0.1], [0.2, 0.5]]),
]


def sample_naive_bayes(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n records drawn from the naive Bayes model PRIOR, COND (vectorized inverse CDF)."""
    y = rng.choice(PRIOR.size, size=n, p=PRIOR)
    X = np.empty((n, len(COND)), dtype=np.int64)
    for j, cond in enumerate(COND):
        cdf = np.cumsum(cond, axis=0)[:, y].T  # (n, k_j)
        X[:, j] = np.minimum((rng.random((n, 1)) > cdf).sum(axis=1), cond.shape[0] - 1)
    return X, y


def conditional_error(model: LDPNaiveBayes) -> float:
    return max(np.abs(np.exp(table) - truth).max() for table, truth in zip(model.log_conditionals_, COND))


@pytest.mark.parametrize("oracle", ["grr", "sue", "oue", "olh"])
def test_large_n_and_epsilon_recover_the_true_conditionals(oracle):
    X, y = sample_naive_bayes(100_000, np.random.default_rng(0))
    sizes = [c.shape[0] for c in COND]
    model = LDPNaiveBayes(
        oracle=oracle, epsilon=16.0, sizes=sizes, n_classes=2, random_state=np.random.default_rng(1)
    ).fit(X, y)
    assert conditional_error(model) < 0.03
    assert np.abs(model.prior_ - PRIOR).max() < 0.02
    noisy = LDPNaiveBayes(
        oracle=oracle, epsilon=0.5, sizes=sizes, n_classes=2, random_state=np.random.default_rng(1)
    ).fit(X, y)
    assert conditional_error(noisy) > 2 * conditional_error(model)


def test_conditionals_are_distributions_and_budget_is_split():
    X, y = sample_naive_bayes(5_000, np.random.default_rng(2))
    model = LDPNaiveBayes(epsilon=2.0, estimator="clip", alpha=0.5, n_classes=2, random_state=3).fit(X, y)
    for table in model.log_conditionals_:
        np.testing.assert_allclose(np.exp(table).sum(axis=0), 1.0)
    assert model.budgets_ == pytest.approx([0.5] * 4)
    assert model.reports_per_estimate_ == [5_000] * 4


def test_sample_strategy_gives_each_user_one_report_with_the_whole_budget():
    X, y = sample_naive_bayes(8_000, np.random.default_rng(4))
    model = LDPNaiveBayes(oracle="oue", epsilon=2.0, strategy="sample", n_classes=2, random_state=5).fit(X, y)
    assert model.budgets_ == [2.0] * 4
    assert sum(model.reports_per_estimate_) == 8_000
    assert min(model.reports_per_estimate_) > 1_500


def test_prediction_is_the_naive_bayes_rule():
    X, y = sample_naive_bayes(3_000, np.random.default_rng(6))
    model = LDPNaiveBayes(epsilon=4.0, n_classes=2, random_state=7).fit(X, y)
    test, _ = sample_naive_bayes(50, np.random.default_rng(8))
    expected = [
        np.argmax(
            [model.log_prior_[c] + sum(t[row[j], c] for j, t in enumerate(model.log_conditionals_)) for c in range(2)]
        )
        for row in test
    ]
    assert model.predict(test).tolist() == expected
    assert model.decision_function(test).shape == (50, 2)


def test_true_model_classifies_as_the_bayes_rule_at_large_epsilon():
    X, y = sample_naive_bayes(100_000, np.random.default_rng(9))
    test, truth = sample_naive_bayes(20_000, np.random.default_rng(10))
    model = LDPNaiveBayes(epsilon=30.0, n_classes=2, random_state=11).fit(X, y)
    bayes = np.argmax(np.log(PRIOR) + sum(np.log(c)[test[:, j]] for j, c in enumerate(COND)), axis=1)
    assert np.mean(model.predict(test) == bayes) > 0.99
    assert abs(np.mean(model.predict(test) == truth) - np.mean(bayes == truth)) < 0.01


@pytest.mark.parametrize(
    "key,value",
    [
        ("estimator", "unbiased"),
        ("strategy", "all"),
        ("alpha", 0),
        ("alpha", True),
        ("alpha", "0.5"),
        ("oracle", "rappor"),
        ("epsilon", 0),
    ],
)
def test_bad_parameters_are_refused_by_fit(key, value):
    X, y = sample_naive_bayes(100, np.random.default_rng(0))
    model = LDPNaiveBayes(**{key: value})  # scikit-learn's convention: parameters are checked by fit
    with pytest.raises(ConfigError, match=f"{key}="):
        model.fit(X, y)


def test_it_is_a_scikit_learn_classifier():
    X, y = sample_naive_bayes(6_000, np.random.default_rng(12))
    labels = np.array(["no", "yes"])[y]  # any labels, kept in classes_
    model = LDPNaiveBayes(epsilon=8.0, sizes=[c.shape[0] for c in COND], random_state=0)
    assert is_classifier(model) and clone(model).get_params() == model.get_params()
    fitted = clone(model).fit(X, labels)
    assert fitted.classes_.tolist() == ["no", "yes"]
    proba = fitted.predict_proba(X[:100])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert fitted.predict(X[:100]).tolist() == fitted.classes_[proba.argmax(axis=1)].tolist()
    assert fitted.score(X, labels) == np.mean(fitted.predict(X) == labels)
    scores = cross_val_score(model, X, labels, cv=3)
    bayes = np.mean(np.argmax(np.log(PRIOR) + sum(np.log(c)[X[:, j]] for j, c in enumerate(COND)), axis=1) == y)
    assert scores.shape == (3,) and np.all(np.abs(scores - bayes) < 0.05)  # eps=8 on 4000 users: near Bayes
    noisy = cross_val_score(model.set_params(epsilon=0.05), X, labels, cv=3)
    assert noisy.mean() < scores.mean()  # the budget matters: the test can fail


def test_prediction_refuses_an_unfitted_model_and_features_outside_the_domains():
    X, y = sample_naive_bayes(500, np.random.default_rng(14))
    with pytest.raises(NotFittedError):
        LDPNaiveBayes().predict(X)
    model = LDPNaiveBayes(epsilon=2.0, sizes=[c.shape[0] for c in COND], random_state=0).fit(X, y)
    assert model.n_features_in_ == X.shape[1]
    with pytest.raises(ValueError, match="must be"):
        model.predict(np.zeros((2, X.shape[1] + 1), dtype=int))
    with pytest.raises(ValueError, match="outside"):
        model.predict(np.full((2, X.shape[1]), -1))
    with pytest.raises(ValueError, match="outside"):
        model.predict(np.array([[c.shape[0] for c in COND]]))


def test_the_same_random_state_gives_the_same_model_and_a_generator_is_used_as_is():
    X, y = sample_naive_bayes(2_000, np.random.default_rng(13))
    a = LDPNaiveBayes(epsilon=1.0, random_state=5).fit(X, y)
    b = LDPNaiveBayes(epsilon=1.0, random_state=5).fit(X, y)
    np.testing.assert_array_equal(a.prior_, b.prior_)
    c = LDPNaiveBayes(epsilon=1.0, random_state=np.random.default_rng(5)).fit(X, y)
    np.testing.assert_array_equal(a.prior_, c.prior_)  # default_rng(5) either way


def car(*overrides):
    return run_job(plain(["dataset=car", "mechanism=ldp_nb", *overrides]))


@pytest.mark.parametrize("strategy", ["split", "sample"])
def test_ldp_nb_job_on_car_logs_accuracies_and_spends_epsilon(strategy):
    result = car("epsilon=2", f"mechanism.strategy={strategy}")
    m = result.metrics
    assert 0 <= m["accuracy_nb"] <= 1 and 0.8 < m["accuracy_nb_baseline"] <= 1
    assert m["epsilon_spent"] == pytest.approx(2.0)
    assert len(result.ledger) == (7 if strategy == "split" else 1)
    assert "accuracy_logreg" not in m  # the generic models do not run for ldp_nb
    assert (m["n_train"], m["n_test"]) == (1209, 519) and result.published is None


def mean_accuracy(epsilon, *overrides):
    runs = [car(f"epsilon={epsilon}", f"seed={s}", *overrides).metrics for s in range(3)]
    return np.mean([r["accuracy_nb"] for r in runs]), np.mean([r["accuracy_nb_baseline"] for r in runs])


def test_ldp_nb_on_car_improves_with_epsilon_and_reaches_the_baseline():
    low, baseline = mean_accuracy(0.5)
    mid, _ = mean_accuracy(4)
    high, _ = mean_accuracy(64)
    assert mid > low + 0.1
    assert high > baseline - 0.05  # the estimator is consistent: no privacy, no loss


@pytest.mark.xfail(
    strict=True,
    reason="the within-5-points criterion is out of reach on car's 1209 training users: split "
    "gives eps/7 per report (accuracy ~0.54 at eps=4), and sample's noise-free ceiling is more than "
    "5 points below (test below; experiments/nb_car_ceiling.py)",
)
@pytest.mark.parametrize("strategy", ["split", "sample"])
def test_ldp_nb_at_epsilon_4_is_within_5_points_of_naive_bayes(strategy):
    acc, baseline = mean_accuracy(4, f"mechanism.strategy={strategy}")
    assert acc >= baseline - 0.05


def test_sample_strategy_without_noise_stays_more_than_5_points_below_naive_bayes():
    """Why the criterion above fails for ``sample``: at eps=1000 GRR reports every value
    truthfully, so what is left is the protocol itself (each of the 7 estimates from ~173
    users); no estimator can do better than this with the same reports."""
    ceiling, baseline = mean_accuracy(1000, "mechanism.strategy=sample")
    sampled, _ = mean_accuracy(4, "mechanism.strategy=sample")
    assert ceiling < baseline - 0.05
    assert sampled <= ceiling + 0.02  # eps=4 is already close to that ceiling


def test_ldp_nb_needs_a_target():
    with pytest.raises(ConfigError, match="ldp_nb"):
        run_job(plain(["mechanism=ldp_nb", "dataset.n=500"]))


@pytest.mark.parametrize("models", ["[logreg]", "[]"])
def test_ldp_nb_measures_its_own_model_whatever_metrics_models_says(models):
    default = car("epsilon=2").metrics
    other = car("epsilon=2", f"metrics.models={models}").metrics
    for name in ("accuracy_nb", "accuracy_nb_baseline"):
        assert other[name] == default[name]
    assert "accuracy_logreg" not in other  # a model that learned itself gives no other model


def test_ldp_nb_logs_its_ibu_estimates():
    metrics = run_job(plain(["dataset=car", "mechanism=ldp_nb", "mechanism.estimator=ibu", "epsilon=4"])).metrics
    assert metrics["ibu_estimates"] == 7  # the class, and the (value, class) pair of each of 6 features
    assert metrics["ibu_iterations_cap"] == 10_000 and metrics["ibu_capped"] == 0
