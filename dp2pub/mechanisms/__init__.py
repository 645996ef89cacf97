"""Local frequency oracles, their estimators and exact Bernoulli bits."""

from dp2pub.mechanisms.estimators import ESTIMATORS, clip_normalize, postprocess, project_simplex
from dp2pub.mechanisms.grr import GRR
from dp2pub.mechanisms.olh import OLH
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.mechanisms.packed import PackedReports
from dp2pub.mechanisms.rappor import RAPPOR
from dp2pub.mechanisms.unary import OUE, SUE, UnaryEncoding

#: ``mechanism=<name>`` of every frequency oracle.
ORACLES: dict[str, type[FrequencyOracle]] = {"grr": GRR, "sue": SUE, "oue": OUE, "olh": OLH, "rappor": RAPPOR}

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
