"""Whole-table publishers: a table in, a release (a table, estimates or a model) out."""

from typing import TYPE_CHECKING

from dp2pub.lazy import lazy_exports

if TYPE_CHECKING:
    from dp2pub.publish.base import Outcome, Publisher, channel_bytes, working_bytes
    from dp2pub.publish.dp2pub_publisher import DP2PubPublisher
    from dp2pub.publish.dppro import DPProPublisher, DPProRelease
    from dp2pub.publish.kanonymity import MondrianPublisher, SamaratiPublisher
    from dp2pub.publish.ldp_marginals import LDPMarginalsPublisher
    from dp2pub.publish.ldp_nb import LDPNBPublisher, NaiveBayesRelease
    from dp2pub.publish.oracle_table import (
        ORACLE_PUBLISHERS,
        STRATEGIES,
        GRRPublisher,
        GRRReportsRelease,
        OLHPublisher,
        OraclePublisher,
        OracleRelease,
        OUEPublisher,
        RAPPORPublisher,
        SUEPublisher,
    )
    from dp2pub.publish.pram import PRAMPublisher
    from dp2pub.publish.privbayes import PrivBayesPublisher
    from dp2pub.publish.release import Release, TableRelease

__all__ = [
    "ORACLE_PUBLISHERS",
    "STRATEGIES",
    "DP2PubPublisher",
    "DPProPublisher",
    "DPProRelease",
    "GRRPublisher",
    "GRRReportsRelease",
    "LDPMarginalsPublisher",
    "LDPNBPublisher",
    "MondrianPublisher",
    "NaiveBayesRelease",
    "OLHPublisher",
    "OUEPublisher",
    "OraclePublisher",
    "OracleRelease",
    "Outcome",
    "PRAMPublisher",
    "PrivBayesPublisher",
    "Publisher",
    "RAPPORPublisher",
    "Release",
    "SUEPublisher",
    "SamaratiPublisher",
    "TableRelease",
    "channel_bytes",
    "working_bytes",
]

if not TYPE_CHECKING:  # type checkers read the imports above, and flag a name that is not there
    __getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
