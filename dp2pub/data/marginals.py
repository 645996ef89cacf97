"""Joint marginals of integer-coded columns by mixed-radix codes and one ``bincount``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def joint_codes(codes: np.ndarray, sizes: np.ndarray | Sequence[int]) -> np.ndarray:
    """Mixed-radix code of each row of ``codes`` (n, m): ``sum_j codes[:, j] * prod(sizes[j+1:])``."""
    sizes = np.asarray(sizes, dtype=np.int64)
    strides = np.concatenate([np.cumprod(sizes[::-1])[::-1][1:], [1]]).astype(np.int64)
    if codes.shape[1] == 1:
        return codes[:, 0].astype(np.int64)
    return codes.astype(np.int64) @ strides


def marginal_counts(codes: np.ndarray, sizes: np.ndarray | Sequence[int]) -> np.ndarray:
    """Counts of every combination of the columns of ``codes``, as an array of shape ``sizes``."""
    shape = tuple(int(s) for s in sizes)
    flat = np.bincount(joint_codes(codes, shape), minlength=math.prod(shape))
    return flat.reshape(shape)
