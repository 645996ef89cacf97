"""Whole-table publishers: a table in, a published table and/or marginal estimates out."""

from dp2pub.publish.base import Outcome, Publisher, Release, TableRelease
from dp2pub.publish.oracle_table import (
    STRATEGIES,
    GRRReportsRelease,
    OraclePublisher,
    OracleRelease,
    oracle_publisher,
)

__all__ = [
    "GRRReportsRelease",
    "OraclePublisher",
    "OracleRelease",
    "Outcome",
    "Publisher",
    "Release",
    "STRATEGIES",
    "TableRelease",
    "oracle_publisher",
]
