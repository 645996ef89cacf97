"""A categorical table held as integer codes per attribute, with its Domain."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dp2pub.data.domain import Domain


def code_dtype(max_size: int) -> np.dtype:
    """The smallest unsigned integer dtype that holds codes ``0 .. max_size-1``."""
    return np.min_scalar_type(max(int(max_size) - 1, 0))


@dataclass(frozen=True)
class Dataset:
    """``codes[i, j]`` is the code of user ``i``'s value of attribute ``j``.

    Attributes:
        codes: (n, d) array of non-negative integer codes, each below its domain size.
        domain: names and labels of the d attributes.
        target: name of the class attribute for learning tasks, if any.
        name: a short name for logs.
    """

    codes: np.ndarray
    domain: Domain
    target: str | None = None
    name: str = "table"

    def __post_init__(self) -> None:
        codes = self.codes
        if codes.ndim != 2 or codes.shape[1] != len(self.domain):
            raise ValueError(
                f"codes must have shape (n, {len(self.domain)}), got {codes.shape}"
            )
        if not np.issubdtype(codes.dtype, np.integer):
            raise ValueError(f"codes must be integers, got dtype {codes.dtype}")
        if codes.shape[0] == 0:
            raise ValueError(f"dataset {self.name!r} is empty (0 records)")
        if codes.size and (codes.min() < 0 or np.any(codes.max(axis=0) >= self.domain.sizes)):
            bad = int(np.argmax(codes.max(axis=0) >= self.domain.sizes))
            raise ValueError(
                f"attribute {self.domain.names[bad]!r} has codes outside 0..{self.domain.sizes[bad] - 1}"
            )
        if self.target is not None:
            self.domain.index(self.target)

    @property
    def n(self) -> int:
        """Number of records (users)."""
        return int(self.codes.shape[0])

    @property
    def d(self) -> int:
        """Number of attributes."""
        return int(self.codes.shape[1])

    def column(self, name_or_index: str | int) -> np.ndarray:
        """The codes of one attribute."""
        j = name_or_index if isinstance(name_or_index, int) else self.domain.index(name_or_index)
        return self.codes[:, j]

    def with_codes(self, codes: np.ndarray) -> Dataset:
        """A table on the same domain with other codes (a published or perturbed table)."""
        return Dataset(codes, self.domain, self.target, self.name)

    def to_frame(self) -> pd.DataFrame:
        """The table with category labels, one column per attribute."""
        return pd.DataFrame(
            {
                name: pd.Categorical.from_codes(self.codes[:, j].astype(np.int64), categories=labels)
                for j, (name, labels) in enumerate(zip(self.domain.names, self.domain.labels))
            }
        )
