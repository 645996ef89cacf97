"""One experiment job from a plain config mapping, as a pipeline of plain stages:

    load -> check size -> split -> publish -> check budget -> measure -> result

Each stage is a short function; what differs between mechanisms is said by their types
(:class:`~dp2pub.publish.base.Publisher`'s ``uses_budget`` and ``needs_target``; what the
:class:`~dp2pub.publish.release.Release` offers), never probed. Hydra and MLflow stay
outside: ``run_job`` takes the resolved config as a dict and returns plain results, so it
runs the same from a script, a notebook or the CLI (which records them, :mod:`dp2pub.tracking`).

:func:`run_job` runs the job described by ``cfg`` (keys ``epsilon``, ``seed``, ``dataset``,
``mechanism``, ``metrics``, ``limits``: those of ``conf/``) and returns its metrics (a
:class:`JobResult`). Its own docstring is short: every stage, ``run_job`` included, is at most
40 lines, docstring included (tests/test_pipeline.py).

Learning: when the dataset has a target and ``metrics.models`` is not empty (or the
mechanism learns the target itself, ``ldp_nb``), the data is first split (adult: its own
test rows; otherwise ``metrics.test_size``, stratified and seeded), only the training
part is published, the marginal metrics compare the release with the training part, and
``accuracy_<model>`` / ``accuracy_<model>_baseline`` are measured on the untouched test
part for every model the release gives (none for marginal estimates without a table).

Raises
------
ConfigError
    Naming the config key, before any work, if a value is out of range
    (``epsilon=-1.0 is invalid: expected a finite number > 0``).
dp2pub.limits.TooLarge
    If the job would not fit in ``limits``.

Examples
--------
>>> from dp2pub import run_job
>>> cfg = {"epsilon": 4.0, "seed": 0, "dataset": {"name": "car"},
...        "mechanism": {"name": "grr", "estimator": "norm_sub"}, "metrics": {"models": []}}
>>> result = run_job(cfg)
>>> {name: round(result.metrics[name], 3) for name in ("tvd_1way", "tvd_2way", "epsilon_spent")}
{'tvd_1way': 0.05, 'tvd_2way': 0.465, 'epsilon_spent': 4.0}
>>> run_job({**cfg, "epsilon": -1.0})
Traceback (most recent call last):
...
dp2pub.validation.ConfigError: epsilon=-1.0 is invalid: expected a finite number > 0
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import cast

import pandas as pd

from dp2pub.data.dataset import Dataset
from dp2pub.data.tally import Tally
from dp2pub.learn.split import split_train_test
from dp2pub.learn.utility import below_majority, classifier_metrics, task_metrics
from dp2pub.limits import check_job_size
from dp2pub.mechanisms.accounting import epsilon_spent
from dp2pub.metrics.evaluate import Evaluation, evaluate_marginals
from dp2pub.publish.base import Outcome, Publisher, allowance
from dp2pub.registry import build_dataset, build_publisher, build_tally, draws_counts, planned_shape
from dp2pub.seeding import phase_rng
from dp2pub.settings import JobSettings
from dp2pub.validation import ConfigError, check_int

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatasetInfo:
    """What a job's input table was, without its records (its provenance for a tracker)."""

    name: str
    n: int
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    target: str | None
    #: :meth:`Dataset.fingerprint` of the table: equal tables, equal digests (a job that
    #: simulates aggregates records its Tally's own digest, not the table's).
    digest: str

    @classmethod
    def of(cls, data: Dataset | Tally) -> DatasetInfo:
        """The description of ``data``."""
        sizes = tuple(int(k) for k in data.domain.sizes)
        return cls(data.name, data.n, data.domain.names, sizes, data.target, data.fingerprint())


