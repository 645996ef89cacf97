"""One figure per study from its summary: a grid of panels, written as PNG and PDF.

Rows are the spec's metrics (times the values of its row facet), columns the combinations of
its facets that hold runs; without a row facet, several metrics in one column, or one metric
in more than ``spec.wrap`` columns, are laid out in one sequence instead, ``spec.wrap`` per
line. In each panel: one line with markers per hue value (the mean over seeds) and a shaded
95% interval (clipped to the metric's range by :func:`~dp2pub.figures.aggregate.aggregate`),
the references of the metric (a non-private model dotted, the majority class dash-dotted,
both in black) and the spec's overlays (:class:`~dp2pub.figures.studies.Overlay`): curves
such as theory dashed in the hue's colour, numbers published elsewhere as black markers.
Under the bold title, a caption
(:mod:`dp2pub.figures.caption`) names the data, n, d, the runs per point and the bands. Drawing uses a
private :class:`~matplotlib.figure.Figure` (no pyplot state, no display) inside a fixed rc
context, and the files carry no timestamp, so the same summary always gives byte-identical
files.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import NullFormatter

from dp2pub.figures import style
from dp2pub.figures.caption import caption, panel_sizes, wrap
from dp2pub.figures.studies import DATA_PARAM, Overlay, StudySpec

PANEL_SIZE = (3.3, 2.5)  # inches per panel
#: The longest panel title that fits a panel's width on one line (9 pt, measured: 48 did not).
TITLE_CHARS = 42
LEGEND_WIDTH = 2.0  # inches right of the panels
MIN_WIDTH = 7.5  # inches, so that title and legend fit beside each other
BAND_ALPHA = 0.18
CAPTION_SIZE = 8.5  # points
BAND_LABEL = "95% t-interval of the mean"
#: Marker of a number published elsewhere (an overlay of markers): a hollow black diamond.
PUBLISHED_STYLE: dict[str, Any] = {
    "color": "black",
    "marker": "D",
    "markersize": 7,
    "markerfacecolor": "none",
    "linestyle": "none",
}
#: The markers of a figure's first, second ... overlay of markers.
MARK_MARKERS = ("D", "s", "^", "v", "P")
#: The line styles of a figure's first, second ... overlay of curves.
CURVE_STYLES: tuple[Literal["--", ":", "-."], ...] = ("--", ":", "-.")


def mark_style(position: int) -> dict[str, Any]:
    """The style of the markers of the figure's ``position``-th overlay of markers."""
    return {**PUBLISHED_STYLE, "marker": MARK_MARKERS[position % len(MARK_MARKERS)]}


def curve_style(position: int) -> Literal["--", ":", "-."]:
    """The line style of the curves of the figure's ``position``-th overlay of curves."""
    return CURVE_STYLES[position % len(CURVE_STYLES)]


#: Facet parameters the caption or a dataset's panel title already states.
SIZE_PARAMS = (DATA_PARAM, "dataset.n", "dataset.d")


