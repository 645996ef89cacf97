"""The main metrics of a job: the ones a sweep's job lines and summary table show.

A sweep can name them (``tracking.main_metrics``: names or shell-style patterns); else a
study's figures name them (their ``metrics``, a family metric standing for the logged
metrics of its pattern); else they are the metric contract's utility and budget metrics,
:data:`DEFAULT_PATTERNS` (docs/explanation/metric-contract.md). Wall times, sizes and
counts stay in the run's full table.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence

#: The main metrics of a job whose sweep and study name none, in this order.
DEFAULT_PATTERNS = ("tvd_*", "mse_freq", "accuracy_*", "epsilon_spent")

#: A metric name or ``fnmatch`` pattern, or a family's regular expression.
Pattern = str | re.Pattern


def chosen_patterns(cfg: Mapping) -> list[Pattern]:
    """The main metrics a composed config names: ``tracking.main_metrics``, else the
    metrics of its study's figures (a family metric as its family's pattern), else []."""
    named = (cfg.get("tracking") or {}).get("main_metrics")
    if named:
        return [str(name) for name in named]
    chosen: list[Pattern] = []
    for figure in (cfg.get("figures") or {}).values():
        if not isinstance(figure, Mapping):
            continue
        families = {f.get("metric"): f.get("pattern") for f in figure.get("families") or () if isinstance(f, Mapping)}
        for metric in figure.get("metrics") or ():
            pattern = families.get(metric)
            chosen.append(re.compile(str(pattern)) if pattern else str(metric))
    return chosen


def _matches(name: str, pattern: Pattern) -> bool:
    if isinstance(pattern, re.Pattern):
        return pattern.fullmatch(name) is not None
    return fnmatch.fnmatchcase(name, pattern)


def main_metrics(logged: Iterable[str], patterns: Sequence[Pattern] = ()) -> list[str]:
    """The metrics of ``logged`` that match ``patterns``, in the order of the patterns, then
    by name; :data:`DEFAULT_PATTERNS` when ``patterns`` is empty or matches none of them.

    Examples
    --------
    >>> main_metrics(["time_total_s", "tvd_2way", "epsilon_spent", "tvd_1way", "mse_freq"])
    ['tvd_1way', 'tvd_2way', 'mse_freq', 'epsilon_spent']
    >>> main_metrics(["accuracy_nb", "accuracy_majority", "epsilon_spent"], ["accuracy_nb"])
    ['accuracy_nb']
    >>> main_metrics(["tvd_1way", "tvd_2way", "tvd_3way"], [re.compile("tvd_([2-9])way")])
    ['tvd_2way', 'tvd_3way']
    """
    names = sorted(set(logged))
    for chosen in (patterns, DEFAULT_PATTERNS):
        found = [name for pattern in chosen for name in names if _matches(name, pattern)]
        if found:
            return list(dict.fromkeys(found))
    return []
