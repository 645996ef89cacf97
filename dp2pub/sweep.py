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

A sweep reports like a tool: before Hydra composes every job's config it says how many jobs
it composes (:func:`sweep_size`, counted from the overrides as Hydra's BasicSweeper expands
them; the count is also written to the parent file), each job's header and log lines carry
its place in the sweep (``[12/250]``, :func:`job_label`), every job that ends records its
outcome in ``dp2pub_jobs/<num>.json`` in the sweep directory (Hydra's ``on_job_end`` runs
wherever the job runs), and when the sweep ends, also on a failed job or a signal, one
summary gives the counts, the parent run and where to see it in the MLflow UI.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import logging
import math
import os
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from dp2pub.config import plain_config
from dp2pub.hydra_errors import CONFIG_ERRORS, one_line
from dp2pub.interrupts import mark_launcher, terminate_sweep
from dp2pub.settings import tracking_settings
from dp2pub.validation import ConfigError

if TYPE_CHECKING:
    import mlflow

# MLflow and the modules that use it are imported when a multirun opens its parent run, not
# when Hydra instantiates this callback for every command (tests/test_layers.py, DEFERRED).

log = logging.getLogger(__name__)

#: File in the sweep directory that names the parent run.
PARENT_FILE = "mlflow_parent_run.json"
#: Folder of the sweep directory where every job that ended records its outcome.
JOBS_DIR = "dp2pub_jobs"
#: Outcomes of a sweep's job; the app returns FINISHED or SKIPPED to Hydra.
FINISHED, FAILED, SKIPPED = "finished", "failed", "skipped"
#: The sweepers whose jobs :func:`sweep_size` counts: Hydra's basic one and dp2pub's (the
#: default, which expands a sweep as the basic one does).
BASIC_SWEEPERS = (
    "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
    "hydra_plugins.dp2pub_sweeper.sweeper.ValidateOnceSweeper",
)


class JobFailed(Exception):
    """A sweep job failed in a way it reported in one line (it refused its config or data,
    or its launcher lost it): Hydra records the job as failed, the other jobs of the sweep
    still run, and the sweep exits non-zero at the end."""


def read_parent(sweep_dir: str | Path) -> dict[str, Any] | None:
    """The parent run recorded in ``sweep_dir`` (``run_id``, ``experiment_id``, ``uri``, and
    ``n_jobs``, the sweep's size or None), if any."""
    path = Path(sweep_dir) / PARENT_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def in_sweep() -> bool:
    """Whether the running Hydra job is a job of a multirun."""
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def current_parent() -> dict[str, Any] | None:
    """The parent run of the running Hydra job, when it is part of a multirun."""
    return read_parent(HydraConfig.get().sweep.dir) if in_sweep() else None


def sweep_size(hydra_cfg: DictConfig) -> int | None:
    """The number of jobs of a multirun, counted from its sweeper params and overrides as
    Hydra's BasicSweeper expands them (the product of the sweep lists' lengths, a key given
    twice counting once, its last value); None for another sweeper or overrides it refuses
    (the count only informs: the sweeper itself reports what it refuses)."""
    if hydra_cfg.sweeper.get("_target_") not in BASIC_SWEEPERS:
        return None
    params = hydra_cfg.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()]
    arguments += [str(override) for override in hydra_cfg.overrides.task]
    loader = GlobalHydra.instance().config_loader() if GlobalHydra.instance().is_initialized() else None
    try:  # glob() needs the config loader: Hydra's own, in the launching process
        overrides = OverridesParser.create(config_loader=loader).parse_overrides(arguments)
        lengths = {
            o.get_key_element(): len(list(o.sweep_string_iterator())) if o.is_sweep_override() else 1 for o in overrides
        }
    except Exception:
        return None
    return math.prod(lengths.values())


def job_label() -> str:
    """``[k/N]`` for the k-th job (1-based, ``hydra.job.num`` + 1) of a multirun of N jobs,
    ``[k]`` when N is unknown (another sweeper, or a job that cannot read the parent file),
    and '' outside a multirun."""
    if not in_sweep():
        return ""
    num = OmegaConf.select(cast(DictConfig, HydraConfig.get()), "job.num")  # unset outside a launcher
    if not isinstance(num, int):
        return ""
    total = (current_parent() or {}).get("n_jobs")
    return f"[{num + 1}/{total}]" if isinstance(total, int) else f"[{num + 1}]"


