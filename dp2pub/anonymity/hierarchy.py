"""Generalization hierarchies (value generalization trees) for full-domain generalization.

A hierarchy file uses ARX's layout: no header, one ``;``-separated row per leaf value,
``value;level1;level2;...;*``, every row with the same number of fields. Level 0 is the
value itself, the last level is the root. A hierarchy is turned into per-level lookup
tables: ``maps[l][leaf_code]`` is the code of the leaf's ancestor at level ``l`` and
``labels[l]`` the ancestors' labels (Samarati, "Protecting respondents' identities in
microdata release", IEEE TKDE 13(6), 2001, section 3: domain generalization hierarchies).

The shipped files live in ``dp2pub/data/hierarchies/<dataset>/<attribute>.csv``; a user's own
are ``<directory>/<attribute>.csv`` in the same layout (``mechanism.hierarchies``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dp2pub.data.errors import DataFileError
from dp2pub.validation import ConfigError

#: Folder of the shipped hierarchy files, one sub-folder per dataset name.
HIERARCHY_DIR = Path(__file__).resolve().parent.parent / "data" / "hierarchies"


@dataclass(frozen=True)
class Hierarchy:
    """The generalization levels of one attribute.

    Attributes:
        attribute: the attribute's name.
        maps: one int64 array per level ``0 .. height``; ``maps[l][c]`` is the level-``l``
            code of leaf code ``c`` (``maps[0]`` is the identity, ``maps[height]`` all 0).
        labels: the labels of the level-``l`` codes, per level.
    """

    attribute: str
    maps: tuple[np.ndarray, ...]
    labels: tuple[tuple[str, ...], ...]

    @property
    def height(self) -> int:
        """Number of generalization steps from the leaves to the root."""
        return len(self.maps) - 1

    def leaves_under(self, level: int) -> np.ndarray:
        """Number of leaves under each node of ``level`` (array indexed by the node code)."""
        return np.bincount(self.maps[level], minlength=len(self.labels[level]))

    def leaf_width(self, level: int) -> np.ndarray:
        """For each leaf, the number of leaves under its level-``level`` ancestor."""
        return self.leaves_under(level)[self.maps[level]]


def flat_hierarchy(attribute: str, labels: tuple[str, ...]) -> Hierarchy:
    """The two-level hierarchy ``value -> *`` (for an attribute without a file)."""
    k = len(labels)
    if k == 1:
        return Hierarchy(attribute, (np.zeros(1, dtype=np.int64),), (tuple(labels),))
    return Hierarchy(attribute, (np.arange(k, dtype=np.int64), np.zeros(k, dtype=np.int64)), (tuple(labels), ("*",)))


def read_rows(path: Path) -> list[tuple[int, list[str]]]:
    """The non-empty rows of a hierarchy file as (1-based line, fields)."""
    rows = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            rows.append((line_no, [field.strip() for field in line.split(";")]))
    if not rows:
        raise DataFileError(path, "hierarchy file is empty")
    return rows


def parse_hierarchy(path: str | Path, attribute: str, domain_labels: tuple[str, ...]) -> Hierarchy:
    """Read ``path`` and build the lookup tables for an attribute whose codes have the
    labels ``domain_labels``.

    Raises:
        DataFileError: naming the file and line of a row of another length, a leaf listed
            twice, or a node that has two different parents (inconsistent levels).
        ConfigError: key ``hierarchy.<attribute>`` when a domain value has no row.
    """
    path = Path(path)
    rows = read_rows(path)
    width = len(rows[0][1])
    by_leaf: dict[str, tuple[int, list[str]]] = {}
    parent: list[dict[str, tuple[str, int]]] = [{} for _ in range(width)]
    for line_no, fields in rows:
        if len(fields) != width:
            raise DataFileError(path, f"{len(fields)} levels, the first row has {width}", line_no)
        if fields[0] in by_leaf:
            raise DataFileError(
                path, f"value {fields[0]!r} listed twice (first on line {by_leaf[fields[0]][0]})", line_no
            )
        by_leaf[fields[0]] = (line_no, fields)
        for level in range(width - 1):
            node, up = fields[level], fields[level + 1]
            seen = parent[level].setdefault(node, (up, line_no))
            if seen[0] != up:
                raise DataFileError(
                    path,
                    f"inconsistent levels: {node!r} at level {level} has parent "
                    f"{up!r} here but {seen[0]!r} on line {seen[1]}",
                    line_no,
                )
    missing = [v for v in domain_labels if v not in by_leaf]
    if missing:
        raise ConfigError(f"hierarchy.{attribute}", missing[0], f"a value with a row in {path} (missing: {missing})")
    table = [by_leaf[v][1] for v in domain_labels]  # rows in code order; extra rows ignored
    maps, labels = [], []
    for level in range(width):
        names = [row[level] for row in table]
        uniq, first = np.unique(np.array(names, dtype=object), return_index=True)
        order = np.argsort(first, kind="stable")  # node codes in order of their first leaf
        ordered = tuple(str(uniq[i]) for i in order)
        lookup = {name: code for code, name in enumerate(ordered)}
        maps.append(np.array([lookup[n] for n in names], dtype=np.int64))
        labels.append(ordered)
    maps[0] = np.arange(len(domain_labels), dtype=np.int64)
    labels[0] = tuple(domain_labels)
    return Hierarchy(attribute, tuple(maps), tuple(labels))


def load_hierarchies(
    dataset: str,
    attributes: list[str],
    domain_labels: list[tuple[str, ...]],
    folder: str | Path | None = None,
    directory: str | Path | None = None,
) -> list[Hierarchy]:
    """The hierarchy of each attribute: ``<folder>/<dataset>/<attribute>.csv`` when it
    exists (``folder`` default: the shipped :data:`HIERARCHY_DIR`), else ``value -> *``.
    With ``directory`` (a user's own hierarchies), ``<directory>/<attribute>.csv`` instead:
    the shipped files are not searched."""
    base = (
        Path(directory) if directory is not None else (Path(folder) if folder is not None else HIERARCHY_DIR) / dataset
    )
    out = []
    for attribute, labels in zip(attributes, domain_labels):
        path = base / f"{attribute}.csv"
        out.append(
            parse_hierarchy(path, attribute, tuple(labels))
            if path.is_file()
            else flat_hierarchy(attribute, tuple(labels))
        )
    return out
