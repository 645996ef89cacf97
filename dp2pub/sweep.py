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
import re
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

from dp2pub.config import plain_config, study_figures
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


def swept_values(hydra_cfg: DictConfig) -> dict[str, list[str]] | None:
    """The values of every key of a multirun's sweeper params and overrides, as Hydra's
    BasicSweeper expands them (a key given twice counting once, its last value; a key set
    to one value has a list of one); None for another sweeper or overrides it refuses (the
    values only inform: the sweeper itself reports what it refuses)."""
    if hydra_cfg.sweeper.get("_target_") not in BASIC_SWEEPERS:
        return None
    params = hydra_cfg.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()]
    arguments += [str(override) for override in hydra_cfg.overrides.task]
    loader = GlobalHydra.instance().config_loader() if GlobalHydra.instance().is_initialized() else None
    try:  # glob() needs the config loader: Hydra's own, in the launching process
        overrides = OverridesParser.create(config_loader=loader).parse_overrides(arguments)
        return {
            o.get_key_element(): list(o.sweep_string_iterator())
            if o.is_sweep_override()
            else [o.get_value_element_as_str()]
            for o in overrides
        }
    except Exception:
        return None


def sweep_size(hydra_cfg: DictConfig) -> int | None:
    """The number of jobs of a multirun (:func:`job_count` of its :func:`swept_values`)."""
    return job_count(swept_values(hydra_cfg))


def job_count(values: Mapping[str, list[str]] | None) -> int | None:
    """The product of the sweep lists' lengths; None when they are not known."""
    return None if values is None else math.prod(len(v) for v in values.values())


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


class _Quiet(logging.Filter):
    """A filter that leaves out dp2pub's progress lines (below WARNING) and the launchers'
    ``#12 : epsilon=1 seed=0`` line per job."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".")[0] == "dp2pub":
            return record.levelno >= logging.WARNING
        return not (record.levelno < logging.WARNING and record.getMessage().lstrip().startswith("#"))


def _console(handler: logging.Handler) -> bool:
    """Whether ``handler`` writes to a terminal stream (not to a file)."""
    return isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)


@contextlib.contextmanager
def labelled_logs(label: str, quiet: bool = False) -> Iterator[None]:
    """Within the block, every log line the root logger's handlers write (Hydra's console
    and file handlers of the job) starts with ``label``; nothing changes for ''. With
    ``quiet``, dp2pub's progress lines stay out of the console (the job's log file keeps
    them): a sweep's job prints its one line."""
    handlers = list(logging.getLogger().handlers)
    added: list[tuple[logging.Handler, logging.Filter]] = []
    if label:
        added += [(handler, _Prefix(label)) for handler in handlers]
    if quiet:
        added += [(handler, _Quiet()) for handler in handlers if _console(handler)]
    for handler, added_filter in added:
        handler.addFilter(added_filter)
    try:
        yield
    finally:
        for handler, added_filter in added:
            handler.removeFilter(added_filter)


#: The loggers of the launchers that log a line per job as they launch it (Hydra's basic,
#: joblib and Submitit launchers, dp2pub's Ray launcher).
LAUNCHER_LOGGERS = (
    "hydra._internal.core_plugins.basic_launcher",
    "hydra_plugins.hydra_joblib_launcher._core",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher",
    "hydra_plugins.dp2pub_ray_launcher._core",
)


def quiet_launchers(quiet: bool = True) -> None:
    """Leave out the launchers' line per job (each job prints its own line when it ends), or
    with ``quiet`` false, let them log it again."""
    for name in LAUNCHER_LOGGERS:
        logger = logging.getLogger(name)
        for added in [f for f in logger.filters if isinstance(f, _Quiet)]:
            logger.removeFilter(added)
        if quiet:
            logger.addFilter(_Quiet())


def record_outcome(sweep_dir: str | Path, num: int, outcome: str, run_id: str | None = None) -> None:
    """Record that job ``num`` of the sweep in ``sweep_dir`` ended with ``outcome`` in the
    run ``run_id`` (for the sweep's summary; a skipped job names the run it found); nothing
    when the job cannot read the sweep's parent file."""
    parent = read_parent(sweep_dir)
    if parent is None:
        return
    folder = Path(sweep_dir) / JOBS_DIR
    folder.mkdir(exist_ok=True)
    record = {"parent": parent.get("run_id"), "num": num, "outcome": outcome, "run_id": run_id}
    (folder / f"{num}.json").write_text(json.dumps(record) + "\n")


def outcomes(sweep_dir: str | Path, run_id: str) -> collections.Counter[str]:
    """How many jobs of the sweep whose parent is ``run_id`` ended with each outcome (files
    of another sweep that used the same directory are left out)."""
    return collections.Counter(str(record.get("outcome")) for record in job_records(sweep_dir, run_id))


