"""Utility metrics of a release against the original table (names and definitions:
docs/design.md, "The metric contract")."""

from dp2pub.metrics.distances import mse, stacked_tvd, tvd
from dp2pub.metrics.evaluate import Evaluation, evaluate_marginals, subset_tvds
from dp2pub.metrics.subsets import attribute_subsets, cell_chunks

__all__ = [
    "Evaluation",
    "attribute_subsets",
    "cell_chunks",
    "evaluate_marginals",
    "mse",
    "stacked_tvd",
    "subset_tvds",
    "tvd",
]
