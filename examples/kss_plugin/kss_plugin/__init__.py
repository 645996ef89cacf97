"""dp2pub-kss-plugin: the k-subset mechanism and a synthetic survey table, as a dp2pub plugin.

Installed, it registers ``mechanism=kss`` (:class:`kss_plugin.mechanism.KSSPublisher`),
``dataset=survey`` (:func:`kss_plugin.data.load_survey`) and the config groups in
``kss_plugin/conf`` (entry points in pyproject.toml; dp2pub's docs/how-to/plugins.md).
"""

from __future__ import annotations

from kss_plugin.data import load_survey
from kss_plugin.mechanism import KSSPublisher
from kss_plugin.oracle import KSubset

__version__ = "0.1.0"

__all__ = ["KSSPublisher", "KSubset", "load_survey"]
