"""LDP naive Bayes (Yilmaz, Al-Rubaie & Chang, arXiv:1905.01039): estimates, prediction,
budget in both accountings, the class prior from the pairs, and its accuracy on the paper's
datasets against non-private naive Bayes."""

import math

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score

from dp2pub.job import check_budget, run_job
from dp2pub.learn.ldp_nb import LDPNaiveBayes
from dp2pub.mechanisms.accounting import Spend
from dp2pub.publish.base import Outcome
from dp2pub.publish.ldp_nb import LDPNBPublisher
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


@pytest.mark.parametrize("oracle", ["grr", "sue", "oue", "olh", "adaptive"])
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


@pytest.mark.parametrize("estimator", ["clip", "norm_sub"])
def test_the_slot_encoding_recovers_the_true_conditionals_with_a_report_per_class_and_feature(estimator):
    X, y = sample_naive_bayes(100_000, np.random.default_rng(0))
    sizes = [c.shape[0] for c in COND]
    options = dict(encoding="slots", prior="report", strategy="split", estimator=estimator, sizes=sizes, n_classes=2)
    model = LDPNaiveBayes(epsilon=64.0, random_state=1, **options).fit(X, y)
    assert model.reports_ == [(None, None)] + [(j, c) for c in range(2) for j in range(3)]  # 1 + c * d
    assert model.budgets_ == pytest.approx([64.0 / 7] * 7) and model.oracles_ == ["grr"] * 7  # adaptive, small domains
    assert conditional_error(model) < 0.03 and np.abs(model.prior_ - PRIOR).max() < 0.02
    noisy = LDPNaiveBayes(epsilon=2.0, random_state=1, **options).fit(X, y)
    assert conditional_error(noisy) > 2 * conditional_error(model)
    with pytest.raises(ConfigError, match="prior='pairs'"):
        LDPNaiveBayes(encoding="slots", prior="pairs").fit(X, y)


def test_slots_refuse_ibu_and_sample_one_slot_per_user_even_with_reports_nobody_sent():
    X, y = sample_naive_bayes(40, np.random.default_rng(3))
    with pytest.raises(ConfigError, match="estimator='ibu'"):
        LDPNaiveBayes(encoding="slots", prior="report", estimator="ibu").fit(X, y)
    # 6 users, 1 + 3 classes x 3 features = 10 reports (one class nobody has): 4 or more go unsent
    model = LDPNaiveBayes(encoding="slots", prior="report", n_classes=3, epsilon=2.0, random_state=0)
    model.fit(X[:6], y[:6])
    counts = model.reports_per_estimate_
    assert len(model.reports_) == 10 and sum(counts) == 6 and min(counts) == 0
    assert all(np.isfinite(table).all() for table in model.log_conditionals_) and np.isfinite(model.log_prior_).all()
    assert model.predict(X).shape == (40,)


def test_a_refit_with_the_class_reported_drops_the_pooled_class_estimate():
    X, y = sample_naive_bayes(500, np.random.default_rng(3))
    model = LDPNaiveBayes(prior="pairs", random_state=0).fit(X, y)
    assert model.class_estimate_.shape == (2,)
    assert not hasattr(model.set_params(prior="report").fit(X, y), "class_estimate_")


def test_the_job_checks_a_spend_beyond_epsilon_against_what_the_configuration_allows():
    publisher, release = LDPNBPublisher(), object()
    over = [Spend("report", "a", 1.0), Spend("report", "b", 1.0)]
    with pytest.raises(RuntimeError, match="spent epsilon=2.0 > budget 1.0"):
        check_budget(publisher, Outcome(release, over), 1.0)  # no reason given: refused
    with pytest.raises(RuntimeError, match="spent epsilon=2.0 > budget 1.5"):
        check_budget(publisher, Outcome(release, over, beyond_budget="asked", allowed_epsilon=1.5), 1.0)
    check_budget(publisher, Outcome(release, over, beyond_budget="asked", allowed_epsilon=2.0), 1.0)
    with pytest.raises(ValueError, match="go together"):
        Outcome(release, over, beyond_budget="asked")


@pytest.mark.parametrize("prior,reports", [("report", 4), ("pairs", 3)])
def test_conditionals_are_distributions_and_budget_is_split(prior, reports):
    X, y = sample_naive_bayes(5_000, np.random.default_rng(2))
    model = LDPNaiveBayes(
        epsilon=2.0, estimator="clip", strategy="split", prior=prior, alpha=0.5, n_classes=2, random_state=3
    ).fit(X, y)
    for table in model.log_conditionals_:
        np.testing.assert_allclose(np.exp(table).sum(axis=0), 1.0)
    assert model.budgets_ == pytest.approx([2.0 / reports] * reports) and math.fsum(model.budgets_) <= 2.0
    assert model.reports_per_estimate_ == [5_000] * reports
    assert model.reports_ == ([(None, None)] if prior == "report" else []) + [(0, None), (1, None), (2, None)]
    np.testing.assert_allclose(model.prior_.sum(), 1.0)


