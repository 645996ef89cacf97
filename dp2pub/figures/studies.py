"""What each study's figure shows: one frozen :class:`StudySpec` per study in :data:`STUDIES`.

A spec names the MLflow experiment of the study (``tracking.experiment`` of
``conf/experiment/<study>.yaml``), the run parameters that place a point (x, hue, facets, the
seed) and the metrics drawn against x. Parameter names are the runs' flattened config keys
(``epsilon``, ``mechanism.name``, ``dataset.n`` ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import pandas as pd

from dp2pub.figures import style
from dp2pub.figures.theory import fo_theory

EPSILON_LABEL = "privacy budget ε (per user)"
ACCURACY_LABEL = "accuracy (fraction correct)"
#: The parameter naming a run's dataset, kept in every study's CSVs (the figure's caption).
DATA_PARAM = "dataset.name"
#: Metrics every job logs about its data (records, training records when split, attributes),
#: kept in every study's CSVs: the figure's caption derives n and d from them.
SIZE_METRICS = ("n_records", "n_train", "n_attributes")


def _frozen(mapping: Mapping | None = None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


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


@dataclass(frozen=True)
class Published:
    """A number published elsewhere that a figure compares with (drawn as a black marker).

    Attributes:
        metric: the metric it is a value of.
        x: where it is on the x axis.
        value: the published value.
        where: parameter -> value of the panel it belongs in (``{"dataset.n": 1000}``).
    """

    metric: str
    x: float
    value: float
    where: Mapping[str, object] = field(default_factory=_frozen)


@dataclass(frozen=True)
class StudySpec:
    """The figure of one study.

    Attributes:
        name: the study (``conf/experiment/<name>.yaml``, ``experiments/<name>.md``).
        title: what the figure shows, in a few words (shown after the name).
        experiment: MLflow experiment that holds the study's runs.
        x: the parameter on the x axis.
        metrics: the metrics drawn against x, one row of panels each.
        hue: the parameter that gives each line its colour (a mechanism or an oracle); with
            ``hue_parts``, the name of the column that joins them.
        hue_parts: parameters whose present values, joined by ``/``, give each line its colour
            (``dp2pub/local/ibu``; a parameter a mechanism does not have is left out).
        facets: parameters whose value combinations make the columns of panels.
        row_facet: an optional parameter that splits every metric's row into one row per value.
        extra_params: further parameters kept in the CSVs (those ``theory`` needs).
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
        y_labels: metric -> y axis label, with its unit.
        y_limits: metric -> fixed y axis limits (e.g. (0, 1) for an accuracy).
        param_labels: parameter -> short name in panel titles.
        hue_labels: hue value -> legend label (default: the name in :mod:`dp2pub.figures.style`);
            the legend lists these values first, in this order.
        theory: (params, x, summary frame) -> dense theory curves (columns: hue, facets, row facet, x,
            ``metric``, ``value``), drawn dashed in the hue's colour.
        theory_label: legend entry of the theory curves.
        published: numbers published elsewhere, drawn as black markers in their panels.
        published_label: legend entry of ``published`` (whose numbers they are).
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
    baselines: Mapping[str, str | tuple[str, ...]] = field(default_factory=_frozen)
    families: tuple[Family, ...] = ()
    extra_metrics: tuple[str, ...] = ()
    wrap: int = 3
    log_x: bool = False
    log_y: bool | tuple[str, ...] = False
    x_label: str = EPSILON_LABEL
    y_labels: Mapping[str, str] = field(default_factory=_frozen)
    y_limits: Mapping[str, tuple[float, float]] = field(default_factory=_frozen)
    param_labels: Mapping[str, str] = field(default_factory=_frozen)
    hue_labels: Mapping[str, str] = field(default_factory=_frozen)
    theory: Callable[[tuple[str, ...], str, pd.DataFrame], pd.DataFrame] | None = None
    theory_label: str = "theory"
    published: tuple[Published, ...] = ()
    published_label: str = "published"

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
        """The command that fills the study's experiment."""
        return f"dp2pub -m experiment={self.experiment}"

    def is_log_y(self, metric: str) -> bool:
        """Whether ``metric`` is drawn on a logarithmic y axis."""
        return self.log_y if isinstance(self.log_y, bool) else metric in self.log_y

    def y_label(self, metric: str) -> str:
        return self.y_labels.get(metric, metric)

    def hue_rank(self, value: object) -> tuple[int, int, str]:
        """Legend order: the values of ``hue_labels`` in their order, then :func:`style.sort_key`."""
        labelled = list(self.hue_labels)
        if str(value) in labelled:
            return (0, labelled.index(str(value)), "")
        return (1, *style.sort_key(value))

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
#: Accuracies are fractions: fixed axes from 0 to 1.
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

