"""A user's own table (``dataset=csv``): a CSV/TSV file with a header (plain or ``.gz``), or
Parquet, encoded on public domains.

Under differential privacy the attribute domains are public knowledge: they come from a
domain file (:mod:`dp2pub.data.domain_file`: column -> ordered values, or the bins of a
numeric column on a public range) and from the ``bins`` key, and only when asked
(``infer_domain=true``) from the data itself, which the Dataset then says in a note that the
job's results carry. Every problem with the file names it, the 1-based line (a Parquet
file: the row) and the column: missing values, values outside the domain, numbers outside
the bins, an empty or one-column table, duplicate or empty column names, text that is not
UTF-8.

Reading is vectorized as in :mod:`dp2pub.data.delimited`: one numpy pass over the bytes finds
every record (double quotes enclose a field that holds the separator, a quote or a line
break, as in RFC 4180), its first line and its field count; ``pandas.read_csv`` (C engine)
splits the records; each column is encoded by one lookup of its distinct texts.
"""

from __future__ import annotations

import csv
import importlib.util
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.delimited import blank_lines, count_between
from dp2pub.data.domain import Domain
from dp2pub.data.domain_file import NumericBins, Spec, Values, config_bins, read_domain_file
from dp2pub.data.errors import DataFileError
from dp2pub.data.files import DataFile
from dp2pub.validation import ConfigError, InputPath, check_bool, check_list, check_text

#: Separator by file suffix (after a ``.gz``).
SEPARATORS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
PARQUET_SUFFIXES = (".parquet", ".pq")
#: Texts read as a missing value, besides an empty field, unless the domain lists them.
MISSING_TEXTS = ("NA", "N/A", "n/a", "#N/A", "NaN", "nan", "null", "NULL", "None", "<NA>", "?")
PARQUET_EXTRA = "pip install 'dp2pub[parquet]' (or pip install pyarrow)"
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class RawTable:
    """A user's table as read, before encoding.

    Attributes:
        path: the file.
        header: every column name of the file, in order.
        frame: the selected columns (text for a CSV/TSV file, Parquet's own types).
        lines: the 1-based line each row starts on; None for Parquet (rows are counted).
    """

    path: Path
    header: tuple[str, ...]
    frame: pd.DataFrame
    lines: np.ndarray | None

    def error(self, row: int, column: str, problem: str) -> DataFileError:
        """A DataFileError about ``column`` of record ``row`` (0-based)."""
        if self.lines is None:
            return DataFileError(self.path, f"row {row + 1}, column {column!r}: {problem}")
        return DataFileError(self.path, f"column {column!r}: {problem}", int(self.lines[row]))


# --- config ------------------------------------------------------------------------------


def _existing_file(value: object, key: str, what: str) -> Path:
    """``value`` as an existing file, relative paths taken from the working directory."""
    text = check_text(value, key, f"the path of {what}")
    path = Path(text).expanduser().resolve()
    if not path.is_file():
        raise ConfigError(key, value, f"the path of {what} ({path} is not a file)")
    return path


def _separator(path: Path, sep: object) -> str | None:
    """The separator of a text table: ``sep``, else by suffix; None for Parquet."""
    suffixes = [s.lower() for s in path.suffixes[-2:]]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    suffix = suffixes[-1] if suffixes else ""
    if suffix in PARQUET_SUFFIXES:
        if sep is not None:
            raise ConfigError("sep", sep, "null for a Parquet file")
        if importlib.util.find_spec("pyarrow") is None:
            raise ConfigError("path", str(path), f"a CSV or TSV file: reading Parquet needs pyarrow, {PARQUET_EXTRA}")
        return None
    if sep is None:
        if suffix not in SEPARATORS:
            raise ConfigError("sep", sep, f"the separator of {path.name} (not .csv, .tsv or .tab): ',' or tab")
        return SEPARATORS[suffix]
    text = "\t" if sep in ("tab", "\\t") else sep
    if not isinstance(text, str) or len(text) != 1 or not text.isascii() or text in '"\r\n':
        raise ConfigError("sep", sep, "one ASCII character other than a quote or a line break (',', ';', '|'), or tab")
    return text


