"""The Ray launcher's work: start or join Ray, run each job as a task, collect the returns.

A job runs exactly as under Hydra's joblib launcher (its ``execute_job``: the job's config
composed where it runs, Hydra's ``run_job`` with the sweep's callbacks). A task that returns
no result (its worker process died, or the node) becomes a FAILED job: the sweep's callbacks
hear of it (``on_job_end``) and the sweep exits non-zero at the end, as for a job that
raised. Tasks are not retried by default (``max_retries: 0``): a retry would open a second
MLflow run for the same job while the first stays open; ``tracking.skip_finished=true``
completes a sweep instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ray
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, setup_globals
from hydra_plugins.hydra_joblib_launcher._core import execute_job
from omegaconf import DictConfig, OmegaConf, open_dict

from dp2pub.sweep import JobFailed

from .ray_launcher import RayLauncher

log = logging.getLogger(__name__)


def launch(launcher: RayLauncher, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
    """Run every job of ``job_overrides`` as a Ray task and return their results in order."""
    setup_globals()
    assert launcher.config is not None and launcher.hydra_context is not None
    config = launcher.config
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    start_ray(dict(launcher.ray_cfg.get("init") or {}))
    remote = {"max_retries": 0, **_options(launcher.ray_cfg.get("remote"))}
    log.info("Ray (%s) is launching %d jobs, sweep output dir: %s", _where(), len(job_overrides), sweep_dir)
    for idx, overrides in enumerate(job_overrides):
        log.info("\t#%d : %s", initial_job_idx + idx, " ".join(filter_overrides(overrides)))
    # the shared arguments go to the object store once, not once per task
    shared = ray.put((launcher.hydra_context, config, launcher.task_function, Singleton.get_state()))
    task = ray.remote(**remote)(_run)
    refs = [task.remote(initial_job_idx + i, list(o), shared, os.getcwd()) for i, o in enumerate(job_overrides)]
    return [_collect(launcher, ref, initial_job_idx + i, o) for i, (ref, o) in enumerate(zip(refs, job_overrides))]


def start_ray(init: dict[str, Any]) -> None:
    """``ray.init`` with the config's non-null options, unless this process already joined
    Ray: no ``address`` starts a local instance, ``auto`` or ``host:port`` joins a cluster."""
    if not ray.is_initialized():
        ray.init(**_options(init))


def _options(options: Any) -> dict[str, Any]:
    """A config node as keyword arguments, without its null entries (Ray's defaults then apply)."""
    plain = OmegaConf.to_container(options, resolve=True) if isinstance(options, DictConfig) else dict(options or {})
    assert isinstance(plain, dict)
    return {str(key): value for key, value in plain.items() if value is not None}


def _where() -> str:
    """The cluster's CPUs and nodes, for the launch line."""
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    return f"{int(ray.cluster_resources().get('CPU', 0))} CPUs on {len(nodes)} node{'s'[: len(nodes) != 1]}"


def _run(idx: int, overrides: list[str], shared: tuple, cwd: str) -> JobReturn:
    """A Ray task: one job, run from the launching directory when this node has it (a local
    instance, a shared filesystem), so relative paths mean what they mean to the user."""
    if os.path.isdir(cwd):
        os.chdir(cwd)
    hydra_context, config, task_function, singleton_state = shared
    return execute_job(idx, overrides, hydra_context, config, task_function, singleton_state)


def _collect(launcher: RayLauncher, ref: ray.ObjectRef, idx: int, overrides: Sequence[str]) -> JobReturn:
    """The job's return, or a FAILED one when the task ended without a result (the callbacks'
    ``on_job_end`` then runs here, as it could not run where the job died)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as error:
        reason = " ".join(str(error).split())[:300]
        message = f"job #{idx} ({' '.join(filter_overrides(overrides))}) ended without a result on Ray: {type(error).__name__}: {reason}"
        log.error(message)
        assert launcher.config is not None and launcher.hydra_context is not None
        sweep_config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
            sweep_config.hydra.job.num = idx
        failed = JobReturn(overrides=list(overrides), hydra_cfg=sweep_config, status=JobStatus.FAILED)
        failed.return_value = JobFailed(message)
        launcher.hydra_context.callbacks.on_job_end(config=sweep_config, job_return=failed)
        return failed
