"""UCI tables of categorical attributes: one comma-separated line per record, no header.

Car, Mushroom, Nursery, Chess (King-Rook vs King-Pawn) and Connect-4 share this format and
differ only in their attributes, their order and where the class is: each is a
:class:`CategoricalTable`, read strictly by :func:`dp2pub.data.delimited.read_fields` (a
wrong field count or an unknown category is refused naming the file and line) and checked
against the SHA-256 of the UCI original.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.delimited import Fields, encode_column, read_fields
from dp2pub.data.domain import Domain
from dp2pub.data.files import DataFile, open_data_files
from dp2pub.validation import check_bool


@dataclass(frozen=True)
class CategoricalTable:
    """A categorical UCI table and its file.

    Attributes:
        name: the dataset's name (``dataset=<name>``).
        file: the data file's path in a data directory, a key of
            :data:`dp2pub.data.files.SHA256` (``uci-nb/nursery.data``).
        domain: attribute -> categories, in the file's column order, each spelled as in
            the data file.
        target: the class attribute.
        n_records: records in the UCI original.
        ordinal: the attributes whose categories are listed in the order of their values.
    """

    name: str
    file: str
    domain: Mapping[str, tuple[str, ...]]
    target: str
    n_records: int
    ordinal: tuple[str, ...] = ()

    def encode(self, fields: Fields) -> Dataset:
        """The Dataset of the string fields of a file in this table's format.

        Raises:
            DataFileError: naming the file, line and value of the first unknown category.
        """
        domain = Domain(tuple(self.domain), tuple(self.domain.values()), ordinal=self.ordinal)
        codes = np.empty((len(fields.lines), len(domain)), dtype=code_dtype(int(domain.sizes.max())), order="F")
        for j, (attribute, labels) in enumerate(self.domain.items()):  # one vectorized lookup per column
            codes[:, j] = encode_column(fields, j, labels, attribute)
        return Dataset(codes, domain, target=self.target, name=self.name)

    def parse(self, path: DataFile | str | Path) -> Dataset:
        """Encode a file in this table's format (plain or ``.gz``); no checksum.

        Raises:
            DataFileError: naming the file and line of a wrong field count or unknown category.
        """
        return self.encode(read_fields(path, len(self.domain)))

    def load(
        self,
        data_dir: str | Path | None = None,
        verify_checksum: bool = True,
        *,
        download: bool = False,
        url_base: str | None = None,
        cache_dir: str | Path | None = None,
    ) -> Dataset:
        """The table downloaded from ``url_base`` into ``<cache_dir>/uci`` with ``download``
        (whatever ``data_dir`` says), else read from ``data_dir`` (None: DP2PUB_DATA_DIR if
        set, else the copy packaged with dp2pub; see :func:`dp2pub.data.files.open_data_files`).

        Args:
            verify_checksum: refuse a user's file whose SHA-256 differs from the UCI
                original (the packaged copy is always checked); the check follows the
                parse, so that a bad line is reported as such.

        Raises:
            ConfigError: naming ``url_base`` if ``download`` is set and it is not a URL.
            DataNotFoundError: if ``data_dir`` lacks the file.
            DataFileError: naming the file (and line) of a bad row or a wrong checksum.
        """
        verify_checksum = check_bool(verify_checksum, "verify_checksum")
        download = check_bool(download, "download")
        opened = open_data_files([self.file], data_dir, download=download, url_base=url_base, cache_dir=cache_dir)
        file = opened[self.file]
        fields = read_fields(file, len(self.domain))
        data = self.encode(fields)
        file.check(
            verify_checksum, f"{data.n} records ending at line {fields.lines[-1]}, the original has {self.n_records}"
        )
        return data
