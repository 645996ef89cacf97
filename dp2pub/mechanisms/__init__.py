"""Local frequency oracles, their estimators and exact Bernoulli bits."""

from typing import TYPE_CHECKING

from dp2pub.lazy import lazy_exports

if TYPE_CHECKING:
    from dp2pub.mechanisms.estimators import ESTIMATORS, clip_normalize, postprocess, project_simplex
    from dp2pub.mechanisms.grr import GRR
    from dp2pub.mechanisms.olh import OLH
    from dp2pub.mechanisms.oracle import FrequencyOracle
    from dp2pub.mechanisms.oracles import ORACLES
    from dp2pub.mechanisms.packed import PackedReports
    from dp2pub.mechanisms.rappor import RAPPOR
    from dp2pub.mechanisms.unary import OUE, SUE, UnaryEncoding

__all__ = [
    "ESTIMATORS",
    "GRR",
    "OLH",
    "ORACLES",
    "OUE",
    "RAPPOR",
    "SUE",
    "FrequencyOracle",
    "PackedReports",
    "UnaryEncoding",
    "clip_normalize",
    "postprocess",
    "project_simplex",
]

if not TYPE_CHECKING:  # type checkers read the imports above, and flag a name that is not there
    __getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