#: The DP2-Pub paper's lines: a mechanism, DP2-Pub's trust model and the prior of PRAM (and
#: ldp_marginals' pairs and the level of its test of dependence; null: untested).
PAPER_HUE = ("mechanism.name", "mechanism.trust", "mechanism.prior", "mechanism.marginals", "mechanism.select_level")
PAPER_LABELS = _frozen(
    {
        "dp2pub/local/inverse": "DP2-Pub LDP, Q⁻¹λ (paper)",
        "dp2pub/local/ibu": "DP2-Pub LDP, IBU",
        "dp2pub/trusted/inverse": "DP2-Pub trusted, Q⁻¹λ (paper)",
        "dp2pub/trusted/ibu": "DP2-Pub trusted, IBU",
        "privbayes": "PrivBayes (central)",
        "dppro": "DPPro (central)",
        "pram/inverse": "PRAM per attribute, Q⁻¹λ",
        "grr": "GRR reports (raw table)",
        "ldp_marginals/adaptive": "LDP marginals + GUM, adaptive pairs (ours)",
        "ldp_marginals/adaptive/0.05": "LDP marginals + GUM, pairs tested at 0.05 (ours)",
        "ldp_marginals/all_pairs": "LDP marginals + GUM, all pairs (ours)",
        "ldp_marginals/all_pairs/0.05": "LDP marginals + GUM, all pairs (ours)",
    }
)

#: Figure 5 of the DP2-Pub paper: the AVD per dataset and alpha.
PAPER_FIGURE_5 = StudySpec(
    name="dp2pub_paper",
    title="AVD over all α-way marginals (DP2-Pub paper, Fig. 5)",
    experiment="dp2pub_paper",
    x="epsilon",
    metrics=("tvd",),
    hue="variant",
    hue_parts=PAPER_HUE,
    facets=("dataset.name", "alpha"),
    families=(Family("tvd", r"tvd_([2-9])way", "alpha"),),
    wrap=4,
    y_labels=_frozen({"tvd": "AVD (mean TVD, all α-way)"}),
    param_labels=PARAM_LABELS,
    hue_labels=PAPER_LABELS,
)
#: Figure 6: the SVM's misclassification per task, with the non-private and majority rates.
PAPER_FIGURE_6 = replace(
    PAPER_FIGURE_5,
    name="dp2pub_paper_svm",
    title="linear SVM misclassification per task (DP2-Pub paper, Fig. 6)",
    metrics=("misclass_svm",),
    facets=("dataset.name", "task"),
    baselines=_frozen({"misclass_svm": ("misclass_svm_baseline", "misclass_majority")}),
    families=tuple(
        Family(name, re.escape(name) + r"\.(.+)", "task")
        for name in ("misclass_svm", "misclass_svm_baseline", "misclass_majority")
    ),
    y_labels=_frozen({"misclass_svm": "misclassification (fraction)"}),
)

#: The LDP marginal synthesizer against the other LDP publishers: AVD per dataset and alpha,
#: on a log epsilon axis (the paper's grid and 2, 4, 8).
LDP_MARGINALS = replace(
    PAPER_FIGURE_5,
    name="ldp_marginals",
    title="LDP table publishers: AVD over all α-way marginals",
    experiment="ldp_marginals",
    log_x=True,
    families=(Family("tvd", r"tvd_([1-9])way", "alpha"),),
    wrap=3,
)
#: ... and the SVM's misclassification per task.
LDP_MARGINALS_SVM = replace(
    PAPER_FIGURE_6,
    name="ldp_marginals_svm",
    title="LDP table publishers: linear SVM misclassification per task",
    experiment="ldp_marginals",
    log_x=True,
)

#: The DP2-Pub repository's tables: GRR on every attribute (ε/d each) of uniform synthetic data
#: with domains of 100-150 values, its raw report histogram compared with the data. 1-way TVD
#: per (n users, d attributes) and ε, as printed in the DP2-Pub repository's tables (which give
#: no d = 100, n = 10,000 table). Published numbers the seed_tables study compares with, drawn
#: as black markers: not results of dp2pub.
DP2PUB_REPOSITORY_TVD: Mapping[tuple[int, int], Mapping[int, float]] = _frozen(
    {
        (10_000, 50): _frozen({1: 0.061748, 5: 0.061768, 10: 0.061796}),
        (1_000, 50): _frozen({1: 0.19542, 5: 0.19574, 10: 0.19506}),
        (1_000, 100): _frozen({1: 0.19771, 5: 0.19794, 10: 0.19771}),
    }
)
#: The numbers of :data:`DP2PUB_REPOSITORY_TVD` placed in the seed_tables figure's panels.
REPOSITORY_POINTS = tuple(
    Published("tvd_1way", epsilon, value, _frozen({DATA_PARAM: "synthetic", "dataset.n": n, "dataset.d": d}))
    for (n, d), values in DP2PUB_REPOSITORY_TVD.items()
    for epsilon, value in values.items()
)

