"""A parent MLflow run per Hydra multirun, with every job of the sweep as its child.

:class:`SweepParentCallback` is a Hydra callback (registered in ``conf/config.yaml`` under
``hydra.callbacks``). On the launching process, before the launcher starts any worker, it
creates the tracking store and the experiment once (so parallel workers never race to
create them) and opens the parent run. Jobs find the parent through a small JSON file in the
sweep directory, which every launcher that shares a filesystem with the launching process
(basic, joblib, Submitit on a cluster filesystem, Ray on one machine) can read; a job that
cannot read it logs its run without a parent. The parent ends FINISHED when every child
finished, FAILED otherwise, or FAILED if the sweep process exits with an error; a sweep in
which every job was skipped (``tracking.skip_finished``) deletes its empty parent.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mlflow
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from mlflow.entities import RunStatus
from omegaconf import DictConfig, OmegaConf

from dp2pub.config import plain_config
from dp2pub.hydra_errors import CONFIG_ERRORS, one_line
from dp2pub.interrupts import mark_launcher, terminate_sweep
from dp2pub.store import StoreError
from dp2pub.tracking import PARENT_TAG, SWEEP_TAG, experiment_name, open_experiment, run_tags
from dp2pub.validation import ConfigError

log = logging.getLogger(__name__)

#: File in the sweep directory that names the parent run.
PARENT_FILE = "mlflow_parent_run.json"


def read_parent(sweep_dir: str | Path) -> dict[str, str] | None:
    """The parent run recorded in ``sweep_dir`` (``run_id``, ``experiment_id``, ``uri``), if any."""
    path = Path(sweep_dir) / PARENT_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def current_parent() -> dict[str, str] | None:
    """The parent run of the running Hydra job, when it is part of a multirun."""
    if not HydraConfig.initialized():
        return None
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.MULTIRUN:
        return None
    return read_parent(hydra_cfg.sweep.dir)


class SweepParentCallback(Callback):
    """Open a parent run when a multirun starts; close it when it ends (see module docstring)."""

    def __init__(self) -> None:
        self.client: mlflow.MlflowClient | None = None
        self.run_id: str | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Open the parent run. Hydra turns a callback's exceptions into warnings, so a
        failure here is reported in one line and stops the sweep (SystemExit(2)) before any
        job starts, with the parent, if it was created, left FAILED. Launcher settings that
        would fail only once the jobs start are refused first."""
        try:
            check_launcher(config.hydra.launcher)
        except ConfigError as error:
            print(f"dp2pub: error: {error}", file=sys.stderr)
            raise SystemExit(2) from None
        try:
            self._open(config)
        except Exception as error:
            with contextlib.suppress(Exception):  # the store may be what failed
                self._end(failed=True)
            if isinstance(error, (ConfigError, StoreError)):
                reason = str(error)
            elif isinstance(error, CONFIG_ERRORS):
                reason = one_line(error, sys.argv[1:])
            else:
                reason = f"{type(error).__name__}: {' '.join(str(error).split())}"
            print(f"dp2pub: error: cannot open the sweep's parent run: {reason}", file=sys.stderr)
            raise SystemExit(2) from None

    def _open(self, config: DictConfig) -> None:
        hydra_cfg = config.hydra  # per-job keys (hydra.job.num) are unset here: resolve only what is needed
        job_cfg = plain_config(OmegaConf.masked_copy(config, [str(k) for k in config if k != "hydra"]))
        uri, experiment_id = open_experiment(job_cfg)
        self.client = mlflow.MlflowClient(uri)
        sweep_dir = Path(str(hydra_cfg.sweep.dir))
        grid = hydra_cfg.sweeper.get("params")
        params = {} if grid is None else OmegaConf.to_container(grid, resolve=True)
        tags = run_tags([str(o) for o in hydra_cfg.overrides.task])
        tags.update(
            {
                SWEEP_TAG: "parent",
                "sweep_dir": str(sweep_dir.resolve()),
                "sweep_params": json.dumps(params, sort_keys=True),
                "launcher": str(hydra_cfg.launcher.get("_target_", "")),
            }
        )
        run = self.client.create_run(experiment_id, run_name=_sweep_name(job_cfg, sweep_dir), tags=tags)
        self.run_id = run.info.run_id
        # Hydra's sweeper raises when a job failed, so on_multirun_end is not reached: exit says FAILED
        atexit.register(self._end, failed=True)
        signal.signal(signal.SIGTERM, terminate_sweep)  # a terminated sweep runs atexit too
        mark_launcher()  # its worker processes end when it does
        sweep_dir.mkdir(parents=True, exist_ok=True)
        record = {"run_id": self.run_id, "experiment_id": experiment_id, "uri": uri}
        (sweep_dir / PARENT_FILE).write_text(json.dumps(record, indent=2) + "\n")
        log.info("sweep parent run %s in experiment %s (%s)", self.run_id, experiment_id, uri)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._end(failed=False)  # reached only when every job returned

    def _child_counts_of(self, run_id: str) -> dict[str, float]:
        assert self.client is not None
        parent = self.client.get_run(run_id)
        children = self.client.search_runs(
            [parent.info.experiment_id], filter_string=f"tags.`{PARENT_TAG}` = '{run_id}'", max_results=50_000
        )
        statuses = [child.info.status for child in children]
        return {
            "n_jobs": float(len(statuses)),
            "n_jobs_finished": float(statuses.count("FINISHED")),
            "n_jobs_failed": float(sum(s in ("FAILED", "KILLED") for s in statuses)),
            "n_jobs_running": float(sum(s in ("RUNNING", "SCHEDULED") for s in statuses)),
        }

    def _end(self, failed: bool) -> None:
        """Log the children's counts and terminate the parent run: FAILED when the sweep
        failed (a job raised, or the sweep was interrupted) or a child did not finish,
        FINISHED otherwise; a successful sweep without children (every job skipped) deletes
        it. Runs once; later calls (e.g. from atexit) do nothing."""
        if self.client is None or self.run_id is None:
            return
        run_id, self.run_id = self.run_id, None
        counts = self._child_counts_of(run_id)
        if not failed and counts["n_jobs"] == 0:  # tracking.skip_finished skipped every job
            self.client.set_terminated(run_id, status=RunStatus.to_string(RunStatus.FINISHED))
            self.client.delete_run(run_id)
            return
        for name, value in counts.items():
            self.client.log_metric(run_id, name, value)
        ok = not failed and counts["n_jobs"] == counts["n_jobs_finished"]
        self.client.set_terminated(run_id, status=RunStatus.to_string(RunStatus.FINISHED if ok else RunStatus.FAILED))


def check_launcher(launcher: Mapping) -> None:
    """Refuse launcher settings that would fail only once the jobs start: joblib's
    ``n_jobs`` must be an integer other than 0 (negative: that many fewer than the cores + 1)."""
    if "n_jobs" in launcher:
        value = launcher["n_jobs"]
        if isinstance(value, bool) or not isinstance(value, int) or value == 0:
            raise ConfigError("hydra.launcher.n_jobs", value, "an integer >= 1, or < 0 (-1: one job per core)")


def _sweep_name(cfg: Mapping, sweep_dir: Path) -> str:
    """``sweep-<experiment>-<last two parts of the sweep dir>`` (date and time by default)."""
    return f"sweep-{experiment_name(cfg)}-{'-'.join(sweep_dir.parts[-2:])}"
