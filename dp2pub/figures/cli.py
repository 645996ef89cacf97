"""``dp2pub-figures <study> [key=value ...]``: a study's runs -> CSVs -> PNG and PDF figure.

Keys: ``tracking.uri`` (the store; default: ``MLFLOW_TRACKING_URI``, else
``sqlite:///<abs paths.outputs>/mlflow.db`` as for ``dp2pub``), ``paths.outputs``
(``outputs``), ``figures.dir`` (``<paths.outputs>/figures``) and ``figures.from_csv`` (a
``<study>_runs.csv`` to rebuild from, without MLflow). Writes ``<study>_runs.csv``,
``<study>_summary.csv``, ``<study>.png`` and ``<study>.pdf`` into ``figures.dir`` and prints
their paths; a study with several figures (``dp2pub_paper``, ``dp2pub_paper_svm``) writes the
four files of each. Errors (unknown study or key, empty experiment, bad CSV) print one line and exit
with status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dp2pub.figures.aggregate import aggregate, summary_csv
from dp2pub.figures.collect import EmptyStudyError, collect, read_runs, runs_csv, write_csv
from dp2pub.figures.plot import plot_study
from dp2pub.figures.studies import STUDIES, StudySpec
from dp2pub.tracking import tracking_uri

PROG = "dp2pub-figures"
#: Accepted overrides and their defaults (None: derived, see the module docstring).
KEYS: dict[str, str | None] = {
    "tracking.uri": None,
    "paths.outputs": "outputs",
    "figures.dir": None,
    "figures.from_csv": None,
}


class UsageError(ValueError):
    """A bad command line or input; reported in one line with exit status 2."""


def parse_overrides(items: list[str]) -> dict[str, str | None]:
    """``key=value`` strings -> the full settings (every key of :data:`KEYS`)."""
    settings = dict(KEYS)
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"expected key=value, got {item!r}")
        if key not in KEYS:
            raise UsageError(f"unknown key {key!r}; known keys: {', '.join(KEYS)}")
        settings[key] = value or None
    return settings


def figures_of(study: str, from_csv: bool) -> list[StudySpec]:
    """The figure ``study`` and, unless it is rebuilt from one CSV, the other figures of its
    experiment when ``study`` names the experiment (``dp2pub_paper``: also ``dp2pub_paper_svm``)."""
    if study not in STUDIES:
        raise UsageError(f"unknown study {study!r}; available: {', '.join(sorted(STUDIES))}")
    others = [s for s in STUDIES.values() if s.experiment == study != s.name] if not from_csv else []
    return [STUDIES[study], *others]


def build(study: str, settings: dict[str, str | None]) -> list[Path]:
    """Every figure of :func:`figures_of`; returns the files written."""
    specs = figures_of(study, bool(settings["figures.from_csv"]))
    return [path for spec in specs for path in build_one(spec, settings)]


def build_one(spec: StudySpec, settings: dict[str, str | None]) -> list[Path]:
    """Collect (or read) the runs of one figure, aggregate, plot; returns the files written."""
    study = spec.name
    outputs = settings["paths.outputs"] or "outputs"
    directory = Path(settings["figures.dir"] or Path(outputs) / "figures")
    source = settings["figures.from_csv"]
    if source:
        try:
            table = read_runs(spec, Path(source))
        except (OSError, ValueError) as error:
            raise UsageError(f"cannot read {source}: {error}") from None
        written = []
    else:
        uri = tracking_uri({"tracking": {"uri": settings["tracking.uri"]}, "paths": {"outputs": outputs}})
        same_store = [
            f"{key}={settings[key]}"
            for key in ("tracking.uri", "paths.outputs")
            if settings[key] and settings[key] != KEYS[key]
        ]
        table = collect(spec, uri, " ".join([spec.sweep_command, *same_store]))
        print(
            f"{study}: {table['run_id'].nunique()} runs from experiment '{spec.experiment}' in {uri}", file=sys.stderr
        )
        written = [write_csv(table, runs_csv(directory, study))]
    summary = aggregate(table)
    written.append(write_csv(summary, summary_csv(directory, study)))
    seeds = sorted(int(seed) for seed in table["seed"].dropna().unique())
    written += plot_study(spec, summary, directory, seeds)
    return written


def parser() -> argparse.ArgumentParser:
    """The command line: a study, then ``key=value`` overrides; the help lists every study."""
    width = max(len(name) for name in STUDIES)
    studies = "\n".join(f"  {name:<{width}}  {spec.title}" for name, spec in sorted(STUDIES.items()))
    keys = "\n".join(f"  {key}" for key in KEYS)
    out = argparse.ArgumentParser(
        prog=PROG,
        description="Figures of a dp2pub study from its MLflow runs (or from a runs CSV).",
        epilog=f"studies (drawn from the runs of their experiment, e.g. dp2pub -m experiment=nb_car):\n{studies}\n\nkeys:\n{keys}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    out.add_argument("study", help="the study whose figures to draw (see below)")
    out.add_argument("overrides", nargs="*", metavar="key=value", help="settings (see keys below)")
    return out


def main(argv: list[str] | None = None) -> int:
    """Console script ``dp2pub-figures``; returns 0 or exits with status 2 on an error. With
    no arguments it prints its usage and the studies, and exits with status 2."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        parser().print_help()
        raise SystemExit(2)
    args = parser().parse_args(argv)
    try:
        for path in build(args.study, parse_overrides(args.overrides)):
            print(path)
    except (UsageError, EmptyStudyError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    return 0