def _selected(header: Sequence[str], columns: object, path: Path) -> list[int]:
    """Positions of the ``columns`` to keep (all when None), at least two, in the given order."""
    if columns is None:
        return list(range(len(header)))
    allowed = f"a list of at least two distinct columns of {path.name}: {list(header)}"
    names = check_list(columns, "columns", allowed)
    if len(names) < 2 or len(set(map(str, names))) != len(names):
        raise ConfigError("columns", columns, allowed)
    for name in names:
        if name not in header:
            raise ConfigError("columns", name, allowed)
    return [list(header).index(name) for name in names]


# --- reading a CSV/TSV file --------------------------------------------------------------


@dataclass(frozen=True)
class _Records:
    """Every record of a text file: byte extents, field count, first line, blank or not."""

    starts: np.ndarray
    ends: np.ndarray
    fields: np.ndarray
    lines: np.ndarray
    last_lines: np.ndarray
    blank: np.ndarray


def _records(path: Path, buf: np.ndarray, sep: str) -> _Records:
    """Split the bytes into records at line breaks outside double quotes (vectorized: the
    running parity of quotes tells which bytes are quoted)."""
    if buf.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Records(empty, empty, empty, empty, empty, np.zeros(0, dtype=bool))
    newlines = np.flatnonzero(buf == ord("\n"))
    is_sep = buf == ord(sep)
    quotes = buf == ord('"')
    ends = newlines
    if quotes.any():
        outside = np.bitwise_xor.accumulate(quotes.view(np.uint8)) == 0  # one byte per byte
        if not outside[-1]:
            opening = int(np.flatnonzero(quotes)[-1])
            line = int(np.searchsorted(newlines, opening)) + 1
            raise DataFileError(path, 'a double quote (") opens a field that is never closed', line)
        ends, is_sep = newlines[outside[newlines]], is_sep & outside
    if ends.size == 0 or ends[-1] != buf.size - 1:
        ends = np.append(ends, buf.size)  # a last record without a line break
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    fields = count_between(np.flatnonzero(is_sep), starts, ends) + 1
    blank = blank_lines(buf, starts, ends, np.flatnonzero(fields == 1))
    lines = np.searchsorted(newlines, starts) + 1
    last_lines = np.searchsorted(newlines, np.maximum(ends - 1, starts)) + 1
    return _Records(starts, ends.astype(np.int64), fields, lines, last_lines, blank)


