"""Hydra's basic sweeper, checking a sweep's configs before it starts without composing every
job's config twice (``hydra/sweeper=dp2pub``, dp2pub's default).

Before launching, Hydra's ``BasicSweeper`` composes the config of every job of the sweep, so
that a job that cannot be composed stops the sweep before any job runs; the launcher then
composes every job's config again where the job runs. A composition takes about 0.1 s, so a
grid of 10,000 jobs waited 17 minutes for its first job, and small jobs spent a third of their
time on the check. This sweeper runs the same jobs in the same order and makes the same check
with fewer compositions: jobs whose overrides differ only in the plain values (a bool, a number
or a string) of keys that hold untyped values (``seed=0`` and ``seed=1``, ``epsilon=0.5`` and
``epsilon=2``) compose alike, so it composes the first job of each such class and skips the
others. A job is skipped only when its class's first job composed and every key it sets to a
plain value is an untyped value node (``AnyNode``) in that job's config, which accepts any plain
value; every other job is composed, so the first job that cannot be composed raises the same
error as under ``BasicSweeper``.

The launcher's jobs are composed the same way (:class:`ClassComposingLoader`, which the sweeper
hands to the launcher as its config loader): where a job runs, the first job of each class is
composed in full and kept; every other job of the class is that config with the job's plain
values set, its ``hydra.overrides.task`` and ``hydra.job.override_dirname`` made as Hydra
makes them (tests/test_sweeper.py compares the two configs job by job). A composition takes
0.1-0.7 s, a copy a few milliseconds: most of a small job's cost in a sweep.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Hashable, Sequence
from typing import Any, cast

from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_loader import ConfigLoader
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import AnyNode, DictConfig, ListConfig, OmegaConf

#: Types of override values that an untyped value node accepts, whatever the value.
PLAIN = (bool, int, float, str)


class ValidateOnceSweeper(BasicSweeper):
    """``BasicSweeper`` whose pre-launch check composes one job of each class of jobs that
    differ only in plain values (see the module docstring)."""

    def __init__(self, max_batch_size: int | None, params: dict[str, str] | None = None) -> None:
        # BasicSweeper's own __init__ calls super(BasicSweeper, self), which fails here: Hydra's
        # plugin scan executes its module again, binding the name to a class that is not ours
        Sweeper.__init__(self)
        self.overrides: Sequence[Sequence[Sequence[str]]] | None = None
        self.batch_index = 0
        self.max_batch_size = max_batch_size
        self.params = params or {}
        self.hydra_context: HydraContext | None = None
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        """Hydra's setup, with the launcher's jobs composed by :class:`ClassComposingLoader`."""
        loader = ClassComposingLoader(hydra_context.config_loader)
        # a ConfigLoader by delegation (every method but load_sweep_config is the wrapped one's)
        context = HydraContext(config_loader=cast(ConfigLoader, loader), callbacks=hydra_context.callbacks)
        super().setup(hydra_context=context, task_function=task_function, config=config)

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        assert self.hydra_context is not None and self.config is not None
        loader = self.hydra_context.config_loader
        if not isinstance(loader, ClassComposingLoader) or not loader.classifies:
            super().validate_batch_is_legal(batch)  # another loader: check every job
            return
        safe: set[tuple[Hashable, ...]] = set()
        for overrides in batch:
            key = loader.job_key(self.config, overrides)[0]
            if key in safe:
                continue
            loader.load_sweep_config(self.config, list(overrides))  # composes; kept if the class is safe
            if loader.derivable(key):
                safe.add(key)


#: This process's first composed config of each class of jobs (None: a class whose jobs are
#: composed in full), by :meth:`ClassComposingLoader.job_key`. Module-level so that a worker
#: process (joblib, Ray) keeps it from one job to the next; the key starts with the sweep's
#: own token, so no sweep uses another's configs (a process may run several).
_TEMPLATES: dict[tuple[Hashable, ...], DictConfig | None] = {}


class ClassComposingLoader:
    """Hydra's config loader, except that ``load_sweep_config`` composes only the first job
    of each class of jobs that differ in plain values, and derives the others from it (see
    the module docstring). Everything else is the wrapped loader's."""

    def __init__(self, inner: ConfigLoader) -> None:
        self.inner = inner
        self.token = uuid.uuid4().hex
        self._parsed: dict[str, tuple[Override, bool]] = {}

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "token", "_parsed"):  # not set yet (unpickling)
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __getstate__(self) -> dict[str, Any]:
        return {"inner": self.inner, "token": self.token, "_parsed": {}}  # a worker parses again

    @property
    def classifies(self) -> bool:
        """Whether jobs can be classed: the wrapped loader has Hydra's config repository."""
        return getattr(self.inner, "repository", None) is not None

    def job_key(
        self, master: DictConfig, overrides: Sequence[str]
    ) -> tuple[tuple[Hashable, ...], list[tuple[Override, bool]]]:
        """The class of a job (the sweep's token, config name, Hydra's own overrides,
        :func:`job_class`) and its
        parsed overrides, each with whether it is derivable: plain (:func:`is_plain`), not a
        ``hydra.`` key, and no other override of the job sets its key, a key above it or below
        it (:func:`alone`)."""
        job = [self._parse(line) for line in overrides]
        keys = [o.key_or_group for o, _ in job]
        job = [(o, p and not o.is_hydra_override() and alone(o.key_or_group, keys)) for o, p in job]
        hydra_overrides = tuple(OmegaConf.to_container(master.hydra.overrides.hydra))  # type: ignore[arg-type]
        return (self.token, master.hydra.job.config_name, hydra_overrides, job_class(job)), job

    def derivable(self, key: tuple[Hashable, ...]) -> bool:
        """Whether jobs of class ``key`` are derived from a kept config."""
        return _TEMPLATES.get(key) is not None

    def _parse(self, line: str) -> tuple[Override, bool]:
        if line not in self._parsed:
            repository = self.inner.repository  # type: ignore[attr-defined]
            (override,) = OverridesParser.create(config_loader=self.inner).parse_overrides([line])
            self._parsed[line] = override, is_plain(override, repository.group_exists(override.key_or_group))
        return self._parsed[line]

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        """The job's config: composed by Hydra for the first job of its class, else derived."""
        if not self.classifies:
            return self.inner.load_sweep_config(master_config, sweep_overrides)
        key, job = self.job_key(master_config, sweep_overrides)
        if key in _TEMPLATES:
            template = _TEMPLATES[key]
            if template is not None:
                return derive(template, job, master_config)
            return self.inner.load_sweep_config(master_config, sweep_overrides)
        config = self.inner.load_sweep_config(master_config, sweep_overrides)
        safe = all(untyped(config, o.key_or_group) for o, plain in job if plain)
        for other in [k for k in _TEMPLATES if k[0] != self.token]:  # an earlier sweep's: done
            del _TEMPLATES[other]
        _TEMPLATES[key] = copy.deepcopy(config) if safe else None
        return config


