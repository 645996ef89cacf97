"""The caption under a figure's title: the data (name, n, d), the runs per point and what the
bands are, all read from the study's summary and seeds, never written by hand.

``UCI Adult, n = 30,162 training records, d = 14 · 10 runs per point (seeds 0–9) · bands: 95%
t-interval of the mean, clipped to [0, 1]``. n is the training part's size when the data was
split (metric ``n_train``), else the records (``n_records``); d is ``n_attributes``. Where the
figure shows several datasets, sizes or dimensions, the caption says "per panel" and the
panels' titles carry them (:func:`panel_sizes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from dp2pub.figures.aggregate import metric_range
from dp2pub.figures.studies import DATA_PARAM, StudySpec

#: Display names of the datasets (default: the dataset's name; a figure's ``data_labels`` add to them).
DATA_LABELS = {
    "adult": "UCI Adult",
    "car": "UCI Car",
    "synthetic": "uniform synthetic data",
    "synthetic_bn": "synthetic Bayesian-network data",
    "nltcs": "NLTCS",
    "acs": "ACS",
    "br2000": "BR2000",
    "adult15": "Adult (15 attributes)",
}
SEPARATOR = " · "
BANDS = "bands: 95% t-interval of the mean"


@dataclass(frozen=True)
class Sizes:
    """The sizes a dataset was run at: n values, d values, and whether n counts training records."""

    n: tuple[int, ...]
    d: tuple[int, ...]
    training: bool


def data_sizes(summary: pd.DataFrame) -> dict[str, Sizes]:
    """Dataset name ("" when unknown) -> its :class:`Sizes`, from the summary's size metrics."""
    rows = summary[summary["metric"].isin(("n_records", "n_train", "n_attributes"))]
    names = rows[DATA_PARAM].fillna("").astype(str) if DATA_PARAM in rows else pd.Series("", index=rows.index)
    found = {}
    for name, group in rows.groupby(names, sort=True):
        values = {m: tuple(sorted({round(v) for v in g["mean"]})) for m, g in group.groupby("metric")}
        training = "n_train" in values
        found[str(name)] = Sizes(
            values.get("n_train", values.get("n_records", ())), values.get("n_attributes", ()), training
        )
    return found


def _n(value: int) -> str:
    return f"{value:,}"


def data_label(spec: StudySpec, name: str) -> str:
    """A dataset's name in the caption: the spec's ``data_labels``, else :data:`DATA_LABELS`."""
    return spec.data_labels.get(name) or DATA_LABELS.get(name, name)


def data_text(spec: StudySpec, summary: pd.DataFrame) -> str:
    """``UCI Adult, n = 30,162 training records, d = 14``; what varies is said to be per panel."""
    sizes = data_sizes(summary)
    if not sizes:
        return ""
    ns = {n for s in sizes.values() for n in s.n}
    ds = {d for s in sizes.values() for d in s.d}
    noun = "training records" if all(s.training for s in sizes.values()) else "records"
    fixed = [data_label(spec, name) for name in sizes if name] if len(sizes) == 1 else []
    varying = [] if fixed or len(sizes) == 1 else ["data"]
    if len(ns) == 1:
        fixed.append(f"n = {_n(next(iter(ns)))} {noun}")
    elif ns:
        varying.append(f"n ({noun})")
    if len(ds) == 1:
        fixed.append(f"d = {next(iter(ds))}")
    elif ds:
        varying.append("d")
    return ", ".join([*fixed, *([", ".join(varying) + " per panel"] if varying else [])])


def panel_sizes(spec: StudySpec, summary: pd.DataFrame) -> dict[str, str]:
    """Dataset name -> ``n = 39,778, d = 23`` for panel titles, when the datasets are facets and
    their sizes differ (what a facet of n or d already shows, or a dataset run at several
    sizes, is left out)."""
    if DATA_PARAM not in (*spec.facets, spec.row_facet):
        return {}
    sizes = data_sizes(summary)
    shown = set(spec.facets) | {spec.row_facet}
    if len({s.n for s in sizes.values()}) <= 1 and len({s.d for s in sizes.values()}) <= 1:
        return {}
    out = {}
    for name, s in sizes.items():
        parts = [f"n = {_n(s.n[0])}"] if len(s.n) == 1 and "dataset.n" not in shown else []
        parts += [f"d = {s.d[0]}"] if len(s.d) == 1 and "dataset.d" not in shown else []
        if parts:
            out[name] = ", ".join(parts)
    return out


def seed_text(seeds: list[int]) -> str:
    """``seeds 0–9`` for consecutive seeds, else ``seeds 0, 3, 7`` (``seed 0`` for one)."""
    if not seeds:
        return ""
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seeds " + ", ".join(str(s) for s in seeds)


def runs_text(spec: StudySpec, summary: pd.DataFrame, seeds: list[int]) -> str:
    """``10 runs per point (seeds 0–9)``, a range when the points have different counts."""
    counts = summary.loc[summary["metric"].isin(spec.metrics), "n"]
    if counts.empty:
        return ""
    low, high = int(counts.min()), int(counts.max())
    text = (
        f"{low} run per point"
        if high == 1
        else f"{low}–{high} runs per point"
        if low < high
        else f"{high} runs per point"
    )
    return f"{text} ({seed_text(seeds)})" if seeds else text


def bands_text(spec: StudySpec, summary: pd.DataFrame) -> str:
    """What the shaded bands are, with the range they are clipped to ("no interval" for
    one run per point, "" without points)."""
    drawn = summary[summary["metric"].isin(spec.metrics)]
    if drawn.empty:
        return ""
    if int(drawn["n"].max()) <= 1:
        return "no interval"
    ranges = {metric_range(m) for m in spec.metrics}
    if len(ranges) > 1:
        return f"{BANDS}, clipped to each metric's range"
    low, high = ranges.pop()
    if math.isinf(low) and math.isinf(high):
        return BANDS
    if math.isinf(high):
        return f"{BANDS}, clipped at {low:g}"
    return f"{BANDS}, clipped to [{low:g}, {high:g}]"


def caption(spec: StudySpec, summary: pd.DataFrame, seeds: list[int], extra: str = "") -> list[str]:
    """The caption's parts (data, ``extra`` such as a single panel's facets, runs, bands)."""
    parts = [data_text(spec, summary), extra, runs_text(spec, summary, seeds), bands_text(spec, summary)]
    return [part for part in parts if part]


def wrap(parts: list[str], width: float, size: float) -> str:
    """``parts`` joined by " · ", broken into lines no wider than ``width`` inches at font
    ``size`` points (a part wider than a line gets a line of its own)."""
    font = FontProperties(size=size)
    measure = TextToPath()

    def inches(text: str) -> float:
        return measure.get_text_width_height_descent(text, font, ismath=False)[0] / 72

    lines: list[str] = []
    for part in parts:
        candidate = lines[-1] + SEPARATOR + part if lines else part
        if lines and inches(candidate) <= width:
            lines[-1] = candidate
        else:
            lines.append(part)
    return "\n".join(lines)
