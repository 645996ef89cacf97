"""The figures: sections of the nine built-in studies give the figures the closed dict of specs
in code gave; a bad section is refused in one line naming the key; the job ignores the section."""

from __future__ import annotations

import pandas as pd
import pytest

from dp2pub.config import plain_config
from dp2pub.figures.aggregate import aggregate
from dp2pub.figures.collect import collect
from dp2pub.figures.overlays import OVERLAYS
from dp2pub.figures.schema import KEYS, parse_section
from dp2pub.figures.studies import StudySpec
from dp2pub.figures.theory import fo_theory
from dp2pub.settings import JobSettings
from dp2pub.validation import ConfigError
from tests.conftest import ROOT, compose_config
from tests.figures.conftest import STUDIES
from tests.figures.old_specs import OLD_SPECS


def fields(spec: StudySpec, old: dict) -> dict:
    """``spec`` in the terms of :data:`OLD_SPECS` (labels as looked up per metric and parameter)."""
    return {
        "title": spec.title,
        "experiment": spec.experiment,
        "x": spec.x,
        "metrics": spec.metrics,
        "hue": spec.hue,
        "hue_parts": spec.hue_parts,
        "facets": spec.facets,
        "row_facet": spec.row_facet,
        "extra_params": spec.extra_params,
        "baselines": {m: spec.references(m) for m in spec.baselines},
        "families": tuple((f.metric, f.pattern, f.param) for f in spec.families),
        "extra_metrics": spec.extra_metrics,
        "wrap": spec.wrap,
        "log_x": spec.log_x,
        "log_y": spec.log_y,
        "x_label": spec.x_label,
        "y_label": {m: spec.y_label(m) for m in spec.metrics},
        "y_limits": {m: spec.y_limits[m] for m in spec.metrics if m in spec.y_limits},
        "param_label": {p: spec.param_label(p) for p in old["param_label"]},
        "hue_labels": dict(spec.hue_labels),
        "overlays": tuple((o.name, o.label) for o in spec.overlays),
        "published": old["published"],  # compared with the overlay's numbers below
        "params": spec.params,
        "columns": spec.columns,
        "collected_metrics": spec.collected_metrics,
    }


@pytest.mark.parametrize("name", sorted(OLD_SPECS))
def test_each_section_gives_the_figure_of_the_closed_dict(name):
    spec, old = STUDIES[name], OLD_SPECS[name]
    assert fields(spec, old) == old
    assert list(spec.hue_labels) == list(old["hue_labels"])  # the legend's order
    assert spec.study == spec.experiment  # dp2pub -m experiment=<study> fills it


def test_the_studies_have_exactly_the_figures_of_the_closed_dict():
    assert set(STUDIES) == set(OLD_SPECS)
    assert [s.name for s in STUDIES.values() if s.study == "dp2pub_paper"] == ["dp2pub_paper", "dp2pub_paper_svm"]


def test_the_repository_overlay_gives_the_published_numbers():
    spec = STUDIES["seed_tables"]
    frame = spec.overlays[0].frame(spec, pd.DataFrame())
    rows = [
        (r["metric"], r["epsilon"], r["value"], {k: r[k] for k in ("dataset.name", "dataset.n", "dataset.d")})
        for r in frame.to_dict("records")
    ]
    assert rows == list(OLD_SPECS["seed_tables"]["published"])


def test_the_theory_overlay_gives_the_theory_curves(fake_store):
    spec = STUDIES["fo_variance"]
    summary = aggregate(collect(spec, fake_store["uri"]))
    pd.testing.assert_frame_equal(spec.overlays[0].frame(spec, summary), fo_theory(spec.params, spec.x, summary))


GOOD = {"title": "t", "x": "epsilon", "metrics": ["tvd_1way"], "hue": "mechanism.name"}
THEORY = {**GOOD, "metrics": ["mse_freq"], "facets": ["dataset.n", "dataset.d", "dataset.k_min"]}


