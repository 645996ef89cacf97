"""Utility metrics of a release against the original table (names and definitions:
docs/design.md, "The metric contract")."""

from dp2pub.metrics.distances import mse, tvd
from dp2pub.metrics.evaluate import Evaluation, evaluate_marginals
from dp2pub.metrics.subsets import attribute_subsets

__all__ = [
    "Evaluation",
    "attribute_subsets",
    "evaluate_marginals",
    "mse",
    "tvd",
]
