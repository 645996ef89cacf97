"""The categorical domain of a table: attribute names and their ordered category labels."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Domain:
    """Attribute names and, per attribute, its ordered category labels.

    Values of attribute ``j`` are integer codes ``0 .. sizes[j]-1``; ``labels[j][c]`` is the
    label of code ``c``. Labels appear only at input and output.

    Parameters
    ----------
    names : tuple of str
        The attribute names, unique.
    labels : tuple of tuple of str
        Per attribute, the labels of its codes in order (at least one).
    ordinal : tuple of str, optional
        The attributes whose codes are in the order of their values (bins, grades), which
        distances such as t-closeness's ordered EMD rely on; the others are unordered
        categories (default: none).

    Raises
    ------
    ValueError
        If names and label lists differ in number, a name repeats, an attribute has no label,
        or ``ordinal`` names an unknown attribute.

    Examples
    --------
    >>> from dp2pub import Domain
    >>> domain = Domain(("age", "sex"), (("young", "old"), ("f", "m")), ordinal=("age",))
    >>> domain.sizes, len(domain), domain.index("sex")
    (array([2, 2]), 2, 1)
    >>> Domain.from_sizes([2, 3]).labels
    (('0', '1'), ('0', '1', '2'))
    >>> domain.index("income")
    Traceback (most recent call last):
    ...
    KeyError: "unknown attribute 'income'; attributes are ['age', 'sex']"
    """

    names: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    ordinal: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.names) != len(self.labels):
            raise ValueError(f"{len(self.names)} names but {len(self.labels)} label lists")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"attribute names are not unique: {self.names}")
        for name, labels in zip(self.names, self.labels):
            if len(labels) < 1:
                raise ValueError(f"attribute {name!r} has an empty domain")
        unknown = sorted(set(self.ordinal) - set(self.names))
        if unknown:
            raise ValueError(f"ordinal attributes {unknown} are not attributes of the domain")

    @classmethod
    def from_sizes(cls, sizes: list[int] | np.ndarray, prefix: str = "a") -> Domain:
        """A domain of attributes ``a0, a1, ...`` whose labels are ``"0" .. "k-1"``."""
        names = tuple(f"{prefix}{j}" for j in range(len(sizes)))
        labels = tuple(tuple(str(v) for v in range(int(k))) for k in sizes)
        return cls(names, labels)

    @property
    def sizes(self) -> np.ndarray:
        """Domain size of every attribute, as an int64 array."""
        return np.array([len(lab) for lab in self.labels], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """Column position of attribute ``name``; lists the attributes if it is unknown."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"unknown attribute {name!r}; attributes are {list(self.names)}") from None

    def subset(self, columns: list[int] | tuple[int, ...]) -> Domain:
        """The domain restricted to the given column positions."""
        names = tuple(self.names[j] for j in columns)
        return Domain(names, tuple(self.labels[j] for j in columns), tuple(a for a in self.ordinal if a in names))