def job_records(sweep_dir: str | Path, run_id: str) -> list[dict[str, Any]]:
    """The outcome records (:func:`record_outcome`) of the jobs of the sweep whose parent is
    ``run_id``, in job order (files of another sweep that used the same directory are left out)."""
    records = []
    for path in (Path(sweep_dir) / JOBS_DIR).glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(path.read_text())
            if isinstance(record, dict) and record.get("parent") == run_id:
                records.append(record)
    return sorted(records, key=lambda record: int(record.get("num") or 0))


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
        self.varied: dict[str, list[str]] | None = {}  # what the sweep varies; None: not known
        self.view: str | None = None  # the dashboard's view of the sweep's runs, once saved
        self.job_cfg: dict[str, Any] = {}

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
        self.job_cfg = {**job_cfg, "figures": study_figures(config)}
        values = swept_values(hydra_cfg)
        self.total = job_count(values)
        self.varied = None if values is None else swept(values)
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
        name = sweep_name(self.varied, sweep_dir)
        run = self.client.create_run(experiment_id, run_name=name, tags=tags)
        self.run_id = run.info.run_id
        # Hydra's sweeper raises when a job failed, so on_multirun_end is not reached: exit says FAILED
        atexit.register(self._end, failed=True)
        signal.signal(signal.SIGTERM, terminate_sweep)  # a terminated sweep runs atexit too
        quiet_launchers(not tracking_settings(job_cfg).verbose)
        mark_launcher()  # its worker processes end when it does
        # the summary gives the address of the sweep's runs: no "View run ... at" line per job (tracking server)
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        sweep_dir.mkdir(parents=True, exist_ok=True)
        record = {
            "run_id": self.run_id,
            "experiment_id": experiment_id,
            "uri": uri,
            "n_jobs": self.total,
            "swept": None if self.varied is None else list(self.varied),
        }
        (sweep_dir / PARENT_FILE).write_text(json.dumps(record, indent=2) + "\n")
        log.info("sweep parent run %s in experiment %s (%s)", self.run_id, experiment_id, uri)

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """Record a sweep job's outcome (where the job ran: a worker process, a cluster node)."""
        if config.hydra.mode != RunMode.MULTIRUN:
            return
        run_id = None
        if job_return.status != JobStatus.COMPLETED:
            outcome = FAILED
        else:
            value = job_return.return_value  # (outcome, run id) from dp2pub's app
            returned, run_id = value if isinstance(value, tuple) and len(value) == 2 else (value, None)
            outcome = SKIPPED if returned == SKIPPED else FINISHED
        record_outcome(str(config.hydra.sweep.dir), int(config.hydra.job.num), outcome, run_id)

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
        quiet_launchers(False)
        try:
            statuses, kept = self._close(run_id, failed)
        except Exception as error:  # the store went away (a tracking server that died): say so, in one line
            down = unreachable(self.uri)
            reason = f"tracking server {self.uri} stopped answering ({down})" if down else " ".join(str(error).split())
            print(f"dp2pub: error: cannot close the sweep's parent run {run_id}: {reason[:300]}", file=sys.stderr)
            print("  a job or sweep started on this host once the store is back marks it KILLED", file=sys.stderr)
            if report:
                self._report(run_id, True, 0, store=False)
            return
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

    def _report(self, run_id: str, kept: bool, stopped: int, store: bool = True) -> None:
        """Print the summary: the table of the jobs' main metrics (also logged on the parent
        run; not without the ``store``, which stopped answering), the jobs' outcomes, the
        parent run (unless it was deleted: every job was skipped) and where to see it."""
        from dp2pub.tracking import dashboard_hint

        if store:
            self._summarize(run_id, kept)
        counts = count_line(self.total, outcomes(self.sweep_dir, run_id), stopped)
        where = f"experiment {self.experiment} (id {self.experiment_id})"
        if kept:
            print(f"\nsweep: {counts}; parent run {run_id} in {where}")
        else:
            print(f"\nsweep: {counts}; no parent run kept (every job was skipped) in {where}")
        print(dashboard_hint(self.uri, self.experiment_id, view=self.view if kept else None), flush=True)

    def _summarize(self, run_id: str, kept: bool) -> None:
        """Print the sweep's table (:mod:`dp2pub.figures.sweep_summary`), log it with its
        figure on the parent run (when it was kept) and save the dashboard's view of the
        sweep's runs. A summary that cannot be made (a store gone, a full disk, a Ctrl-C) is a
        warning: the runs are in the store whatever happens here."""
        from dp2pub.figures import sweep_summary
        from dp2pub.metrics.main import chosen_patterns
        from dp2pub.tracking import ui_path

        assert self.client is not None
        try:
            records = job_records(self.sweep_dir, run_id)
            found = [str(r["run_id"]) for r in records if r.get("outcome") == SKIPPED and r.get("run_id")]
            runs = sweep_summary.sweep_runs(self.client, self.experiment_id, run_id, found)
            varied = self.varied if self.varied is not None else sweep_summary.varied_keys(runs)
            summary = sweep_summary.summarize(runs, varied, chosen_patterns(self.job_cfg))
            if summary is None:
                print("\nsweep summary: no finished job logged a main metric")
                return
            print(f"\n{summary.text()}\n({sweep_summary.caption(summary)})")
            if kept:
                figure = self._draw(runs, list(varied), summary.metrics)
                self.view = self._save_view(run_id, sweep_summary.view_columns(summary, list(varied), runs))
                link = ui_path(self.experiment_id, view=self.view) if self.view else ""
                sweep_summary.log_summary(self.client, run_id, summary, self.sweep_dir, figure, link)
        except (Exception, KeyboardInterrupt) as error:
            warn("the sweep's summary was not completed", error)

    def _draw(self, runs: Any, keys: list[str], metrics: tuple[str, ...]) -> Path | None:
        """The sweep's figure (:func:`dp2pub.figures.sweep_summary.draw`) in the sweep
        directory, or None when it cannot be drawn (a warning: the table is logged anyway)."""
        from dp2pub.figures import sweep_summary

        try:
            return sweep_summary.draw(runs, keys, metrics, self.sweep_dir / sweep_summary.FIGURE)
        except Exception as error:
            warn("the sweep's figure was not drawn", error)
            return None

    def _save_view(self, run_id: str, columns: list[str]) -> str | None:
        """Save the dashboard's view of the sweep's runs (:func:`dp2pub.tracking.save_view`:
        its swept parameters and main metrics, sorted by the first parameter, a flat list);
        its key, or None when the store refused it (a warning)."""
        from dp2pub.tracking import PARENT_TAG, save_view

        assert self.client is not None
        try:
            name = self.client.get_run(run_id).info.run_name or run_id
            first = next((c for c in columns if c.startswith("params.")), None)
            search = f"tags.`{PARENT_TAG}` = '{run_id}'"
            return save_view(self.client, self.experiment_id, run_id, name, columns, search, first)
        except Exception as error:
            warn("the dashboard's view of the sweep was not saved", error)
            return None


