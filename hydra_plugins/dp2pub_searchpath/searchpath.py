"""Config groups of installed plugin packages, found by Hydra.

A plugin package registers the package that holds its configs (``dataset/``,
``mechanism/``, ``experiment/``, ... of YAML files) as an entry point of the group
``dp2pub.configs``; this plugin appends ``pkg://<that package>`` to Hydra's config search
path, so ``mechanism=<plugin's option>`` composes as a built-in one does. dp2pub's own
configs come first: a plugin adds options, it cannot replace dp2pub's.
"""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from dp2pub.config import config_dir
from dp2pub.plugins import config_packages


class PluginConfigs(SearchPathPlugin):
    """Append every ``dp2pub.configs`` entry point's package to the search path of dp2pub's
    app (Hydra runs a search-path plugin in every app of the environment: another app's
    search path, which does not hold dp2pub's configs, is left alone)."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        ours = str(config_dir())
        if not any(element.path is not None and element.path.endswith(ours) for element in search_path.get_path()):
            return
        for package in config_packages():
            search_path.append(provider=f"dp2pub-plugin:{package}", path=f"pkg://{package}")
