"""The train/test split of a learning job.

A dataset that carries its own split (adult: rows read from ``adult.test`` have
``is_test``) keeps it; any other is split by scikit-learn's ``train_test_split``,
stratified on the target, with an integer ``random_state`` drawn from the job's generator.
"""

from __future__ import annotations

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.validation import ConfigError, check_test_size


def random_state(rng: np.random.Generator) -> int:
    """An integer seed for scikit-learn drawn from ``rng`` (never a global seed)."""
    return int(rng.integers(0, 2**31 - 1))


def split_train_test(data: Dataset, test_size: float, rng: np.random.Generator) -> tuple[Dataset, Dataset]:
    """The training part and the held-out test part of ``data``.

    Uses ``data.is_test`` when the dataset has a split (``test_size`` is then unused);
    otherwise a seeded split with ``test_size`` of the records held out, stratified on
    ``data.target`` when there is one and every class has at least two records.
    """
    if data.is_test is not None:
        return data.train_test()
    test_size = check_test_size(test_size)
    n_test = int(np.ceil(test_size * data.n))  # scikit-learn's rounding of a fractional test_size
    if n_test < 1 or data.n - n_test < 1:
        raise ConfigError(
            "test_size", test_size, f"a fraction that leaves records to train and to test on ({data.name} has {data.n})"
        )
    stratify = None
    if data.target is not None:
        y = data.column(data.target)
        counts = np.bincount(y.astype(np.int64))
        stratify = y if counts[counts > 0].min() >= 2 else None
    from sklearn.model_selection import train_test_split  # deferred (tests/test_layers.py, DEFERRED)

    _, test_rows = train_test_split(
        np.arange(data.n), test_size=test_size, stratify=stratify, random_state=random_state(rng)
    )
    is_test = np.zeros(data.n, dtype=bool)
    is_test[test_rows] = True
    return data.rows(~is_test), data.rows(is_test)
