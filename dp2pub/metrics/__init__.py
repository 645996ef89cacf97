"""Utility metrics of a release against the original table (names and definitions:
docs/explanation/metric-contract.md)."""

from typing import TYPE_CHECKING

from dp2pub.lazy import lazy_exports

if TYPE_CHECKING:
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

if not TYPE_CHECKING:  # type checkers read the imports above, and flag a name that is not there
    __getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
