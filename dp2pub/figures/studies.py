"""What a figure shows: a frozen :class:`StudySpec`, built from the ``figures:`` section of a
study's experiment config (:mod:`dp2pub.figures.schema`) or from the ad hoc command line.

A spec names the MLflow experiment that holds its runs (``tracking.experiment`` of the study's
config), the run parameters that place a point (x, hue, facets, the seed) and the metrics
drawn against x. Parameter names are the runs' flattened config keys (``epsilon``,
``mechanism.name``, ``dataset.n`` ...). What some figures draw over the measurements (theory
curves, numbers published elsewhere) are its :class:`Overlay` s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pandas as pd

from dp2pub.figures import style
from dp2pub.validation import ConfigError

EPSILON_LABEL = "privacy budget ε (per user)"
ACCURACY_LABEL = "accuracy (fraction correct)"
#: The parameter naming a run's dataset, kept in every study's CSVs (the figure's caption).
DATA_PARAM = "dataset.name"
#: Metrics every job logs about its data (records, training records when split, attributes),
#: kept in every study's CSVs: the figure's caption derives n and d from them.
SIZE_METRICS = ("n_records", "n_train", "n_attributes")


def frozen(mapping: Mapping | None = None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


#: Axis labels of the metrics (docs/explanation/metric-contract.md), shared by every figure: a figure's
#: ``y_labels`` name only the metrics it labels otherwise.
METRIC_LABELS = frozen(
    {
        "tvd_1way": "1-way TVD (mean over attributes)",
        "tvd_2way": "2-way TVD (mean over pairs)",
        "tvd_3way": "3-way TVD (mean over triples)",
        "mse_freq": "MSE of frequencies (squared fraction)",
        "mse_count": "MSE of counts (records²)",
        "accuracy_logreg": "logistic regression " + ACCURACY_LABEL,
        "accuracy_nb": "naive Bayes " + ACCURACY_LABEL,
        "ncp": "NCP (% of information lost)",
        "discernibility": "discernibility Σ|E|² (records²)",
        "cavg": "C_avg (mean class size / k)",
    }
)
#: Short names of parameters in panel titles, shared by every figure (default: the last part
#: of the name, ``mechanism.k`` -> ``k``).
PARAM_LABELS = frozen(
    {
        "dataset.name": "data",
        "dataset.n": "n",
        "dataset.d": "d",
        "dataset.k_min": "k",
        "mechanism.estimator": "estimator",
        "mechanism.strategy": "strategy",
    }
)


@dataclass(frozen=True)
class Family:
    """Metrics logged once per value of something, read as one metric with that value in a
    column of its own: ``misclass_svm.income`` -> metric ``misclass_svm``, ``task = income``.

    Attributes:
        metric: the name the family's metrics are read as.
        pattern: a regular expression matching a whole logged metric name, its one group
            capturing the value (``r"misclass_svm\\.(.+)"``).
        param: the column that holds the value (``task``), usable as a facet.
    """

    metric: str
    pattern: str
    param: str

    def value(self, name: str) -> str | None:
        """The value in the logged metric ``name``, None if ``name`` is not of the family."""
        match = re.fullmatch(self.pattern, name)
        return match.group(1) if match else None


#: An overlay's function: ``(spec, summary, **options) -> frame`` (see :class:`Overlay`).
OverlayFunction = Callable[..., pd.DataFrame]


class OverlayError(ValueError):
    """An overlay returned something a figure cannot draw."""


@dataclass(frozen=True)
class Overlay:
    """Something drawn over a figure's measurements, computed from its summary
    (:mod:`dp2pub.figures.overlays` holds the built-in ones).

    The function returns a frame with the columns ``metric``, the figure's x and ``value``.
    With the figure's hue among its columns, each hue's rows are a curve, drawn dashed in that
    hue's colour in the panels that its facet columns name (theory curves). Without it, each
    row is a black marker, drawn in every panel whose runs have the values of the row's other
    columns (a number published elsewhere: ``dataset.n = 1000`` puts it in the panels of
    n = 1,000).

    Attributes:
        name: the built-in overlay's name, or the ``module.function`` of a user's.
        label: the legend entry.
        function: ``(spec, summary, **options) -> frame``.
        options: keyword arguments of the function, from the config.
        key: where it was configured (``figures.<figure>.overlays[<i>]``), for errors.
    """

    name: str
    label: str
    function: OverlayFunction = field(compare=False)
    options: Mapping[str, Any] = field(default_factory=frozen)
    key: str = field(default="", compare=False)

    def frame(self, spec: StudySpec, summary: pd.DataFrame) -> pd.DataFrame:
        """What the overlay draws over ``spec``'s figure of ``summary``; raises OverlayError
        if it is not a frame with the columns ``metric``, x and ``value``."""
        where = f"{self.key or self.name} ({self.name})"
        try:
            result = self.function(spec, summary, **self.options)
        except (ConfigError, OverlayError):
            raise
        except Exception as error:  # a user's overlay that fails: one line, not a traceback
            reason = " ".join(f"{type(error).__name__}: {error}".split())[:300]
            raise OverlayError(f"overlay {where} failed: {reason}") from None
        if not isinstance(result, pd.DataFrame):
            raise OverlayError(f"overlay {where} returned a {type(result).__name__}, not a pandas DataFrame")
        missing = [c for c in ("metric", spec.x, "value") if c not in result]
        if missing:
            raise OverlayError(f"overlay {where} returned a frame without the column {missing[0]!r}")
        return result

    def is_curves(self, spec: StudySpec, frame: pd.DataFrame) -> bool:
        """Whether ``frame`` (of :meth:`frame`) holds curves (it has the hue) or markers."""
        return spec.hue in frame


@dataclass(frozen=True)
class StudySpec:
    """One figure of a study.

    Attributes:
        name: the figure (its files: ``<name>_runs.csv``, ``<name>.png`` ...).
        title: what the figure shows, in a few words (shown after the name).
        experiment: MLflow experiment that holds the figure's runs.
        x: the parameter on the x axis.
        metrics: the metrics drawn against x, one row of panels each.
        hue: the parameter that gives each line its colour (a mechanism or an oracle); with
            ``hue_parts``, the name of the column that joins them.
        hue_parts: parameters whose present values, joined by ``/``, give each line its colour
            (``dp2pub/local/ibu``; a parameter a mechanism does not have is left out).
        facets: parameters whose value combinations make the columns of panels.
        row_facet: an optional parameter that splits every metric's row into one row per value.
        extra_params: further parameters kept in the CSVs (those an overlay needs).
        baselines: metric -> the metric(s) of its references, at most two, drawn in black
            (dotted, then dash-dotted): a non-private model (``*_baseline``), the majority class.
        families: metrics read as one metric per family (:class:`Family`), their values
            in a column each.
        extra_metrics: further metrics kept in the CSVs (e.g. the logged ``mse_theory``).
        wrap: panels per line when they are laid out in one sequence (without a row facet:
            several metrics and one column of facets, or one metric and more than ``wrap``
            columns); a row facet always gives a grid.
        log_x: logarithmic x axis.
        log_y: logarithmic y axis for every metric (True) or for the metrics named.
        x_label: x axis label, with its unit.
        y_labels: metric -> y axis label, with its unit (default: :data:`METRIC_LABELS`, else
            the metric's name).
        y_limits: metric -> fixed y axis limits (e.g. (0, 1) for an accuracy).
        param_labels: parameter -> short name in panel titles (default: :data:`PARAM_LABELS`).
        hue_labels: hue value -> legend label (default: the name in :mod:`dp2pub.figures.style`);
            the legend lists these values first, in this order.
        data_labels: dataset name -> its name in the caption (default:
            :data:`dp2pub.figures.caption.DATA_LABELS`).
        overlays: what is drawn over the measurements (:class:`Overlay`), in this order.
        study: the experiment config that fills the experiment (``dp2pub -m experiment=<study>``);
            None for an ad hoc figure.
    """

    name: str
    title: str
    experiment: str
    x: str
    metrics: tuple[str, ...]
    hue: str
    hue_parts: tuple[str, ...] = ()
    facets: tuple[str, ...] = ()
    row_facet: str | None = None
    extra_params: tuple[str, ...] = ()
    baselines: Mapping[str, str | tuple[str, ...]] = field(default_factory=frozen)
    families: tuple[Family, ...] = ()
    extra_metrics: tuple[str, ...] = ()
    wrap: int = 3
    log_x: bool = False
    log_y: bool | tuple[str, ...] = False
    x_label: str = EPSILON_LABEL
    y_labels: Mapping[str, str] = field(default_factory=frozen)
    y_limits: Mapping[str, tuple[float, float]] = field(default_factory=frozen)
    param_labels: Mapping[str, str] = field(default_factory=frozen)
    hue_labels: Mapping[str, str] = field(default_factory=frozen)
    data_labels: Mapping[str, str] = field(default_factory=frozen)
    overlays: tuple[Overlay, ...] = ()
    study: str | None = None

    def __post_init__(self) -> None:
        if self.wrap < 1:
            raise ValueError(f"{self.name}: wrap must be >= 1, not {self.wrap}")
        for metric in self.metrics:
            if len(self.references(metric)) > len(style.REFERENCE_STYLES):
                raise ValueError(f"{self.name}: at most {len(style.REFERENCE_STYLES)} references per metric ({metric})")

    @property
    def params(self) -> tuple[str, ...]:
        """Every run parameter kept per run, in CSV column order (no duplicates); always the
        dataset's name (:data:`DATA_PARAM`)."""
        derived = {f.param for f in self.families}
        names = (
            self.x,
            *(self.hue_parts or (self.hue,)),
            *self.facets,
            self.row_facet,
            "seed",
            *self.extra_params,
            DATA_PARAM,
        )
        return tuple(dict.fromkeys(n for n in names if n and n not in derived))

    @property
    def columns(self) -> tuple[str, ...]:
        """The CSV columns that place a value: :attr:`params`, the joined hue, the families'."""
        joined = (self.hue,) if self.hue_parts else ()
        return tuple(dict.fromkeys((*self.params, *joined, *(f.param for f in self.families))))

    def references(self, metric: str) -> tuple[str, ...]:
        """The reference metrics drawn with ``metric`` (see ``baselines``)."""
        names = self.baselines.get(metric, ())
        return (names,) if isinstance(names, str) else tuple(names)

    @property
    def collected_metrics(self) -> tuple[str, ...]:
        """The metrics read from the runs (or families): drawn, references, extra, and the
        data's size (:data:`SIZE_METRICS`)."""
        references = (name for metric in self.metrics for name in self.references(metric))
        return tuple(dict.fromkeys((*self.metrics, *references, *self.extra_metrics, *SIZE_METRICS)))

    @property
    def sweep_command(self) -> str:
        """The command that fills the figure's experiment."""
        if self.study is None:
            return f"dp2pub -m tracking.experiment={self.experiment} <your sweep>"
        return f"dp2pub -m experiment={self.study}"

    def is_log_y(self, metric: str) -> bool:
        """Whether ``metric`` is drawn on a logarithmic y axis."""
        return self.log_y if isinstance(self.log_y, bool) else metric in self.log_y

    def y_label(self, metric: str) -> str:
        """The y axis label of ``metric``: ``y_labels``, else :data:`METRIC_LABELS`, else its name."""
        return self.y_labels.get(metric) or METRIC_LABELS.get(metric, metric)

    def hue_rank(self, value: object) -> tuple[int, int, str]:
        """Legend order: the values of ``hue_labels`` in their order, then :func:`style.sort_key`."""
        labelled = list(self.hue_labels)
        if str(value) in labelled:
            return (0, labelled.index(str(value)), "")
        return (1, *style.sort_key(value))

    def param_label(self, param: str) -> str:
        """The short name of ``param``: ``param_labels``, else :data:`PARAM_LABELS`, else its last part."""
        return self.param_labels.get(param) or PARAM_LABELS.get(param, param.rsplit(".", 1)[-1])