@pytest.mark.parametrize("prior,reports", [("report", 4), ("pairs", 3)])
def test_sample_strategy_gives_each_user_one_report_with_the_whole_budget(prior, reports):
    X, y = sample_naive_bayes(8_000, np.random.default_rng(4))
    model = LDPNaiveBayes(oracle="oue", epsilon=2.0, strategy="sample", prior=prior, n_classes=2, random_state=5)
    model.fit(X, y)
    assert model.budgets_ == [2.0] * reports
    assert sum(model.reports_per_estimate_) == 8_000
    assert min(model.reports_per_estimate_) > 8_000 / reports - 4 * np.sqrt(8_000 / reports)


@pytest.mark.parametrize("accounting,spent", [("total", 2.0), ("per_report", 8.0)])
def test_per_report_accounting_gives_every_report_the_whole_epsilon(accounting, spent):
    X, y = sample_naive_bayes(1_000, np.random.default_rng(4))
    split = LDPNaiveBayes(epsilon=2.0, strategy="split", prior="report", accounting=accounting, random_state=5)
    assert math.fsum(split.fit(X, y).budgets_) == pytest.approx(spent)
    assert accounting == "per_report" or math.fsum(split.budgets_) <= 2.0  # exact under total
    sampled = LDPNaiveBayes(epsilon=2.0, strategy="sample", prior="report", accounting=accounting, random_state=5)
    assert sampled.fit(X, y).budgets_ == [2.0] * 4  # one report per user either way


@pytest.mark.parametrize("oracle,strategy", [("grr", "split"), ("oue", "sample")])
def test_the_class_prior_from_the_pairs_is_unbiased(oracle, strategy):
    """The mean of ``class_estimate_`` over many independent runs is within 4 standard errors
    (from the runs' own spread) of the class frequencies of the data; with the same noise,
    the projected ``prior_`` of a rare class is biased upwards, which the test sees too."""
    X, y = sample_naive_bayes(400, np.random.default_rng(20))
    y = np.where(np.arange(y.size) < 12, 1, 0)  # a rare class: 12 of 400 users (3%)
    truth = np.bincount(y, minlength=2) / y.size
    rng = np.random.default_rng(21)
    runs = 600
    model = LDPNaiveBayes(oracle=oracle, epsilon=0.5, strategy=strategy, prior="pairs", n_classes=2, random_state=rng)
    estimates, priors = np.empty((runs, 2)), np.empty((runs, 2))
    for r in range(runs):
        model.fit(X, y)
        estimates[r], priors[r] = model.class_estimate_, model.prior_
    se = estimates.std(axis=0, ddof=1) / np.sqrt(runs)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < 4 * se), (estimates.mean(axis=0), truth, se)
    assert priors.mean(axis=0)[1] - truth[1] > 4 * priors.std(axis=0, ddof=1)[1] / np.sqrt(runs)


def test_adaptive_picks_the_oracle_of_smaller_variance_per_report_domain():
    X, y = sample_naive_bayes(2_000, np.random.default_rng(4))
    X[:, 2] = np.arange(2_000) % 20  # a feature of 20 values: (value, class) pairs over 40
    model = LDPNaiveBayes(epsilon=1.0, oracle="adaptive", strategy="sample", prior="report", random_state=5)
    model.fit(X, y)
    # pairs over 8, 6, 40 values and the class over 2: GRR iff k < 3 e + 2 = 10.15
    assert model.oracles_ == ["grr", "grr", "grr", "oue"]
    with pytest.raises(ConfigError, match="options="):
        LDPNaiveBayes(oracle="adaptive", options={"g": 4}).fit(X, y)


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
        ("prior", "uniform"),
        ("encoding", "bits"),
        ("accounting", "none"),
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


def job(dataset, *overrides):
    return run_job(plain([f"dataset={dataset}", "mechanism=ldp_nb", *overrides]))


def car(*overrides):
    return job("car", *overrides)


@pytest.mark.parametrize(
    "strategy,prior,reports", [("split", "report", 7), ("split", "pairs", 6), ("sample", "pairs", 1)]
)
def test_ldp_nb_job_on_car_logs_accuracies_and_spends_epsilon(strategy, prior, reports):
    result = car("epsilon=2", f"mechanism.strategy={strategy}", f"mechanism.prior={prior}")
    m = result.metrics
    assert 0 <= m["accuracy_nb"] <= 1 and 0.8 < m["accuracy_nb_baseline"] <= 1
    assert m["epsilon_spent"] <= 2.0 and m["epsilon_spent"] == pytest.approx(2.0)
    assert len(result.ledger) == reports and result.guarantee == "epsilon=2.0"
    assert not any(note.startswith("epsilon_spent") for note in result.notes)
    assert "accuracy_logreg" not in m  # the generic models do not run for ldp_nb
    assert (m["n_train"], m["n_test"]) == (1209, 519) and result.published is None


