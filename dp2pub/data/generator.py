"""A dataset drawn from its config: its builder, its shape before it is drawn, and, when it
has one, a way to draw its histograms without a record per user.

Registered as a dataset entry point (``dp2pub.datasets``) in place of a plain builder, it
lets a job check the table's size against ``limits`` before drawing it, and lets
``mechanism.simulate=aggregates`` run at any ``n``. dp2pub's ``synthetic`` and
``synthetic_bn`` are two; a plugin's generator is declared the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dp2pub.data.dataset import Dataset
from dp2pub.data.tally import Tally


@dataclass(frozen=True)
class Generator:
    """A generated dataset's builder and what is known of it before it is drawn.

    Registered as a dataset entry point (``dp2pub.datasets``) in place of a plain builder, it
    lets a job check the table's size against ``limits`` before drawing it, and lets
    ``mechanism.simulate=aggregates`` run at any ``n``. Calling it calls ``build``.

    Parameters
    ----------
    build : callable
        The builder (its keyword arguments are the config keys; it takes ``rng``).
    shape : callable
        ``shape(**keys) -> (n, sizes)`` from the same config keys (every domain at its
        largest size), raising ConfigError with the bare key of a value out of range.
    tally : callable, optional
        ``tally(**keys, rng=...) -> Tally``: the table's histograms drawn from their exact
        distribution without records, or None (default) when there is no such form.

    Examples
    --------
    dp2pub's ``dataset=synthetic`` is a generator of :func:`~dp2pub.data.synthetic.make_synthetic`:

    >>> import numpy as np
    >>> from dp2pub import Generator
    >>> from dp2pub.data.synthetic import SYNTHETIC
    >>> isinstance(SYNTHETIC, Generator)
    True
    >>> SYNTHETIC.shape(n=10**9, d=3, k_min=2, k_max=5)  # before drawing anything
    (1000000000, [5, 5, 5])
    >>> SYNTHETIC(n=100, d=3, k_min=2, k_max=5, rng=np.random.default_rng(0)).n
    100
    >>> tally = SYNTHETIC.tally(n=10**9, d=2, k_min=2, k_max=3, rng=np.random.default_rng(0))
    >>> print(tally.one_way_counts(0))  # a billion records' histogram, without the records
    [333343676 333305738 333350586]
    """

    build: Callable[..., Dataset]
    shape: Callable[..., tuple[int, list[int]]]
    tally: Callable[..., Tally] | None = None

    def __call__(self, **keys: Any) -> Dataset:
        return self.build(**keys)

    @property
    def __wrapped__(self) -> Callable[..., Dataset]:
        """The builder (what a run records as the code that drew the table)."""
        return self.build

    @property
    def __signature__(self) -> inspect.Signature:
        """The builder's signature: the config schema of the dataset entry."""
        return inspect.signature(self.build)
