"""Mushroom, Nursery, Chess and Connect-4: shapes, domains and class counts as their .names
files state them, a user's own copy checked, bad rows refused with file and line."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dp2pub.data import DataFileError, load_uci_nb
from dp2pub.data.files import packaged
from dp2pub.data.uci_nb import UCI_NB
from dp2pub.registry import build_dataset
from dp2pub.validation import ConfigError

NAMES = {
    "mushroom": "uci-nb/agaricus-lepiota.names",
    "nursery": "uci-nb/nursery.names",
    "chess": "uci-nb/kr-vs-kp.names",
    "connect4": "uci-nb/connect-4.names",
}
#: (records, attributes) from section 5 and 6 of each .names (+1 for the class).
SHAPES = {"mushroom": (8124, 23), "nursery": (12960, 9), "chess": (3196, 37), "connect4": (67557, 43)}


def names_text(table: str) -> str:
    return packaged(NAMES[table]).raw.decode()


def class_counts_in_names(table: str) -> dict[str, int]:
    """Section 9 of the .names file (the class distribution), as label -> count."""
    text = names_text(table)
    if table == "mushroom":  # "--    edible: 4208 (51.8%)", classes "edible=e, poisonous=p"
        counts = dict(re.findall(r"--\s+(\w+): (\d+) \(", text))
        return {"e": int(counts["edible"]), "p": int(counts["poisonous"])}
    if table == "nursery":  # "   not_recom    4320   (33.333 %)"
        return {label: int(n) for label, n in re.findall(r"^\s+(\w+)\s+(\d+)\s+\(", text, flags=re.M)}
    if table == "chess":  # "In 1669 of the positions (52%), White can win."
        won, nowin = re.findall(r"In (\d+) of the positions", text)
        return {"won": int(won), "nowin": int(nowin)}
    return {label: int(n) for n, label in re.findall(r"(\d+) (win|loss|draw)\(", text)}


@pytest.fixture(scope="module", params=sorted(UCI_NB))
def table(request):
    return request.param, load_uci_nb(request.param)


def test_shape_target_and_class_counts_are_those_of_the_names_file(table):
    name, data = table
    assert (data.n, data.d) == SHAPES[name]
    assert data.target == "class" and data.name == name
    labels = data.domain.labels[data.target_column]
    counts = np.bincount(data.column("class"), minlength=len(labels))
    assert dict(zip(labels, counts.tolist())) == class_counts_in_names(name)


def test_mushroom_domains_are_those_of_its_names_file_and_keep_the_missing_stalk_root():
    data = load_uci_nb("mushroom")
    text = names_text("mushroom").split("7. Attribute Information:", 1)[1].split("8. Missing", 1)[0]
    listed = [re.findall(r"=(\S)", block) for block in re.split(r"\n\s+\d+\. ", text)[1:]]
    assert [list(labels) for labels in data.domain.labels[1:]] == listed
    assert data.domain.labels[0] == ("e", "p")  # "classes: edible=e, poisonous=p"
    stalk_root = data.column("stalk_root")
    missing = data.domain.labels[data.domain.index("stalk_root")].index("?")
    assert int((stalk_root == missing).sum()) == 2480  # section 8: 2480 missing, all in #11


def test_nursery_domains_are_those_of_its_names_file_in_the_data_spelling():
    data = load_uci_nb("nursery")
    section = names_text("nursery").split("7. Attribute Values:", 1)[1].split("8. Missing", 1)[0]
    listed = {
        line.split()[0]: tuple(v.strip() for v in line.split(None, 1)[1].split(","))
        for line in section.strip().splitlines()
    }
    listed["social"] = tuple(v.replace("non-prob", "nonprob") for v in listed["social"])  # the data's spelling
    assert dict(zip(data.domain.names[:-1], data.domain.labels[:-1])) == listed
    # the records cover the attribute space exactly once (section 5)
    assert len(np.unique(data.codes[:, :-1].astype(np.int64) @ np.cumprod([1, *data.domain.sizes[:-2]]))) == 12960


def test_chess_features_are_named_and_valued_as_the_data_holds_them():
    data = load_uci_nb("chess")
    names = re.search(r"\[(bkblk.*?)\]", names_text("chess"), flags=re.S).group(1)
    assert data.domain.names == (*(n.strip() for n in names.split(",")), "class")
    for j, labels in enumerate(data.domain.labels[:-1]):  # every category occurs, alphabetical
        assert list(labels) == sorted(labels) and np.bincount(data.codes[:, j], minlength=len(labels)).min() > 0


def test_connect4_squares_and_every_position_has_four_of_each_player():
    data = load_uci_nb("connect4")
    assert data.domain.names[:7] == ("a1", "a2", "a3", "a4", "a5", "a6", "b1")
    squares = data.codes[:, :-1]
    assert np.all((squares == 0).sum(axis=1) == 4) and np.all((squares == 1).sum(axis=1) == 4)


def test_config_entries_build_the_same_tables():
    rng = np.random.default_rng(0)
    for name in UCI_NB:
        assert (
            build_dataset({"name": name, "verify_checksum": True}, rng).fingerprint() == load_uci_nb(name).fingerprint()
        )
    with pytest.raises(ConfigError, match="table"):
        load_uci_nb("iris")


def test_a_users_copy_is_checked_and_a_bad_row_named(tmp_path, uci_dir):
    own = load_uci_nb("nursery", uci_dir)
    assert own.fingerprint() == load_uci_nb("nursery").fingerprint()
    lines = (uci_dir / "uci-nb/nursery.data").read_text().splitlines(keepends=True)
    folder = tmp_path / "uci-nb"
    folder.mkdir()
    (folder / "nursery.data").write_text("".join(lines[:500]))
    with pytest.raises(DataFileError, match="500 records ending at line 500, the original has 12960"):
        load_uci_nb("nursery", tmp_path)
    assert load_uci_nb("nursery", tmp_path, verify_checksum=False).n == 500
    bad = [*lines[:3], lines[3].replace("usual", "unusual", 1), *lines[4:10]]
    (folder / "nursery.data").write_text("".join(bad))
    with pytest.raises(DataFileError) as caught:
        load_uci_nb("nursery", tmp_path)
    assert caught.value.line == 4 and "unknown parents value 'unusual'" in str(caught.value)
