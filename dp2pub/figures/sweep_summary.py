"""A sweep that summarizes itself: one table of its jobs and a figure, on the parent run.

When a multirun ends, :class:`dp2pub.sweep.SweepParentCallback` calls :func:`summarize`
with the parent run and what the sweep varied. The table has a row per configuration (the
swept values as columns, ``seed`` aside) and a column per main metric
(:func:`dp2pub.metrics.main.main_metrics`); when seeds are swept, a cell is the mean over
them ± the half-width of its 95% Student t interval (:func:`dp2pub.figures.aggregate.aggregate`,
the figures' own), and ``n`` counts the runs. The same table goes onto the parent run as a
CSV (``sweep_summary.csv``), an MLflow table (``sweep_summary.json``) and its description
(the run page shows it), with a figure (``sweep_summary.png``) of the main metrics against the
swept numeric parameter (``epsilon`` first), a line per value of the other swept keys.

The rows are the parent's FINISHED children and the runs that skipped jobs found
(``tracking.skip_finished``), so a rerun that completes a sweep summarizes all of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib as mpl
import mlflow
import pandas as pd

from dp2pub.figures import style
from dp2pub.figures.aggregate import aggregate
from dp2pub.figures.collect import job_runs, numeric_or_text, search_rows, tidy
from dp2pub.figures.plot import build_figure
from dp2pub.figures.studies import EPSILON_LABEL, StudySpec
from dp2pub.metrics.main import Pattern, main_metrics
from dp2pub.tracking import PARENT_TAG

#: The files of the summary, in the sweep directory and on the parent run.
CSV, TABLE, FIGURE = "sweep_summary.csv", "sweep_summary.json", "sweep_summary.png"
#: MLflow's tag of a run's description (shown on the run page, Markdown).
NOTE_TAG = "mlflow.note.content"
#: Run ids per ``IN`` query of the runs that skipped jobs found.
ID_CHUNK = 100
#: At most this many metrics get a row of panels in the figure.
FIGURE_METRICS = 6


@dataclass(frozen=True)
class Summary:
    """A sweep's summary: ``table`` (a row per configuration: its swept values, ``n``, and per
    main metric ``<metric>`` (the mean) and ``<metric>_ci95``), the ``keys`` that place a row,
    the ``metrics`` and whether ``seeds`` were swept (the cells are means with intervals)."""

    table: pd.DataFrame
    keys: tuple[str, ...]
    metrics: tuple[str, ...]
    seeds: bool

    def rows(self) -> list[list[str]]:
        """The header, then a row of cells per configuration: ``0.4712 ± 0.0213`` with seeds,
        else ``0.4712``."""
        header = [*self.keys, "n", *self.metrics]
        return [header] + [
            [*(_cell(row[k]) for k in self.keys), str(int(row["n"])), *(self._value(row, m) for m in self.metrics)]
            for _, row in self.table.iterrows()
        ]

    def text(self) -> str:
        """The table as aligned text."""
        header, *rows = self.rows()
        widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
        lines = ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() for line in [header, *rows]]
        return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])

    def markdown(self) -> str:
        """The table in Markdown (the parent run's description)."""
        header, *rows = self.rows()
        lines = [header, ["---"] * len(header), *rows]
        return "\n".join("| " + " | ".join(line) + " |" for line in lines)

    def _value(self, row: pd.Series, metric: str) -> str:
        mean = row.get(metric)
        if mean is None or pd.isna(mean):
            return "-"
        half = row.get(f"{metric}_ci95")
        if self.seeds and half is not None and not pd.isna(half) and row["n"] > 1 and half > 0:
            return f"{mean:.4g} ± {half:.2g}"
        return f"{mean:.4g}"


def _cell(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def sweep_runs(client: mlflow.MlflowClient, experiment_id: str, parent: str, found: Sequence[str]) -> pd.DataFrame:
    """The parent's FINISHED children and the FINISHED runs ``found`` (those skipped jobs
    found), one row per run as :func:`dp2pub.figures.collect.run_row` gives it."""
    filters = [f"tags.`{PARENT_TAG}` = '{parent}' and attributes.status = 'FINISHED'"]
    ids = sorted(set(found))
    filters += [
        "attributes.run_id IN ({}) and attributes.status = 'FINISHED'".format(
            ",".join(f"'{i}'" for i in ids[start : start + ID_CHUNK])
        )
        for start in range(0, len(ids), ID_CHUNK)
    ]
    rows = {row["run_id"]: row for where in filters for row in search_rows(client, experiment_id, where)}
    return pd.DataFrame(list(rows.values()))


def with_swept_params(runs: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``runs`` with a ``params.<key>`` column for every swept key: the logged parameter, or
    for a config group (``mechanism=grr,sue``) the option its job's overrides chose, else (a
    run that a skipped job found, made without that override) its ``<group>.name``."""
    runs = runs.copy()
    chosen = runs.get("tags.hydra_overrides", pd.Series("", index=runs.index)).fillna("").map(_overrides)
    for key in keys:
        column = f"params.{key}"
        if column not in runs:
            runs[column] = chosen.map(lambda given, key=key: given.get(key))
            if f"params.{key}.name" in runs:
                runs[column] = runs[column].fillna(runs[f"params.{key}.name"])
    return runs


def varied_keys(runs: pd.DataFrame) -> dict[str, list[str]]:
    """The keys whose values differ between the runs' overrides (``hydra_overrides`` tags),
    with their values in first-seen order: what a sweep varied when its sweeper does not say."""
    given = runs.get("tags.hydra_overrides", pd.Series("", index=runs.index)).fillna("").map(_overrides)
    values: dict[str, list[str]] = {}
    for overrides in given:
        for key, value in overrides.items():
            values.setdefault(key, [])
            if value not in values[key]:
                values[key].append(value)
    return {key: vals for key, vals in values.items() if len(vals) > 1}


def _overrides(text: str) -> dict[str, str]:
    """``a=1 +b=x`` as {"a": "1", "b": "x"} (the ``hydra_overrides`` tag)."""
    pairs = (item.partition("=") for item in text.split())
    return {key.lstrip("+~"): value for key, sep, value in pairs if sep}


def figure_spec(keys: Sequence[str], metrics: Sequence[str], runs: pd.DataFrame) -> StudySpec | None:
    """The figure of the sweep's main metrics against its numeric swept key (``epsilon``
    first, else the first), a line per value of its other swept keys (of the mechanism when
    there is none); None when no swept key is numeric. ``epsilon_spent`` is left out when
    ``epsilon`` is the x axis."""
    numeric = [k for k in keys if pd.api.types.is_numeric_dtype(numeric_or_text(runs[f"params.{k}"]))]
    if not numeric:
        return None
    x = "epsilon" if "epsilon" in numeric else numeric[0]
    others = tuple(k for k in keys if k != x)
    drawn = [m for m in metrics if not (x == "epsilon" and m == "epsilon_spent")]  # the budget: a diagonal
    xs = pd.to_numeric(runs[f"params.{x}"], errors="coerce").dropna()
    shown = tuple((drawn or list(metrics))[:FIGURE_METRICS])
    return StudySpec(
        name="sweep",
        title=f"{', '.join(shown)} against {x}",
        experiment="",
        x=x,
        metrics=shown,
        hue=others[0] if len(others) == 1 else ("sweep" if others else "mechanism.name"),
        hue_parts=others if len(others) > 1 else (),
        log_x=bool((xs > 0).all() and xs.max() >= 8 * xs.min()),
        x_label=EPSILON_LABEL if x == "epsilon" else x,
    )


def summarize(runs: pd.DataFrame, varied: Mapping[str, Sequence[str]], patterns: Sequence[Pattern]) -> Summary | None:
    """The summary of a sweep's ``runs`` (:func:`sweep_runs`) over the keys it ``varied``
    (each with its values in the sweep's order, ``seed`` among them or not) for the main
    metrics ``patterns`` choose; None without a finished run. Rows follow the sweep's order:
    numbers ascending, other values as the sweep listed them."""
    if runs.empty:
        return None
    logged = [c.removeprefix("metrics.") for c in runs.columns if c.startswith("metrics.")]
    metrics = tuple(main_metrics(logged, patterns))
    placed = tuple(k for k in varied if k != "seed")
    runs = with_swept_params(job_runs(runs), [*placed, "seed"])
    spec = StudySpec(name="sweep", title="", experiment="", x="seed", metrics=metrics, hue="seed", extra_params=placed)
    long = tidy(spec, runs)
    long = long[long["metric"].isin(metrics)][[*placed, "run_id", "seed", "metric", "value"]]
    if long.empty:
        return None
    index = list(placed) or ["configuration"]
    stats = aggregate(long.assign(configuration="all") if not placed else long)
    means = stats.pivot_table(index=index, columns="metric", values="mean", aggfunc="first", dropna=False)
    halves = stats.pivot_table(index=index, columns="metric", values="ci95", aggfunc="first", dropna=False)
    counts = stats.groupby(index, dropna=False)["n"].max()
    table = pd.concat([counts.rename("n"), means, halves.add_suffix("_ci95")], axis=1).reset_index()
    table = table[table["n"].notna()].astype({"n": int})  # a configuration without a finished run has no row
    table = table.sort_values(index, key=lambda column: _sweep_order(column, varied), kind="mergesort")
    columns = [*placed, "n", *(c for m in metrics if m in means for c in (m, f"{m}_ci95"))]
    found = tuple(m for m in metrics if m in means)
    return Summary(table[columns].reset_index(drop=True), placed, found, "seed" in varied)


def _sweep_order(column: pd.Series, varied: Mapping[str, Sequence[str]]) -> pd.Series:
    """Sort keys of a column of swept values: the numbers themselves, else each value's place
    in the sweep's list (values it does not list last)."""
    if pd.api.types.is_numeric_dtype(column):
        return column
    listed = {str(value): place for place, value in enumerate(varied.get(str(column.name), ()))}
    return column.astype(str).map(lambda value: listed.get(value, len(listed)))


def draw(runs: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str], path: Path) -> Path | None:
    """Write the sweep's figure (:func:`figure_spec`) to ``path``; None when there is none."""
    placed = [k for k in keys if k != "seed"]
    runs = with_swept_params(job_runs(runs), [*placed, "seed"])
    spec = figure_spec(placed, metrics, runs)
    if spec is None:
        return None
    long = tidy(spec, runs)
    seeds = sorted(int(s) for s in pd.to_numeric(long["seed"], errors="coerce").dropna().unique())
    with mpl.rc_context(style.RC):
        figure = build_figure(spec, aggregate(long), seeds)
        figure.savefig(path, format="png", dpi=style.DPI, metadata=style.METADATA["png"])
    return path


def view_columns(summary: Summary, keys: Sequence[str], runs: pd.DataFrame) -> list[str]:
    """The dashboard's columns for the sweep's runs (:func:`dp2pub.tracking.save_view`): the
    parameter of each swept key (a config group's ``<group>.name``), then the main metrics."""
    params = []
    for key in keys:
        for name in (key, f"{key}.name"):
            if f"params.{name}" in runs:
                params.append(f"params.{name}")
                break
    return [*params, *(f"metrics.{m}" for m in summary.metrics)]


def log_summary(
    client: mlflow.MlflowClient, parent: str, summary: Summary, folder: Path, figure: Path | None, link: str = ""
) -> list[Path]:
    """Write the summary's CSV into ``folder`` and log it, its MLflow table, its Markdown (the
    parent's description, with ``link`` to the sweep's runs) and ``figure`` on the parent run;
    returns the files written."""
    csv = folder / CSV
    summary.table.to_csv(csv, index=False)
    client.log_artifact(parent, str(csv))
    client.log_table(parent, data=summary.table, artifact_file=TABLE)
    client.set_tag(parent, NOTE_TAG, _note(summary, link))
    if figure is not None:
        client.log_artifact(parent, str(figure))
    return [csv, *([figure] if figure is not None else [])]


#: The longest description :func:`log_summary` writes (MLflow 3.17 takes 8,000 characters
#: of a tag value; older stores 5,000).
NOTE_CHARS = 5000


def _note(summary: Summary, link: str = "") -> str:
    """The parent run's description: what the cells are, the link to the sweep's runs, then
    the table, cut after whole rows to :data:`NOTE_CHARS` characters."""
    cells = "mean ± 95% t interval over seeds" if summary.seeds else "one run each"
    runs = f"[The sweep's runs]({link}) with these columns. " if link else ""
    text = f"**Sweep summary** ({cells}). {runs}Files: `{CSV}`, `{FIGURE}`.\n\n{summary.markdown()}"
    cut = f"\n\n(cut: the whole table is {CSV})"
    return text if len(text) <= NOTE_CHARS else text[: text.rfind("\n", 0, NOTE_CHARS - len(cut))] + cut


def caption(summary: Summary) -> str:
    """The line under the printed table: what a row and a cell are."""
    rows, runs = len(summary.table), int(summary.table["n"].sum())
    cells = "mean ± half-width of the 95% t interval over seeds" if summary.seeds else "one run each"
    return f"{rows} configuration{'s' * (rows != 1)}, {runs} run{'s' * (runs != 1)}; {cells}"
