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
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext
from omegaconf import AnyNode, DictConfig, ListConfig

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

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        assert self.hydra_context is not None and self.config is not None
        loader = self.hydra_context.config_loader
        repository = getattr(loader, "repository", None)  # ConfigLoaderImpl's; absent: check all
        if repository is None:
            super().validate_batch_is_legal(batch)
            return
        parser = OverridesParser.create(config_loader=loader)
        parsed: dict[str, tuple[Override, bool]] = {}  # an override string's parse, and if it is plain
        safe: set[Hashable] = set()
        for overrides in batch:
            for line in overrides:
                if line not in parsed:  # jobs share most of their overrides: parse each once
                    (override,) = parser.parse_overrides([line])
                    parsed[line] = override, is_plain(override, repository.group_exists(override.key_or_group))
            job = [parsed[line] for line in overrides]
            if job_class(job) in safe:
                continue
            config = loader.load_sweep_config(master_config=self.config, sweep_overrides=list(overrides))
            if all(untyped(config, o.key_or_group) for o, plain in job if plain):
                safe.add(job_class(job))


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
