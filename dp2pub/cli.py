"""The Hydra entry point ``dp2pub``: compose the config, run one tracked job, print results.

``dp2pub epsilon=2 seed=3`` runs one job; ``dp2pub -m epsilon=0.5,1,2 seed=0,1`` sweeps, one
MLflow run per job. Everything here is a thin shell around :func:`dp2pub.job.run_job`.

The command starts light: the job's keys are checked (:func:`preflight`) before the job's
modules, MLflow and the store are imported, so ``dp2pub --help`` and a refused value cost
little more than Hydra composing the config (tests/test_layers.py, DEFERRED).
"""

from __future__ import annotations

import atexit
import errno
import logging
import os
import signal
import sys
import traceback
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.core.plugins import Plugins
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from dp2pub.config import config_dir, plain_config, plugin_config_dirs, study_figures
from dp2pub.data.errors import DataFileError
from dp2pub.hydra_errors import CONFIG_ERRORS, brief, one_line
from dp2pub.interrupts import (
    Terminated,
    describe,
    follow_launcher,
    note_signals_at_exit,
    raise_terminated,
    report_late_signal,
    running_job,
    signal_number,
)
from dp2pub.metrics.main import Pattern, chosen_patterns, main_metrics
from dp2pub.settings import JobSettings, tracking_settings
from dp2pub.store import StoreError, mlflow_defaults
from dp2pub.sweep import FINISHED, SKIPPED, JobFailed, current_parent, in_sweep, job_label, labelled_logs
from dp2pub.validation import ConfigError, shorten
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
    place in the sweep (``[2/3]``), prints one line of its main metrics (its progress and full
    table with ``tracking.verbose=true``) and leaves the dashboard to the sweep's summary."""
    plain = plain_config(cfg)
    if not in_sweep():
        preflight(plain)
    from dp2pub.job import run_job
    from dp2pub.registry import named
    from dp2pub.tracking import dashboard_hint, experiment_of, run_tracked, runs_view, tracking_uri

    plain = named(plain)
    overrides = list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []
    label = job_label()
    brief_output = in_sweep() and not tracking_settings(plain).verbose
    with labelled_logs(label, quiet=brief_output):
        run_id, result = run_tracked(plain, run_job, overrides, parent=current_parent())
    uri = tracking_uri(plain)
    label = f"{label} " if label else ""
    if result is None:
        gap = "" if brief_output else "\n"  # a full table is set apart by a blank line, a job's line is not
        print(
            f"{gap}{label}skipped ({plain['mechanism']['name']} on {plain['dataset']['name']}, "
            f"epsilon={plain['epsilon']}, seed={plain['seed']}): already FINISHED, or running in another job, as run "
            f"{run_id} (tracking.skip_finished=true)"
        )
        return run_id, SKIPPED
    patterns = chosen_patterns({**plain, "figures": study_figures(cfg)})
    if brief_output:
        print(job_line(label, swept_overrides(overrides), result.metrics, patterns), flush=True)
    else:
        print(
            f"\n{label}run {run_id} ({plain['mechanism']['name']} on {plain['dataset']['name']}, "
            f"{result.guarantee}, seed={plain['seed']})"
        )
        print(format_results(result.metrics))
    for note in result.notes:
        print(f"{label}note: {note}")
    if not in_sweep():
        experiment = experiment_of(uri, run_id)
        view = runs_view(uri, experiment, main_metrics(result.metrics, patterns))
        print(f"\n{dashboard_hint(uri, experiment, view=view)}\n")
    return run_id, FINISHED


def job_line(label: str, what: str, metrics: dict[str, float], patterns: list[Pattern]) -> str:
    """A sweep job's one line: ``[3/4] epsilon=1 seed=0: tvd_1way 0.4711  mse_freq 0.06840``,
    its main metrics (:func:`dp2pub.metrics.main.main_metrics`) to 4 significant digits."""
    shown = "  ".join(f"{name} {metrics[name]:.4g}" for name in main_metrics(metrics, patterns))
    return f"{label}{what}: {shown}"


def swept_overrides(overrides: list[str]) -> str:
    """The overrides of a sweep's job that set what the sweep varies (the parent file's
    ``swept`` keys), all of them when those are not known."""
    swept = (current_parent() or {}).get("swept")
    if not swept:
        return " ".join(overrides)
    return " ".join(o for o in overrides if o.partition("=")[0].lstrip("+~") in swept)


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


#: The longest part of a config key (between dots) that the command line takes: Hydra looks
#: a key up as a file name, which no file system takes longer.
MAX_KEY_PART = 255


