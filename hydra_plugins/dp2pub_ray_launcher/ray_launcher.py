"""A Hydra launcher that runs every job of a multirun as a Ray task (``hydra/launcher=ray``).

Hydra's own ``hydra-ray-launcher`` (1.2.2, its latest release) does not fit: it pins
``cloudpickle<3`` (joblib 1.6, which the joblib launcher needs, requires ``cloudpickle>=3``),
pulls in boto3 for its AWS mode, and always passes ``object_store_memory`` to ``ray.init``,
which Ray refuses when joining a running cluster ("When connecting to an existing cluster,
object_store_memory must not be provided"; Hydra issue #2893, fixed upstream but not
released). This launcher keeps its config's shape (``ray.init``, ``ray.remote``) and behaves
like the joblib launcher: the same ``run_job`` with the sweep's callbacks, every job's config
composed where the job runs, one ``JobReturn`` per job in order.

Hydra imports every public module of ``hydra_plugins`` when it scans for plugins, so this
module imports neither Ray nor dp2pub; :mod:`._core` does, when a sweep launches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class RayLauncher(Launcher):
    """Runs a multirun's jobs as Ray tasks: ``ray.init(**ray.init)`` (a local Ray instance
    when ``address`` is null, else the cluster at ``address``), then one
    ``ray.remote(**ray.remote)`` task per job."""

    def __init__(self, ray: dict[str, Any] | None = None) -> None:
        self.ray_cfg: dict[str, Any] = dict(ray or {})
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.task_function = task_function
        self.hydra_context = hydra_context

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from . import _core

        return _core.launch(self, job_overrides, initial_job_idx)
