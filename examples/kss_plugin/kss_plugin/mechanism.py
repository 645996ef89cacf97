"""``mechanism=kss``: the k-subset oracle on every attribute of a table.

An :class:`~dp2pub.OraclePublisher` subclass that names its oracle is a whole-table mechanism:
dp2pub supplies the strategies (``split``: epsilon / d for each attribute; ``sample``: one
sampled attribute per user), the estimators (``norm_sub``, ``clip``, ``ibu``, ``unbiased``,
``none``), joint marginals from the per-user unbiased vectors, and the budget ledger. The
oracle's own keyword, ``subset_size``, becomes the config key ``mechanism.subset_size``.
"""

from __future__ import annotations

from dp2pub import OraclePublisher

from kss_plugin.oracle import KSubset


class KSSPublisher(OraclePublisher):
    """The k-subset mechanism (Ye and Barg 2018; Wang et al. 2016) on every attribute."""

    name = "kss"
    oracle = KSubset
    no_aggregates = (
        "each report holds exactly m values, so its support counts are dependent across values and "
        "have no closed-form distribution"
    )
