"""Reading comma-separated data files strictly, with file and line in every error.

The UCI files have no header, a fixed number of fields per line, possibly a banner line
starting with ``|`` (adult.test) and trailing blank lines. :func:`read_fields` first scans the
raw bytes with numpy (one pass, no per-line Python loop) to find every line's extent and
field count, so a wrong column count is reported with its 1-based line number; only then does
``pandas.read_csv`` (C engine) split the good lines into categorical (text) and integer
columns. Each returned row carries the line it came from, so later checks (unknown category,
bad number) can name it too.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dp2pub.data.errors import DataFileError
from dp2pub.data.files import DataFile

_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[ord(" "), ord("\t"), ord("\r")]] = True


@dataclass(frozen=True)
class Fields:
    """The data rows of a file: ``frame[c][i]`` is field ``c`` of row ``i``, read from line
    ``lines[i]`` (1-based) of ``path``. Text fields are pandas categoricals; numeric fields
    are int64 when every value parsed as an integer, else strings."""

    path: Path
    frame: pd.DataFrame
    lines: np.ndarray

    def select(self, keep: np.ndarray) -> Fields:
        """The rows where the boolean mask ``keep`` is true."""
        return Fields(self.path, self.frame.loc[keep].reset_index(drop=True), self.lines[keep])

    def equals(self, value: str) -> np.ndarray:
        """Rows where some field is exactly ``value`` (as a boolean mask). Integer columns
        (every field parsed as a number) cannot hold a text ``value`` and are skipped."""
        hit = np.zeros(len(self.lines), dtype=bool)
        for column in self.frame.columns:  # one vectorized comparison per column
            values = self.frame[column]
            if isinstance(values.dtype, pd.CategoricalDtype):
                hit |= (values == value).to_numpy()  # compares the few categories only
            elif not pd.api.types.is_integer_dtype(values.dtype):
                hit |= (values.astype(str) == value).to_numpy()
        return hit


def _line_extents(raw: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Byte offset of the start and end (exclusive, before ``\\n``) of every line, and the
    buffer as uint8. A final line without a newline counts; an empty file has no lines."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(buf == ord("\n"))
    if buf.size and buf[-1] != ord("\n"):
        ends = np.append(ends, buf.size)
    if ends.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), buf
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    return starts, ends.astype(np.int64), buf


def count_between(positions: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """How many of the sorted byte ``positions`` fall in each line ``[starts, ends)``."""
    return np.searchsorted(positions, ends) - np.searchsorted(positions, starts)


def blank_lines(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Which ``candidates`` lines hold only spaces, tabs and carriage returns (vectorized over
    the candidates' bytes: a gather and one ``reduceat``)."""
    blank = np.zeros(starts.size, dtype=bool)
    lengths = ends[candidates] - starts[candidates]
    blank[candidates[lengths == 0]] = True
    nonempty = candidates[lengths > 0]
    if nonempty.size:
        lengths = ends[nonempty] - starts[nonempty]
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        index = np.repeat(starts[nonempty] - offsets, lengths) + np.arange(lengths.sum())
        blank[nonempty] = np.add.reduceat(~_WHITESPACE[buf[index]], offsets) == 0
    return blank


