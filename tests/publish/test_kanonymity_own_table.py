"""k-anonymity on a user's own table (``dataset=csv``): Samarati with the user's hierarchies
(``mechanism.hierarchies``), Mondrian on the table's ordered domains, and the default
quasi-identifiers (adult's) refused with what to set instead."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp2pub.data.csv_table import load_csv
from dp2pub.job import run_job
from dp2pub.publish.kanonymity import MondrianPublisher, SamaratiPublisher
from dp2pub.registry import build_publisher
from dp2pub.validation import ConfigError

DOMAIN = """\
age: {bins: [0, 18, 30, 50, 65, 120]}
region: [north, east, south, west]
education: {values: [primary, secondary, tertiary], ordinal: true}
income: [low, high]
"""
HIERARCHIES = {
    "age.csv": "[0,18);<30;*\n[18,30);<30;*\n[30,50);>=30;*\n[50,65);>=30;*\n[65,120];>=30;*\n",
    "region.csv": "north;north-east;*\neast;north-east;*\nsouth;south-west;*\nwest;south-west;*\n",
}
QIS = ["age", "region", "education"]


@pytest.fixture
def table(tmp_path) -> tuple[Path, Path, Path]:
    """``people.csv`` (400 records), its domain file and a directory of its hierarchies."""
    rng = np.random.default_rng(3)
    n = 400
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 121, n),
            "region": rng.choice(["north", "east", "south", "west"], n, p=[0.4, 0.3, 0.2, 0.1]),
            "education": rng.choice(["primary", "secondary", "tertiary"], n),
            "income": rng.choice(["low", "high"], n),
        }
    )
    frame.to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "people.yaml").write_text(DOMAIN)
    folder = tmp_path / "hierarchies"
    folder.mkdir()
    for name, text in HIERARCHIES.items():
        (folder / name).write_text(text)
    return tmp_path / "people.csv", tmp_path / "people.yaml", folder


def class_sizes(published, qis: list[str]) -> pd.Series:
    return published.to_frame().groupby(qis, observed=True).size()


def test_samarati_generalizes_with_the_users_hierarchies(table):
    path, domain, folder = table
    data = load_csv(str(path), str(domain), target="income")
    publisher = build_publisher(
        {"name": "samarati", "k": 15, "quasi_identifiers": QIS, "max_suppression": 4, "hierarchies": str(folder)}
    )
    outcome = publisher.publish(data)
    assert class_sizes(outcome.published, QIS).min() >= 15
    generalization = outcome.artifacts["generalization"]
    assert generalization["hierarchies"] == str(folder.resolve())
    levels = generalization["levels"]
    nodes = {
        "age": [("[0,18)", "[18,30)", "[30,50)", "[50,65)", "[65,120]"), ("<30", ">=30"), ("*",)],
        "region": [("north", "east", "south", "west"), ("north-east", "south-west"), ("*",)],
        "education": [("primary", "secondary", "tertiary"), ("*",)],  # no file: value -> *
    }
    for name in QIS:
        published = set(outcome.published.domain.labels[outcome.published.domain.index(name)])
        assert published <= set(nodes[name][levels[name]]), (name, levels[name], published)
    assert max(levels.values()) >= 1  # k=15 over 5 x 4 x 3 cells needs some generalization


def test_a_relative_hierarchies_directory_is_read_from_the_working_directory(table, monkeypatch):
    path, _, folder = table
    monkeypatch.chdir(path.parent)
    publisher = SamaratiPublisher(k=2, quasi_identifiers=["age"], hierarchies="hierarchies")
    assert publisher.hierarchies == str(folder.resolve())


def test_bad_hierarchies_are_refused_naming_the_key_or_the_file(table, tmp_path):
    path, domain, folder = table
    with pytest.raises(ConfigError, match=r"^mechanism\.hierarchies='.*nowhere'.*is not a directory"):
        build_publisher({"name": "samarati", "hierarchies": str(tmp_path / "nowhere")})
    (folder / "age.csv").write_text(HIERARCHIES["age.csv"].replace("[65,120];>=30;*\n", ""))
    data = load_csv(str(path), str(domain), target="income")
    with pytest.raises(ConfigError) as caught:
        SamaratiPublisher(k=5, quasi_identifiers=QIS, hierarchies=str(folder)).publish(data)
    assert str(caught.value).startswith("mechanism.hierarchy.age='[65,120]'") and str(folder / "age.csv") in str(
        caught.value
    )


@pytest.mark.parametrize("name", ["samarati", "mondrian"])
def test_the_default_quasi_identifiers_are_adults_and_the_error_says_so(table, name):
    path, domain, _ = table
    data = load_csv(str(path), str(domain), target="income")
    adult = ["age", "workclass", "education", "education-num", "marital-status"]
    with pytest.raises(ConfigError) as caught:
        build_publisher({"name": name, "quasi_identifiers": adult}).publish(data)
    message = str(caught.value)
    assert message.startswith("mechanism.quasi_identifiers='workclass'") and "\n" not in message
    assert f"dp2pub's mechanism={name} config lists adult's quasi-identifiers" in message and "people" in message


@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_mondrian_cuts_the_ordered_domains_into_ranges(table, mode):
    path, domain, _ = table
    data = load_csv(str(path), str(domain), target="income")
    outcome = MondrianPublisher(k=12, quasi_identifiers=["age", "education"], mode=mode).publish(data)
    published = outcome.published
    assert class_sizes(published, ["age", "education"]).min() >= 12 and published.n == data.n
    release = outcome.release
    j = data.domain.index("age")
    labels = data.domain.labels[j]
    for g, label in enumerate(published.domain.labels[j]):
        covered = np.flatnonzero(release.covers[j][g] > 0)
        assert np.array_equal(covered, np.arange(covered[0], covered[-1] + 1))  # a range in domain order
        shown = labels[covered[0]] if covered.size == 1 else f"[{labels[covered[0]]}..{labels[covered[-1]]}]"
        assert label == shown
        records = data.column(j)[published.column(j) == g]
        assert records.min() >= covered[0] and records.max() <= covered[-1]


def test_a_job_publishes_a_users_table_k_anonymously(table):
    path, domain, folder = table
    cfg = {
        "seed": 0,
        "metrics": {"ways": [1, 2], "models": ["nb"]},
        "dataset": {"name": "csv", "path": str(path), "domain": str(domain), "target": "income"},
        "mechanism": {"name": "samarati", "k": 10, "quasi_identifiers": QIS, "hierarchies": str(folder)},
    }
    result = run_job(cfg)
    assert result.guarantee == "k=10" and result.dataset is not None and result.dataset.name == "people"
    assert result.published is not None and class_sizes(result.published, QIS).min() >= 10
    assert "ncp" in result.metrics and "accuracy_nb" in result.metrics
