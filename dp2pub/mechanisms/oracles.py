"""The frequency oracles by the names ``mechanism=<name>`` gives them."""

from __future__ import annotations

from dp2pub.mechanisms.grr import GRR
from dp2pub.mechanisms.olh import OLH
from dp2pub.mechanisms.oracle import FrequencyOracle
from dp2pub.mechanisms.rappor import RAPPOR
from dp2pub.mechanisms.unary import OUE, SUE

#: ``mechanism=<name>`` of every frequency oracle.
ORACLES: dict[str, type[FrequencyOracle]] = {"grr": GRR, "sue": SUE, "oue": OUE, "olh": OLH, "rappor": RAPPOR}