def _decode(path: Path, raw: bytes, records: _Records, sep: str, header: Sequence[str]) -> str:
    """The file as text, or a DataFileError naming the line and column of the first byte that
    is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        r = int(np.searchsorted(records.starts, error.start, side="right")) - 1
        field = raw.count(sep.encode(), int(records.starts[r]), error.start)  # 0-based (quotes aside)
        where = f"column {header[field]!r}" if field < len(header) else f"field {field + 1}"
        line = raw.count(b"\n", 0, error.start) + 1
        problem = f"{where}: not UTF-8 text ({error.reason} at byte {error.start}); save the file as UTF-8"
        raise DataFileError(path, problem, line) from None


def _header(path: Path, raw: bytes, records: _Records, i: int, sep: str) -> tuple[str, ...]:
    """The column names of record ``i``: decoded, unquoted, stripped, non-empty and distinct,
    at least two."""
    line, text = int(records.lines[i]), raw[records.starts[i] : records.ends[i]]
    try:
        decoded = text.decode("utf-8").rstrip("\r")
    except UnicodeDecodeError as error:
        field = text.count(sep.encode(), 0, error.start) + 1
        problem = f"header field {field}: not UTF-8 text ({error.reason}); save the file as UTF-8"
        raise DataFileError(path, problem, line) from None
    try:
        names = tuple(name.strip() for name in next(csv.reader([decoded], delimiter=sep)))
    except csv.Error:  # a lone carriage return: lines ended by CR alone (old Mac spreadsheets)
        problem = (
            "a carriage return inside the header: lines ended by CR alone? save the file with LF or CRLF line ends"
        )
        raise DataFileError(path, problem, line) from None
    if len(names) < 2:
        others = [name for s, name in ((",", "','"), (";", "';'"), ("\t", "tab"), ("|", "'|'")) if s in decoded]
        hint = f"; is the separator {others[0]}? set dataset.sep" if others else ""
        raise DataFileError(path, f"one column ({decoded[:60]!r}): a table needs at least two{hint}", line)
    for j, name in enumerate(names):
        if not name:
            raise DataFileError(path, f"header field {j + 1} is empty: every column needs a name", line)
        if name in names[:j]:
            first = names.index(name) + 1
            raise DataFileError(path, f"column {name!r} appears twice in the header (fields {first} and {j + 1})", line)
    return names


def read_text_table(path: Path, sep: str, columns: object = None) -> RawTable:
    """A CSV/TSV file with a header line (``.gz`` is uncompressed), its ``columns`` as text.

    Blank lines are skipped anywhere; every other line after the header must have the
    header's number of fields.

    Raises:
        DataFileError: naming the file, line and column of the first problem.
        ConfigError: key ``columns`` if one is not in the header.
    """
    file = DataFile.read(path)
    raw = file.raw.removeprefix(_BOM)  # a byte-order mark, as spreadsheets write
    buf = np.frombuffer(raw, dtype=np.uint8)
    records = _records(path, buf, sep)
    kept = np.flatnonzero(~records.blank)
    if kept.size == 0:
        raise DataFileError(path, "is empty: no header line and no records")
    header = _header(path, raw, records, int(kept[0]), sep)
    data = kept[1:]
    if data.size == 0:
        raise DataFileError(path, "has a header but no records (an empty table)", int(records.lines[kept[0]]))
    wrong = data[records.fields[data] != len(header)]
    if wrong.size:
        r = int(wrong[0])
        span = records.last_lines[r] > records.lines[r]
        spread = f" (a record over lines {records.lines[r]}-{records.last_lines[r]}: check its quotes)" if span else ""
        problem = f"expected {len(header)} fields separated by {sep!r} (as the header), found {records.fields[r]}"
        raise DataFileError(path, problem + spread, int(records.lines[r]))
    keep = _selected(header, columns, path)
    text = _decode(path, raw, records, sep, header)
    frame = pd.read_csv(
        io.StringIO(text),
        sep=sep,
        header=0,
        names=list(range(len(header))),
        usecols=keep,
        dtype=str,
        na_filter=False,
        skip_blank_lines=True,
        engine="c",
        index_col=False,
    )
    if len(frame) != data.size:  # a guard: the scan and the parser must agree
        raise DataFileError(path, f"parsed {len(frame)} records but found {data.size}: check the quotes")
    frame = frame[keep]
    frame.columns = [header[j] for j in keep]
    return RawTable(path, header, frame, records.lines[data])


def read_parquet_table(path: Path, columns: object = None) -> RawTable:
    """A Parquet file (read by pandas with pyarrow), its ``columns`` in their own types.

    Raises:
        DataFileError: naming the file if it cannot be read, or is empty, has one column,
            or an empty or duplicate column name.
    """
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as error:
        raise DataFileError(path, f"is not a readable Parquet file ({error})") from None
    header = tuple(str(name).strip() for name in frame.columns)
    if len(header) < 2:
        raise DataFileError(path, f"one column ({list(header)}): a table needs at least two")
    for j, name in enumerate(header):
        if not name:
            raise DataFileError(path, f"column {j + 1} has an empty name: every column needs a name")
        if name in header[:j]:
            raise DataFileError(path, f"column {name!r} appears twice (columns {header.index(name) + 1} and {j + 1})")
    if len(frame) == 0:
        raise DataFileError(path, "has no records (an empty table)")
    keep = _selected(header, columns, path)
    selected = frame.iloc[:, keep].reset_index(drop=True)
    selected.columns = [header[j] for j in keep]
    return RawTable(path, header, selected, None)


# --- encoding ----------------------------------------------------------------------------


def _distinct(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The distinct texts of a column (stripped; object array) and each record's index into
    them (-1 for a null of a Parquet file): one hash of the column, then work on the few
    distinct values."""
    categorical = pd.Categorical(values)
    texts = pd.Index(categorical.categories.astype(str)).str.strip()
    return np.asarray(texts, dtype=object), np.asarray(categorical.codes, dtype=np.int64)


def _first(rows: np.ndarray, bad: np.ndarray) -> int | None:
    """The first record whose distinct value is ``bad`` (a null, index -1, always is), or None."""
    hit = np.append(bad, True)[rows]
    i = int(np.argmax(hit))
    return i if hit[i] else None