def derive(template: DictConfig, job: list[tuple[Override, bool]], master: DictConfig) -> DictConfig:
    """The config Hydra composes for ``job``, from ``template``, the config of a job of the same
    class: the job's plain values set as Hydra applies overrides, and the job's own
    ``hydra.overrides.task`` and ``hydra.job.override_dirname``, as
    ``ConfigLoaderImpl._load_configuration_impl`` and ``load_sweep_config`` make them."""
    config = copy.deepcopy(template)
    ConfigLoaderImpl._apply_overrides_to_config([o for o, plain in job if plain], config)
    overrides = [o for o, _ in job if not o.is_hydra_override()]  # the job's own (hydra.*: the template's)
    config.hydra.overrides.task = [o.input_line for o in overrides]
    dirname = config.hydra.job.config.override_dirname
    config.hydra.job.override_dirname = get_overrides_dirname(
        overrides=overrides, kv_sep=dirname.kv_sep, item_sep=dirname.item_sep, exclude_keys=dirname.exclude_keys
    )
    OmegaConf.copy_cache(from_config=master, to_config=config)
    return config


def alone(key: str, keys: Sequence[str]) -> bool:
    """Whether ``key`` is set once among ``keys`` and none of the others is above it or below
    it (``limits`` and ``limits.memory_gib``): applied alone, its value is what Hydra gives."""
    return sum(k == key for k in keys) == 1 and not any(
        k != key and (k.startswith(f"{key}.") or key.startswith(f"{k}.")) for k in keys
    )


def is_plain(override: Override, is_group: bool) -> bool:
    """Whether an override sets a key (not a config group, no ``@package``) to a bool, a number
    or a string without interpolation (``${`` is parsed, and may fail, when it is set):
    ``key=value``, neither ``+``, ``++`` nor ``~``."""
    value = override.value()
    plain_value = isinstance(value, PLAIN) and not (isinstance(value, str) and "${" in value)
    return override.type == OverrideType.CHANGE and override.package is None and not is_group and plain_value


def job_class(job: list[tuple[Override, bool]]) -> tuple[Hashable, ...]:
    """What the jobs of one class share: every override of ``job`` (with whether it is plain)
    as written, except a plain one, of which only the key counts."""
    return tuple((o.key_or_group,) if plain else o.input_line for o, plain in job)


def untyped(config: DictConfig, dotted: str) -> bool:
    """Whether ``dotted`` names an untyped value node (``AnyNode``) of ``config``."""
    node: object = config
    try:
        for part in dotted.split("."):
            if isinstance(node, ListConfig):
                node = node._get_node(int(part))
            elif isinstance(node, DictConfig):
                node = node._get_node(part)
            else:
                return False
    except (ValueError, KeyError, IndexError):
        return False
    return isinstance(node, AnyNode)