@dataclass
class JobResult:
    """Everything a job measured and produced (what :func:`run_job` returns).

    Parameters
    ----------
    metrics : dict
        Metric name -> value: the marginal metrics (``tvd_1way``, ``mse_freq``, ...), the
        utility metrics (``accuracy_<model>``), ``epsilon_spent``, the mechanism's own and
        the wall times (``time_<phase>_s``).
    per_attribute : pandas.DataFrame
        One row per attribute: its TVD, ``mse_freq``, ``mse_count`` and ``mse_theory``.
    ledger : pandas.DataFrame
        The privacy ledger, one row per :class:`~dp2pub.mechanisms.accounting.Spend`.
    published : Dataset or None
        The published table, if the release is one.
    artifacts : dict, optional
        JSON-serializable objects a tracker logs as ``<name>.json``.
    notes : list of str, optional
        Lines a reader needs beside the numbers (:func:`result_notes`).
    guarantee : str, optional
        The privacy parameter of the run, ``epsilon=1.0`` or, for k-anonymity, ``k=10``.
    dataset : DatasetInfo, optional
        What was published from: the dataset as loaded, before any train/test split.

    Examples
    --------
    >>> from dp2pub import JobResult, run_job
    >>> result = run_job({"epsilon": 1.0, "seed": 0, "dataset": {"name": "car"},
    ...                   "mechanism": {"name": "grr"}, "metrics": {"models": []}})
    >>> isinstance(result, JobResult), result.guarantee, result.dataset.n
    (True, 'epsilon=1.0', 1728)
    >>> list(result.per_attribute["attribute"])
    ['buying', 'maint', 'doors', 'persons', 'lug_boot', 'safety', 'class']
    >>> result.metrics["epsilon_spent"], len(result.ledger)  # one ledger row per attribute
    (1.0, 7)
    """

    metrics: dict[str, float]
    per_attribute: pd.DataFrame
    ledger: pd.DataFrame
    published: Dataset | None
    artifacts: dict = field(default_factory=dict)
    #: Lines a reader needs beside the numbers (:func:`result_notes`).
    notes: list[str] = field(default_factory=list)
    #: The privacy parameter of the run, ``epsilon=1.0`` or, for k-anonymity, ``k=10``.
    guarantee: str = ""
    #: What was published from: the dataset as loaded, before any split.
    dataset: DatasetInfo | None = None


def run_job(cfg: Mapping) -> JobResult:
    """Run the job of a resolved config mapping; :mod:`dp2pub.job` gives its stages and examples.

    Parameters
    ----------
    cfg : mapping
        The keys of ``conf/``: ``epsilon``, ``seed``, ``dataset``, ``mechanism``, ``metrics``, ``limits``.

    Returns
    -------
    JobResult
        Its metrics, ledger and tables. Raises ConfigError, naming the key, before any work.
    """
    publisher = build_publisher(cfg["mechanism"])  # imports its module on first use: start-up, not the job
    start = time.perf_counter()
    settings = JobSettings.parse(cfg, uses_budget=publisher.uses_budget)
    data = load(cfg, publisher, settings)
    timings = {"data": time.perf_counter() - start}
    log.info("%s: %d records x %d attributes (%.2f s)", data.name, data.n, data.d, timings["data"])
    described = f"{data.name} ({data.n} records x {data.d} attributes)"
    counts = counts_only(cfg, publisher)
    memory = check_job_size(publisher, data.n, data.domain.sizes, settings.metrics, settings.limits, described, counts)
    train, test = split(data, publisher, settings)
    with allowance(memory):  # what the data decides (DP2-Pub's clusters) is claimed from what the limit leaves
        outcome = publish(publisher, train, settings)
    check_budget(publisher, outcome, settings.epsilon)
    learned = measure_utility(outcome, train, test, settings)
    evaluation = measure_marginals(outcome, train, settings)
    metrics = collect_metrics(data, train, test, outcome, evaluation, learned)
    timings.update({**outcome.timings, **evaluation.timings, "total": time.perf_counter() - start})
    metrics.update({f"time_{phase}_s": seconds for phase, seconds in timings.items()})
    ledger = pd.DataFrame([asdict(item) for item in outcome.ledger])
    notes, guarantee = (
        [*data.notes, *result_notes(cfg["mechanism"], outcome, evaluation, metrics)],
        publisher.guarantee(settings.epsilon),
    )
    result = JobResult(metrics, evaluation.per_attribute, ledger, outcome.published, outcome.artifacts, notes)
    result.guarantee, result.dataset = guarantee, DatasetInfo.of(data)
    return result


