"""Generalization hierarchy files: the shipped ones cover every value of adult and car and
are consistent; malformed files are refused with the file, line, attribute or value named."""

from pathlib import Path

import numpy as np
import pytest

from dp2pub.anonymity.hierarchy import HIERARCHY_DIR, flat_hierarchy, load_hierarchies, parse_hierarchy
from dp2pub.data.adult import adult_domain
from dp2pub.data.car import CAR_DOMAIN
from dp2pub.data.errors import DataFileError
from dp2pub.validation import ConfigError

ADULT_QIS = ("age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country")
CAR_FEATURES = ("buying", "maint", "doors", "persons", "lug_boot", "safety")


def shipped():
    domain = adult_domain()
    for attribute in ADULT_QIS:
        yield "adult", attribute, domain.labels[domain.index(attribute)]
    for attribute in CAR_FEATURES:
        yield "car", attribute, CAR_DOMAIN[attribute]


@pytest.mark.parametrize("dataset,attribute,labels", list(shipped()))
def test_shipped_hierarchies_cover_every_value_and_end_in_one_root(dataset, attribute, labels):
    path = HIERARCHY_DIR / dataset / f"{attribute}.csv"
    assert path.is_file()
    hierarchy = parse_hierarchy(path, attribute, tuple(labels))
    assert hierarchy.height >= 1
    assert hierarchy.labels[0] == tuple(labels)
    assert hierarchy.labels[-1] == ("*",) and np.all(hierarchy.maps[-1] == 0)
    # every level is a coarsening of the one below: a node never has two parents
    for level in range(hierarchy.height):
        lower, upper = hierarchy.maps[level], hierarchy.maps[level + 1]
        parents = {}
        for node, parent in zip(lower, upper):
            assert parents.setdefault(node, parent) == parent
    # the file lists exactly the domain's values
    leaves = [line.split(";")[0] for line in path.read_text().splitlines() if line.strip()]
    assert sorted(leaves) == sorted(labels)


def test_the_age_hierarchy_goes_bins_decades_twenty_years_root():
    domain = adult_domain()
    (age,) = load_hierarchies("adult", ["age"], [domain.labels[0]])
    width = [len(labels) for labels in age.labels]
    assert width == [12, 7, 3, 1]
    assert age.labels[1][age.maps[1][domain.labels[0].index("35-39")]] == "30-39"


def test_an_attribute_without_a_file_generalizes_to_star(tmp_path):
    (hierarchy,) = load_hierarchies("toy", ["a"], [("x", "y")], folder=tmp_path)
    assert hierarchy.labels == (("x", "y"), ("*",))
    assert flat_hierarchy("a", ("x",)).height == 0


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "a.csv"
    path.write_text(text)
    return path


def test_a_domain_value_missing_from_the_file_is_named(tmp_path):
    path = write(tmp_path, "x;xy;*\ny;xy;*\n")
    with pytest.raises(ConfigError) as caught:
        parse_hierarchy(path, "colour", ("x", "y", "z"))
    assert "hierarchy.colour='z'" in str(caught.value) and str(path) in str(caught.value)


def test_a_node_with_two_parents_is_refused_naming_file_and_line(tmp_path):
    path = write(tmp_path, "x;xy;*\ny;xy;*\nz;xy;other\n")
    with pytest.raises(DataFileError) as caught:
        parse_hierarchy(path, "a", ("x", "y", "z"))
    assert caught.value.line == 3 and str(path) in str(caught.value) and "'xy'" in str(caught.value)


@pytest.mark.parametrize("text,line", [("x;*\ny;y;*\n", 2), ("x;*\nx;*\n", 2)])
def test_ragged_rows_and_repeated_values_are_refused(tmp_path, text, line):
    with pytest.raises(DataFileError) as caught:
        parse_hierarchy(write(tmp_path, text), "a", ("x",))
    assert caught.value.line == line
