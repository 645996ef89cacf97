"""Utility metrics of a release against the original table (names: DESIGN section 4)."""

from dp2pub.metrics.distances import mse, tvd
from dp2pub.metrics.evaluate import Evaluation, evaluate_marginals
from dp2pub.metrics.marginals import attribute_subsets, joint_codes, marginal_counts

__all__ = [
    "Evaluation",
    "attribute_subsets",
    "evaluate_marginals",
    "joint_codes",
    "marginal_counts",
    "mse",
    "tvd",
]
