"""The PrivBayes benchmark tables: NLTCS, ACS, BR2000 and the 15-attribute Adult.

The four tables on which PrivBayes (Zhang, Cormode, Procopiuc, Srivastava, Xiao, SIGMOD 2014),
PrivMRF (Cai, Lei, Wei, Xiao, VLDB 2021) and DP2-Pub (Jiang et al., IEEE TKDE 2023) report
their experiments, already discretized and integer-coded, as the PrivMRF repository
distributes them (``preprocess/``, Apache License 2.0; ``NOTICE`` names the sources).

Each table is three files under ``privbayes/`` in a data directory:

- ``<table>.csv``: a header of column indices ``0,1,...``, then one integer code per cell;
- ``<table>.json``: each column's domain size (``{"0": {"type": "discrete", "domain": 2}}``);
- ``<table>_int_to_str.json``: per column, each code's original label.

Only Adult's attribute names are known (UCI order, ``fnlwgt`` kept and binned); the other
tables' attributes are named by column index, ``a0, a1, ...``, as in
:meth:`dp2pub.data.Domain.from_sizes`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

from dp2pub.data.adult import FIELDS as ADULT_FIELDS
from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.delimited import integer_column, read_fields
from dp2pub.data.domain import Domain
from dp2pub.data.errors import DataFileError
from dp2pub.data.files import DataFile, open_data_files
from dp2pub.validation import ConfigError, check_bool

#: Table -> (records, attributes) of the distributed files.
SHAPES: dict[str, tuple[int, int]] = {
    "nltcs": (21574, 16),
    "acs": (47461, 23),
    "br2000": (38000, 14),
    "adult": (45222, 15),
}
#: The class attribute of a table, where the table has a named one.
TARGETS: dict[str, str | None] = {"nltcs": None, "acs": None, "br2000": None, "adult": "income"}


def _json(file: DataFile) -> object:
    try:
        return json.loads(file.raw)
    except ValueError as error:
        raise DataFileError(file.path, f"is not valid JSON ({error})") from None


def table_domain(table: str, sizes_file: DataFile, labels_file: DataFile) -> Domain:
    """The Domain of ``table`` from its ``.json`` (sizes) and ``_int_to_str.json`` (labels).

    Raises:
        DataFileError: if the two files disagree on the columns or a column's codes.
    """
    spec, labels = _json(sizes_file), _json(labels_file)
    d = SHAPES[table][1]
    if not isinstance(spec, dict) or sorted(spec, key=int) != [str(j) for j in range(d)]:
        raise DataFileError(sizes_file.path, f"expected the columns 0..{d - 1}")
    sizes = [int(spec[str(j)]["domain"]) for j in range(d)]
    if not isinstance(labels, list) or len(labels) != d:
        raise DataFileError(labels_file.path, f"expected a list of {d} code-to-label maps")
    ordered = []
    for j, (k, mapping) in enumerate(zip(sizes, labels)):
        if sorted(mapping, key=int) != [str(c) for c in range(k)]:
            raise DataFileError(labels_file.path, f"column {j}: expected labels of the codes 0..{k - 1}")
        ordered.append(tuple(str(mapping[str(c)]) for c in range(k)))
    names = ADULT_FIELDS if table == "adult" else tuple(f"a{j}" for j in range(d))
    return Domain(tuple(names), tuple(ordered))


def load_privbayes(
    table: str,
    data_dir: str | Path | None = None,
    verify_checksum: bool = True,
) -> Dataset:
    """One PrivBayes benchmark table as a Dataset (:data:`SHAPES` gives its size).

    The four tables on which PrivBayes [1]_, PrivMRF [2]_ and DP2-Pub [3]_ report their
    experiments, already discretized and integer-coded, as the PrivMRF repository distributes
    them. Only Adult's attribute names are known; the other tables' attributes are named
    ``a0, a1, ...``.

    Parameters
    ----------
    table : str
        ``nltcs``, ``acs``, ``br2000`` or ``adult``.
    data_dir : str or pathlib.Path, optional
        A directory holding your own ``privbayes/`` files (plain or .gz); None:
        DP2PUB_DATA_DIR if set, else the copies packaged with dp2pub.
    verify_checksum : bool, optional
        Refuse files whose SHA-256 differ from the distributed ones (default True; the
        packaged copies are always checked).

    Returns
    -------
    Dataset
        The table, named ``table`` (``adult15`` for Adult, target ``income``).

    Raises
    ------
    ConfigError
        For an unknown ``table`` (``table='x' is invalid: expected one of nltcs, acs,
        br2000, adult``).
    DataFileError
        Naming the file and line of a bad header, field count or code.

    References
    ----------
    .. [1] J. Zhang, G. Cormode, C. M. Procopiuc, D. Srivastava, X. Xiao, "PrivBayes: Private
       Data Release via Bayesian Networks", SIGMOD 2014.
    .. [2] K. Cai, X. Lei, J. Wei, X. Xiao, "Data Synthesis via Differentially Private Markov
       Random Fields", VLDB 2021.
    .. [3] H. Jiang, H. Yu, X. Cheng, J. Pei, R. Pless, J. Yu, "DP2-Pub: Differentially
       Private High-Dimensional Data Publication with Invariant Post Randomization", IEEE
       TKDE 2023.

    Examples
    --------
    >>> from dp2pub import load_privbayes
    >>> nltcs = load_privbayes("nltcs")
    >>> nltcs.name, nltcs.n, nltcs.d, nltcs.domain.names[:3]
    ('nltcs', 21574, 16, ('a0', 'a1', 'a2'))
    >>> load_privbayes("census")
    Traceback (most recent call last):
    ...
    dp2pub.validation.ConfigError: table='census' is invalid: expected one of nltcs, acs, br2000, adult
    """
    if table not in SHAPES:
        raise ConfigError("table", table, "one of " + ", ".join(SHAPES))
    verify_checksum = check_bool(verify_checksum, "verify_checksum")
    names = [f"privbayes/{table}{suffix}" for suffix in (".csv", ".json", "_int_to_str.json")]
    files = open_data_files(names, data_dir)
    for name in names[1:]:  # the domain files are read whole: check them first
        files[name].check(verify_checksum)
    domain = table_domain(table, files[names[1]], files[names[2]])
    d = len(domain)
    fields = read_fields(files[names[0]], d, numeric=range(d), header=[str(j) for j in range(d)])
    codes = np.empty((len(fields.lines), d), dtype=code_dtype(int(domain.sizes.max())), order="F")
    for j, (name, k) in enumerate(zip(domain.names, domain.sizes)):
        column = integer_column(fields, j, name)
        bad = np.flatnonzero(column >= k)
        if bad.size:
            raise DataFileError(
                fields.path, f"{name} code {column[bad[0]]} is outside its domain 0..{k - 1}", int(fields.lines[bad[0]])
            )
        codes[:, j] = column
    files[names[0]].check(
        verify_checksum,
        f"{len(fields.lines)} records up to line {fields.lines[-1]}, the original has {SHAPES[table][0]}",
    )
    return Dataset(codes, domain, target=TARGETS[table], name=table if table != "adult" else "adult15")


# ``dataset=nltcs|acs|br2000|adult15`` (entry points ``dp2pub.datasets``; adult15 is their
# 15-attribute Adult).
load_nltcs = functools.partial(load_privbayes, "nltcs")
load_acs = functools.partial(load_privbayes, "acs")
load_br2000 = functools.partial(load_privbayes, "br2000")
load_adult15 = functools.partial(load_privbayes, "adult")
