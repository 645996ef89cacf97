"""UCI Adult: sizes, train/test membership, documented domains and bins, bad files."""

import re
from pathlib import Path

import numpy as np
import pytest

from dp2pub.data import DataFileError, DataNotFoundError, load_adult
from dp2pub.data.adult import ATTRIBUTES, BINS, CATEGORIES, FIELDS, NUMERIC, parse_adult
from dp2pub.data.binning import Bins
from dp2pub.data.delimited import read_fields
from tests.conftest import ROOT

DOCS = ROOT / "docs" / "how-to" / "datasets.md"


@pytest.fixture(scope="module")
def adult():
    return load_adult()  # the packaged copy


def test_a_users_own_copy_gives_the_same_table(adult, uci_dir):
    own = load_adult(uci_dir)
    assert np.array_equal(own.codes, adult.codes) and np.array_equal(own.is_test, adult.is_test)


def test_sizes_split_and_target(adult):
    assert (adult.n, adult.d) == (45222, 14)
    assert adult.domain.names == ATTRIBUTES and "fnlwgt" not in ATTRIBUTES
    assert adult.target == "income"
    assert int((~adult.is_test).sum()) == 30162 and int(adult.is_test.sum()) == 15060
    assert not adult.is_test[:30162].any()  # train rows first
    train, test = adult.train_test()
    assert (train.n, test.n) == (30162, 15060) and test.is_test.all()


def test_income_balance_matches_the_files_minus_incomplete_rows(adult):
    income = adult.column("income")
    assert adult.domain.labels[-1] == ("<=50K", ">50K")
    # complete-record counts of the UCI files (adult.names: 24.78% / 24.57% >50K with unknowns)
    assert np.bincount(income[~adult.is_test]).tolist() == [22654, 7508]
    assert np.bincount(income[adult.is_test]).tolist() == [11360, 3700]


def test_raw_label_counts_match_the_data_readme(uci_dir):
    # NOTICE / docs/how-to/datasets.md: adult.data 24720 / 7841, adult.test 12435 / 3846 (with "?" rows)
    for name, expected in (
        ("adult.data", {"<=50K": 24720, ">50K": 7841}),
        ("adult.test", {"<=50K.": 12435, ">50K.": 3846}),
    ):
        fields = read_fields(uci_dir / name, len(FIELDS), numeric=NUMERIC)
        assert fields.frame[14].value_counts().to_dict() == expected


def test_categories_are_those_of_adult_names_in_its_order(uci_dir):
    text = (uci_dir / "adult.names").read_text()
    for name, labels in CATEGORIES.items():
        if name in ("income", "education-num"):
            continue
        listed = re.search(rf"^{name}: (.*)\.$", text, flags=re.M).group(1)
        assert tuple(v.strip() for v in listed.split(",")) == labels, name
    assert CATEGORIES["education-num"] == tuple(str(v) for v in range(1, 17))


def test_values_stay_in_small_domains_and_match_the_raw_numbers(adult, uci_dir):
    sizes = dict(zip(adult.domain.names, adult.domain.sizes.tolist()))
    assert all(sizes[a] <= 16 for a in BINS) and sizes["education-num"] == 16
    assert np.all(adult.codes.max(axis=0) < adult.domain.sizes)
    # the first line of adult.data: 39, ..., 2174, 0, 40, ... -> the documented bins
    first = dict(zip(ATTRIBUTES, adult.to_frame().iloc[0].tolist()))
    assert first["age"] == "35-39" and first["capital-gain"] == "1-2999"
    assert first["capital-loss"] == "0" and first["hours-per-week"] == "40"
    assert first["education-num"] == "13" and first["education"] == "Bachelors"
    # the most frequent hours-per-week bin is the 40-hour week, and most records have no capital gain
    hours = np.bincount(adult.column("hours-per-week"))
    assert adult.domain.labels[ATTRIBUTES.index("hours-per-week")][hours.argmax()] == "40"
    assert np.mean(adult.column("capital-gain") == 0) > 0.9