def _shown(labels: Sequence[str]) -> str:
    return ", ".join(labels) if len(labels) <= 12 else ", ".join(labels[:12]) + ", ..."


def _refuse_missing(
    table: RawTable, name: str, texts: np.ndarray, rows: np.ndarray, listed: Sequence[str] | None = None
) -> None:
    """Refuse the first missing value: a null, an empty field, or NA & co. unless ``listed``
    among a column's categories (None: the column has no list, it is binned or inferred)."""
    missing = (texts == "") | (np.isin(texts, MISSING_TEXTS) & ~np.isin(texts, list(listed or ())))
    row = _first(rows, missing)
    if row is None:
        return
    code = int(rows[row])
    text = "" if code < 0 else str(texts[code])
    what = "null" if code < 0 else "an empty field" if text == "" else repr(text)
    hint = f", or list {text!r} among the column's values if it is one" if text and listed is not None else ""
    raise table.error(row, name, f"missing value ({what}); drop or impute such records{hint}")


def _values_codes(table: RawTable, name: str, spec: Values, source: str) -> np.ndarray:
    texts, rows = _distinct(table.frame[name])
    _refuse_missing(table, name, texts, rows, spec.labels)
    lookup = pd.Index(spec.labels).get_indexer(texts)
    row = _first(rows, lookup < 0)
    if row is not None:
        value = texts[rows[row]]
        raise table.error(row, name, f"value {value!r} is not in its domain ({_shown(spec.labels)}) from {source}")
    return lookup[rows]


def _bin_codes(table: RawTable, name: str, spec: NumericBins, source: str) -> np.ndarray:
    texts, rows = _distinct(table.frame[name])
    _refuse_missing(table, name, texts, rows)
    numbers = pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    row = _first(rows, np.isnan(numbers))
    if row is not None:
        raise table.error(row, name, f"{texts[rows[row]]!r} is not a number (the column is cut into bins by {source})")
    row = _first(rows, ~spec.covers(numbers))
    if row is not None:
        value = texts[rows[row]]
        raise table.error(
            row, name, f"value {value} is outside the bins' range {spec.bounds} ({source}): widen the public range"
        )
    return spec.codes(numbers)[rows]


