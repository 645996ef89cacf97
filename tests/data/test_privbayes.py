"""The PrivBayes benchmark tables: shapes and domains as distributed, names, bad files."""

import numpy as np
import pytest

from dp2pub.data import DataFileError
from dp2pub.data.adult import FIELDS
from dp2pub.data.privbayes import SHAPES, load_privbayes
from dp2pub.validation import ConfigError

#: Domain sizes listed with the distributed files (PrivMRF's preprocess/<table>.json).
SIZES = {
    "nltcs": [2] * 16,
    "acs": [2] * 23,
    "br2000": [2, 7, 21, 10, 16, 2, 2, 2, 2, 4, 16, 2, 16, 2],
    "adult": [16, 7, 16, 16, 16, 7, 14, 6, 5, 2, 8, 15, 16, 41, 2],
}


@pytest.mark.parametrize("table", list(SHAPES))
def test_shapes_and_domains_are_those_distributed(table):
    data = load_privbayes(table)
    assert (data.n, data.d) == SHAPES[table]
    assert data.domain.sizes.tolist() == SIZES[table]
    # every code of the domain is used somewhere except where the distributed domain is wider
    used = [int(np.unique(data.codes[:, j]).size) for j in range(data.d)]
    assert sum(used) >= 0.95 * sum(SIZES[table])


def test_names_labels_and_target():
    adult = load_privbayes("adult")
    assert adult.domain.names == FIELDS and adult.target == "income"
    assert adult.domain.labels[1] == (
        "Federal-gov",
        "Local-gov",
        "Private",
        "Self-emp-inc",
        "Self-emp-not-inc",
        "State-gov",
        "Without-pay",
    )
    assert adult.domain.labels[-1] == ("<=50K", ">50K")
    assert np.bincount(adult.column("income")).tolist() == [34014, 11208]
    nltcs = load_privbayes("nltcs")
    assert nltcs.domain.names[:3] == ("a0", "a1", "a2") and nltcs.target is None


def test_a_users_copy_is_read_and_checked(tmp_path, uci_dir):
    own = load_privbayes("br2000", uci_dir)
    assert np.array_equal(own.codes, load_privbayes("br2000").codes)
    folder = tmp_path / "privbayes"
    folder.mkdir()
    for suffix in (".json", "_int_to_str.json"):
        (folder / f"br2000{suffix}").write_bytes((uci_dir / "privbayes" / f"br2000{suffix}").read_bytes())
    lines = (uci_dir / "privbayes" / "br2000.csv").read_bytes().splitlines(keepends=True)
    (folder / "br2000.csv").write_bytes(b"".join(lines[:101]))
    with pytest.raises(DataFileError) as caught:
        load_privbayes("br2000", tmp_path)
    assert "br2000.csv: SHA-256 " in str(caught.value) and "100 records up to line 101, the original has 38000" in str(
        caught.value
    )
    assert load_privbayes("br2000", tmp_path, verify_checksum=False).n == 100


def write_table(folder, uci_dir, csv: bytes):
    (folder / "privbayes").mkdir(exist_ok=True)
    for suffix in (".json", "_int_to_str.json"):
        (folder / "privbayes" / f"nltcs{suffix}").write_bytes((uci_dir / "privbayes" / f"nltcs{suffix}").read_bytes())
    (folder / "privbayes" / "nltcs.csv").write_bytes(csv)
    return folder / "privbayes" / "nltcs.csv"


HEADER = b",".join(str(j).encode() for j in range(16)) + b"\n"


@pytest.mark.parametrize(
    "body,line,fragment",
    [
        (b"0,1,2\n", 1, "expected the header '0,1,2,3,"),
        (HEADER + b"0,1,2\n", 2, "expected 16 fields separated by ',', found 3"),
        (b"1,0,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n" + b"0," * 15 + b"0\n", 1, "expected the header"),
        (HEADER + b"0," * 15 + b"0\n" + b"0," * 15 + b"2\n", 3, "a15 code 2 is outside its domain 0..1"),
        (HEADER + b"0," * 15 + b"x\n", 2, "a15 value 'x'"),
    ],
)
def test_bad_rows_name_the_file_and_line(tmp_path, uci_dir, body, line, fragment):
    path = write_table(tmp_path, uci_dir, body)
    with pytest.raises(DataFileError) as caught:
        load_privbayes("nltcs", tmp_path, verify_checksum=False)
    assert str(caught.value).startswith(f"{path}, line {line}: ") and fragment in str(caught.value)


def test_unknown_table_is_refused():
    with pytest.raises(ConfigError, match="table='census' is invalid: expected one of nltcs, acs, br2000, adult"):
        load_privbayes("census")