def test_epsilon_spent_is_each_users_true_total_in_both_accountings():
    """Car: 6 features, so 7 reports with the class reported alone (25 with a slot per
    class and feature); per_report gives each epsilon, so each user spends 7 * epsilon (25 *
    epsilon), and the results say so."""
    total = car("epsilon=1.5", "mechanism.strategy=split", "mechanism.prior=report", "mechanism.accounting=total")
    assert total.metrics["epsilon_spent"] <= 1.5 and math.fsum(total.ledger["epsilon"]) <= 1.5
    per_report = car(
        "epsilon=1.5", "mechanism.strategy=split", "mechanism.prior=report", "mechanism.accounting=per_report"
    )
    assert per_report.metrics["epsilon_spent"] == 10.5  # 7 x 1.5, exactly
    assert per_report.ledger["epsilon"].tolist() == [1.5] * 7
    assert per_report.guarantee == "epsilon=1.5 per report"
    assert (
        per_report.notes[0].startswith("epsilon_spent=10.5 is each user's true total")
        and "7 reports" in per_report.notes[0]
    )
    slots = car(
        "epsilon=1.5",
        "mechanism.strategy=split",
        "mechanism.encoding=slots",
        "mechanism.prior=report",
        "mechanism.accounting=per_report",
    )
    assert slots.metrics["epsilon_spent"] == 37.5  # the class and 4 classes x 6 features: 25 x 1.5
    assert slots.ledger["attribute"].tolist()[:2] == ["class", "buying if class=unacc"]
    sampled = car("epsilon=1.5", "mechanism.strategy=sample", "mechanism.accounting=per_report")
    assert sampled.metrics["epsilon_spent"] == 1.5 and sampled.guarantee == "epsilon=1.5"
    assert not any(note.startswith("epsilon_spent") for note in sampled.notes)


def mean_accuracy(dataset, epsilon, *overrides, seeds=3):
    runs = [job(dataset, f"epsilon={epsilon}", f"seed={s}", *overrides).metrics for s in range(seeds)]
    return np.mean([r["accuracy_nb"] for r in runs]), np.mean([r["accuracy_nb_baseline"] for r in runs])


def test_ldp_nb_on_car_improves_with_epsilon_and_reaches_the_baseline():
    low, baseline = mean_accuracy("car", 0.5, "mechanism.strategy=split", "mechanism.prior=report")
    mid, _ = mean_accuracy("car", 4, "mechanism.strategy=split", "mechanism.prior=report")
    high, _ = mean_accuracy("car", 64, "mechanism.strategy=split", "mechanism.prior=report")
    assert mid > low + 0.1
    assert high > baseline - 0.05  # the estimator is consistent: no privacy, no loss


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["nursery", "mushroom", "connect4"])
def test_the_default_protocol_at_epsilon_4_is_within_5_points_of_naive_bayes(dataset):
    """The criterion: epsilon 4 spent in total per user, the default (best honest) protocol,
    mean of 5 seeds of a stratified 70/30 split (measured: nursery 0.891 vs 0.901, mushroom
    0.919 vs 0.952, connect4 0.684 vs 0.720)."""
    accuracy, baseline = mean_accuracy(dataset, 4, seeds=5)
    assert accuracy >= baseline - 0.05


@pytest.mark.parametrize("dataset", ["car", "chess"])
def test_on_car_and_chess_the_protocol_without_noise_stays_more_than_5_points_below_naive_bayes(dataset):
    """Why the criterion is not asked of car (1,209 training users, 6 features) and chess
    (2,237 users, 36 features): at eps=1000 GRR reports every value truthfully, so what is
    left is the protocol itself, each feature's joint estimated from the n / d users who
    sampled it (measured: car 0.797, chess 0.802 vs 0.853 and 0.876); eps=4 is within a few
    points of that ceiling (car 0.775, chess 0.774)."""
    ceiling, baseline = mean_accuracy(dataset, 1000)
    sampled, _ = mean_accuracy(dataset, 4)
    assert ceiling < baseline - 0.05
    assert sampled <= ceiling + 0.02


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


@pytest.mark.parametrize("prior,estimates", [("report", 7), ("pairs", 6)])
def test_ldp_nb_logs_its_ibu_estimates(prior, estimates):
    metrics = car(
        "mechanism.estimator=ibu", "mechanism.strategy=split", f"mechanism.prior={prior}", "epsilon=4"
    ).metrics
    assert metrics["ibu_estimates"] == estimates  # (the class and) the (value, class) pair of each of 6 features
    assert metrics["ibu_iterations_cap"] == 10_000 and metrics["ibu_capped"] == 0