def warn(what: str, error: BaseException) -> None:
    """``dp2pub: warning: <what>: <Type>: <message>`` on one line of stderr."""
    reason = " ".join(f"{type(error).__name__}: {error}".split())[:300]
    print(f"dp2pub: warning: {what}: {reason}", file=sys.stderr)


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


def swept(values: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The keys that take more than one value (what the sweep varies), ``+``/``~`` left off."""
    return {key.lstrip("+~"): vals for key, vals in values.items() if len(vals) > 1}


#: Characters of a swept key's values in a parent run's name, beyond which they are cut.
NAME_VALUES = 30


def sweep_name(varied: Mapping[str, list[str]] | None, sweep_dir: Path) -> str:
    """A parent run's name that says what the sweep varies, first: ``ε 0.5,1,2 · seed 0-9 ·
    2026-11-26 22:14:46`` (each swept key, shortened, and its values, then the date and time
    of the sweep directory, its last two parts, which are kept whole however many keys come
    before); ``1 job · <date time>`` without a swept key, ``sweep · <date time>`` when the
    sweeper does not say (``varied`` None)."""
    date, time = ("", "", *sweep_dir.parts)[-2:]
    when = f"{date} {':'.join(time.split('-')[:3])}" if DATE.fullmatch(date) else "-".join(sweep_dir.parts[-2:])
    when = when or str(sweep_dir)
    if varied is None:
        keys = "sweep"
    else:
        keys = " · ".join(f"{_short_key(key)} {_short_values(values)}" for key, values in varied.items()) or "1 job"
    room = MAX_RUN_NAME - len(when) - len(" · ")
    return f"{keys if len(keys) <= room else keys[: room - 1] + '…'} · {when}"[:MAX_RUN_NAME]


#: A sweep directory's date part (Hydra's default ``%Y-%m-%d``).
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: The longest run name MLflow's store accepts (its ``runs.name`` column).
MAX_RUN_NAME = 250


def _short_key(key: str) -> str:
    """``epsilon`` as ``ε``; a dotted key as its last part (``mechanism.oracle``: ``oracle``),
    or its last two when that part says little (``dataset.n``, ``dataset.name``)."""
    if key == "epsilon":
        return "ε"
    parts = key.split(".")
    return ".".join(parts[-2:]) if len(parts[-1]) < 3 or parts[-1] == "name" else parts[-1]


def _short_values(values: list[str]) -> str:
    """``0-9`` for consecutive integers, else the values joined by commas, cut after
    :data:`NAME_VALUES` characters with their count: ``grr,sue,oue…(5)``."""
    if len(values) > 2 and all(re.fullmatch(r"-?\d+", v) for v in values):
        numbers = [int(v) for v in values]
        if numbers == list(range(numbers[0], numbers[0] + len(numbers))):
            return f"{numbers[0]}-{numbers[-1]}"
    text = ",".join(values)
    return text if len(text) <= NAME_VALUES else f"{text[: NAME_VALUES + 1].rsplit(',', 1)[0]}…({len(values)})"
