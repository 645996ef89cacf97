"""A user's domain file: the public values of each column of their own table.

Under differential privacy the attribute domains are public knowledge, so they are given
beside the table rather than read from it. A domain file is YAML (or JSON, ``.json``): a
mapping from column name to either

- a list of values, in code order (``sex: [female, male]``);
- ``{values: [...], ordinal: true}``: the same, marked as ordered (ordinal attributes get
  t-closeness's ordered distance; every attribute's codes follow the listed order);
- ``{bins: [e_0, e_1, ..., e_m]}`` for a numeric column, with optional ``labels`` (m of
  them): bin ``i`` holds ``e_i <= x < e_(i+1)``, the last bin also ``e_m``; ``[e_0, e_m]`` is
  the column's public range (``-.inf`` / ``.inf`` leave an end open), and a value outside it
  is refused. Default labels are intervals: ``[0,18)``, ``[18,30)``, ..., ``[50,120]``.

Values are compared as the text written (YAML's scalars are not typed: ``yes`` stays
``yes``, ``01`` stays ``01``), so a domain file matches the table's text exactly.
docs/how-to/datasets.md ("Your own table") describes the format with an example.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from pathlib import Path

import numpy as np
import yaml

from dp2pub.data.errors import DataFileError
from dp2pub.validation import ConfigError

#: Keys of a column's mapping in a domain file.
VALUE_KEYS, BIN_KEYS = {"values", "ordinal"}, {"bins", "labels"}
_INFINITY = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf}


@dataclass(frozen=True)
class Values:
    """A categorical column's public values (code ``c`` is ``labels[c]``)."""

    labels: tuple[str, ...]
    ordinal: bool = False


@dataclass(frozen=True)
class NumericBins:
    """A numeric column cut at public edges ``e_0 < ... < e_m``: bin ``i`` holds
    ``e_i <= x < e_(i+1)``, the last bin also ``e_m``. Values outside ``[e_0, e_m]`` have no bin."""

    edges: tuple[float, ...]
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.labels:
            object.__setattr__(self, "labels", interval_labels(self.edges))

    @property
    def ordinal(self) -> bool:
        """Bins are always in the order of their values."""
        return True

    @property
    def bounds(self) -> str:
        """The public range, ``[0, 120]``."""
        return f"[{_show(self.edges[0])}, {_show(self.edges[-1])}]"

    def covers(self, values: np.ndarray) -> np.ndarray:
        """Which ``values`` lie in the public range (NaN does not)."""
        return (values >= self.edges[0]) & (values <= self.edges[-1])

    def codes(self, values: np.ndarray) -> np.ndarray:
        """The bin of every covered value (vectorized ``searchsorted``)."""
        found = np.searchsorted(np.asarray(self.edges), values, side="right") - 1
        return np.clip(found, 0, len(self.edges) - 2)


#: A column's public domain: categories, or bins of a numeric range.
Spec = Values | NumericBins


def _show(x: float) -> str:
    """``18`` for an integral edge, ``17.5`` otherwise, ``inf`` / ``-inf``."""
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def interval_labels(edges: Sequence[float]) -> tuple[str, ...]:
    """``[0,18)``, ``[18,30)``, ..., ``[50,120]`` (an open end: ``(-inf,18)``, ``[50,inf)``)."""
    labels = []
    for i, (lo, hi) in enumerate(itertools.pairwise(edges)):
        left = "(" if math.isinf(lo) else "["
        right = "]" if i == len(edges) - 2 and not math.isinf(hi) else ")"
        labels.append(f"{left}{_show(lo)},{_show(hi)}{right}")
    return tuple(labels)


def check_edges(edges: Sequence[float]) -> str | None:
    """What is wrong with bin edges, or None: at least two, not NaN, strictly increasing."""
    if len(edges) < 2:
        return f"at least two edges (the public range's ends), got {len(edges)}"
    if any(math.isnan(e) for e in edges) or any(b <= a for a, b in itertools.pairwise(edges)):
        return f"strictly increasing edges, got {[_show(e) for e in edges]}"
    return None


# --- reading the file ------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    """One column's raw spec: text leaves in lists and mappings, and its line (None in JSON)."""

    column: str
    raw: object
    line: int | None


def _yaml_plain(node: yaml.Node, path: Path) -> object:
    """A composed YAML node as text, lists and dicts (scalars stay the text written)."""
    if isinstance(node, yaml.ScalarNode):
        return node.value
    if isinstance(node, yaml.SequenceNode):
        return [_yaml_plain(item, path) for item in node.value]
    out: dict[str, object] = {}
    for key, value in node.value:
        name = str(_yaml_plain(key, path))
        if name in out:
            raise DataFileError(path, f"key {name!r} appears twice", key.start_mark.line + 1)
        out[name] = _yaml_plain(value, path)
    return out


def _read_yaml(path: Path, text: str) -> list[_Entry]:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = None if mark is None else mark.line + 1
        raise DataFileError(path, f"not valid YAML ({getattr(error, 'problem', None) or error})", line) from None
    if not isinstance(root, yaml.MappingNode):
        line = None if root is None else root.start_mark.line + 1
        raise DataFileError(path, "expected a mapping of column names to their values", line)
    plain = _yaml_plain(root, path)
    assert isinstance(plain, dict)
    lines = {str(_yaml_plain(key, path)): key.start_mark.line + 1 for key, _ in root.value}
    return [_Entry(column, raw, lines[column]) for column, raw in plain.items()]