def check_group_options(argv: list[str]) -> None:
    """Refuse an unknown option of one of dp2pub's config groups (``dataset=nosuchdata``,
    also inside a sweep list) with a ConfigError that lists the available options, before
    Hydra composes anything. The options are the files of the group in dp2pub's config
    directory and in any ``--config-dir``; with an added ``hydra.searchpath`` (which may name
    packages) the check is left to Hydra, as are all other overrides. Also refused here: a
    key with a part longer than a file name may be (:data:`MAX_KEY_PART`, which Hydra would
    look up as a file), and a ``<group>.name`` that names another option (:func:`check_names`)."""
    candidates = [arg for arg in argv if "=" in arg and not arg.startswith("-")]
    for arg in candidates:
        key, _, value = arg.lstrip("+~").partition("=")
        if any(len(part) > MAX_KEY_PART for part in key.replace("/", ".").split(".")):
            # Hydra looks a key up as a file of its config directories: the OS refuses the name
            raise ConfigError(
                shorten(key), value, f"a key of the config (none has a part of over {MAX_KEY_PART} characters)"
            )
    try:
        overrides = OverridesParser.create().parse_overrides(candidates)
    except HydraException:
        return  # Hydra reports syntax errors itself
    if any(override.key_or_group == "hydra.searchpath" for override in overrides):
        return
    dirs = config_dirs(argv)
    for override in overrides:
        folders = [d / override.key_or_group for d in dirs if _is_dir(d / override.key_or_group)]
        if override.package or override.is_delete() or not folders or override.key_or_group.startswith("hydra"):
            continue
        options = sorted({path.stem for folder in folders for path in folder.glob("*.yaml")})
        for value in _values(override):  # none for glob(), interval(): Hydra expands or refuses them itself
            if value not in options and value != "null":  # null: the group's "none" (experiment, cluster)
                raise ConfigError(override.key_or_group, value, "one of " + ", ".join(options))
    check_names(overrides, dirs)


def _is_dir(path: Path) -> bool:
    """Whether ``path`` is a directory; False for a name the file system refuses (a key of
    thousands of characters), which Hydra then reports as an unknown key."""
    try:
        return path.is_dir()
    except OSError:
        return False


#: The config groups whose options name a builder by ``<group>.name``.
NAMED_GROUPS = ("dataset", "mechanism")


def check_names(overrides: list[Override], dirs: list[Path]) -> None:
    """Refuse ``dataset.name=car`` (or ``mechanism.name=oue``) where ``dataset=car`` was
    meant: an override of ``<group>.name`` to an option of the group other than the one
    selected keeps the selected option's keys (``dataset.d``, ...) with another builder,
    which then refuses a key it does not take or, worse, runs with keys meant for another.
    The selected option is the group's override on the command line (each of a sweep's),
    else the experiment's (``experiment=...``), else config.yaml's default; a name that the
    selected option sets itself (``dataset=synthetic_bn_tree`` is named ``synthetic_bn``) is
    not refused, nor is a name that is no option of the group (a plugin's builder without a
    config of its own)."""
    for group in NAMED_GROUPS:
        options = {path.stem for d in dirs for path in (d / group).glob("*.yaml")}
        for override in overrides:
            if override.key_or_group != f"{group}.name" or override.is_delete():
                continue
            for name in _values(override):
                if name not in options:
                    continue
                for option in _selected_options(group, overrides, dirs):
                    if name not in (option, _option_name(group, option, dirs)):
                        raise ConfigError(
                            f"{group}.name",
                            name,
                            f"the name of the selected {group} option ({group}={option}), as {group}.name only "
                            f"names the code that reads that option's keys: to use {name}, select its config "
                            f"with {group}={name}",
                        )


def _values(override: Override) -> list[str]:
    """The values of an override as strings (each of a sweep's); none when Hydra must
    expand them itself (``glob()``, ``interval()``)."""
    try:
        if override.is_sweep_override():
            return list(override.sweep_string_iterator())
        return [override.get_value_element_as_str()]
    except HydraException:
        return []


def _selected_options(group: str, overrides: list[Override], dirs: list[Path]) -> list[str]:
    """The options of ``group`` that the command line selects: its override's values, else
    the ``override /<group>: ...`` of the experiments it selects, else config.yaml's default."""
    default = _defaults_choice(CONF_DIR / "config.yaml", group)
    for override in overrides:
        if override.key_or_group == group and not override.package and not override.is_delete():
            return _values(override)
    chosen = [
        _defaults_choice(_option_file("experiment", value, dirs), f"override /{group}") or default
        for override in overrides
        if override.key_or_group == "experiment" and not override.is_delete()
        for value in _values(override)
    ]
    return [option for option in (chosen or [default]) if option]


def _option_file(group: str, option: str, dirs: list[Path]) -> Path | None:
    """The file of ``option`` of ``group`` (the last config directory that has one)."""
    found = [d / group / f"{option}.yaml" for d in dirs if (d / group / f"{option}.yaml").is_file()]
    return found[-1] if found else None


def _read_yaml(path: Path | None) -> dict:
    """A config file's top-level mapping; empty when it is missing or does not parse."""
    if path is None:
        return {}
    try:
        loaded = OmegaConf.to_container(OmegaConf.load(path))
    except Exception:  # Hydra reports a file it cannot read when it composes
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _defaults_choice(path: Path | None, key: str) -> str | None:
    """The option that the defaults list of the config file ``path`` gives ``key``."""
    for item in _read_yaml(path).get("defaults") or []:
        if isinstance(item, dict) and isinstance(item.get(key), str):
            return item[key]
    return None


