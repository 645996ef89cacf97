"""What each study's figure shows: one frozen :class:`StudySpec` per study in :data:`STUDIES`.

A spec names the MLflow experiment of the study (``tracking.experiment`` of
``conf/experiment/<study>.yaml``), the run parameters that place a point (x, hue, facets, the
seed) and the metrics drawn against x. Parameter names are the runs' flattened config keys
(``epsilon``, ``mechanism.name``, ``dataset.n`` ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import pandas as pd

from dp2pub.figures.theory import fo_theory

EPSILON_LABEL = "privacy budget ε (per user)"
ACCURACY_LABEL = "accuracy (fraction correct)"


def _frozen(mapping: Mapping | None = None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class StudySpec:
    """The figure of one study.

    Attributes:
        name: the study (``conf/experiment/<name>.yaml``, ``experiments/<name>.md``).
        title: what the figure shows, in a few words (shown after the name).
        experiment: MLflow experiment that holds the study's runs.
        x: the parameter on the x axis.
        metrics: the metrics drawn against x, one row of panels each.
        hue: the parameter that gives each line its colour (a mechanism or an oracle).
        facets: parameters whose value combinations make the columns of panels.
        row_facet: an optional parameter that splits every metric's row into one row per value.
        extra_params: further parameters kept in the CSVs (those ``theory`` needs).
        baselines: metric -> the metric of its non-private reference, drawn dotted in black.
        extra_metrics: further metrics kept in the CSVs (e.g. the logged ``mse_theory``).
        log_x: logarithmic x axis.
        log_y: logarithmic y axis for every metric (True) or for the metrics named.
        x_label: x axis label, with its unit.
        y_labels: metric -> y axis label, with its unit.
        y_limits: metric -> fixed y axis limits (e.g. (0, 1) for an accuracy).
        param_labels: parameter -> short name in panel titles.
        hue_labels: hue value -> legend label (default: the name in :mod:`dp2pub.figures.style`).
        theory: (params, x, summary frame) -> dense theory curves (columns: hue, facets, row facet, x,
            ``metric``, ``value``), drawn dashed in the hue's colour.
        theory_label: legend entry of the theory curves.
    """

    name: str
    title: str
    experiment: str
    x: str
    metrics: tuple[str, ...]
    hue: str
    facets: tuple[str, ...] = ()
    row_facet: str | None = None
    extra_params: tuple[str, ...] = ()
    baselines: Mapping[str, str] = field(default_factory=_frozen)
    extra_metrics: tuple[str, ...] = ()
    log_x: bool = False
    log_y: bool | tuple[str, ...] = False
    x_label: str = EPSILON_LABEL
    y_labels: Mapping[str, str] = field(default_factory=_frozen)
    y_limits: Mapping[str, tuple[float, float]] = field(default_factory=_frozen)
    param_labels: Mapping[str, str] = field(default_factory=_frozen)
    hue_labels: Mapping[str, str] = field(default_factory=_frozen)
    theory: Callable[[tuple[str, ...], str, pd.DataFrame], pd.DataFrame] | None = None
    theory_label: str = "theory"

    @property
    def params(self) -> tuple[str, ...]:
        """Every parameter kept per run, in CSV column order (no duplicates)."""
        names = (self.x, self.hue, *self.facets, self.row_facet, "seed", *self.extra_params)
        return tuple(dict.fromkeys(n for n in names if n))

    @property
    def collected_metrics(self) -> tuple[str, ...]:
        """The metrics read from the runs: drawn, baselines, extra."""
        return tuple(dict.fromkeys((*self.metrics, *self.baselines.values(), *self.extra_metrics)))

    @property
    def sweep_command(self) -> str:
        """The command that fills the study's experiment."""
        return f"dp2pub -m experiment={self.name}"

    def is_log_y(self, metric: str) -> bool:
        """Whether ``metric`` is drawn on a logarithmic y axis."""
        return self.log_y if isinstance(self.log_y, bool) else metric in self.log_y

    def y_label(self, metric: str) -> str:
        return self.y_labels.get(metric, metric)

    def param_label(self, param: str) -> str:
        return self.param_labels.get(param, param.rsplit(".", 1)[-1])