def infer_values(table: RawTable, name: str) -> Values:
    """A column's domain from the data: its distinct values, in numeric order (ordinal) when
    every one is a number, else sorted as text."""
    texts, rows = _distinct(table.frame[name])
    _refuse_missing(table, name, texts, rows)
    labels = np.unique(texts)
    numbers = pd.to_numeric(pd.Series(labels, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    if np.isnan(numbers).any():
        return Values(tuple(str(v) for v in labels))
    order = np.lexsort((labels, numbers))
    return Values(tuple(str(v) for v in labels[order]), ordinal=True)


# --- the public domains ------------------------------------------------------------------


def _specs(
    table: RawTable, domain_path: Path | None, bins: dict[str, NumericBins], infer: bool
) -> tuple[dict[str, tuple[Spec, str]], list[str]]:
    """Each selected column's spec and where it came from; the columns left to infer."""
    names = list(table.frame.columns)
    for column in bins:
        if column not in table.header:
            raise ConfigError("bins", column, f"columns of {table.path.name}: {list(table.header)}")
    given: dict[str, tuple[Spec, str]] = {c: (spec, "dataset.bins") for c, spec in bins.items()}
    if domain_path is not None:
        for column, (spec, line) in read_domain_file(domain_path).items():
            where = "" if line is None else f", line {line}"
            if column not in table.header:
                raise DataFileError(
                    domain_path, f"{column!r} is not a column of {table.path.name}: {list(table.header)}", line
                )
            if column in given:
                raise ConfigError("bins", column, f"columns not also in the domain file {domain_path}{where}")
            given[column] = (spec, f"the domain file {domain_path.name}{where}")
    left = [c for c in names if c not in given]
    if left and not infer:
        fix = f"list them in the domain file {domain_path}" if domain_path else "give a domain file (dataset.domain)"
        raise ConfigError(
            "domain",
            None if domain_path is None else str(domain_path),
            f"the public domain of every column, none given for {', '.join(left)}: {fix} "
            "(YAML/JSON, column -> ordered values or {bins: [...]}; docs/how-to/datasets.md, 'Your own table'), "
            "give numeric columns' bins in dataset.bins, or set dataset.infer_domain=true to read the "
            "domains from the data (not public: the run says so)",
        )
    return {c: given[c] for c in names if c in given}, left


def _note(name: str, inferred: list[str]) -> str:
    return (
        f"dataset {name}: the domain of {', '.join(inferred)} was read from the private data "
        "(dataset.infer_domain=true), not given as public knowledge: which values occur is disclosed "
        "outside the mechanism's guarantee; give them in a domain file (dataset.domain) for a sound release"
    )


def encode(
    table: RawTable, domain_path: Path | None, bins: dict[str, NumericBins], infer: bool, target: str | None
) -> Dataset:
    """The Dataset of a raw table on its public domains (inferred ones noted)."""
    specs, left = _specs(table, domain_path, bins, infer)
    for column in left:
        specs[column] = (infer_values(table, column), "the data")
    names = tuple(table.frame.columns)
    domain = Domain(
        names,
        tuple(specs[c][0].labels for c in names),
        ordinal=tuple(c for c in names if specs[c][0].ordinal),
    )
    codes = np.empty((len(table.frame), len(names)), dtype=code_dtype(int(domain.sizes.max())), order="F")
    for j, column in enumerate(names):  # one vectorized lookup per column
        spec, source = specs[column]
        if isinstance(spec, NumericBins):
            codes[:, j] = _bin_codes(table, column, spec, source)
        else:
            codes[:, j] = _values_codes(table, column, spec, source)
    name = table_name(table.path)
    notes = (_note(name, left),) if left else ()
    return Dataset(codes, domain, target=target, name=name, notes=notes)


def table_name(path: str | Path) -> str:
    """The Dataset's name: the file's stem without ``.gz`` (``survey.csv.gz`` -> ``survey``)."""
    name = Path(path).name
    name = name[:-3] if name.lower().endswith(".gz") else name
    return Path(name).stem or name


def load_csv(
    path: InputPath | None = None,
    domain: InputPath | None = None,
    infer_domain: bool = False,
    target: str | None = None,
    columns: list[str] | None = None,
    bins: Mapping[str, Sequence[float]] | None = None,
    sep: str | None = None,
) -> Dataset:
    """A user's table as a Dataset named after the file (``survey.csv`` -> ``survey``).

    Args:
        path: a CSV/TSV file with a header line (``.gz`` too), or Parquet (``.parquet``,
            needs pyarrow); relative to the working directory.
        domain: a YAML/JSON domain file (:mod:`dp2pub.data.domain_file`): each column's
            public values in code order, or the bins of a numeric column.
        infer_domain: read the domains of the columns that neither ``domain`` nor ``bins``
            gives from the data (sorted distinct values); the Dataset's ``notes`` say so.
        target: the class attribute (one of the columns kept), or None.
        columns: the columns to keep, in this order (None: all).
        bins: ``{column: [e_0, ..., e_m]}``: a numeric column's public range cut into bins
            (bin i holds ``e_i <= x < e_(i+1)``, the last bin also ``e_m``).
        sep: the field separator (one character, or ``tab``); None: by suffix, ``.csv`` a
            comma, ``.tsv`` / ``.tab`` a tab.

    Raises:
        ConfigError: naming the key (``path``, ``domain``, ``target``, ``columns``, ``bins``,
            ``sep``, ``infer_domain``) of a bad value.
        DataFileError: naming the file, line (Parquet: row) and column of bad content.
    """
    file = _existing_file(path, "path", "your table (CSV/TSV with a header, .gz, or Parquet)")
    domain_path = None if domain is None else _existing_file(domain, "domain", "a YAML or JSON domain file")
    infer = check_bool(infer_domain, "infer_domain")
    numeric = config_bins(bins)
    if target is not None:
        check_text(target, "target", "a column name or null")
    separator = _separator(file, sep)
    table = read_parquet_table(file, columns) if separator is None else read_text_table(file, separator, columns)
    if target is not None and target not in table.frame.columns:
        kept = "" if target not in table.header else " (add it to dataset.columns)"
        raise ConfigError("target", target, f"one of the columns {list(table.frame.columns)}{kept}")
    return encode(table, domain_path, numeric, infer, target)