def _fmt(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        return "n/a" if math.isnan(value) else f"{value:g}"
    return str(value)


def _fmt_facet(value: object) -> str:
    """A facet value; whole numbers from 1,000 up with thousands separators."""
    if isinstance(value, (int, np.integer, float, np.floating)) and float(value).is_integer() and abs(value) >= 1000:
        return f"{int(value):,}"
    return _fmt(value)


def facet_label(
    spec: StudySpec, frame: pd.DataFrame, params: tuple[str, ...], sizes: dict[str, str] | None = None
) -> pd.Series:
    """``"n = 1000, d = 50"`` per row of ``frame`` for the facet ``params`` ("" for none); with
    ``sizes`` (dataset name -> ``"n = ..., d = ..."``) a dataset is shown as ``"acs (n = ..., d = ...)"``."""
    label = pd.Series("", index=frame.index)
    for p in (p for p in params if p in frame):
        if p == DATA_PARAM and sizes:
            part = _facet_values(frame[p], sizes)
        else:
            part = f"{spec.param_label(p)} = " + frame[p].map(_fmt_facet)
        label = label.where(label == "", label + ", ") + part
    return label


def _facet_values(names: pd.Series, sizes: dict[str, str]) -> pd.Series:
    """Dataset names with their sizes: ``acs (n = 37,968, d = 23)``."""
    return names.map(_fmt_facet).map(lambda name: f"{name} ({sizes[name]})" if name in sizes else name)


def _with_panels(spec: StudySpec, frame: pd.DataFrame, sizes: dict[str, str] | None = None) -> pd.DataFrame:
    """``frame`` sorted by facets and x, with its panel column ``_col`` and row label ``_row``."""
    order = [p for p in (spec.row_facet, *spec.facets, spec.hue, spec.x) if p and p in frame]
    frame = frame.sort_values(order, kind="mergesort", na_position="last") if order else frame
    return frame.assign(
        _col=facet_label(spec, frame, spec.facets, sizes),
        _row=facet_label(spec, frame, (spec.row_facet,) if spec.row_facet else (), sizes),
    )


#: On a log x axis, the least distance between two labelled ticks, as a share of the axis's
#: log range (a tenth: 0.2, 0.4, 0.6, 1, 1.6, 4, 8 of the grid 0.2, 0.4, ..., 1.6, 2, 4, 8).
LOG_TICK_GAP = 0.1


def tick_labels(xs: np.ndarray, log: bool) -> list[str]:
    """The labels of ticks at ``xs`` (sorted): every one on a linear axis; on a log axis the
    first and the last, and between them each tick at least :data:`LOG_TICK_GAP` of the log
    range from the last labelled one and from the last tick, the others left blank so that
    labels never run into each other."""
    labels = [_fmt(float(x)) for x in xs]
    position = np.log(np.asarray(xs, dtype=float)) if log and len(xs) > 2 and xs[0] > 0 else None
    if position is None:
        return labels
    gap = LOG_TICK_GAP * (position[-1] - position[0])
    last = position[0]
    for i in range(1, len(xs) - 1):
        if position[i] - last >= gap and position[-1] - position[i] >= gap:
            last = position[i]
        else:
            labels[i] = ""
    return labels


def _ticks(ax: Axes, spec: StudySpec, xs: np.ndarray) -> None:
    if spec.log_x:
        ax.set_xscale("log")
    ax.set_xticks(xs, labels=tick_labels(xs, spec.log_x))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", which="minor", length=0)


def draw_panel(
    ax: Axes,
    spec: StudySpec,
    metric: str,
    points: pd.DataFrame,
    curves: list[pd.DataFrame],
    references: list[pd.DataFrame],
    hues: list,
    marks: list[pd.DataFrame] | None = None,
) -> None:
    """Means with markers and 95% bands per hue, each overlay's curves, the references and
    each overlay's markers (columns ``x``, ``value``) in one panel."""
    if spec.is_log_y(metric):
        ax.set_yscale("log")
    for i, hue in enumerate(hues):
        line = points[points[spec.hue] == hue]
        if not line.empty:
            colour = style.colour(hue)
            ax.fill_between(line[spec.x], line["ci_low"], line["ci_high"], color=colour, alpha=BAND_ALPHA, linewidth=0)
            ax.plot(line[spec.x], line["mean"], color=colour, marker=style.MARKERS[i % len(style.MARKERS)])
        for position, frame in enumerate(curves):
            curve = frame[frame[spec.hue] == hue] if not frame.empty else frame
            if not curve.empty:
                ax.plot(
                    curve[spec.x],
                    curve["value"],
                    color=style.colour(hue),
                    linestyle=curve_style(position),
                    linewidth=1.0,
                )
    for reference, (colour, linestyle) in zip(references, style.REFERENCE_STYLES):
        if not reference.empty:
            ax.plot(reference[spec.x], reference["mean"], color=colour, linestyle=linestyle, linewidth=1.2)
    for position, frame in enumerate(marks or []):
        if not frame.empty:
            ax.plot(frame["x"], frame["value"], zorder=5, **mark_style(position))
    if points.empty:
        ax.text(0.5, 0.5, "no runs", transform=ax.transAxes, ha="center", va="center", color="grey")


def log_limits(points: pd.DataFrame, curves: pd.DataFrame) -> tuple[float, float] | None:
    """y limits of a log panel from its means, positive interval ends and curves; an interval
    reaching 0 or below (few seeds) runs off the bottom rather than stretching the axis."""
    values = pd.concat(
        [
            points["mean"],
            points["ci_low"],
            points["ci_high"],
            curves["value"] if not curves.empty else pd.Series(dtype=float),
        ]
    )
    values = values[np.isfinite(values) & (values > 0)]
    if values.empty:
        return None
    centre = pd.concat([points["mean"], curves["value"] if not curves.empty else pd.Series(dtype=float)])
    centre = centre[np.isfinite(centre) & (centre > 0)]
    low = max(values.min(), centre.min() / 10) if not centre.empty else values.min()
    return low / 1.5, values.max() * 1.5


def marks_in(spec: StudySpec, frame: pd.DataFrame, metric: str, points: pd.DataFrame) -> pd.DataFrame:
    """The markers of an overlay's ``frame`` for ``metric`` (columns ``x``, ``value``) whose
    other columns match the parameters of the panel's ``points`` (empty for an empty panel)."""
    rows = frame[frame["metric"] == metric] if not points.empty else frame.iloc[:0]
    where = [c for c in rows.columns if c not in ("metric", spec.x, "value")]
    keep = [
        all(key in points and (points[key] == value).any() for key, value in row.items() if pd.notna(value))
        for row in rows[where].to_dict("records")
    ]
    return pd.DataFrame({"x": rows[spec.x][keep], "value": rows["value"][keep]}, columns=["x", "value"])


class Layers:
    """A figure's overlays, computed once from its summary: those that draw curves (with
    their panel columns, see :func:`_with_panels`) and those that draw markers."""

    def __init__(self, spec: StudySpec, summary: pd.DataFrame, sizes: dict[str, str]) -> None:
        computed = [(overlay, overlay.frame(spec, summary)) for overlay in spec.overlays]
        self.curves: list[tuple[Overlay, pd.DataFrame]] = [
            (o, _with_panels(spec, f, sizes)) for o, f in computed if o.is_curves(spec, f) and not f.empty
        ]
        self.marks: list[tuple[Overlay, pd.DataFrame]] = [(o, f) for o, f in computed if not o.is_curves(spec, f)]
        self.marked: set[int] = set()  # positions of the overlays of markers drawn in some panel

    def panel_curves(self, col: str, row: str, metric: str) -> list[pd.DataFrame]:
        """Each overlay's curves of one panel."""
        return [f[(f["_col"] == col) & (f["_row"] == row) & (f["metric"] == metric)] for _, f in self.curves]

    def panel_marks(self, spec: StudySpec, metric: str, points: pd.DataFrame) -> list[pd.DataFrame]:
        """Each overlay's markers of one panel (noting those drawn, for the legend)."""
        found = [marks_in(spec, frame, metric, points) for _, frame in self.marks]
        self.marked |= {position for position, frame in enumerate(found) if not frame.empty}
        return found

    def curve_labels(self) -> list[str]:
        return [overlay.label for overlay, _ in self.curves]

    def mark_labels(self) -> list[tuple[int, str]]:
        return [
            (position, overlay.label) for position, (overlay, _) in enumerate(self.marks) if position in self.marked
        ]


def _legend(
    fig: Figure,
    spec: StudySpec,
    hues: list,
    curves: list[str],
    references: set[tuple[int, str]],
    bands: bool,
    marks: list[tuple[int, str]] | None = None,
) -> None:
    """The legend: the hues, each overlay of curves, each reference drawn, each overlay of
    markers drawn (its position among them, its label) and the bands."""
    handles: list[Artist] = [
        Line2D(
            [],
            [],
            color=style.colour(h),
            marker=style.MARKERS[i % len(style.MARKERS)],
            label=spec.hue_labels.get(str(h), style.label(h)),
        )
        for i, h in enumerate(hues)
    ]
    for position, label in enumerate(curves):
        handles.append(Line2D([], [], color="grey", linestyle=curve_style(position), label=label))
    for position, name in sorted(references):  # (position, legend name): each drawn style once
        colour, linestyle = style.REFERENCE_STYLES[position]
        handles.append(Line2D([], [], color=colour, linestyle=linestyle, label=name))
    for position, label in marks or []:
        handles.append(Line2D([], [], label=label, **mark_style(position)))
    if bands:
        handles.append(Patch(color="grey", alpha=BAND_ALPHA * 2, label=BAND_LABEL))
    fig.legend(handles=handles, loc="outside right upper", frameon=False)


def _layout(spec: StudySpec, rows: list, cols: list) -> tuple[int, int] | None:
    """(lines, panels per line) when the panels are laid out in one sequence, else None."""
    several_metrics = len(cols) == 1 and len(rows) > 1
    many_columns = len(rows) == 1 and len(cols) > spec.wrap
    if spec.row_facet or not (several_metrics or many_columns):
        return None
    count = len(rows) * len(cols)
    return math.ceil(count / spec.wrap), min(count, spec.wrap)


def _titled(fig: Figure, spec: StudySpec, summary: pd.DataFrame, one_column: bool, seeds: list[int]) -> SubFigure:
    """Give ``fig`` its bold title and return the subfigure for the panels, titled with the
    caption (:func:`~dp2pub.figures.caption.caption`; with one column of panels, its facets
    other than the data's name and size join the caption)."""
    fig.suptitle(f"{spec.name}: {spec.title}", fontweight="bold", x=0.02, ha="left")
    single = facet_label(spec, summary.head(1), tuple(p for p in spec.facets if p not in SIZE_PARAMS))
    extra = single.iloc[0] if one_column and not single.empty else ""
    parts = caption(spec, summary, seeds, extra)
    panels = fig.add_subfigure(fig.add_gridspec(1, 1)[0, 0])  # laid out with its title, the caption
    if parts:
        width = fig.get_figwidth() - LEGEND_WIDTH - 0.2
        panels.suptitle(wrap(parts, width, CAPTION_SIZE), x=0.02, ha="left", fontsize=CAPTION_SIZE)
    return panels


def build_figure(spec: StudySpec, summary: pd.DataFrame, seeds: list[int] | None = None) -> Figure:
    """The study's figure from its summary (see module docstring), with its overlays and the
    seeds of its runs (named in the caption)."""
    sizes = panel_sizes(spec, summary)
    layers = Layers(spec, summary, sizes)
    summary = _with_panels(spec, summary, sizes)
    drawn_rows = summary[summary["metric"].isin(spec.metrics)]  # the panels: where a drawn metric has runs
    shown = drawn_rows if not drawn_rows.empty else summary
    cols = list(dict.fromkeys(shown["_col"]))
    rows = [(metric, row) for metric in spec.metrics for row in dict.fromkeys(shown["_row"])]
    sequence = _layout(spec, rows, cols)
    shape = sequence or (len(rows), len(cols))
    width = max(PANEL_SIZE[0] * shape[1] + LEGEND_WIDTH, MIN_WIDTH)
    fig = Figure(figsize=(width, PANEL_SIZE[1] * shape[0] + 0.9), layout="constrained")
    panels = _titled(fig, spec, summary, len(cols) == 1, sorted(seeds or []))
    axes = panels.subplots(*shape, squeeze=False, sharex=not sequence, sharey=False if sequence else "row")
    count = len(rows) * len(cols)
    for ax in axes.flat[count:] if sequence else ():
        ax.set_visible(False)
    hues = sorted(summary[spec.hue].dropna().unique(), key=spec.hue_rank)
    xs = np.sort(summary[spec.x].dropna().unique().astype(float))
    drawn: set[tuple[int, str]] = set()
    for r, (metric, row) in enumerate(rows):
        row_axes, row_points, row_curves = [], [], []
        for c, col in enumerate(cols):
            p = r * len(cols) + c
            ax = axes.flat[p] if sequence else axes[r, c]
            here = (summary["_col"] == col) & (summary["_row"] == row)
            points = summary[here & (summary["metric"] == metric)]
            curves = layers.panel_curves(col, row, metric)
            names = spec.references(metric)
            references = [
                summary[here & (summary["metric"] == name)].groupby(spec.x, as_index=False)["mean"].mean()
                for name in names
            ]
            drawn |= {
                (i, style.reference_label(n)) for i, (n, ref) in enumerate(zip(names, references)) if not ref.empty
            }
            draw_panel(ax, spec, metric, points, curves, references, hues, layers.panel_marks(spec, metric, points))
            row_axes.append(ax)
            row_points.append(points)
            row_curves += curves or [pd.DataFrame()]
            _ticks(ax, spec, xs)
            _label(ax, spec, metric, (p, count, sequence[1]) if sequence else None, r == len(rows) - 1, c == 0)
            if row:  # every panel says which row facet it shows
                ax.set_title(panel_title(col, row) if len(cols) > 1 else row)
            elif len(cols) > 1 and (sequence or r == 0):
                ax.set_title(col)
        limits = spec.y_limits.get(metric)
        if limits is None and spec.is_log_y(metric):
            limits = log_limits(pd.concat(row_points), pd.concat(row_curves))
        if limits is not None:
            for ax in row_axes:  # shared along a grid's row
                ax.set_ylim(*limits)
    bands = bool((drawn_rows["n"] > 1).any())
    _legend(fig, spec, hues, layers.curve_labels(), drawn, bands, layers.mark_labels())
    return fig


def panel_title(col: str, row: str) -> str:
    """``column; row`` on one line, or on two when one would run into the next panel."""
    title = f"{col}; {row}"
    return title if len(title) <= TITLE_CHARS else f"{col}\n{row}"


def _label(
    ax: Axes, spec: StudySpec, metric: str, place: tuple[int, int, int] | None, bottom: bool, left: bool
) -> None:
    """Axis labels: in a grid on the bottom row and left column; in a sequence (``place`` =
    (position, panels, per line)) x on the last panel of each column, y on the first of each
    line or on every panel when the metrics differ."""
    if place is not None:
        position, count, per_line = place
        bottom = position + per_line >= count
        left = position % per_line == 0 or len(spec.metrics) > 1
    if bottom:
        ax.set_xlabel(spec.x_label)
    if left:
        ax.set_ylabel(spec.y_label(metric))


def figure_paths(directory: Path, study: str) -> dict[str, Path]:
    """Where the figure of ``study`` is written, per format."""
    return {fmt: Path(directory) / f"{study}.{fmt}" for fmt in ("png", "pdf")}


def plot_study(spec: StudySpec, summary: pd.DataFrame, directory: Path, seeds: list[int] | None = None) -> list[Path]:
    """Draw the study (with its overlays; ``seeds``: those of its runs, for the caption) and
    write PNG and PDF; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    with mpl.rc_context(style.RC):
        fig = build_figure(spec, summary, seeds)
        paths = figure_paths(directory, spec.name)
        for fmt, path in paths.items():
            fig.savefig(path, format=fmt, dpi=style.DPI, metadata=style.METADATA[fmt])
    return list(paths.values())