#: Naive Bayes from LDP reports on Car, per oracle and strategy.
NB_CAR = StudySpec(
    name="nb_car",
    title="naive Bayes from LDP reports on UCI Car",
    experiment="nb_car",
    x="epsilon",
    metrics=("accuracy_nb",),
    hue="mechanism.oracle",
    facets=("mechanism.strategy",),
    baselines=_frozen({"accuracy_nb": ("accuracy_nb_baseline", "accuracy_majority")}),
    log_x=True,
    y_labels=_frozen({"accuracy_nb": ACCURACY_LABEL}),
    y_limits=ACCURACY_LIMITS,
    param_labels=PARAM_LABELS,
)
#: The same on the paper's five tables, per oracle and class prior (colour) and strategy (row).
NB_UCI = replace(
    NB_CAR,
    name="nb_uci",
    title="naive Bayes from LDP reports on the paper's five UCI tables (ε: each user's total)",
    experiment="nb_uci",
    hue="protocol",
    hue_parts=("mechanism.oracle", "mechanism.prior"),
    facets=("dataset.name",),
    row_facet="mechanism.strategy",
    hue_labels=_frozen(
        {
            "adaptive/pairs": "adaptive, prior from pairs (default)",
            "adaptive/report": "adaptive, class report",
            "grr/pairs": "GRR, prior from pairs",
            "grr/report": "GRR, class report",
            "oue/pairs": "OUE, prior from pairs",
            "oue/report": "OUE, class report",
        }
    ),
)

STUDIES: dict[str, StudySpec] = {
    spec.name: spec
    for spec in (
        StudySpec(
            name="seed_tables",
            title="GRR on wide uniform tables: the DP2-Pub repository's tables reproduced",
            experiment="seed_tables",
            x="epsilon",
            metrics=("tvd_1way",),
            hue="mechanism.estimator",
            facets=("dataset.n", "dataset.d"),
            row_facet=DATA_PARAM,
            extra_metrics=("mse_count",),
            log_x=True,
            x_label="ε (per user, ε/d per attribute)",
            y_labels=Y_LABELS,
            y_limits=_frozen({"tvd_1way": (0.0, 1.0)}),
            param_labels=PARAM_LABELS,
            hue_labels=_frozen(
                {
                    "none": "raw report histogram (estimator none)",
                    "norm_sub": "consistent estimate (estimator norm_sub)",
                }
            ),
            published=REPOSITORY_POINTS,
            published_label="DP2-Pub repository's table",
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
                "mechanism.simulate",
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
            baselines=_frozen(
                {
                    "accuracy_logreg": ("accuracy_logreg_baseline", "accuracy_majority"),
                    "accuracy_nb": ("accuracy_nb_baseline", "accuracy_majority"),
                }
            ),
            log_x=True,
            y_labels=Y_LABELS,
            y_limits=ACCURACY_LIMITS,
            param_labels=PARAM_LABELS,
            hue_labels=_frozen({"grr": "GRR (perturbed table)", "ldp_marginals": "LDP marginals + GUM (ours)"}),
        ),
        NB_CAR,
        NB_UCI,
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
        PAPER_FIGURE_5,
        StudySpec(
            name="dp2pub_regimes",
            title="where clustering helps: LDP DP2-Pub against PRAM per attribute on synthetic_bn",
            experiment="dp2pub_regimes",
            x="epsilon",
            metrics=("tvd_2way", "tvd_3way"),
            hue="mechanism.name",
            facets=("dataset.k_min", "dataset.strength"),
            row_facet="dataset.n",
            log_x=True,
            x_label="ε (10 attributes: ε/10 each)",
            y_labels=Y_LABELS,
            param_labels=_frozen({**PARAM_LABELS, "dataset.strength": "strength"}),
            hue_labels=_frozen({"dp2pub": "DP2-Pub LDP, Q⁻¹λ (clusters)", "pram": "PRAM per attribute, Q⁻¹λ"}),
        ),
        PAPER_FIGURE_6,
        LDP_MARGINALS,
        LDP_MARGINALS_SVM,
    )
}
