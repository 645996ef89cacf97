"""A categorical table held as integer codes per attribute, with its Domain."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dp2pub.data.domain import Domain


def code_dtype(max_size: int) -> np.dtype:
    """The smallest unsigned integer dtype that holds codes ``0 .. max_size-1``."""
    return np.min_scalar_type(max(int(max_size) - 1, 0))


#: Bytes of one category label (a short Python string and its slot in the labels tuple).
LABEL_BYTES = 64


def table_bytes(n: int, sizes: Sequence[int] | np.ndarray) -> int:
    """The memory of a :class:`Dataset` of ``n`` records over attributes of domain ``sizes``:
    its codes and its category labels (computed from the shape alone, before building it)."""
    largest = max((int(k) for k in sizes), default=1)
    return int(n) * len(sizes) * code_dtype(largest).itemsize + LABEL_BYTES * sum(int(k) for k in sizes)


@dataclass(frozen=True)
class Dataset:
    """A categorical table: ``codes[i, j]`` is the code of user ``i``'s value of attribute ``j``.

    The codes are stored column-major (each attribute's codes contiguous, as the per-column
    mechanisms read them).

    Parameters
    ----------
    codes : numpy.ndarray
        (n, d) array of non-negative integer codes, each below its domain size; n >= 1.
    domain : Domain
        Names and labels of the d attributes.
    target : str, optional
        Name of the class attribute for learning tasks, if any.
    name : str, optional
        A short name for logs (default ``table``).
    is_test : numpy.ndarray, optional
        Boolean array of length n, true for the records of a held-out test part (adult: the
        rows read from adult.test); None when the data has no split.
    notes : tuple of str, optional
        What a reader of results from this table must know, one line each (a user's table
        whose domains were read from the data); kept by every derived table and carried into
        the job's notes. Not part of :meth:`fingerprint`.

    Raises
    ------
    ValueError
        If ``codes`` is not a non-empty (n, d) integer array within the domain
        (``attribute 'sex' has codes outside 0..1``), or ``is_test`` is not a boolean array of
        length n.
    KeyError
        If ``target`` is not an attribute.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import Dataset, Domain
    >>> domain = Domain(("age", "sex"), (("young", "old"), ("f", "m")))
    >>> data = Dataset(np.array([[0, 1], [1, 0], [1, 1]]), domain, target="sex", name="toy")
    >>> data.n, data.d, data.target_column
    (3, 2, 1)
    >>> print(data.one_way_counts(0), data.column("sex"))
    [1 2] [1 0 1]
    >>> Dataset(np.array([[0, 2]]), domain)
    Traceback (most recent call last):
    ...
    ValueError: attribute 'sex' has codes outside 0..1
    """

    codes: np.ndarray
    domain: Domain
    target: str | None = None
    name: str = "table"
    is_test: np.ndarray | None = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.codes.ndim == 2 and not self.codes.flags.f_contiguous:
            # column-major: each attribute's codes are contiguous for the per-column mechanisms
            object.__setattr__(self, "codes", np.asfortranarray(self.codes))
        codes = self.codes
        if codes.ndim != 2 or codes.shape[1] != len(self.domain):
            raise ValueError(f"codes must have shape (n, {len(self.domain)}), got {codes.shape}")
        if not np.issubdtype(codes.dtype, np.integer):
            raise ValueError(f"codes must be integers, got dtype {codes.dtype}")
        if codes.shape[0] == 0:
            raise ValueError(f"dataset {self.name!r} is empty (0 records)")
        if codes.size and (codes.min() < 0 or np.any(codes.max(axis=0) >= self.domain.sizes)):
            bad = int(np.argmax(codes.max(axis=0) >= self.domain.sizes))
            raise ValueError(f"attribute {self.domain.names[bad]!r} has codes outside 0..{self.domain.sizes[bad] - 1}")
        if self.target is not None:
            self.domain.index(self.target)
        if self.is_test is not None:
            is_test = np.asarray(self.is_test)
            if is_test.dtype != np.bool_ or is_test.shape != (codes.shape[0],):
                raise ValueError(
                    f"is_test must be a boolean array of shape ({codes.shape[0]},), "
                    f"got dtype {is_test.dtype} and shape {is_test.shape}"
                )

    @property
    def n(self) -> int:
        """Number of records (users)."""
        return int(self.codes.shape[0])

    @property
    def d(self) -> int:
        """Number of attributes."""
        return int(self.codes.shape[1])

    @property
    def target_column(self) -> int:
        """Column position of the target attribute; KeyError if the dataset has none."""
        if self.target is None:
            raise KeyError(f"dataset {self.name!r} has no target attribute")
        return self.domain.index(self.target)

    def column(self, name_or_index: str | int) -> np.ndarray:
        """The codes of one attribute."""
        j = name_or_index if isinstance(name_or_index, int) else self.domain.index(name_or_index)
        return self.codes[:, j]

    def one_way_counts(self, j: int) -> np.ndarray:
        """The histogram of attribute ``j``: how many records have each of its values."""
        return np.bincount(self.codes[:, j], minlength=int(self.domain.sizes[j])).astype(np.int64)

    def with_codes(self, codes: np.ndarray) -> Dataset:
        """A table on the same domain with other codes (a published or perturbed table).

        Row ``i`` of ``codes`` keeps record ``i``'s train/test membership when the number of
        rows is unchanged; a table of another size (synthesized records) has no split.
        """
        keep = self.is_test is not None and codes.shape[0] == self.n
        return Dataset(codes, self.domain, self.target, self.name, self.is_test if keep else None, self.notes)

    def with_target(self, target: str | None) -> Dataset:
        """The same table with another class attribute (a learning task)."""
        return Dataset(self.codes, self.domain, target, self.name, self.is_test, self.notes)

    def rows(self, mask: np.ndarray) -> Dataset:
        """The records where the boolean ``mask`` (length n) is true, with their membership."""
        mask = np.asarray(mask, dtype=bool)
        is_test = None if self.is_test is None else self.is_test[mask]
        return Dataset(self.codes[mask], self.domain, self.target, self.name, is_test, self.notes)

    def train_test(self) -> tuple[Dataset, Dataset]:
        """The training records and the test records of a dataset that has a split."""
        if self.is_test is None:
            raise ValueError(f"dataset {self.name!r} has no train/test split")
        return self.rows(~self.is_test), self.rows(self.is_test)

    def fingerprint(self) -> str:
        """A hex digest (SHA-256) of the table's content: its name, target, domain (names,
        labels, ordinal attributes) and codes, column by column in the smallest dtype that holds
        them. Equal tables give equal digests; the codes are read once, copied only if their
        dtype is wider."""
        codes = self.codes.astype(code_dtype(max(self.domain.sizes)), copy=False)
        digest = hashlib.sha256()
        header = [self.name, self.target, self.domain.names, self.domain.labels, self.domain.ordinal, codes.shape]
        digest.update(json.dumps(header).encode())
        digest.update(np.asfortranarray(codes).T.data)  # column-major, as stored: no copy
        return digest.hexdigest()

    def to_frame(self) -> pd.DataFrame:
        """The table with category labels, one column per attribute."""
        return pd.DataFrame(
            {
                name: pd.Categorical.from_codes(self.codes[:, j].astype(np.int64), categories=labels)
                for j, (name, labels) in enumerate(zip(self.domain.names, self.domain.labels))
            }
        )
