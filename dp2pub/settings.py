"""The job-level keys of a config (``epsilon``, ``seed``, ``save_published``, ``metrics.*``,
``limits.*``, ``tracking.*``), typed and checked once, before any work.

Every key has one behaviour for types, the same as the mechanisms' and datasets' own keys:
a number must be a number (``metrics.test_size='0.3'`` is refused like ``epsilon='2'``), a
flag must be ``true`` or ``false`` (``save_published=no`` is refused, not read as true), a
list must be a list (``metrics.ways=2`` is refused with the hint ``[2]``), a name must not be
empty (``tracking.experiment=`` is refused, not silently defaulted). A key that is not
known is refused with the keys that are. Errors are :class:`~dp2pub.validation.ConfigError`
naming the full key. The checks are plain Python so that the library (``run_job`` on a dict)
and the command line refuse the same values in the same words; Hydra's struct mode also
refuses unknown keys when it composes the config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from dp2pub.learn.models import MODELS
from dp2pub.validation import (
    ConfigError,
    check_bool,
    check_epsilon,
    check_float,
    check_int,
    check_list,
    check_test_size,
    check_text,
)

#: Top-level keys of a job's config (hydra: Hydra's own, present in a composed config;
#: figures: a study's figures, which the job ignores and dp2pub-figures checks).
TOP_LEVEL = (
    "epsilon",
    "seed",
    "save_published",
    "dataset",
    "mechanism",
    "metrics",
    "limits",
    "tracking",
    "paths",
    "hydra",
    "figures",
)


#: The longest experiment name MLflow accepts (``mlflow.utils.validation``'s
#: ``MAX_EXPERIMENT_NAME_LENGTH``, not imported: the command line checks its keys before it
#: imports MLflow; tests/hostile/test_hydra_faults.py checks that the two agree).
MAX_EXPERIMENT_NAME_LENGTH = 500


def _unknown(section: str, cfg: Mapping, known: tuple[str, ...]) -> None:
    extra = sorted(set(cfg) - set(known))
    if extra:
        prefix = f"{section}." if section else ""
        raise ConfigError(f"{prefix}{extra[0]}", cfg[extra[0]], f"a key of {section or 'the config'}: {list(known)}")


def _section(cfg: Mapping, name: str) -> Mapping:
    value = cfg.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(name, value, "a mapping of keys")
    return value


def _keys(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class MetricSettings:
    """``metrics.*``: which marginals are compared, which classifiers are trained.

    ``ways``: the k of the ``tvd_<k>way`` metrics, at least one (1 is always reported); ``max_subsets``:
    at most this many k-subsets of attributes per k (a seeded sample), None = all;
    ``models``: classifiers of ``accuracy_<model>`` (see :mod:`dp2pub.learn.models`);
    ``test_size``: the held-out fraction, in (0, 1), checked whether or not a split happens;
    ``tasks``: attributes to predict, each a learning task of ``misclass_<model>.<task>``
    (see :func:`dp2pub.learn.utility.task_metrics`), None = only the dataset's target
    (``accuracy_<model>``).
    """

    ways: tuple[int, ...] = (1, 2)
    max_subsets: int | None = 100
    models: tuple[str, ...] = ("logreg", "nb")
    test_size: float = 0.3
    tasks: tuple[str, ...] | None = None

    @classmethod
    def parse(cls, cfg: Mapping) -> MetricSettings:
        _unknown("metrics", cfg, _keys(cls))
        ways = check_list(cfg.get("ways", cls.ways), "metrics.ways", "a list of integers >= 1, e.g. [1, 2]")
        if not ways:  # not read as [1]: the 1-way TVD is always reported, but an empty list is a slip
            raise ConfigError(
                "metrics.ways", ways, "a list of at least one way between 1 and the number of attributes, e.g. [1, 2]"
            )
        models = check_list(
            cfg.get("models", cls.models),
            "metrics.models",
            "a list of " + ", ".join(sorted(MODELS)) + ", e.g. [logreg]",
        )
        for model in models:
            if model not in MODELS:
                raise ConfigError("metrics.models", model, "one of " + ", ".join(sorted(MODELS)))
        max_subsets = cfg.get("max_subsets", cls.max_subsets)
        return cls(
            ways=tuple(check_int(way, "metrics.ways", 1) for way in ways),
            max_subsets=None if max_subsets is None else check_int(max_subsets, "metrics.max_subsets", 1),
            models=tuple(models),
            test_size=check_test_size(cfg.get("test_size", cls.test_size), "metrics.test_size"),
            tasks=_tasks(cfg.get("tasks", cls.tasks)),
        )


def _tasks(value: object) -> tuple[str, ...] | None:
    """``metrics.tasks``: None, or a non-empty list of attribute names."""
    if value is None:
        return None
    hint = "a list of attribute names, e.g. [sex, income], or null"
    tasks = check_list(value, "metrics.tasks", hint)
    if not tasks:
        raise ConfigError("metrics.tasks", value, hint)
    return tuple(check_text(task, "metrics.tasks", hint) for task in tasks)


@dataclass(frozen=True)
class LimitSettings:
    """``limits.*``: the largest job that may start (see :mod:`dp2pub.limits`).

    ``memory_gib``: the memory a job may need, in GiB; None = 80% of this machine's physical
    memory. ``max_marginals``: the most marginals the metrics may compute in all.
    """

    memory_gib: float | None = None
    max_marginals: int = 100_000

    @classmethod
    def parse(cls, cfg: Mapping) -> LimitSettings:
        _unknown("limits", cfg, _keys(cls))
        memory = cfg.get("memory_gib", cls.memory_gib)
        return cls(
            memory_gib=None if memory is None else check_float(memory, "limits.memory_gib", 0.0),
            max_marginals=check_int(cfg.get("max_marginals", cls.max_marginals), "limits.max_marginals", 1),
        )


@dataclass(frozen=True)
class TrackingSettings:
    """``tracking.*``: where runs are recorded (see :mod:`dp2pub.tracking`).

    ``uri``: the MLflow store, None = ``MLFLOW_TRACKING_URI`` if set (and not empty), else the
    SQLite file under ``paths.outputs``; ``experiment``: the experiment's name;
    ``artifact_location``: the artifact root of a new experiment, None = MLflow's default;
    ``skip_finished``: skip a configuration that already has a FINISHED run;
    ``verbose``: a sweep's job prints its progress and full metric table as a single run
    does, not one line; ``main_metrics``: the metrics (names or ``fnmatch`` patterns) of a
    sweep's job lines and summary table, () = the study's figure metrics, else
    :data:`dp2pub.metrics.main.DEFAULT_PATTERNS`.
    """

    uri: str | None = None
    experiment: str = "dp2pub"
    artifact_location: str | None = None
    skip_finished: bool = False
    verbose: bool = False
    main_metrics: tuple[str, ...] = ()

    @classmethod
    def parse(cls, cfg: Mapping) -> TrackingSettings:
        _unknown("tracking", cfg, _keys(cls))
        uri, location = cfg.get("uri"), cfg.get("artifact_location")
        return cls(
            uri=None
            if uri is None
            else check_text(uri, "tracking.uri", "a store URI (sqlite:///..., http://...) or null"),
            experiment=_experiment(cfg.get("experiment", cls.experiment)),
            artifact_location=None
            if location is None
            else check_text(location, "tracking.artifact_location", "a directory or URI, or null"),
            skip_finished=check_bool(cfg.get("skip_finished", cls.skip_finished), "tracking.skip_finished"),
            verbose=check_bool(cfg.get("verbose", cls.verbose), "tracking.verbose"),
            main_metrics=_metric_names(cfg.get("main_metrics")),
        )


def _metric_names(value: object) -> tuple[str, ...]:
    """``tracking.main_metrics``: null or a list of non-empty metric names or patterns."""
    if value is None:
        return ()
    allowed = "a list of metric names or patterns ([tvd_1way, 'accuracy_*']), or null"
    return tuple(
        check_text(name, "tracking.main_metrics", allowed)
        for name in check_list(value, "tracking.main_metrics", allowed)
    )


def _experiment(value: object) -> str:
    """``tracking.experiment``: a name MLflow accepts (not empty, at most
    :data:`MAX_EXPERIMENT_NAME_LENGTH` characters)."""
    allowed = f"a non-empty name of at most {MAX_EXPERIMENT_NAME_LENGTH} characters (MLflow's limit)"
    name = check_text(value, "tracking.experiment", allowed)
    if len(name) > MAX_EXPERIMENT_NAME_LENGTH:
        raise ConfigError("tracking.experiment", name, allowed)
    return name


@dataclass(frozen=True)
class JobSettings:
    """The job-level keys of a config; ``epsilon`` is None for a publisher without a budget."""

    epsilon: float | None
    seed: int
    save_published: bool
    metrics: MetricSettings
    limits: LimitSettings

    @classmethod
    def parse(cls, cfg: Mapping, uses_budget: bool = True) -> JobSettings:
        """Check every job-level key of ``cfg``. ``epsilon`` must be a valid budget if
        ``uses_budget``; a publisher without a budget (k-anonymity) ignores it, but a given one
        (not None) must still be valid: a sweep's typo is refused whatever the mechanism."""
        _unknown("", cfg, TOP_LEVEL)
        epsilon = cfg.get("epsilon")
        checked = check_epsilon(epsilon) if uses_budget or epsilon is not None else None
        return cls(
            epsilon=checked if uses_budget else None,
            seed=check_int(cfg.get("seed"), "seed", 0),
            save_published=check_bool(cfg.get("save_published", False), "save_published"),
            metrics=MetricSettings.parse(_section(cfg, "metrics")),
            limits=LimitSettings.parse(_section(cfg, "limits")),
        )


def tracking_settings(cfg: Mapping) -> TrackingSettings:
    """The checked ``tracking`` keys of a config."""
    return TrackingSettings.parse(_section(cfg, "tracking"))