class _Prefix(logging.Filter):
    """A handler filter that puts ``label`` before the message of every record (once, also
    when the record passes several handlers)."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "dp2pub_label", None) is None:
            record.msg = f"{self.label} {record.msg}"
            record.dp2pub_label = self.label
        return True


@contextlib.contextmanager
def labelled_logs(label: str) -> Iterator[None]:
    """Within the block, every log line the root logger's handlers write (Hydra's console
    and file handlers of the job) starts with ``label``; nothing changes for ''."""
    handlers = list(logging.getLogger().handlers) if label else []
    prefix = _Prefix(label)
    for handler in handlers:
        handler.addFilter(prefix)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(prefix)


def record_outcome(sweep_dir: str | Path, num: int, outcome: str) -> None:
    """Record that job ``num`` of the sweep in ``sweep_dir`` ended with ``outcome`` (for the
    sweep's summary); nothing when the job cannot read the sweep's parent file."""
    parent = read_parent(sweep_dir)
    if parent is None:
        return
    folder = Path(sweep_dir) / JOBS_DIR
    folder.mkdir(exist_ok=True)
    record = {"parent": parent.get("run_id"), "num": num, "outcome": outcome}
    (folder / f"{num}.json").write_text(json.dumps(record) + "\n")


def outcomes(sweep_dir: str | Path, run_id: str) -> collections.Counter[str]:
    """How many jobs of the sweep whose parent is ``run_id`` ended with each outcome (files
    of another sweep that used the same directory are left out)."""
    counts: collections.Counter[str] = collections.Counter()
    for path in (Path(sweep_dir) / JOBS_DIR).glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(path.read_text())
            if record.get("parent") == run_id:
                counts[str(record.get("outcome"))] += 1
    return counts


def count_line(total: int | None, ended: Mapping[str, int], stopped: int) -> str:
    """``3 jobs: 2 finished, 1 failed, 0 skipped``, then the jobs stopped by a signal and
    those that did not run (of ``total``, when it is known), if any."""
    done = sum(ended.get(o, 0) for o in (FINISHED, FAILED, SKIPPED)) + stopped
    n = max(total or 0, done)
    parts = [f"{ended.get(o, 0)} {o}" for o in (FINISHED, FAILED, SKIPPED)]
    parts += [f"{stopped} stopped"] if stopped else []
    parts += [f"{n - done} not run"] if n > done else []
    return f"{n} job{'' if n == 1 else 's'}: {', '.join(parts)}"


class SweepParentCallback(Callback):
    """Open a parent run when a multirun starts; close it when it ends (see module docstring)."""

    def __init__(self) -> None:
        self.client: mlflow.MlflowClient | None = None
        self.run_id: str | None = None
        self.uri = self.experiment_id = self.experiment = ""
        self.sweep_dir = Path()
        self.total: int | None = None

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
        from dp2pub.store import StoreError, machine_fault, store_errors

        try:
            self._open(config)
        except Exception as error:
            with contextlib.suppress(Exception):  # the store may be what failed
                self._end(failed=True, report=False)
            if self.uri and isinstance(error, store_errors()):  # a full disk, a damaged store
                error = machine_fault(self.uri, error) or error
            if isinstance(error, (ConfigError, StoreError)):
                reason = str(error)
            elif isinstance(error, CONFIG_ERRORS):
                reason = one_line(error, sys.argv[1:])
            else:
                reason = f"{type(error).__name__}: {' '.join(str(error).split())}"
            print(f"dp2pub: error: cannot open the sweep's parent run: {reason}", file=sys.stderr)
            raise SystemExit(2) from None
        if self.total is not None:  # the sweeper checks that every job composes before it launches any
            log.info("checking the configs of %d job%s before launching them ...", self.total, "s"[: self.total != 1])

    def _open(self, config: DictConfig) -> None:
        import mlflow

        from dp2pub.tracking import SWEEP_TAG, open_experiment, run_tags, tracking_uri

        hydra_cfg = config.hydra  # per-job keys (hydra.job.num) are unset here: resolve only what is needed
        job_cfg = plain_config(OmegaConf.masked_copy(config, [str(k) for k in config if k != "hydra"]))
        self.uri = tracking_uri(job_cfg)  # for the error of a store that fails to open
        uri, experiment_id = open_experiment(job_cfg)
        self.client = mlflow.MlflowClient(uri)
        self.uri, self.experiment_id, self.experiment = uri, experiment_id, tracking_settings(job_cfg).experiment
        self.total = sweep_size(hydra_cfg)
        self.sweep_dir = sweep_dir = Path(str(hydra_cfg.sweep.dir))
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
        # the summary gives the parent's address: no "View run ... at" line per job (tracking server)
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        sweep_dir.mkdir(parents=True, exist_ok=True)
        record = {"run_id": self.run_id, "experiment_id": experiment_id, "uri": uri, "n_jobs": self.total}
        (sweep_dir / PARENT_FILE).write_text(json.dumps(record, indent=2) + "\n")
        log.info("sweep parent run %s in experiment %s (%s)", self.run_id, experiment_id, uri)

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """Record a sweep job's outcome (where the job ran: a worker process, a cluster node)."""
        if config.hydra.mode != RunMode.MULTIRUN:
            return
        if job_return.status != JobStatus.COMPLETED:
            outcome = FAILED
        else:
            outcome = SKIPPED if job_return.return_value == SKIPPED else FINISHED
        record_outcome(str(config.hydra.sweep.dir), int(config.hydra.job.num), outcome)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._end(failed=False)  # reached only when every job returned

    def _child_statuses(self, run_id: str) -> list[str]:
        from dp2pub.tracking import PARENT_TAG

        assert self.client is not None
        children = self.client.search_runs(
            [self.experiment_id], filter_string=f"tags.`{PARENT_TAG}` = '{run_id}'", max_results=50_000
        )
        return [child.info.status for child in children]

    def _end(self, failed: bool, report: bool = True) -> None:
        """Log the children's counts and terminate the parent run: FAILED when the sweep
        failed (a job raised, or the sweep was interrupted) or a child did not finish,
        FINISHED otherwise; a successful sweep without children (every job skipped) deletes
        it. Then, with ``report``, print the sweep's summary. Runs once; later calls (e.g.
        from atexit) do nothing."""
        if self.client is None or self.run_id is None:
            return
        from dp2pub.store import unreachable

        run_id, self.run_id = self.run_id, None
        try:
            statuses, kept = self._close(run_id, failed)
        except Exception as error:  # the store went away (a tracking server that died): say so, in one line
            down = unreachable(self.uri)
            reason = f"tracking server {self.uri} stopped answering ({down})" if down else " ".join(str(error).split())
            print(f"dp2pub: error: cannot close the sweep's parent run {run_id}: {reason[:300]}", file=sys.stderr)
            print("  a job or sweep started on this host once the store is back marks it KILLED", file=sys.stderr)
            statuses, kept = [], True
        if report:
            self._report(run_id, kept, statuses.count("KILLED"))

    def _close(self, run_id: str, failed: bool) -> tuple[list[str], bool]:
        """Terminate the parent run (see :meth:`_end`); returns its children's statuses and
        whether the parent was kept."""
        from mlflow.entities import RunStatus

        from dp2pub.resume import reap_stale_runs

        assert self.client is not None
        reap_stale_runs(self.client, self.experiment_id)  # jobs whose process died (SIGKILL, a lost worker)
        statuses = self._child_statuses(run_id)
        counts = child_counts(statuses)
        kept = failed or counts["n_jobs"] > 0
        if not kept:  # tracking.skip_finished skipped every job
            self.client.set_terminated(run_id, status=RunStatus.to_string(RunStatus.FINISHED))
            self.client.delete_run(run_id)
        else:
            for name, value in counts.items():
                self.client.log_metric(run_id, name, value)
            ok = not failed and counts["n_jobs"] == counts["n_jobs_finished"]
            status = RunStatus.FINISHED if ok else RunStatus.FAILED
            self.client.set_terminated(run_id, status=RunStatus.to_string(status))
        return statuses, kept

    def _report(self, run_id: str, kept: bool, stopped: int) -> None:
        """Print the summary: the jobs' outcomes, the parent run (unless it was deleted:
        every job was skipped) and where to see it."""
        from dp2pub.tracking import dashboard_hint

        counts = count_line(self.total, outcomes(self.sweep_dir, run_id), stopped)
        where = f"experiment {self.experiment} (id {self.experiment_id})"
        if kept:
            print(f"\nsweep: {counts}; parent run {run_id} in {where}")
        else:
            print(f"\nsweep: {counts}; no parent run kept (every job was skipped) in {where}")
        print(dashboard_hint(self.uri, self.experiment_id, run_id if kept else None), flush=True)


def child_counts(statuses: list[str]) -> dict[str, float]:
    """The parent run's metrics: how many children it has and how many of them ended how."""
    return {
        "n_jobs": float(len(statuses)),
        "n_jobs_finished": float(statuses.count("FINISHED")),
        "n_jobs_failed": float(sum(s in ("FAILED", "KILLED") for s in statuses)),
        "n_jobs_running": float(sum(s in ("RUNNING", "SCHEDULED") for s in statuses)),
    }


def check_launcher(launcher: Mapping) -> None:
    """Refuse launcher settings that would fail only once the jobs start: joblib's
    ``n_jobs`` must be an integer other than 0 (negative: that many fewer than the cores + 1)."""
    if "n_jobs" in launcher:
        value = launcher["n_jobs"]
        if isinstance(value, bool) or not isinstance(value, int) or value == 0:
            raise ConfigError("hydra.launcher.n_jobs", value, "an integer >= 1, or < 0 (-1: one job per core)")


def _sweep_name(cfg: Mapping, sweep_dir: Path) -> str:
    """``sweep-<experiment>-<last two parts of the sweep dir>`` (date and time by default)."""
    return f"sweep-{tracking_settings(cfg).experiment}-{'-'.join(sweep_dir.parts[-2:])}"
