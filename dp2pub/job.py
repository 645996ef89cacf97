"""One experiment job from a plain config mapping: data, publication, metrics.

Hydra and MLflow stay outside: ``run_job`` takes the resolved config as a dict and returns
plain results, so it runs the same from a script, a notebook or the CLI.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from dp2pub.data.dataset import Dataset
from dp2pub.learn.models import MODELS
from dp2pub.learn.split import split_train_test
from dp2pub.learn.utility import classifier_metrics
from dp2pub.metrics.evaluate import evaluate_marginals
from dp2pub.registry import build_dataset, build_publisher
from dp2pub.seeding import phase_rng
from dp2pub.validation import ConfigError, check_epsilon, check_int

log = logging.getLogger(__name__)


@dataclass
class JobResult:
    """Everything a job measured and produced."""

    metrics: dict[str, float]
    per_attribute: pd.DataFrame
    ledger: pd.DataFrame
    published: Dataset | None
    artifacts: dict = field(default_factory=dict)


def run_job(cfg: Mapping) -> JobResult:
    """Run the job described by ``cfg`` (keys ``epsilon``, ``seed``, ``dataset``,
    ``mechanism``, ``metrics``) and return its metrics.

    Learning: when the dataset has a target and ``metrics.models`` is not empty (or the
    mechanism learns itself, ``ldp_nb``), the data is first split (adult: its own test rows;
    otherwise ``metrics.test_size``, stratified and seeded), only the training part is
    published, the marginal metrics compare the release with the training part, and
    ``accuracy_<model>`` / ``accuracy_<model>_baseline`` are measured on the untouched test
    part (skipped for frequency oracles that publish no table).

    Raises ConfigError, naming the config key, before any work if a value is out of range.
    """
    start = time.perf_counter()
    publisher = build_publisher(cfg["mechanism"])
    # publishers without a privacy budget (k-anonymity) set uses_epsilon = False
    uses_epsilon = getattr(publisher, "uses_epsilon", True)
    epsilon = check_epsilon(cfg.get("epsilon")) if uses_epsilon else None
    seed = check_int(cfg.get("seed"), "seed", 0)
    metric_cfg = dict(cfg.get("metrics") or {})
    data_seed = cfg["dataset"].get("seed")
    data_rng = phase_rng(seed if data_seed is None else check_int(data_seed, "dataset.seed", 0), "data")
    paths = cfg.get("paths") or {}
    data = build_dataset(cfg["dataset"], data_rng, paths.get("data_dir"), paths.get("cache_dir"))
    loaded = time.perf_counter()
    log.info("%s: %d records x %d attributes (%.2f s)", data.name, data.n, data.d, loaded - start)

    models = [str(m) for m in metric_cfg.get("models") or ()]
    for model in models:
        if model not in MODELS:
            raise ConfigError("metrics.models", model, "one of " + ", ".join(sorted(MODELS)))
    learns = hasattr(publisher, "fit_predict")  # a mechanism that trains a classifier itself
    if learns and data.target is None:
        raise ConfigError("mechanism.name", publisher.name, f"a mechanism for a dataset with a target; {data.name} has none")
    train, test = data, None
    if learns or (models and data.target is not None):
        try:
            train, test = split_train_test(data, metric_cfg.get("test_size", 0.3), phase_rng(seed, "split"))
        except ConfigError as error:
            raise error.under("metrics") from None
    mechanism_rng = phase_rng(seed, "mechanism")
    log.info("%s: publishing %d records at epsilon=%s ...", publisher.name, train.n, epsilon)
    if learns:
        outcome = publisher.fit_predict(train, test, epsilon, mechanism_rng)
    else:
        outcome = publisher.publish(train, epsilon, mechanism_rng)
    log.info("%s: done (%s)", publisher.name, ", ".join(f"{k} {v:.2f} s" for k, v in outcome.timings.items()))
    spent = outcome.epsilon_spent
    if spent is not None and (epsilon is None or spent > epsilon * (1 + 1e-9)):
        raise RuntimeError(f"{publisher.name} spent epsilon={spent} > budget {epsilon}")
    learned: dict[str, float] = {}
    if test is not None and not learns and models and outcome.published is not None:
        learn_start = time.perf_counter()
        learned = classifier_metrics(outcome.published, train, test, models, phase_rng(seed, "learn"),
                                     covers=getattr(outcome.release, "covers", None))
        outcome.timings["learn"] = time.perf_counter() - learn_start
    ways = tuple(metric_cfg.get("ways", (1, 2)))
    log.info("metrics: %s-way marginals ...", "/".join(map(str, ways)))
    try:
        evaluation = evaluate_marginals(
            train,
            outcome.release,
            phase_rng(seed, "metrics"),
            ways=ways,
            max_subsets=metric_cfg.get("max_subsets", 100),
        )
    except ConfigError as error:
        raise error.under("metrics") from None

    metrics = {
        "n_records": float(data.n),
        "n_attributes": float(data.d),
        **evaluation.metrics,
        **outcome.extra_metrics,
        **learned,
    }
    if test is not None:
        metrics.update({"n_train": float(train.n), "n_test": float(test.n)})
    if spent is not None:
        metrics["epsilon_spent"] = spent
    timings = {"data": loaded - start, **outcome.timings, **evaluation.timings}
    timings["total"] = time.perf_counter() - start
    metrics.update({f"time_{phase}_s": seconds for phase, seconds in timings.items()})
    return JobResult(
        metrics, evaluation.per_attribute, pd.DataFrame(outcome.ledger), outcome.published, outcome.artifacts
    )