def _json_plain(value: object) -> object:
    """JSON's booleans and null as the text a YAML file would hold."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return [_json_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_plain(v) for k, v in value.items()}
    return value


def _read_json(path: Path, text: str) -> list[_Entry]:
    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        keys = [k for k, _ in items]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise DataFileError(path, f"key {twice[0]!r} appears twice")
        return dict(items)

    try:  # numbers stay the text written, as in YAML
        root = json.loads(text, parse_int=str, parse_float=str, parse_constant=str, object_pairs_hook=pairs)
    except json.JSONDecodeError as error:
        raise DataFileError(path, f"not valid JSON ({error.msg})", error.lineno) from None
    if not isinstance(root, dict):
        raise DataFileError(path, "expected an object mapping column names to their values")
    return [_Entry(column, _json_plain(raw), None) for column, raw in root.items()]


def _texts(entry: _Entry, raw: object, what: str, path: Path) -> tuple[str, ...]:
    """A non-empty list of distinct non-empty texts (stripped)."""
    if not isinstance(raw, list) or not raw or not all(isinstance(v, str) for v in raw):
        raise DataFileError(path, f"column {entry.column!r}: expected a non-empty list of {what}", entry.line)
    texts = tuple(str(v).strip() for v in raw)
    if "" in texts:
        raise DataFileError(
            path, f"column {entry.column!r}: an empty {what[:-1]} (an empty field is missing)", entry.line
        )
    twice = [v for i, v in enumerate(texts) if v in texts[:i]]
    if twice:
        raise DataFileError(path, f"column {entry.column!r}: {twice[0]!r} is listed twice", entry.line)
    return texts


def _number(text: str) -> float:
    """A number as written in YAML or JSON (``.inf`` too); NaN if it is none."""
    try:
        return _INFINITY.get(text.strip().lower()) or float(text)
    except ValueError:
        return math.nan


def _bins(entry: _Entry, spec: Mapping, path: Path) -> NumericBins:
    texts = _texts(entry, spec["bins"], "bin edges", path)
    edges = tuple(_number(v) for v in texts)
    if any(math.isnan(edge) for edge in edges):
        bad = next(text for text, edge in zip(texts, edges) if math.isnan(edge))
        raise DataFileError(path, f"column {entry.column!r}: bin edge {bad!r} is not a number", entry.line)
    problem = check_edges(edges)
    if problem:
        raise DataFileError(path, f"column {entry.column!r}: bins need {problem}", entry.line)
    labels: tuple[str, ...] = ()
    if "labels" in spec:
        labels = _texts(entry, spec["labels"], "labels", path)
        if len(labels) != len(edges) - 1:
            raise DataFileError(
                path,
                f"column {entry.column!r}: {len(labels)} labels for {len(edges) - 1} bins ({len(edges)} edges)",
                entry.line,
            )
    return NumericBins(edges, labels)


def _spec(entry: _Entry, path: Path) -> Spec:
    """One column's :data:`Spec` from its raw entry."""
    raw = entry.raw
    if isinstance(raw, list):
        return Values(_texts(entry, raw, "values", path))
    expected = "a list of values, {values: [...], ordinal: true} or {bins: [...], labels: [...]}"
    if not isinstance(raw, dict) or ("values" in raw) == ("bins" in raw):
        raise DataFileError(path, f"column {entry.column!r}: expected {expected}", entry.line)
    keys = VALUE_KEYS if "values" in raw else BIN_KEYS
    unknown = sorted(set(raw) - keys)
    if unknown:
        raise DataFileError(
            path, f"column {entry.column!r}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(keys))})", entry.line
        )
    if "bins" in raw:
        return _bins(entry, raw, path)
    ordinal = str(raw.get("ordinal", "false")).strip().lower()
    if ordinal not in ("true", "false"):
        raise DataFileError(
            path, f"column {entry.column!r}: ordinal must be true or false, got {ordinal!r}", entry.line
        )
    return Values(_texts(entry, raw["values"], "values", path), ordinal == "true")


def read_domain_file(path: str | Path) -> dict[str, tuple[Spec, int | None]]:
    """Each column's :data:`Spec` and the line it starts on (None in a JSON file).

    Raises:
        DataFileError: naming the file (and the line, in YAML) of the first problem: not
            UTF-8, not YAML/JSON, not a mapping, a key twice, a list that is empty or holds a
            value twice, bins that do not increase, labels that do not match the bins.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise DataFileError(path, f"cannot be read ({error.strerror or error})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise DataFileError(path, f"not UTF-8 text ({error.reason} at byte {error.start})", line) from None
    entries = _read_json(path, text) if path.suffix.lower() == ".json" else _read_yaml(path, text)
    return {entry.column: (_spec(entry, path), entry.line) for entry in entries}


def config_bins(value: Mapping | None, key: str = "bins") -> dict[str, NumericBins]:
    """The ``bins`` config key, ``{column: [e_0, ..., e_m]}``, as :class:`NumericBins`.

    Raises:
        ConfigError: naming ``bins`` (or ``bins.<column>``) if it is not such a mapping.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(key, value, "a mapping of columns to increasing bin edges, e.g. {age: [0, 18, 30, 65, 120]}")
    out = {}
    for column, edges in value.items():
        allowed = "a list of at least two increasing numbers: the column's public range, cut into bins"
        if isinstance(edges, (str, bytes)) or not isinstance(edges, Sequence):
            raise ConfigError(f"{key}.{column}", edges, allowed)
        if not all(isinstance(e, Real) and not isinstance(e, bool) for e in edges):
            raise ConfigError(f"{key}.{column}", edges, allowed)
        numbers = tuple(float(e) for e in edges)
        if check_edges(numbers):
            raise ConfigError(f"{key}.{column}", list(edges), allowed)
        out[str(column)] = NumericBins(numbers)
    return out
