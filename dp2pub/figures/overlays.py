"""The overlays a figure may draw over its measurements (``overlays:`` of a figure in the
``figures:`` section, see docs/how-to/figures.md), by name, and the import of a user's.

Each overlay is a function ``(spec, summary, **options) -> frame`` (see
:class:`~dp2pub.figures.studies.Overlay` for the frame it returns): the figure's spec, the
summary of its runs (:func:`~dp2pub.figures.aggregate.aggregate`) and the options written
beside its name in the config. Built in:

``fo_theory``
    dense curves of the exact expected ``mse_freq`` of each frequency oracle's unbiased
    estimate (:func:`~dp2pub.figures.theory.fo_theory`), dashed in the oracle's colour.
``dp2pub_repository``
    the 1-way TVDs printed in the DP2-Pub repository's tables (:data:`DP2PUB_REPOSITORY_TVD`),
    as black markers in the panels of their n and d on uniform synthetic data.
``marks``
    numbers published elsewhere, written in the config (``points``), as black markers.

A user's overlay is named by ``_target_: module.function`` (or ``file.py:function``),
imported as a config's ``_target_`` is (:func:`dp2pub.plugins.resolve_target`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pandas as pd

from dp2pub.figures.studies import DATA_PARAM, OverlayFunction, StudySpec
from dp2pub.figures.theory import fo_theory
from dp2pub.plugins import resolve_target
from dp2pub.validation import ConfigError

#: The DP2-Pub repository's tables: GRR on every attribute (ε/d each) of uniform synthetic data
#: with domains of 100-150 values, its raw report histogram compared with the data. 1-way TVD
#: per (n users, d attributes) and ε, as printed in the DP2-Pub repository's tables (which give
#: no d = 100, n = 10,000 table). Published numbers the seed_tables study compares with, drawn
#: as black markers: not results of dp2pub.
DP2PUB_REPOSITORY_TVD: Mapping[tuple[int, int], Mapping[int, float]] = MappingProxyType(
    {
        (10_000, 50): MappingProxyType({1: 0.061748, 5: 0.061768, 10: 0.061796}),
        (1_000, 50): MappingProxyType({1: 0.19542, 5: 0.19574, 10: 0.19506}),
        (1_000, 100): MappingProxyType({1: 0.19771, 5: 0.19794, 10: 0.19771}),
    }
)


def theory_curves(spec: StudySpec, summary: pd.DataFrame) -> pd.DataFrame:
    """``fo_theory``: the exact expected ``mse_freq`` per configuration of the figure's params."""
    return fo_theory(spec.params, spec.x, summary)


def repository_marks(spec: StudySpec, summary: pd.DataFrame) -> pd.DataFrame:
    """``dp2pub_repository``: :data:`DP2PUB_REPOSITORY_TVD` as markers of ``tvd_1way``, each in
    the panels of uniform synthetic data with its n and d."""
    rows = [
        {"metric": "tvd_1way", spec.x: epsilon, "value": value, DATA_PARAM: "synthetic", "dataset.n": n, "dataset.d": d}
        for (n, d), values in DP2PUB_REPOSITORY_TVD.items()
        for epsilon, value in values.items()
    ]
    return pd.DataFrame(rows)


def marks(spec: StudySpec, summary: pd.DataFrame, points: list, metric: str | None = None) -> pd.DataFrame:
    """``marks``: the ``points`` written in the config as markers. Each point is a mapping of
    ``x``, ``value``, optionally ``metric`` (default: the option ``metric``, else the figure's
    first metric) and any parameters (``dataset.n: 1000``) that name the panels it belongs in."""
    rows = []
    for point in points:
        where = {k: v for k, v in point.items() if k not in ("x", "value", "metric")}
        rows.append(
            {
                "metric": point.get("metric", metric or spec.metrics[0]),
                spec.x: point["x"],
                "value": point["value"],
                **where,
            }
        )
    return pd.DataFrame(rows, columns=list(dict.fromkeys(["metric", spec.x, "value", *(k for r in rows for k in r)])))


def check_marks(options: Mapping[str, Any], key: str) -> None:
    """The options of ``marks``: a list of points, each with a number ``x`` and ``value``."""
    points = options.get("points")
    hint = "a list of points, each a mapping with numbers x and value (and the parameters of its panels)"
    if not isinstance(points, list) or not points:
        raise ConfigError(f"{key}.points", points, hint)
    for i, point in enumerate(points):
        if not isinstance(point, Mapping):
            raise ConfigError(f"{key}.points[{i}]", point, hint)
        for name in ("x", "value"):
            value = point.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{key}.points[{i}].{name}", value, "a number")
        if "metric" in point and not isinstance(point["metric"], str):
            raise ConfigError(f"{key}.points[{i}].metric", point["metric"], "a metric's name")


@dataclass(frozen=True)
class Builtin:
    """A built-in overlay.

    Attributes:
        function: ``(spec, summary, **options) -> frame``.
        label: its legend entry unless the config gives one.
        summary: one line for ``dp2pub-figures --help`` and errors.
        params: run parameters it reads, which must be among the figure's params.
        x: the parameter the figure's x must be (None: any).
        check: checks its options (raising ConfigError under the overlay's key).
    """

    function: OverlayFunction
    label: str
    summary: str
    params: tuple[str, ...] = ()
    x: str | None = None
    check: Callable[[Mapping[str, Any], str], None] | None = None


#: The built-in overlays by name.
OVERLAYS: Mapping[str, Builtin] = MappingProxyType(
    {
        "fo_theory": Builtin(
            theory_curves,
            "exact expected MSE",
            "exact expected mse_freq of each frequency oracle (dashed, in its colour)",
            params=("mechanism.name", "dataset.n", "dataset.d", "dataset.k_min", "dataset.k_max"),
            x="epsilon",
        ),
        "dp2pub_repository": Builtin(
            repository_marks,
            "DP2-Pub repository's table",
            "the DP2-Pub repository's 1-way TVDs of GRR (black markers)",
            params=("dataset.n", "dataset.d"),
            x="epsilon",
        ),
        "marks": Builtin(
            marks, "published", "numbers given in the config as points: [{x, value, ...}]", check=check_marks
        ),
    }
)


def import_target(target: Any, key: str) -> OverlayFunction:
    """The function named by ``target`` (``module.function``, ``module:function`` or
    ``file.py:function``, imported as :func:`dp2pub.plugins.resolve_target` imports a
    ``_target_``: the working directory searched after ``sys.path``); a ConfigError naming
    ``key`` if it cannot be imported or is not callable."""
    function = resolve_target(target, key)
    if not callable(function):
        raise ConfigError(key, target, f"a function of (spec, summary, **options), not a {type(function).__name__}")
    return function


def check_options(function: OverlayFunction, options: Mapping[str, Any], key: str) -> None:
    """Refuse an option ``function`` does not take, or a missing one it needs, naming
    ``key.<option>``; the function must take the figure's spec and summary first."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return  # a builtin without a signature: called as it is
    if len([p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) < 2 and not any(
        p.kind == p.VAR_POSITIONAL for p in parameters
    ):
        raise ConfigError(key, getattr(function, "__name__", function), "a function of (spec, summary, **options)")
    named = {p.name: p for p in parameters[2:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if not any(p.kind == p.VAR_KEYWORD for p in parameters):
        for option, value in options.items():
            if option not in named:
                raise ConfigError(f"{key}.{option}", value, f"an option of the overlay: {sorted(named) or 'none'}")
    for name, parameter in named.items():
        if parameter.default is parameter.empty and name not in options:
            raise ConfigError(f"{key}.{name}", None, "a value (the overlay needs this option)")