def read_fields(
    source: DataFile | str | Path,
    n_fields: int,
    numeric: Sequence[int] = (),
    sep: str = ",",
    header: Sequence[str] | None = None,
) -> Fields:
    """Read a delimited file whose every data line has exactly ``n_fields`` fields.

    ``source`` is a :class:`DataFile` or a path (``.gz`` is uncompressed). Blank
    (whitespace-only) lines are skipped wherever they are; leading lines starting with
    ``|`` are a banner and skipped. With ``header``, the first other line must hold exactly
    these field names and is skipped. Spaces after a separator are dropped (adult uses ``", "``);
    quotes have no meaning. Columns listed in ``numeric`` are parsed as integers where they
    all are; the others become categoricals of their exact text.

    Raises:
        DataFileError: naming the file and the 1-based line of the first line that is not
            UTF-8, has another number of fields or is not the expected header, or if the file
            has no data line.
    """
    file = source if isinstance(source, DataFile) else DataFile.read(source)
    path, raw = file.path, file.raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise DataFileError(path, f"not UTF-8 text ({error.reason} at byte {error.start})", line) from None
    starts, ends, buf = _line_extents(raw)
    fields = count_between(np.flatnonzero(buf == ord(sep)), starts, ends) + 1
    # only lines without a separator can be blank or a banner; check just those
    candidates = np.flatnonzero(fields == 1)
    blank = blank_lines(buf, starts, ends, candidates)
    is_bar = np.zeros(starts.size, dtype=bool)
    nonempty = candidates[ends[candidates] > starts[candidates]]
    is_bar[nonempty] = buf[starts[nonempty]] == ord("|")
    # the banner: the leading run of "|" lines (blank lines may sit among them)
    banner = np.cumprod(is_bar | blank).astype(bool) & is_bar
    data = ~blank & ~banner
    if header is not None:
        _check_header(path, raw, starts, ends, data, list(header), sep)
    data_lines = np.flatnonzero(data) + 1
    if data_lines.size == 0:
        raise DataFileError(path, "no data rows (empty or truncated file)")
    wrong = np.flatnonzero(fields[data] != n_fields)
    if wrong.size:
        i = wrong[0]
        raise DataFileError(
            path,
            f"expected {n_fields} fields separated by {sep!r}, found {fields[data][i]}",
            int(data_lines[i]),
        )
    frame = pd.read_csv(
        io.StringIO(text),
        header=None,
        names=list(range(n_fields)),
        sep=sep,
        engine="c",
        skipinitialspace=True,
        skiprows=np.flatnonzero(~data).tolist(),
        skip_blank_lines=False,
        dtype={c: "category" for c in range(n_fields) if c not in set(numeric)},
        na_filter=False,
        quoting=csv.QUOTE_NONE,
        index_col=False,
    )
    if len(frame) != data_lines.size:  # a guard: the scan and the parser must agree
        raise DataFileError(path, f"parsed {len(frame)} rows but found {data_lines.size} data lines")
    return Fields(path, frame, data_lines)


def _check_header(
    path: Path, raw: bytes, starts: np.ndarray, ends: np.ndarray, data: np.ndarray, header: list[str], sep: str
) -> None:
    """Check that the first data line is ``header`` and mark it as not data (in place)."""
    first = np.flatnonzero(data)
    if first.size == 0:
        raise DataFileError(path, "no header line (empty or truncated file)")
    i = int(first[0])
    found = raw[starts[i] : ends[i]].decode("utf-8").rstrip("\r")
    if [field.strip() for field in found.split(sep)] != header:
        shown = sep.join(header)
        raise DataFileError(path, f"expected the header {shown[:60]!r}, found {found[:60]!r}", i + 1)
    data[i] = False


def encode_column(
    fields: Fields,
    column: int,
    categories: Sequence[str],
    attribute: str,
    normalize: Callable[[pd.Index], pd.Index] | None = None,
) -> np.ndarray:
    """Codes ``0..k-1`` of field ``column`` against the ordered ``categories`` (exact match,
    after ``normalize`` of the text, such as dropping adult.test's trailing ``.``).

    The distinct texts are looked up once; records map through their categorical codes.

    Raises:
        DataFileError: naming the file, the line and the value of the first unknown category.
    """
    values = fields.frame[column].astype("category")
    # the parser may have typed all-numeric categories (doors: 2, 3, 4): compare as text
    texts = values.cat.categories.astype(str)
    lookup = pd.Index(list(categories)).get_indexer(normalize(texts) if normalize else texts)
    text_codes = values.cat.codes.to_numpy()
    codes = lookup[text_codes]
    unknown = np.flatnonzero(codes < 0)
    if unknown.size:
        i = unknown[0]
        shown = ", ".join(categories) if len(categories) <= 16 else ", ".join(categories[:16]) + ", ..."
        raise DataFileError(
            fields.path,
            f"unknown {attribute} value {texts[text_codes[i]]!r} (expected one of {shown})",
            int(fields.lines[i]),
        )
    return codes


def integer_column(fields: Fields, column: int, attribute: str, minimum: int = 0) -> np.ndarray:
    """Field ``column`` as int64, each an integer >= ``minimum``.

    Raises:
        DataFileError: naming the file, the line and the value of the first field that is not
            such an integer.
    """
    values = fields.frame[column]
    if pd.api.types.is_integer_dtype(values.dtype):
        numbers = values.to_numpy(dtype=np.int64)
        bad = np.flatnonzero(numbers < minimum)
    else:  # the parser met something else than an integer: find it
        parsed = pd.to_numeric(values.astype(str), errors="coerce")
        parsed = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.flatnonzero(~np.isfinite(parsed) | (parsed != np.round(parsed)) | (parsed < minimum))
        numbers = np.nan_to_num(parsed).astype(np.int64)
    if bad.size:
        i = bad[0]
        raise DataFileError(
            fields.path,
            f"{attribute} value {str(values.iloc[i])!r} is not an integer >= {minimum}",
            int(fields.lines[i]),
        )
    return numbers