@pytest.mark.parametrize(
    ("keys", "key"),
    [
        ({**GOOD, "colour": "red"}, "figures.f.colour='red'"),
        ({k: v for k, v in GOOD.items() if k != "title"}, "figures.f.title=None"),
        ({**GOOD, "hue": ""}, "figures.f.hue=''"),
        ({**GOOD, "log_x": "yes"}, "figures.f.log_x='yes'"),
        ({**GOOD, "metrics": []}, "figures.f.metrics=[]"),
        ({**GOOD, "metrics": "tvd_1way"}, "figures.f.metrics='tvd_1way'"),
        ({**GOOD, "facets": ["dataset.n", "dataset.n"]}, "figures.f.facets="),
        ({**GOOD, "wrap": 0}, "figures.f.wrap=0"),
        ({**GOOD, "row_facet": "dataset.n", "facets": ["dataset.n"]}, "figures.f.row_facet="),
        ({**GOOD, "y_limits": {"tvd_1way": [1, 0]}}, "figures.f.y_limits.tvd_1way="),
        ({**GOOD, "y_limits": {"tvd_2way": [0, 1]}}, "figures.f.y_limits.tvd_2way="),
        ({**GOOD, "y_labels": {"tvd_1way": 3}}, "figures.f.y_labels.tvd_1way=3"),
        ({**GOOD, "baselines": {"tvd_1way": ["a", "b", "c"]}}, "figures.f.baselines.tvd_1way="),
        ({**GOOD, "log_y": ["tvd_2way"]}, "figures.f.log_y[0]='tvd_2way'"),
        ({**GOOD, "param_labels": {"dataset.n": "n"}}, "figures.f.param_labels.dataset.n='n'"),
        (
            {**GOOD, "families": [{"metric": "tvd", "pattern": "tvd_\\dway", "param": "alpha"}]},
            "figures.f.families[0].pattern=",
        ),
        (
            {**GOOD, "families": [{"metric": "tvd", "pattern": "(", "param": "alpha"}]},
            "figures.f.families[0].pattern='('",
        ),
        ({**GOOD, "families": [{"metric": "tvd"}]}, "figures.f.families[0]="),
        ({**GOOD, "overlays": "fo_theory"}, "figures.f.overlays='fo_theory'"),
        ({**GOOD, "overlays": ["nosuch"]}, "figures.f.overlays[0]='nosuch'"),
        ({**GOOD, "overlays": [{"name": "nosuch"}]}, "figures.f.overlays[0].name='nosuch'"),
        ({**GOOD, "overlays": [{"label": "x"}]}, "figures.f.overlays[0]="),
        ({**GOOD, "overlays": [{"_target_": "no_such_module_here.curves"}]}, "figures.f.overlays[0]._target_="),
        ({**GOOD, "overlays": [{"_target_": "math.pi"}]}, "figures.f.overlays[0]._target_='math.pi'"),
        ({**GOOD, "overlays": [{"name": "marks"}]}, "figures.f.overlays[0].points=None"),
        (
            {**GOOD, "overlays": [{"name": "marks", "points": [{"x": 1, "value": "high"}]}]},
            "figures.f.overlays[0].points[0].value=",
        ),
        (
            {**GOOD, "overlays": [{"name": "marks", "points": [{"x": 1, "value": 1}], "size": 3}]},
            "figures.f.overlays[0].size=3",
        ),
        ({**GOOD, "overlays": [{"name": "fo_theory", "label": ""}]}, "figures.f.overlays[0]"),
        ({**THEORY, "overlays": ["fo_theory"]}, "figures.f.overlays[0]='fo_theory'"),
        ({**THEORY, "x": "mechanism.k", "extra_params": ["dataset.k_max"], "overlays": ["fo_theory"]}, "figures.f.x="),
    ],
)
def test_a_bad_section_is_refused_in_one_line_naming_the_key(keys, key):
    with pytest.raises(ConfigError) as error:
        parse_section({"f": keys}, "s", "s")
    message = str(error.value)
    assert message.startswith(key) and " is invalid: expected " in message and "\n" not in message


@pytest.mark.parametrize(
    ("section", "key"),
    [([GOOD], "figures="), ({}, "figures="), ({"bad name": GOOD}, "figures.bad name="), ({"f": [1]}, "figures.f=")],
)
def test_a_section_that_is_not_a_mapping_of_named_figures_is_refused(section, key):
    with pytest.raises(ConfigError, match=f"^{key}"):
        parse_section(section, "s", "s")


def test_defaults_of_a_figure():
    spec = parse_section({"f": {**GOOD, "x": "mechanism.k", "metrics": ["ncp", "my_metric"]}}, None, "e")[0]
    assert (spec.name, spec.experiment, spec.study, spec.wrap, spec.log_x, spec.log_y) == (
        "f",
        "e",
        None,
        3,
        False,
        False,
    )
    assert spec.x_label == "mechanism.k" and spec.y_label("ncp") == "NCP (% of information lost)"
    assert spec.y_label("my_metric") == "my_metric" and spec.param_label("dataset.n") == "n"
    assert parse_section({"f": GOOD}, None, "e")[0].x_label == "privacy budget ε (per user)"


def test_the_job_ignores_the_section_and_does_not_log_it():
    cfg = compose_config(["experiment=nb_car"])
    assert "figures" in cfg
    plain = plain_config(cfg)
    assert "figures" not in plain  # neither a param of the run nor part of its identity
    JobSettings.parse({**plain, "figures": {"nb_car": {}}})  # a composed config's dict passes run_job's check


def test_docs_describe_every_key_and_built_in_overlay():
    text = (ROOT / "docs" / "how-to" / "figures.md").read_text()
    for key in KEYS:
        assert f"| `{key}` |" in text, key
    for name in OVERLAYS:
        assert f"| `{name}` |" in text, name
