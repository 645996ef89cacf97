"""``dp2pub-figures``: a study's runs -> CSVs -> PNG and PDF figures.

``dp2pub-figures <study> [--config-dir DIR] [key=value ...]`` draws the figures of any study
whose experiment config (``conf/experiment/<study>.yaml``, or ``DIR/experiment/<study>.yaml``)
has a ``figures:`` section (docs/how-to/figures.md); ``<study>`` may also name one figure of a study
(``dp2pub_paper_svm``). ``dp2pub-figures experiment=<MLflow experiment> x=epsilon y=tvd_2way
hue=mechanism.name`` draws any sweep ad hoc (:data:`ADHOC_KEYS`).

Keys of both forms: ``tracking.uri`` (the store; default: the study's ``tracking.uri``, else
``MLFLOW_TRACKING_URI``, else ``sqlite:///<abs paths.outputs>/mlflow.db`` as for ``dp2pub``),
``paths.outputs`` (the study's, ``outputs``), ``figures.dir`` (``<paths.outputs>/figures``) and
``figures.from_csv`` (a ``<figure>_runs.csv`` to rebuild from, without MLflow). Writes
``<figure>_runs.csv``, ``<figure>_summary.csv``, ``<figure>.png`` and ``<figure>.pdf`` into
``figures.dir`` for each figure and prints their paths. Errors (unknown study or key, a study
without figures, a bad ``figures:`` section, an empty experiment, a bad CSV) print one line and
exit with status 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from dp2pub.figures.aggregate import aggregate, summary_csv
from dp2pub.figures.collect import EmptyStudyError, collect, read_runs, runs_csv, search_finished, write_csv
from dp2pub.figures.load import Study, StudyError, adhoc_hint, config_dirs, load_study, readable_studies, study_names
from dp2pub.figures.overlays import OVERLAYS
from dp2pub.figures.plot import plot_study
from dp2pub.figures.schema import NAME
from dp2pub.figures.studies import EPSILON_LABEL, OverlayError, StudySpec
from dp2pub.tracking import tracking_uri
from dp2pub.validation import ConfigError

PROG = "dp2pub-figures"
#: Accepted overrides of both forms and their defaults (None: derived, see the module docstring).
KEYS: dict[str, str | None] = {
    "tracking.uri": None,
    "paths.outputs": "outputs",
    "figures.dir": None,
    "figures.from_csv": None,
}
#: The keys of the ad hoc form and what they say.
ADHOC_KEYS: dict[str, str] = {
    "experiment": "the MLflow experiment whose finished runs to draw (required)",
    "x": "the run parameter on the x axis, e.g. epsilon (required)",
    "y": "the metric(s) drawn against x, a comma list, e.g. tvd_2way,tvd_3way (required)",
    "hue": "the parameter that gives each line its colour (mechanism.name)",
    "facet": "parameter(s) whose values make the columns of panels, a comma list",
    "row": "a parameter whose values make rows of panels",
    "logx": "true: logarithmic x axis (false)",
    "logy": "true: logarithmic y axes (false)",
    "name": "the files' name (the experiment's)",
    "title": "the figure's title (<y> against <x>)",
}
#: Names shown per ad hoc error hint at most.
HINT_NAMES = 15


class UsageError(ValueError):
    """A bad command line or input; reported in one line with exit status 2."""


def parse_overrides(items: Sequence[str], known: Sequence[str] = tuple(KEYS)) -> dict[str, str | None]:
    """``key=value`` strings -> the settings: every key of ``known``, None where not given."""
    settings: dict[str, str | None] = dict.fromkeys(known)
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"expected key=value, got {item!r}")
        if key not in known:
            raise UsageError(f"unknown key {key!r}; known keys: {', '.join(known)}")
        settings[key] = value or None
    return settings


def same_store(settings: dict[str, str | None]) -> list[str]:
    """The store keys given on the command line (other than their defaults), which the
    command that fills the experiment needs too."""
    return [
        f"{key}={settings[key]}"
        for key in ("tracking.uri", "paths.outputs")
        if settings[key] and settings[key] != KEYS[key]
    ]


def figures_of(study: str, from_csv: bool, dirs: Sequence[Path]) -> tuple[list[StudySpec], Study]:
    """The figures ``study`` names and its study: all of a study's figures (with a runs CSV,
    the one of its name, or its only one), or one figure of a study named by the figure."""
    if study in study_names(dirs):
        found = load_study(study, dirs)
        if not found.figures:
            where = next(
                d / "experiment" / f"{study}.yaml" for d in dirs if (d / "experiment" / f"{study}.yaml").is_file()
            )
            raise UsageError(
                f"study {study!r} has no figures: section in {where} (docs/how-to/figures.md); "
                f"draw its runs ad hoc: {adhoc_hint(found.experiment)}"
            )
        if not from_csv:
            return list(found.figures), found
        chosen = [s for s in found.figures if s.name == study] or list(found.figures)
        if len(chosen) > 1:
            raise UsageError(f"a runs CSV holds one figure: name one of {', '.join(s.name for s in chosen)}")
        return chosen, found
    studies, unread = readable_studies(dirs)
    for found in studies:
        for spec in found.figures:
            if spec.name == study:
                return [spec], found
    available = sorted(spec.name for found in studies for spec in found.figures)
    why = f" (not read: {', '.join(unread)}; dp2pub-figures <study> says why)" if unread else ""
    raise UsageError(f"unknown study {study!r}; available: {', '.join(available)}{why}")


def build(study: str, settings: dict[str, str | None], config_dir: Path | None = None) -> list[Path]:
    """Every figure of :func:`figures_of`; returns the files written."""
    specs, found = figures_of(study, bool(settings["figures.from_csv"]), config_dirs(config_dir))
    fill = [*([f"--config-dir {config_dir}"] if config_dir is not None else []), *same_store(settings)]
    store = {
        "tracking.uri": settings["tracking.uri"] or found.uri,
        "paths.outputs": settings["paths.outputs"] or found.outputs,
    }
    return [path for spec in specs for path in build_one(spec, {**settings, **store}, fill, study_checker)]


def build_one(
    spec: StudySpec,
    settings: dict[str, str | None],
    fill: Sequence[str] = (),
    check: Callable[[StudySpec, pd.DataFrame], None] | None = None,
) -> list[Path]:
    """Collect (or read) the runs of one figure, ``check`` them, aggregate, plot; returns the
    files written. ``fill``: what the command that fills the experiment adds to the figure's
    sweep command (``--config-dir``, the store's keys)."""
    directory = Path(settings["figures.dir"] or Path(settings["paths.outputs"] or "outputs") / "figures")
    source = settings["figures.from_csv"]
    if source:
        try:
            table = read_runs(spec, Path(source))
        except (OSError, ValueError) as error:
            raise UsageError(f"cannot read {source}: {error}") from None
    else:
        uri = store_uri(settings)
        table = collect(spec, uri, " ".join([spec.sweep_command, *fill]))
        print(
            f"{spec.name}: {table['run_id'].nunique()} runs from experiment '{spec.experiment}' in {uri}",
            file=sys.stderr,
        )
    if check is not None:
        check(spec, table)
    written = [] if source else [write_csv(table, runs_csv(directory, spec.name))]
    summary = aggregate(table)
    written.append(write_csv(summary, summary_csv(directory, spec.name)))
    seeds = sorted(int(seed) for seed in table["seed"].dropna().unique())
    written += plot_study(spec, summary, directory, seeds)
    return written


def store_uri(settings: dict[str, str | None]) -> str:
    """The store of ``tracking.uri`` and ``paths.outputs``, as ``dp2pub`` finds it."""
    outputs = settings["paths.outputs"] or "outputs"
    return tracking_uri({"tracking": {"uri": settings["tracking.uri"]}, "paths": {"outputs": outputs}})


def _flag(settings: dict[str, str | None], key: str) -> bool:
    """``true`` or ``false`` (default false)."""
    value = settings.get(key) or "false"
    if value not in ("true", "false"):
        raise ConfigError(key, value, "true or false")
    return value == "true"


def _names(settings: dict[str, str | None], key: str) -> tuple[str, ...]:
    """A comma list of names, each once (empty when not given)."""
    given = settings.get(key) or ""
    names = tuple(dict.fromkeys(n.strip() for n in given.split(",") if n.strip()))
    if any(" " in name for name in names):
        raise ConfigError(key, given, "a comma list of names")
    return names


def _name(settings: dict[str, str | None], key: str) -> str | None:
    """One name (None when not given)."""
    names = _names(settings, key)
    if len(names) > 1:
        raise ConfigError(key, settings[key], "one name")
    return names[0] if names else None


def adhoc_spec(settings: dict[str, str | None]) -> StudySpec:
    """The ad hoc figure of the settings of :data:`ADHOC_KEYS`."""
    experiment, x, ys = settings.get("experiment"), _name(settings, "x"), _names(settings, "y")
    for key, value in (("experiment", experiment), ("x", x), ("y", ys)):
        if not value:
            raise UsageError(
                f"the ad hoc form needs {key}=...: dp2pub-figures experiment=<MLflow experiment> "
                "x=<parameter> y=<metric>[,<metric>...] [hue=<parameter>] (see --help)"
            )
    assert experiment is not None and x is not None
    name = settings.get("name") or re.sub(r"[^A-Za-z0-9_.-]", "_", experiment)
    if not NAME.fullmatch(name):
        raise ConfigError("name", name, "a name of letters, digits, '_', '-' or '.'")
    return StudySpec(
        name=name,
        title=settings.get("title") or f"{', '.join(ys)} against {x}",
        experiment=experiment,
        x=x,
        metrics=ys,
        hue=_name(settings, "hue") or "mechanism.name",
        facets=_names(settings, "facet"),
        row_facet=_name(settings, "row"),
        log_x=_flag(settings, "logx"),
        log_y=_flag(settings, "logy"),
        x_label=EPSILON_LABEL if x == "epsilon" else x,
    )


def _logged(spec: StudySpec, settings: dict[str, str | None], prefix: str) -> str:
    """``; its runs have: a, b, ...``: the params or metrics (``prefix``) that the experiment's
    runs logged, for an ad hoc error ("" when read from a CSV)."""
    if settings["figures.from_csv"]:
        return ""
    runs = search_finished(spec.experiment, store_uri(settings))
    names = sorted(c[len(prefix) :] for c in runs.columns if c.startswith(prefix) and ".hydra." not in f".{c}")
    shown = ", ".join(names[:HINT_NAMES]) + (", ..." if len(names) > HINT_NAMES else "")
    return f"; its runs have: {shown}" if names else ""


def adhoc_checker(settings: dict[str, str | None]) -> Callable[[StudySpec, pd.DataFrame], None]:
    """A check of the ad hoc figure's runs: every parameter and metric it names was logged."""

    def check(spec: StudySpec, table: pd.DataFrame) -> None:
        params = [("x", spec.x), ("hue", spec.hue), *(("facet", f) for f in spec.facets), ("row", spec.row_facet)]
        for key, param in params:
            if param is not None and table[param].isna().all():
                raise UsageError(
                    f"{key}={param}: no finished run of experiment '{spec.experiment}' has this parameter"
                    + _logged(spec, settings, "params.")
                )
        logged = set(table["metric"])
        for metric in spec.metrics:
            if metric not in logged:
                raise UsageError(
                    f"y={metric}: no finished run of experiment '{spec.experiment}' logged this metric"
                    + _logged(spec, settings, "metrics.")
                )

    return check


def study_checker(spec: StudySpec, table: pd.DataFrame) -> None:
    """A check of a study figure's runs: each of its metrics was logged by some run, and its
    hue is a parameter of some run (a misspelled key would draw an empty panel or one line)."""
    logged = set(table["metric"])
    for metric in spec.metrics:
        if metric not in logged:
            raise UsageError(
                f"figures.{spec.name}.metrics: no finished run of experiment '{spec.experiment}' logged {metric!r}"
            )
    if spec.hue in table and table[spec.hue].isna().all():
        raise UsageError(
            f"figures.{spec.name}.hue={spec.hue}: no finished run of experiment '{spec.experiment}' has this parameter"
        )


def build_adhoc(items: Sequence[str]) -> list[Path]:
    """The ad hoc figure of ``items`` (``key=value`` of :data:`ADHOC_KEYS` and :data:`KEYS`)."""
    settings = parse_overrides(items, (*ADHOC_KEYS, *KEYS))
    return build_one(adhoc_spec(settings), settings, same_store(settings), adhoc_checker(settings))


def studies_text(dirs: Sequence[Path]) -> str:
    """The studies of ``dirs`` for the help: each figure with its title, then the studies that
    have no figures (or cannot be read)."""
    lines, others = [], []
    for name in study_names(dirs):
        try:
            found = load_study(name, dirs)
        except (StudyError, ConfigError) as error:
            others.append(f"  {name}: cannot be read ({error})")
            continue
        lines += [(spec.name, spec.title) for spec in found.figures]
        if not found.figures:
            others.append(f"  {name}: no figures: section (draw it ad hoc)")
    width = max((len(name) for name, _ in lines), default=0)
    text = "\n".join(f"  {name:<{width}}  {title}" for name, title in sorted(lines))
    return text + ("\n\nstudies without figures:\n" + "\n".join(others) if others else "")


USAGE = f"""forms:
  {PROG} STUDY [--config-dir DIR] [key=value ...]
      the figures of STUDY, whose experiment config (conf/experiment/STUDY.yaml, or
      DIR/experiment/STUDY.yaml) has a figures: section (docs/how-to/figures.md: its keys and
      overlays); STUDY may also name one figure of a study (dp2pub_paper_svm)
  {PROG} experiment=NAME x=PARAM y=METRIC[,METRIC...] [hue=PARAM] [facet=PARAM[,...]]
      [row=PARAM] [logx=true] [logy=true] [name=...] [title=...] [key=value ...]
      ad hoc: the finished runs of any sweep in the MLflow experiment NAME

keys (both forms):
  tracking.uri      the store (default: the study's tracking.uri, else MLFLOW_TRACKING_URI,
                    else sqlite:///<absolute paths.outputs>/mlflow.db, as for dp2pub)
  paths.outputs     the outputs folder of the sweep (default: the study's, outputs)
  figures.dir       where the files go (default: <paths.outputs>/figures)
  figures.from_csv  a <figure>_runs.csv to rebuild one figure from, without MLflow

Each figure writes <figure>_runs.csv, <figure>_summary.csv, <figure>.png and <figure>.pdf
and prints their paths. Errors print one line and exit with status 2."""


class Parser(argparse.ArgumentParser):
    """The command line; its help lists the studies, composed only when the help is shown."""

    config_dir: Path | None = None

    def format_help(self) -> str:
        adhoc = "\n".join(f"  {key:<11} {text}" for key, text in ADHOC_KEYS.items())
        overlays = "\n".join(f"  {name:<18} {builtin.summary}" for name, builtin in OVERLAYS.items())
        try:
            studies = studies_text(config_dirs(self.config_dir))
        except OSError as error:
            studies = f"  (cannot list them: {error})"
        self.epilog = (
            f"{USAGE}\n\nad hoc keys:\n{adhoc}\n\noverlays (a figure's overlays: [...]; "
            f"a user's: {{_target_: module.function}}):\n{overlays}\n\n"
            f"studies (drawn from the runs of their experiment, e.g. dp2pub -m experiment=nb_car):\n{studies}"
        )
        return super().format_help()


def parser(config_dir: Path | None = None) -> Parser:
    """The command line: a study (or ``experiment=...``), then ``key=value`` overrides."""
    out = Parser(
        prog=PROG,
        description="Figures of a dp2pub study from its MLflow runs (or from a runs CSV).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    out.config_dir = config_dir
    out.add_argument("study", help="the study (or figure) to draw, or experiment=NAME for the ad hoc form")
    out.add_argument("overrides", nargs="*", metavar="key=value", help="settings (see the keys below)")
    out.add_argument(
        "--config-dir", "-cd", metavar="DIR", type=Path, help="a config directory whose experiment/ adds studies"
    )
    return out


def config_dir_of(argv: Sequence[str]) -> Path | None:
    """The ``--config-dir`` of ``argv`` (for the help, before it is parsed)."""
    for i, arg in enumerate(argv):
        if arg in ("-cd", "--config-dir") and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith("--config-dir="):
            return Path(arg.split("=", 1)[1])
    return None


def run(study: str, overrides: Sequence[str], config_dir: Path | None) -> list[Path]:
    """The files of the command line's figures (a study's, or ad hoc when ``study`` is a
    ``key=value``)."""
    if config_dir is not None and not config_dir.expanduser().is_dir():
        raise UsageError(f"--config-dir {config_dir}: no such directory")
    if "=" in study:
        if config_dir is not None:
            raise UsageError("--config-dir adds studies; the ad hoc form (experiment=...) reads no config")
        return build_adhoc([study, *overrides])
    return build(study, parse_overrides(overrides), config_dir)


def main(argv: list[str] | None = None) -> int:
    """Console script ``dp2pub-figures``; returns 0 or exits with status 2 on an error. With
    no arguments it prints its usage and the studies, and exits with status 2."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        parser(None).print_help()
        raise SystemExit(2)
    args = parser(config_dir_of(argv)).parse_intermixed_args(argv)
    try:
        for path in run(args.study, args.overrides, args.config_dir):
            print(path)
    except (UsageError, EmptyStudyError, StudyError, ConfigError, OverlayError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    return 0