def test_bins_cover_every_integer_and_their_labels_say_so():
    for bins in BINS.values():
        values = np.arange(bins.minimum, 100_001)
        codes = bins.codes(values)
        assert codes.min() == 0 and codes.max() == len(bins.labels) - 1
        assert np.all(np.diff(codes) >= 0)
        for code, label in enumerate(bins.labels):  # each label describes its values exactly
            inside = values[codes == code]
            if label.startswith("<"):
                assert inside.max() == int(label[1:]) - 1
            elif label.startswith(">="):
                assert inside.min() == int(label[2:])
            else:
                low, _, high = label.partition("-")
                assert (inside.min(), inside.max()) == (int(low), int(high or low))
    assert Bins((1, 3000)).labels == ("0", "1-2999", ">=3000")
    with pytest.raises(ValueError):
        Bins((5, 5))


def test_docs_list_every_attribute_domain(adult):
    docs = DOCS.read_text()
    for name, labels in zip(adult.domain.names, adult.domain.labels):
        row = re.search(rf"^\| `{re.escape(name)}` \|.*$", docs, flags=re.M)
        assert row is not None, name
        assert all(f"`{label}`" in row.group(0) for label in labels), name


TRAIN_ROW = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K\n"
TEST_ROW = "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 40, United-States, <=50K.\n"
BANNER = "|1x3 Cross validator\n"


def write(folder: Path, train: str, test: str) -> tuple[Path, Path]:
    (folder / "adult.data").write_text(train)
    (folder / "adult.test").write_text(test)
    return folder / "adult.data", folder / "adult.test"


def test_quirks_banner_dots_missing_values_and_blank_lines(tmp_path):
    unknown = TRAIN_ROW.replace("State-gov", "?")
    unknown_age = TRAIN_ROW.replace("39,", "?,")
    train, test = write(
        tmp_path,
        TRAIN_ROW + unknown + TRAIN_ROW + unknown_age + "\n",
        BANNER + TEST_ROW + TEST_ROW.replace("<=50K.", ">50K.") + "\n",
    )
    data = parse_adult(train, test)
    assert data.n == 4 and data.is_test.tolist() == [False, False, True, True]
    assert data.to_frame()["income"].tolist() == ["<=50K", "<=50K", "<=50K", ">50K"]


@pytest.mark.parametrize(
    "which,text,line,fragment",
    [
        ("train", TRAIN_ROW + TRAIN_ROW.replace(", 77516", ""), 2, "expected 15 fields"),
        ("test", BANNER + TEST_ROW * 2 + TEST_ROW.replace("Private", "Privat"), 4, "unknown workclass value 'Privat'"),
        ("train", TRAIN_ROW + TRAIN_ROW.replace("39,", "thirty,"), 2, "age value 'thirty' is not an integer"),
        ("train", TRAIN_ROW * 2 + TRAIN_ROW.replace(", 40,", ", -4,"), 3, "hours-per-week value '-4'"),
        ("train", TRAIN_ROW.replace("<=50K", "<=50K."), 1, "unknown income value '<=50K.'"),
        ("test", BANNER + TEST_ROW + TEST_ROW[:60], 3, "found 7"),  # truncated mid-line
    ],
)
def test_corrupt_file_names_file_and_line(tmp_path, which, text, line, fragment):
    train, test = write(tmp_path, TRAIN_ROW, BANNER + TEST_ROW)
    bad = train if which == "train" else test
    bad.write_text(text)
    with pytest.raises(DataFileError) as caught:
        parse_adult(train, test)
    message = str(caught.value)
    assert f"{bad}, line {line}: " in message and fragment in message


def test_checksum_mismatch_names_the_file(tmp_path, uci_dir):
    lines = (uci_dir / "adult.test").read_text().splitlines(keepends=True)
    (tmp_path / "adult.data").write_bytes((uci_dir / "adult.data").read_bytes())
    (tmp_path / "adult.test").write_text("".join(lines[:5001]))  # banner + 5000 rows
    with pytest.raises(DataFileError) as caught:
        load_adult(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'adult.test'}: SHA-256 ")
    assert "up to line 5001" in message and "the original has 15060" in message
    assert load_adult(tmp_path, verify_checksum=False).is_test.sum() < 5000


def test_missing_directory_is_named_with_the_remedy():
    with pytest.raises(DataNotFoundError) as caught:
        load_adult("/nonexistent")
    message = str(caught.value)
    assert "/nonexistent" in message and "DP2PUB_DATA_DIR" in message and "paths.data_dir" in message


def test_fields_in_file_order():
    assert FIELDS[2] == "fnlwgt" and FIELDS[-1] == "income" and len(FIELDS) == 15
