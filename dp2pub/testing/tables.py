"""Random small tables for the checks, drawn from an explicit generator."""

from __future__ import annotations

import numpy as np

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.domain import Domain


def random_table(
    rng: np.random.Generator,
    n: int,
    dims: tuple[int, int] = (2, 6),
    sizes: tuple[int, int] = (2, 5),
    target: bool = True,
) -> Dataset:
    """A table of ``n`` uniform records over a random number of attributes in ``dims`` with
    random domain sizes in ``sizes`` (both inclusive). With ``target`` the last attribute is
    the target and each of its classes occurs (``n`` must be at least its size)."""
    d = int(rng.integers(dims[0], dims[1] + 1))
    domain_sizes = rng.integers(sizes[0], sizes[1] + 1, size=d)
    codes = rng.integers(0, domain_sizes, size=(n, d))
    if target:
        classes = int(domain_sizes[-1])
        if n < classes:
            raise ValueError(f"a table with a target of {classes} classes needs at least {classes} records, not {n}")
        codes[rng.choice(n, classes, replace=False), -1] = np.arange(classes)  # every class occurs
    domain = Domain.from_sizes(domain_sizes)
    return Dataset(
        codes.astype(code_dtype(int(domain_sizes.max()))),
        domain,
        target=domain.names[-1] if target else None,
        name="random",
    )
