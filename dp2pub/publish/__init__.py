"""Whole-table publishers: a table in, a published table and/or marginal estimates out."""

from dp2pub.publish.base import Outcome, Publisher, Release, TableRelease
from dp2pub.publish.grr_table import GRRReportsRelease, GRRTable

__all__ = ["GRRReportsRelease", "GRRTable", "Outcome", "Publisher", "Release", "TableRelease"]
