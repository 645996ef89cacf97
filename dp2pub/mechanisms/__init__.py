"""Local frequency oracles and their server-side estimators."""

from dp2pub.mechanisms.estimators import ESTIMATORS, clip_normalize, postprocess, project_simplex
from dp2pub.mechanisms.grr import GRR

__all__ = ["ESTIMATORS", "GRR", "clip_normalize", "postprocess", "project_simplex"]