def load(cfg: Mapping, publisher: Publisher, settings: JobSettings) -> Dataset | Tally:
    """The job's dataset, or only its histograms for a publisher that needs no more
    (:attr:`~dp2pub.publish.base.Publisher.from_tally`); a generated one is first checked
    against ``limits`` from its config alone (a real table is read first: it is small)."""
    if publisher.from_tally:
        check_counts_suffice(settings)
    dataset_cfg = cfg["dataset"]
    planned = planned_shape(dataset_cfg)
    if planned is not None:
        n, sizes = planned
        check_job_size(
            publisher,
            n,
            sizes,
            settings.metrics,
            settings.limits,
            f"dataset.n={n}, dataset.d={len(sizes)}, dataset.k_max={max(sizes)}",
            counts_only(cfg, publisher),
            before_draw=True,
        )
    data_seed = dataset_cfg.get("seed")
    seed = settings.seed if data_seed is None else check_int(data_seed, "dataset.seed", 0)
    paths = cfg.get("paths") or {}
    build = build_tally if publisher.from_tally else build_dataset
    return build(dataset_cfg, phase_rng(seed, "data"), paths.get("data_dir"), paths.get("cache_dir"))


def counts_only(cfg: Mapping, publisher: Publisher) -> bool:
    """Whether the job's input is histograms drawn without records (the memory check then
    counts no table): a publisher that needs no more, on a generator that can draw them."""
    return publisher.from_tally and draws_counts(cfg["dataset"])


def check_counts_suffice(settings: JobSettings) -> None:
    """Refuse what needs records when the job simulates aggregates: joint marginals, and a
    published table to save."""
    if settings.save_published:
        raise ConfigError("save_published", True, "false with mechanism.simulate=aggregates (no records are published)")
    ways = list(settings.metrics.ways)
    if any(way > 1 for way in ways):
        raise ConfigError("metrics.ways", ways, "[1] with mechanism.simulate=aggregates (joint marginals need records)")


def split(data: Dataset | Tally, publisher: Publisher, settings: JobSettings) -> tuple[Dataset | Tally, Dataset | None]:
    """``(train, test)`` when something will be learned, else ``(data, None)`` (a tally
    cannot be split: learning needs records)."""
    if publisher.needs_target and data.target is None:
        raise ConfigError(
            "mechanism.name", publisher.name, f"a mechanism for a dataset with a target; {data.name} has none"
        )
    tasks = settings.metrics.tasks
    for task in tasks or ():
        if task not in data.domain.names:
            raise ConfigError("metrics.tasks", task, f"attributes of {data.name}: {', '.join(data.domain.names)}")
    learns = bool(settings.metrics.models) and (data.target is not None or tasks is not None)
    if not publisher.needs_target and not learns:
        return data, None
    if publisher.from_tally:
        raise ConfigError(
            "mechanism.simulate",
            "aggregates",
            f"records when classifiers are trained (metrics.models={list(settings.metrics.models)}); "
            "or metrics.models=[]",
        )
    table = cast(Dataset, data)  # a publisher that takes records was given the table
    try:
        return split_train_test(table, settings.metrics.test_size, phase_rng(settings.seed, "split"))
    except ConfigError as error:
        raise error.under("metrics") from None


def publish(publisher: Publisher, train: Dataset | Tally, settings: JobSettings) -> Outcome:
    """The publisher's outcome on the training part (or its tally), with its own random stream."""
    log.info("%s: publishing %d records at %s ...", publisher.name, train.n, publisher.guarantee(settings.epsilon))
    outcome = publisher.publish_from(train, settings.epsilon, phase_rng(settings.seed, "mechanism"))
    log.info("%s: done (%s)", publisher.name, ", ".join(f"{k} {v:.2f} s" for k, v in outcome.timings.items()))
    return outcome