#: Axis labels of the metrics (docs/design.md, section 8), shared by every study.
Y_LABELS = _frozen(
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
#: Accuracies are fractions: fixed axes (a wide t interval of few seeds is cut at 0 and 1).
ACCURACY_LIMITS = _frozen({"accuracy_logreg": (0.0, 1.0), "accuracy_nb": (0.0, 1.0)})
PARAM_LABELS = _frozen(
    {
        "dataset.name": "data",
        "dataset.n": "n",
        "dataset.d": "d",
        "dataset.k_min": "k",
        "mechanism.estimator": "estimator",
        "mechanism.strategy": "strategy",
    }
)

STUDIES: dict[str, StudySpec] = {
    spec.name: spec
    for spec in (
        StudySpec(
            name="seed_tables",
            title="GRR on synthetic tables, the raw-histogram setting",
            experiment="seed_tables",
            x="epsilon",
            metrics=("tvd_1way", "mse_count"),
            hue="mechanism.estimator",
            facets=("dataset.n", "dataset.d"),
            row_facet="dataset.name",
            log_y=True,
            y_labels=Y_LABELS,
            param_labels=PARAM_LABELS,
            hue_labels=_frozen({"none": "raw histogram (estimator none)", "unbiased": "debiased (estimator unbiased)"}),
        ),
        StudySpec(
            name="fo_variance",
            title="frequency oracles, measured and exact MSE",
            experiment="fo_variance",
            x="epsilon",
            metrics=("mse_freq",),
            hue="mechanism.name",
            facets=("dataset.n", "dataset.d", "dataset.k_min"),
            extra_params=(
                "dataset.k_max",
                "mechanism.strategy",
                "mechanism.num_bits",
                "mechanism.num_hashes",
                "mechanism.hash_seed",
                "mechanism.f",
                "mechanism.p",
                "mechanism.q",
                "mechanism.guarantee",
            ),
            extra_metrics=("mse_theory",),
            log_x=True,
            log_y=True,
            y_labels=Y_LABELS,
            param_labels=PARAM_LABELS,
            theory=fo_theory,
            theory_label="exact expected MSE",
        ),
        StudySpec(
            name="dp2pub_adult",
            title="table publishers on UCI Adult",
            experiment="dp2pub_adult",
            x="epsilon",
            metrics=("tvd_1way", "tvd_2way", "tvd_3way", "accuracy_logreg", "accuracy_nb"),
            hue="mechanism.name",
            facets=("dataset.name",),
            baselines=_frozen({"accuracy_logreg": "accuracy_logreg_baseline", "accuracy_nb": "accuracy_nb_baseline"}),
            log_x=True,
            y_labels=Y_LABELS,
            y_limits=ACCURACY_LIMITS,
            param_labels=PARAM_LABELS,
            hue_labels=_frozen({"grr": "GRR (perturbed table)"}),
        ),
        StudySpec(
            name="nb_car",
            title="naive Bayes from LDP reports on UCI Car",
            experiment="nb_car",
            x="epsilon",
            metrics=("accuracy_nb",),
            hue="mechanism.oracle",
            facets=("mechanism.strategy",),
            baselines=_frozen({"accuracy_nb": "accuracy_nb_baseline"}),
            log_x=True,
            y_labels=_frozen({"accuracy_nb": ACCURACY_LABEL}),
            y_limits=ACCURACY_LIMITS,
            param_labels=PARAM_LABELS,
        ),
        StudySpec(
            name="kanon_adult",
            title="k-anonymity information loss on UCI Adult",
            experiment="kanon_adult",
            x="mechanism.k",
            metrics=("ncp", "discernibility", "cavg"),
            hue="mechanism.name",
            facets=("dataset.name",),
            extra_metrics=("suppressed", "n_classes", "k_achieved", "l_achieved", "t_achieved"),
            log_x=True,
            log_y=("discernibility", "cavg"),
            x_label="k (minimum equivalence class size, records)",
            y_labels=Y_LABELS,
            param_labels=PARAM_LABELS,
        ),
    )
}
