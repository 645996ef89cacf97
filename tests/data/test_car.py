"""UCI Car Evaluation: sizes, domains in car.names order, class balance, bad files."""

import gzip
import re

import numpy as np
import pytest

from dp2pub.data import DataFileError, DataNotFoundError, load_car
from dp2pub.data.car import CAR_DOMAIN, parse_car

CLASS_COUNTS = {"unacc": 1210, "acc": 384, "good": 69, "vgood": 65}  # car.names section 9


@pytest.fixture(scope="module")
def car():
    return load_car()  # the packaged copy


def test_a_users_own_copy_plain_or_gzipped_gives_the_same_table(car, uci_dir, tmp_path):
    assert np.array_equal(load_car(uci_dir).codes, car.codes)
    (tmp_path / "car.data.gz").write_bytes(gzip.compress((uci_dir / "car.data").read_bytes()))
    assert np.array_equal(load_car(tmp_path).codes, car.codes)


def names_section(text: str, number: int) -> str:
    return text.split(f"{number}. ", 1)[1].split(f"\n{number + 1}. ", 1)[0]


def test_sizes_target_and_full_coverage(car):
    assert (car.n, car.d) == (1728, 7)
    assert car.target == "class" and car.domain.names[-1] == "class"
    assert car.is_test is None
    features = car.codes[:, :6].astype(np.int64)
    # the records cover the 4*4*4*3*3*3 feature space exactly once (car.names section 5)
    assert len(np.unique(features @ np.cumprod([1, 4, 4, 4, 3, 3]))) == 1728


def test_domains_are_those_of_car_names_in_its_order(car, uci_dir):
    text = (uci_dir / "car.names").read_text()
    listed = {}
    for line in names_section(text, 7).splitlines()[1:]:
        if line.strip():
            name, values = line.split(None, 1)
            listed[name] = tuple(v.strip().replace("-", "") for v in values.split(","))
    classes = re.findall(r"^\s+(\S+)\s+\d+\s+\(", names_section(text, 9), flags=re.M)
    listed["class"] = tuple(c.replace("-", "") for c in classes)
    assert listed == CAR_DOMAIN
    assert car.domain.names == tuple(CAR_DOMAIN) and car.domain.labels == tuple(CAR_DOMAIN.values())


def test_class_balance_matches_car_names(car):
    counts = np.bincount(car.column("class"), minlength=4)
    assert dict(zip(car.domain.labels[-1], counts.tolist())) == CLASS_COUNTS
    first = car.to_frame().iloc[0].tolist()
    assert first == ["vhigh", "vhigh", "2", "2", "small", "low", "unacc"]  # car.data line 1


GOOD = "vhigh,vhigh,2,2,small,low,unacc\n"


@pytest.mark.parametrize(
    "text,line,fragment",
    [
        (GOOD + "vhigh,vhigh,2,2,small,unacc\n", 2, "expected 7 fields"),
        (GOOD * 3 + "vhigh,vhigh,2,2,small,low,unacc,extra\n", 4, "found 8"),
        (GOOD + GOOD + "vhigh,vhigh,7,2,small,low,unacc\n", 3, "unknown doors value '7'"),
        (GOOD + "\n" + "vhigh,vhigh,2,2,small,low,v-good\n", 3, "unknown class value 'v-good'"),
        (GOOD * 5 + "vhigh,vhigh,2,2,sm", 6, "expected 7 fields"),  # truncated mid-line
    ],
)
def test_corrupt_file_names_file_and_line(tmp_path, text, line, fragment):
    path = tmp_path / "car.data"
    path.write_text(text)
    with pytest.raises(DataFileError) as caught:
        parse_car(path)
    message = str(caught.value)
    assert f"{path}, line {line}: " in message and fragment in message
    assert caught.value.line == line


def test_truncated_copy_fails_the_checksum(tmp_path, uci_dir):
    lines = (uci_dir / "car.data").read_text().splitlines(keepends=True)
    (tmp_path / "car.data").write_text("".join(lines[:1000]))
    with pytest.raises(DataFileError) as caught:
        load_car(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "car.data") in message and "SHA-256" in message
    assert "1000 records ending at line 1000, the original has 1728" in message
    assert load_car(tmp_path, verify_checksum=False).n == 1000


def test_missing_directory_is_named_with_the_remedy(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(DataNotFoundError) as caught:
        load_car(missing)
    message = str(caught.value)
    assert str(missing) in message and "car.data" in message
    assert "DP2PUB_DATA_DIR" in message and "paths.data_dir" in message


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_file_names_the_file(tmp_path, text):
    path = tmp_path / "car.data"
    path.write_text(text)
    with pytest.raises(DataFileError, match=f"{path}: no data rows"):
        parse_car(path)


def test_crlf_line_ends_blank_lines_and_a_missing_final_newline_are_accepted(tmp_path):
    path = tmp_path / "car.data"
    path.write_bytes((GOOD.replace("\n", "\r\n") * 2 + "  \r\n" + GOOD.strip()).encode())
    assert parse_car(path).n == 3
