"""The Hydra entry point ``dp2pub``: compose the config, run one tracked job, print results.

``dp2pub epsilon=2 seed=3`` runs one job; ``dp2pub -m epsilon=0.5,1,2 seed=0,1`` sweeps, one
MLflow run per job. Everything here is a thin shell around :func:`dp2pub.job.run_job`.

The command starts light: the job's keys are checked (:func:`preflight`) before the job's
modules, MLflow and the store are imported, so ``dp2pub --help`` and a refused value cost
little more than Hydra composing the config (tests/test_layers.py, DEFERRED).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.plugins import Plugins
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from dp2pub.config import config_dir, plain_config, plugin_config_dirs
from dp2pub.data.errors import DataFileError
from dp2pub.hydra_errors import CONFIG_ERRORS, one_line
from dp2pub.interrupts import Terminated, describe, follow_launcher, raise_terminated, running_job, signal_number
from dp2pub.settings import JobSettings, tracking_settings
from dp2pub.store import StoreError, mlflow_defaults
from dp2pub.sweep import FINISHED, SKIPPED, JobFailed, current_parent, in_sweep, job_label, labelled_logs
from dp2pub.validation import ConfigError
from hydra_plugins.dp2pub_ray_launcher.ray_launcher import RayLauncher
from hydra_plugins.dp2pub_searchpath.searchpath import PluginConfigs
from hydra_plugins.dp2pub_sweeper.sweeper import ValidateOnceSweeper

CONF_DIR = config_dir()


def format_results(metrics: dict[str, float]) -> str:
    """A two-column text table of metric names and values."""
    width = max(len(name) for name in metrics)
    lines = [f"{'metric':<{width}}  value", f"{'-' * width}  {'-' * 12}"]
    lines += [f"{name:<{width}}  {value:.6g}" for name, value in sorted(metrics.items())]
    return "\n".join(lines)


def preflight(plain: dict) -> None:
    """Check the job-level keys of a composed config (:class:`~dp2pub.settings.JobSettings`,
    ``tracking.*``) before anything is imported or opened for the job, as the job checks them
    (whatever the mechanism, whose own keys the job checks inside its run): a single command
    refused here leaves no run in the store. A sweep's job skips it, so that every job of a
    sweep, refused or not, is a run its parent counts."""
    JobSettings.parse(plain, uses_budget=False)
    tracking_settings(plain)


def execute(cfg: DictConfig) -> tuple[str, str]:
    """Run and track the job described by a composed config; returns the run id and whether
    the job ran (FINISHED) or was skipped (SKIPPED). A sweep's job starts its lines with its
    place in the sweep (``[2/3]``) and leaves the dashboard to the sweep's summary."""
    plain = plain_config(cfg)
    if not in_sweep():
        preflight(plain)
    from dp2pub.job import run_job
    from dp2pub.registry import named
    from dp2pub.tracking import dashboard_hint, experiment_of, run_tracked, tracking_uri

    plain = named(plain)
    overrides = list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []
    label = job_label()
    with labelled_logs(label):
        run_id, result = run_tracked(plain, run_job, overrides, parent=current_parent())
    uri = tracking_uri(plain)
    label = f"{label} " if label else ""
    if result is None:
        print(
            f"\n{label}skipped ({plain['mechanism']['name']} on {plain['dataset']['name']}, epsilon={plain['epsilon']}, "
            f"seed={plain['seed']}): already FINISHED, or running in another job, as run {run_id} "
            "(tracking.skip_finished=true)"
        )
        return run_id, SKIPPED
    print(
        f"\n{label}run {run_id} ({plain['mechanism']['name']} on {plain['dataset']['name']}, "
        f"{result.guarantee}, seed={plain['seed']})"
    )
    print(format_results(result.metrics))
    for note in result.notes:
        print(f"note: {note}")
    if not in_sweep():
        print(f"\n{dashboard_hint(uri, experiment_of(uri, run_id))}\n")
    return run_id, FINISHED


def config_dirs(argv: list[str]) -> list[Path]:
    """dp2pub's config directory, the installed plugins' (:mod:`dp2pub.plugins`, entry
    points ``dp2pub.configs``) and any added with Hydra's ``--config-dir``/``-cd``."""
    dirs = [CONF_DIR, *plugin_config_dirs()]
    for i, arg in enumerate(argv):
        if arg in ("-cd", "--config-dir") and i + 1 < len(argv):
            dirs.append(Path(argv[i + 1]).expanduser())
        elif arg.startswith("--config-dir="):
            dirs.append(Path(arg.split("=", 1)[1]).expanduser())
    return dirs


def added_options(argv: list[str] | None = None) -> str:
    """The help's lines for the config options that installed plugins and ``--config-dir``
    add to dp2pub's groups (``mechanism  kss  (from kss_plugin.conf)``), or a line saying
    there are none (the ``dp2pub_added_options`` resolver of conf/hydra/help/dp2pub.yaml)."""
    lines = []
    for directory in config_dirs(sys.argv[1:] if argv is None else argv)[1:]:
        for group in sorted(p for p in directory.iterdir() if p.is_dir()) if directory.is_dir() else []:
            options = sorted(p.stem for p in group.glob("*.yaml") if not (CONF_DIR / group.name / p.name).exists())
            if options:
                lines.append(f"{group.name:<13} {', '.join(options)}  (from {directory})")
    return "\n".join(lines) or "none (a plugin package's or --config-dir's options are listed here)"