def check_budget(publisher: Publisher, outcome: Outcome, epsilon: float | None) -> None:
    """Refuse an outcome that spent more than the budget: exactly, since budget shares come
    from :func:`~dp2pub.mechanisms.accounting.fit_shares` (and none without a budget). An
    outcome that is not private at the configuration's request (``epsilon_spent = inf``) is
    let through with a warning, its finite items still checked; one that spends more than
    epsilon at the configuration's request (``Outcome.beyond_budget``) is checked against
    the spend it allows (``Outcome.allowed_epsilon``), warned about, and noted under the
    results."""
    spent = outcome.epsilon_spent
    if outcome.not_private:
        log.warning("%s: NOT differentially private: %s (epsilon_spent=inf)", publisher.name, outcome.not_private)
        spent = epsilon_spent([item for item in outcome.ledger if item.epsilon < math.inf])
    bound = epsilon
    if outcome.beyond_budget:
        bound = outcome.allowed_epsilon
        log.warning(
            "%s: spent epsilon=%s, more than epsilon=%s: %s", publisher.name, spent, epsilon, outcome.beyond_budget
        )
    if publisher.uses_budget and (spent is None or bound is None or not spent <= bound):  # NaN fails too
        raise RuntimeError(f"{publisher.name} spent epsilon={spent} > budget {bound}")
    if not publisher.uses_budget and spent is not None:
        raise RuntimeError(f"{publisher.name} uses no budget but its ledger spent epsilon={spent}")


def measure_utility(
    outcome: Outcome, train: Dataset | Tally, test: Dataset | None, settings: JobSettings
) -> dict[str, float]:
    """The classifier metrics of the release (none without a test part): the models of
    ``metrics.models`` it gives, and always the model it is itself, if it is one; for the
    dataset's target, or for each of ``metrics.tasks``."""
    if test is None:
        return {}
    train = cast(Dataset, train)  # a test part exists only beside a table (split refuses a tally)
    start = time.perf_counter()
    models = list(dict.fromkeys([*settings.metrics.models, *outcome.release.models]))
    rng, tasks = phase_rng(settings.seed, "learn"), settings.metrics.tasks
    if tasks is None:
        learned = classifier_metrics(outcome.release, train, test, models, rng)
    else:
        learned = task_metrics(outcome.release, train, test, tasks, models, rng)
    if learned:
        outcome.timings["learn"] = time.perf_counter() - start
    return learned


def measure_marginals(outcome: Outcome, train: Dataset | Tally, settings: JobSettings) -> Evaluation:
    """The marginal metrics of the release against the training part (none if it answers no
    marginal query: ``max_way`` 0)."""
    if outcome.release.max_way != 0:
        log.info("metrics: %s-way marginals ...", "/".join(map(str, settings.metrics.ways)))
    return evaluate_marginals(
        train,
        outcome.release,
        phase_rng(settings.seed, "metrics"),
        ways=settings.metrics.ways,
        max_subsets=settings.metrics.max_subsets,
    )


def result_notes(
    mechanism: Mapping, outcome: Outcome, evaluation: Evaluation, metrics: Mapping[str, float]
) -> list[str]:
    """What the numbers alone would let a reader misread: a spend beyond epsilon that the
    configuration asked for, TVDs of estimates that are not distributions (they can exceed 1),
    IBU estimates stopped at their cap before converging (also logged as a warning), and
    classifiers below the majority-class rate."""
    notes = [outcome.beyond_budget] if outcome.beyond_budget else []
    if metrics.get("ibu_capped", 0) > 0:
        notes.append(
            f"ibu: {metrics['ibu_capped']:g} of {metrics['ibu_estimates']:g} estimates stopped at the cap of "
            f"{metrics['ibu_iterations_cap']:g} EM steps before the log-likelihood converged"
        )
        log.warning("%s", notes[-1])
    if not evaluation.distributions:
        hint = "; mechanism.estimator=norm_sub gives distributions" if "estimator" in mechanism else ""
        notes.append(
            "tvd_* compare estimates that are not distributions (negative entries or totals other than 1): "
            f"a TVD can exceed 1{hint}"
        )
    return notes + below_majority(metrics)


def collect_metrics(
    data: Dataset | Tally,
    train: Dataset | Tally,
    test: Dataset | None,
    outcome: Outcome,
    evaluation: Evaluation,
    learned: dict[str, float],
) -> dict[str, float]:
    """All metrics of the job but its wall times, in the order they are logged."""
    metrics = {
        "n_records": float(data.n),
        "n_attributes": float(data.d),
        **evaluation.metrics,
        **outcome.extra_metrics,
        **outcome.release.diagnostics(),
        **learned,
    }
    if test is not None:
        metrics.update({"n_train": float(train.n), "n_test": float(test.n)})
    if outcome.epsilon_spent is not None:
        metrics["epsilon_spent"] = outcome.epsilon_spent
    return metrics
