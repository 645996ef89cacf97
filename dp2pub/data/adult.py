"""UCI Adult (1994 US census extract): 45222 complete records over 14 categorical attributes.

Source: B. Becker & R. Kohavi (1996), *Adult*, UCI Machine Learning Repository,
doi:10.24432/C5XW20; R. Kohavi, "Scaling Up the Accuracy of Naive-Bayes Classifiers: a
Decision-Tree Hybrid", KDD 1996. Attribute names and category lists are those of
``adult.names``.

Preparation, as in the LDP/DP publication literature that uses Adult (PrivBayes, Zhang et
al. SIGMOD 2014 / TODS 2017; LoPub, Ren et al. TIFS 2018):

- adult.data (32561 rows) and adult.test (16281 rows, after its banner line
  ``|1x3 Cross validator``) are concatenated, train rows first; ``Dataset.is_test`` marks the
  rows from adult.test. Labels in adult.test end with ``.`` (``<=50K.``), which is dropped.
- Rows with a missing value (``?``) are dropped: 30162 + 15060 = 45222 records remain.
- ``fnlwgt`` (a survey weight, not an attribute of the person) is dropped.
- The continuous attributes are cut into the fixed bins of :data:`BINS` (at most 16 values
  each); ``education-num`` keeps its 16 integer values ``1..16``.
- Categorical attributes keep the categories of adult.names, in its order (``workclass``
  keeps ``Never-worked`` although no complete record has it). The target ``income`` is
  ordered ``<=50K``, ``>50K`` (adult.names lists ``>50K`` first) so that code 1 is the
  positive class.

docs/how-to/datasets.md lists every attribute's domain.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dp2pub.data.binning import Bins
from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.delimited import Fields, encode_column, integer_column, read_fields
from dp2pub.data.domain import Domain
from dp2pub.data.files import UCI_URL, DataFile, open_data_files
from dp2pub.validation import check_bool

TRAIN_FILE, TEST_FILE = "adult.data", "adult.test"
TARGET = "income"
#: Complete records (no ``?``) in the UCI originals.
N_TRAIN, N_TEST = 30162, 15060

#: The 15 fields of a line of adult.data / adult.test, in file order.
FIELDS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
DROPPED = ("fnlwgt",)
#: Fields read as integers (the others are text).
NUMERIC = tuple(
    FIELDS.index(f) for f in ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
)

#: Categories of the categorical attributes, in adult.names order (income: see module doc).
CATEGORIES: dict[str, tuple[str, ...]] = {
    "workclass": (
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
    ),
    "education": (
        "Bachelors",
        "Some-college",
        "11th",
        "HS-grad",
        "Prof-school",
        "Assoc-acdm",
        "Assoc-voc",
        "9th",
        "7th-8th",
        "12th",
        "Masters",
        "1st-4th",
        "10th",
        "Doctorate",
        "5th-6th",
        "Preschool",
    ),
    "education-num": tuple(str(v) for v in range(1, 17)),
    "marital-status": (
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
    ),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": (
        "United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands",
    ),
    "income": ("<=50K", ">50K"),
}

#: Bins of the continuous attributes: bin ``i`` holds ``edges[i-1] <= x < edges[i]``.
BINS: dict[str, Bins] = {
    # 5-year groups, <20 and >=70 pooled (ages are 17..90): 12 values
    "age": Bins((20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70)),
    # 0 for 91.6% of records; the non-zero values (quantiles 10%: 2354, 50%: 7298,
    # 90%: 15024; 99999 is a top code) in 6 ranges: 7 values
    "capital-gain": Bins((1, 3000, 5000, 7500, 10000, 20000), minimum=0),
    # 0 for 95.3%; non-zero quantiles 10%: 1562, 50%: 1887, 90%: 2259: 6 values
    "capital-loss": Bins((1, 1500, 1800, 2000, 2500), minimum=0),
    # the 40-hour week on its own (47% of records), 10-hour groups around it: 9 values
    "hours-per-week": Bins((10, 20, 30, 40, 41, 50, 60, 70), minimum=1),
}

#: The 14 attributes of the encoded table, in file order without ``fnlwgt``.
ATTRIBUTES = tuple(f for f in FIELDS if f not in DROPPED)


#: Attributes whose codes follow the order of their values: the bins and education-num
#: (education's categories are in adult.names order, which is not by level).
ORDINAL = (*BINS, "education-num")


def adult_domain() -> Domain:
    """The Domain of the encoded table: categories for categorical attributes, bin labels
    for binned ones."""
    labels = tuple(BINS[a].labels if a in BINS else CATEGORIES[a] for a in ATTRIBUTES)
    return Domain(ATTRIBUTES, labels, ordinal=ORDINAL)


def encode_adult_fields(fields: Fields, test_file: bool) -> np.ndarray:
    """Codes (n, 14) of the complete rows of adult-format string fields.

    Rows with a ``?`` anywhere are dropped first; in a test file the labels' trailing ``.``
    is removed. Raises DataFileError naming the file and line of a bad value.
    """
    complete = fields.select(~fields.equals("?"))
    label = FIELDS.index(TARGET)
    codes = np.empty((len(complete.lines), len(ATTRIBUTES)), dtype=np.uint8)
    for j, attribute in enumerate(ATTRIBUTES):  # one vectorized pass per column
        column = FIELDS.index(attribute)
        if attribute in BINS:
            bins = BINS[attribute]
            values = integer_column(complete, column, attribute, minimum=bins.minimum)
            codes[:, j] = bins.codes(values)
        else:
            strip = _strip_dot if test_file and column == label else None
            codes[:, j] = encode_column(complete, column, CATEGORIES[attribute], attribute, strip)
    return codes


def _strip_dot(texts: pd.Index) -> pd.Index:
    return texts.str.removesuffix(".")


def parse_adult(train: DataFile | str | Path, test: DataFile | str | Path) -> Dataset:
    """Encode an adult.data-format and an adult.test-format file into one Dataset."""
    return _parse(train, test)[0]


def _parse(train: DataFile | str | Path, test: DataFile | str | Path) -> tuple[Dataset, list[int]]:
    """The Dataset and the last line read of each file."""
    parts, last_lines = [], []
    for source, test_file in ((train, False), (test, True)):
        fields = read_fields(source, len(FIELDS), numeric=NUMERIC)
        parts.append(encode_adult_fields(fields, test_file=test_file))
        last_lines.append(int(fields.lines[-1]))
    is_test = np.repeat([False, True], [len(p) for p in parts])
    return _dataset(np.concatenate(parts), is_test), last_lines


def _dataset(codes: np.ndarray, is_test: np.ndarray) -> Dataset:
    domain = adult_domain()
    codes = np.asfortranarray(codes, dtype=code_dtype(int(domain.sizes.max())))  # column-wise
    return Dataset(codes, domain, target=TARGET, name="adult", is_test=is_test)


def load_adult(
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    verify_checksum: bool = True,
    download: bool = False,
    url_base: str = UCI_URL["adult"],
) -> Dataset:
    """UCI Adult as a Dataset of 45222 records over 14 attributes, target ``income``.

    adult.data and adult.test are concatenated, train rows first, and ``is_test`` marks the
    15060 records of adult.test; rows with a missing value are dropped, ``fnlwgt`` is
    dropped, and the continuous attributes are cut into fixed bins (see the module docstring
    for the preparation, as in the PrivBayes [2]_ and LoPub literature).

    Parameters
    ----------
    data_dir : str or pathlib.Path, optional
        A directory holding your own adult.data and adult.test (plain or .gz); None:
        DP2PUB_DATA_DIR if set, else the copies packaged with dp2pub (see
        :func:`dp2pub.data.files.open_data_files`).
    cache_dir : str or pathlib.Path, optional
        Where ``download`` puts the files (``<cache_dir>/uci``).
    verify_checksum : bool, optional
        Refuse files whose SHA-256 differ from the UCI originals (default True; the packaged
        copies are always checked).
    download : bool, optional
        Fetch the files from ``url_base`` into ``<cache_dir>/uci`` (reused when fetched from
        the same URL before) and read them, whatever ``data_dir`` or DP2PUB_DATA_DIR say; a
        URL that cannot be read fails, naming it (default False).
    url_base : str, optional
        The archive folder to download from (http://, https://, ftp:// or file://).

    Returns
    -------
    Dataset
        The table, named ``adult``, target ``income`` (code 1: ``>50K``), with ``is_test``.

    Raises
    ------
    DataFileError
        Naming the file and line of a malformed record, or a file whose checksum or record
        count differs from the original.

    References
    ----------
    .. [1] B. Becker, R. Kohavi, *Adult*, UCI Machine Learning Repository, 1996,
       doi:10.24432/C5XW20; R. Kohavi, "Scaling Up the Accuracy of Naive-Bayes Classifiers:
       a Decision-Tree Hybrid", KDD 1996.
    .. [2] J. Zhang, G. Cormode, C. M. Procopiuc, D. Srivastava, X. Xiao, "PrivBayes: Private
       Data Release via Bayesian Networks", SIGMOD 2014 / ACM TODS 2017.

    Examples
    --------
    >>> from dp2pub import load_adult
    >>> adult = load_adult()
    >>> adult.n, adult.d, adult.target, int(adult.is_test.sum())
    (45222, 14, 'income', 15060)
    >>> train, test = adult.train_test()
    >>> train.n, test.n
    (30162, 15060)
    """
    verify_checksum = check_bool(verify_checksum, "verify_checksum")
    download = check_bool(download, "download")
    files = open_data_files(
        [TRAIN_FILE, TEST_FILE], data_dir, download=download, url_base=url_base, cache_dir=cache_dir
    )
    data, last_lines = _parse(files[TRAIN_FILE], files[TEST_FILE])
    assert data.is_test is not None  # _parse marks the records of adult.test
    n_test = int(data.is_test.sum())
    for name, records, expected, last in (
        (TRAIN_FILE, data.n - n_test, N_TRAIN, last_lines[0]),
        (TEST_FILE, n_test, N_TEST, last_lines[1]),
    ):
        files[name].check(verify_checksum, f"{records} complete records up to line {last}, the original has {expected}")
    return data