def _option_name(group: str, option: str, dirs: list[Path], depth: int = 0) -> str | None:
    """The ``name`` that ``option`` of ``group`` sets itself or inherits from the options of
    the same group its defaults list names (``synthetic_bn_tree``: ``synthetic_bn``)."""
    config = _read_yaml(_option_file(group, option, dirs))
    if isinstance(config.get("name"), str):
        return config["name"]
    for item in config.get("defaults") or []:
        if isinstance(item, str) and item not in ("_self_", option) and depth < 5:
            return _option_name(group, item.lstrip("/").removeprefix(f"{group}/"), dirs, depth + 1)
    return None


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def app(cfg: DictConfig) -> tuple[str, str]:
    """The Hydra application; returns the job's outcome, FINISHED or SKIPPED, and its run id
    (Hydra hands them to the sweep's ``on_job_end``). A config error or a missing or corrupt data file prints one
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
            run_id, outcome = execute(cfg)
            return (outcome, run_id)
    except (KeyboardInterrupt, Terminated) as error:
        if not worker:
            raise
        # a worker of a stopped sweep takes no further job; its launcher says so in one line,
        # and the run's error tag names the signal
        os._exit(128 + signal_number(error))
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
    if isinstance(error, StoreError):  # a store that cannot be used has no run to tag: shorten a long URI
        return brief(str(error))
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
    atexit.register(report_late_signal)  # registered before the sweep's, so it runs after it
    stopped = None
    try:
        app()
    except (KeyboardInterrupt, Terminated) as error:
        print(f"dp2pub: stopped by {describe(error)}; a job that was running is marked KILLED", file=sys.stderr)
        stopped = signal_number(error)
        raise SystemExit(128 + stopped) from None
    except JobFailed as error:  # its own line was printed by the job (or the launcher)
        print(f"dp2pub: error: the sweep finished with a failed job (first: {error})", file=sys.stderr)
        raise SystemExit(2) from None
    except CONFIG_ERRORS as error:
        print(f"dp2pub: error: {one_line(error, argv)}", file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as error:
        message = output_dir_error(error, argv)
        if message is None:
            raise
        print(f"dp2pub: error: {message}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:  # the work is done; a signal now must not raise into the interpreter's shutdown
        note_signals_at_exit(stopped)


def output_dir_error(error: OSError, argv: list[str]) -> str | None:
    """One line for an OSError that Hydra raised before the job started, creating or writing
    the job's output folder under ``paths.outputs`` (``hydra/runs/<date>/<time>``: a path
    under a file, a read-only directory, a folder name longer than the file system allows),
    naming the key, its value and the path that failed; None for another error (one the job
    raised, or one outside ``paths.outputs``), which stays a traceback."""
    task_code = getattr(app, "__wrapped__", app).__code__
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    if error.filename is None or any(frame.f_code is task_code for frame in frames):
        return None
    outputs = _outputs_of(frames) or _override_value(argv, "paths.outputs")
    if outputs is None:
        return None
    failed, root = Path(os.fsdecode(error.filename)).absolute(), Path(outputs).expanduser().absolute()
    if failed != root and root not in failed.parents:
        return None
    reason = error.strerror or type(error).__name__
    if error.errno == errno.ENAMETOOLONG:
        longest = max(failed.parts, key=len)
        reason += f": a folder name of {len(longest)} characters, where the file system allows {_name_max(failed)}"
    return str(
        ConfigError(
            "paths.outputs",
            outputs,
            f"a directory where Hydra can create and write the job's output folder ({shorten(str(failed))}: {reason})",
        )
    )


def _outputs_of(frames: list) -> str | None:
    """``paths.outputs`` of the composed config that Hydra's run_job or launcher (a frame of
    the traceback) was running."""
    for frame in reversed(frames):
        for config in (frame.f_locals.get("config"), getattr(frame.f_locals.get("self"), "config", None)):
            if isinstance(config, DictConfig):
                try:
                    value = OmegaConf.select(config, "paths.outputs")
                except Exception:  # an interpolation that does not resolve
                    continue
                if isinstance(value, str) and value:
                    return value
    return None


def _override_value(argv: list[str], key: str) -> str | None:
    """The value that the last override of ``key`` on the command line gives it."""
    values = [arg.split("=", 1)[1] for arg in argv if arg.lstrip("+").split("=", 1)[0] == key and "=" in arg]
    return values[-1] if values else None


def _name_max(path: Path) -> int:
    """The longest file name the file system of ``path``'s nearest existing folder allows."""
    for parent in path.parents:
        try:
            return os.pathconf(parent, "PC_NAME_MAX")
        except (OSError, ValueError):  # not there, or its own name is too long
            continue
    return 255
