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
from dp2pub.learn.split import split_train_test
from dp2pub.learn.utility import classifier_metrics
from dp2pub.limits import check_job_size
from dp2pub.metrics.evaluate import evaluate_marginals
from dp2pub.publish.base import Publisher
from dp2pub.registry import build_dataset, build_publisher, planned_shape
from dp2pub.seeding import phase_rng
from dp2pub.settings import JobSettings
from dp2pub.validation import ConfigError, check_int

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
    ``mechanism``, ``metrics``, ``limits``) and return its metrics.

    Learning: when the dataset has a target and ``metrics.models`` is not empty (or the
    mechanism learns itself, ``ldp_nb``), the data is first split (adult: its own test rows;
    otherwise ``metrics.test_size``, stratified and seeded), only the training part is
    published, the marginal metrics compare the release with the training part, and
    ``accuracy_<model>`` / ``accuracy_<model>_baseline`` are measured on the untouched test
    part (skipped for frequency oracles that publish no table).

    Raises ConfigError, naming the config key, before any work if a value is out of range,
    and :class:`dp2pub.limits.TooLarge` if the job would not fit in ``limits``.
    """
    start = time.perf_counter()
    publisher = build_publisher(cfg["mechanism"])
    # publishers without a privacy budget (k-anonymity) set uses_epsilon = False
    settings = JobSettings.parse(cfg, uses_budget=getattr(publisher, "uses_epsilon", True))
    data = _load(cfg, publisher, settings)
    loaded = time.perf_counter()
    log.info("%s: %d records x %d attributes (%.2f s)", data.name, data.n, data.d, loaded - start)
    check_job_size(publisher, data.n, data.domain.sizes, settings.metrics, settings.limits,
                   f"{data.name} ({data.n} records x {data.d} attributes)")

    seed, models = settings.seed, list(settings.metrics.models)
    learns = hasattr(publisher, "fit_predict")  # a mechanism that trains a classifier itself
    if learns and data.target is None:
        raise ConfigError("mechanism.name", publisher.name, f"a mechanism for a dataset with a target; {data.name} has none")
    train, test = data, None
    if learns or (models and data.target is not None):
        try:
            train, test = split_train_test(data, settings.metrics.test_size, phase_rng(seed, "split"))
        except ConfigError as error:
            raise error.under("metrics") from None
    epsilon, mechanism_rng = settings.epsilon, phase_rng(seed, "mechanism")
    log.info("%s: publishing %d records at epsilon=%s ...", publisher.name, train.n, epsilon)
    if learns:
        outcome = publisher.fit_predict(train, test, epsilon, mechanism_rng)
    else:
        outcome = publisher.publish(train, epsilon, mechanism_rng)
    log.info("%s: done (%s)", publisher.name, ", ".join(f"{k} {v:.2f} s" for k, v in outcome.timings.items()))
    spent = outcome.epsilon_spent
    if spent is not None and (epsilon is None or spent > epsilon):  # exact: shares come from fit_shares
        raise RuntimeError(f"{publisher.name} spent epsilon={spent} > budget {epsilon}")
    learned: dict[str, float] = {}
    if test is not None and not learns and models and outcome.published is not None:
        learn_start = time.perf_counter()
        learned = classifier_metrics(outcome.published, train, test, models, phase_rng(seed, "learn"),
                                     covers=getattr(outcome.release, "covers", None))
        outcome.timings["learn"] = time.perf_counter() - learn_start
    log.info("metrics: %s-way marginals ...", "/".join(map(str, settings.metrics.ways)))
    evaluation = evaluate_marginals(train, outcome.release, phase_rng(seed, "metrics"),
                                    ways=settings.metrics.ways, max_subsets=settings.metrics.max_subsets)

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


def _load(cfg: Mapping, publisher: Publisher, settings: JobSettings) -> Dataset:
    """The job's dataset; a generated one is first checked against ``limits`` from its
    config alone (a real table is read first: it is small)."""
    dataset_cfg = cfg["dataset"]
    planned = planned_shape(dataset_cfg)
    if planned is not None:
        n, sizes = planned
        check_job_size(publisher, n, sizes, settings.metrics, settings.limits,
                       f"dataset.n={n}, dataset.d={len(sizes)}, dataset.k_max={max(sizes)}")
    data_seed = dataset_cfg.get("seed")
    seed = settings.seed if data_seed is None else check_int(data_seed, "dataset.seed", 0)
    paths = cfg.get("paths") or {}
    return build_dataset(dataset_cfg, phase_rng(seed, "data"), paths.get("data_dir"), paths.get("cache_dir"))