def check_group_options(argv: list[str]) -> None:
    """Refuse an unknown option of one of dp2pub's config groups (``dataset=nosuchdata``,
    also inside a sweep list) with a ConfigError that lists the available options, before
    Hydra composes anything. The options are the files of the group in dp2pub's config
    directory and in any ``--config-dir``; with an added ``hydra.searchpath`` (which may name
    packages) the check is left to Hydra, as are all other overrides."""
    candidates = [arg for arg in argv if "=" in arg and not arg.startswith("-")]
    try:
        overrides = OverridesParser.create().parse_overrides(candidates)
    except HydraException:
        return  # Hydra reports syntax errors itself
    if any(override.key_or_group == "hydra.searchpath" for override in overrides):
        return
    dirs = config_dirs(argv)
    for override in overrides:
        folders = [d / override.key_or_group for d in dirs if (d / override.key_or_group).is_dir()]
        if override.package or override.is_delete() or not folders or override.key_or_group.startswith("hydra"):
            continue
        options = sorted({path.stem for folder in folders for path in folder.glob("*.yaml")})
        try:
            values = (
                list(override.sweep_string_iterator())
                if override.is_sweep_override()
                else [override.get_value_element_as_str()]
            )
        except HydraException:
            continue  # glob(), interval(): Hydra expands or refuses them itself
        for value in values:
            if value not in options and value != "null":  # null: the group's "none" (experiment, cluster)
                raise ConfigError(override.key_or_group, value, "one of " + ", ".join(options))


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def app(cfg: DictConfig) -> str:
    """The Hydra application; returns the job's outcome, FINISHED or SKIPPED (Hydra hands it
    to the sweep's ``on_job_end``). A config error or a missing or corrupt data file prints one
    line and exits with status 2 (in a multirun: fails that job only, see :class:`JobFailed`)."""
    if os.environ.get("CI"):  # progress lines are for people; CI logs keep warnings and results
        logging.getLogger("dp2pub").setLevel(logging.WARNING)
    worker = False
    if not in_sweep():
        signal.signal(signal.SIGTERM, raise_terminated)  # a sweep's parent installs its own
    else:
        worker = follow_launcher()  # a worker process dies with the sweep that started it
    try:
        with running_job():
            return execute(cfg)[1]
    except (KeyboardInterrupt, Terminated) as error:
        if not worker:
            raise
        print(f"dp2pub: job stopped by {describe(error)}; its run is marked KILLED", file=sys.stderr)
        os._exit(128 + signal_number(error))  # a worker of a stopped sweep takes no further job
    except (ConfigError, DataFileError, StoreError, MemoryError, *CONFIG_ERRORS) as error:
        message = _message(error)
        print(f"dp2pub: error: {message}", file=sys.stderr)
        if in_sweep():
            raise JobFailed(message) from None
        raise SystemExit(2) from None


def _message(error: BaseException) -> str:
    """One line for an error a job refuses with."""
    if isinstance(error, MemoryError):
        return f"out of memory ({error or 'MemoryError'}): the job needed more than the memory estimate; set limits.memory_gib or shrink the job"
    if isinstance(error, CONFIG_ERRORS):
        return one_line(error, sys.argv[1:])
    return str(error)


def main() -> None:
    """Console script ``dp2pub`` (and ``python -m dp2pub``): checks the config group options
    on the command line, then runs the Hydra application. A config Hydra cannot compose is
    refused in one line with status 2 (Hydra's errors reach here unprinted: dp2pub sets
    ``HYDRA_FULL_ERROR=1`` and words them itself); a sweep in which a job was refused exits
    with status 2 after the other jobs ran. SIGTERM or Ctrl-C stop it with one line and the
    shell's status 128 + signal (the running job's run is marked KILLED)."""
    argv = sys.argv[1:]
    try:
        check_group_options(argv)
    except ConfigError as error:
        print(f"dp2pub: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    os.environ["HYDRA_FULL_ERROR"] = "1"
    OmegaConf.register_new_resolver("dp2pub_added_options", added_options, replace=True)
    mlflow_defaults()  # a dead tracking server fails its jobs in seconds, and no telemetry
    # Hydra finds plugins by walking the hydra_plugins folders, which misses dp2pub's in an
    # editable install (setuptools maps them by an import hook, not a folder): name them outright
    Plugins.instance().register(RayLauncher)
    Plugins.instance().register(ValidateOnceSweeper)
    Plugins.instance().register(PluginConfigs)
    try:
        app()
    except (KeyboardInterrupt, Terminated) as error:
        print(f"dp2pub: stopped by {describe(error)}; a job that was running is marked KILLED", file=sys.stderr)
        raise SystemExit(128 + signal_number(error)) from None
    except JobFailed as error:  # its own line was printed by the job (or the launcher)
        print(f"dp2pub: error: the sweep finished with a failed job (first: {error})", file=sys.stderr)
        raise SystemExit(2) from None
    except CONFIG_ERRORS as error:
        print(f"dp2pub: error: {one_line(error, argv)}", file=sys.stderr)
        raise SystemExit(2) from None
