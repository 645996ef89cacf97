"""The ``figures:`` section of a study's experiment config -> its :class:`StudySpec` s.

The section maps each figure's name to its keys (docs/how-to/figures.md)::

    figures:
      nb_car:
        title: naive Bayes from LDP reports on UCI Car
        x: epsilon
        metrics: [accuracy_nb]
        hue: mechanism.oracle

Every key and value is checked strictly: an unknown key or a bad value is a
:class:`~dp2pub.validation.ConfigError` naming it in full (``figures.nb_car.log_x``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from dp2pub.figures import style
from dp2pub.figures.overlays import OVERLAYS, check_options, import_target
from dp2pub.figures.studies import EPSILON_LABEL, Family, Overlay, StudySpec, frozen
from dp2pub.validation import ConfigError, check_bool, check_int, check_list, check_text

#: A figure's name: its files' stem.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
REQUIRED = ("title", "x", "metrics", "hue")
#: Every key of a figure, in the order of docs/how-to/figures.md.
KEYS = (
    *REQUIRED,
    "hue_parts",
    "facets",
    "row_facet",
    "extra_params",
    "extra_metrics",
    "baselines",
    "families",
    "wrap",
    "log_x",
    "log_y",
    "x_label",
    "y_labels",
    "y_limits",
    "param_labels",
    "hue_labels",
    "data_labels",
    "overlays",
)
PARAM = "a run parameter's name, e.g. epsilon or mechanism.name"
METRIC = "a metric's name, e.g. tvd_2way"


def parse_section(section: Any, study: str | None, experiment: str) -> list[StudySpec]:
    """The figures of a ``figures:`` section (plain containers), in its order; ``study`` is
    the experiment config, ``experiment`` its ``tracking.experiment``."""
    if not isinstance(section, Mapping) or not section:
        raise ConfigError("figures", section, "a mapping of figure names to their keys (docs/how-to/figures.md)")
    return [parse_figure(name, keys, study, experiment) for name, keys in section.items()]


def parse_figure(name: Any, keys: Any, study: str | None, experiment: str) -> StudySpec:
    """One figure of the section: ``name`` and its ``keys``."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ConfigError(f"figures.{name}", keys, "a figure named by letters, digits, '_', '-' or '.'")
    prefix = f"figures.{name}"
    if not isinstance(keys, Mapping):
        raise ConfigError(prefix, keys, "a mapping of the figure's keys: " + ", ".join(KEYS))
    for key in keys:
        if key not in KEYS:
            raise ConfigError(f"{prefix}.{key}", keys[key], "a key of a figure: " + ", ".join(KEYS))
    for key in REQUIRED:
        if keys.get(key) is None:
            raise ConfigError(f"{prefix}.{key}", None, f"a value (every figure has {', '.join(REQUIRED)})")
    fields = _fields(prefix, keys)
    return _checked(prefix, StudySpec(name=name, experiment=experiment, study=study, **fields))


def _fields(prefix: str, keys: Mapping) -> dict[str, Any]:
    """The StudySpec fields of a figure's keys, each checked alone."""
    x = _name(keys["x"], f"{prefix}.x", PARAM)
    metrics = _names(keys["metrics"], f"{prefix}.metrics", METRIC, empty=False)
    get = keys.get
    return {
        "title": check_text(keys["title"], f"{prefix}.title", "a few words on what the figure shows"),
        "x": x,
        "metrics": metrics,
        "hue": _name(keys["hue"], f"{prefix}.hue", PARAM),
        "hue_parts": _names(get("hue_parts", []), f"{prefix}.hue_parts", PARAM),
        "facets": _names(get("facets", []), f"{prefix}.facets", PARAM),
        "row_facet": None if get("row_facet") is None else _name(get("row_facet"), f"{prefix}.row_facet", PARAM),
        "extra_params": _names(get("extra_params", []), f"{prefix}.extra_params", PARAM),
        "extra_metrics": _names(get("extra_metrics", []), f"{prefix}.extra_metrics", METRIC),
        "baselines": _mapping(get("baselines"), f"{prefix}.baselines", _baseline, metrics),
        "families": _families(get("families", []), f"{prefix}.families"),
        "wrap": check_int(get("wrap", 3), f"{prefix}.wrap", 1),
        "log_x": check_bool(get("log_x", False), f"{prefix}.log_x"),
        "log_y": _log_y(get("log_y", False), f"{prefix}.log_y", metrics),
        "x_label": check_text(get("x_label", EPSILON_LABEL if x == "epsilon" else x), f"{prefix}.x_label"),
        "y_labels": _mapping(get("y_labels"), f"{prefix}.y_labels", _label, metrics),
        "y_limits": _mapping(get("y_limits"), f"{prefix}.y_limits", _limits, metrics),
        "param_labels": _mapping(get("param_labels"), f"{prefix}.param_labels", _label),
        "hue_labels": _mapping(get("hue_labels"), f"{prefix}.hue_labels", _label),
        "data_labels": _mapping(get("data_labels"), f"{prefix}.data_labels", _label),
        "overlays": _overlays(get("overlays", []), f"{prefix}.overlays"),
    }


def _checked(prefix: str, spec: StudySpec) -> StudySpec:
    """``spec`` if what its keys name together fits: labelled parameters are its columns, the
    row facet is not a facet, overlays find the parameters and the x they need."""
    for param in spec.param_labels:
        if param not in spec.columns:
            raise ConfigError(
                f"{prefix}.param_labels.{param}",
                spec.param_labels[param],
                f"a label of one of the figure's parameters: {', '.join(spec.columns)}",
            )
    if spec.row_facet is not None and spec.row_facet in spec.facets:
        raise ConfigError(f"{prefix}.row_facet", spec.row_facet, "a parameter that is not one of the facets")
    for i, overlay in enumerate(spec.overlays):
        builtin = OVERLAYS.get(overlay.name)
        if builtin is None:
            continue
        if builtin.x is not None and spec.x != builtin.x:
            raise ConfigError(f"{prefix}.x", spec.x, f"{builtin.x}: the overlay {overlay.name} draws against it")
        missing = [p for p in builtin.params if p not in spec.params]
        if missing:
            raise ConfigError(
                f"{prefix}.overlays[{i}]",
                overlay.name,
                f"an overlay whose parameters the figure keeps: add {', '.join(missing)} to {prefix}.extra_params",
            )
    return spec


def _name(value: Any, key: str, allowed: str) -> str:
    """A parameter's or metric's name: a non-empty string without blanks."""
    if not isinstance(value, str) or not value or value != value.strip() or " " in value:
        raise ConfigError(key, value, allowed)
    return value


def _names(value: Any, key: str, allowed: str, empty: bool = True) -> tuple[str, ...]:
    """A list of names, without repeats (``empty``: may be empty)."""
    hint = f"a list of names ({allowed})" + ("" if empty else ", not empty")
    items = check_list(value, key, hint)
    if not items and not empty:
        raise ConfigError(key, value, hint)
    names = tuple(_name(item, f"{key}[{i}]", allowed) for i, item in enumerate(items))
    if len(set(names)) < len(names):
        raise ConfigError(key, value, hint + ", each once")
    return names


def _mapping(
    value: Any, key: str, check: Callable[[Any, str], Any], keys: tuple[str, ...] | None = None
) -> Mapping[str, Any]:
    """A mapping whose values pass ``check`` (keys made strings); with ``keys``, every key
    must be one of them (the figure's metrics)."""
    if value is None:
        return frozen()
    if not isinstance(value, Mapping):
        raise ConfigError(key, value, "a mapping" + (f" of the figure's metrics ({', '.join(keys)})" if keys else ""))
    out = {}
    for name, item in value.items():
        if keys is not None and str(name) not in keys:
            raise ConfigError(f"{key}.{name}", item, f"an entry of one of the figure's metrics: {', '.join(keys)}")
        out[str(name)] = check(item, f"{key}.{name}")
    return frozen(out)


def _label(value: Any, key: str) -> str:
    return check_text(value, key, "a label (a non-empty string)")


def _limits(value: Any, key: str) -> tuple[float, float]:
    """Fixed axis limits: ``[low, high]``, two numbers, low < high."""
    hint = "[low, high]: two numbers, low < high"
    items = check_list(value, key, hint)
    if len(items) != 2 or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in items):
        raise ConfigError(key, value, hint)
    low, high = float(items[0]), float(items[1])
    if not low < high:
        raise ConfigError(key, value, hint)
    return (low, high)


def _baseline(value: Any, key: str) -> tuple[str, ...]:
    """A metric's references: one metric or a list of at most two."""
    most = len(style.REFERENCE_STYLES)
    names = (_name(value, key, METRIC),) if isinstance(value, str) else _names(value, key, METRIC, empty=False)
    if len(names) > most:
        raise ConfigError(key, value, f"at most {most} reference metrics (dotted, then dash-dotted)")
    return names


def _log_y(value: Any, key: str, metrics: tuple[str, ...]) -> bool | tuple[str, ...]:
    """``true``/``false``, or the list of the metrics drawn on a log axis."""
    if isinstance(value, bool):
        return value
    names = _names(value, key, "true, false or a list of the figure's metrics")
    for i, name in enumerate(names):
        if name not in metrics:
            raise ConfigError(f"{key}[{i}]", name, f"one of the figure's metrics: {', '.join(metrics)}")
    return names


def _families(value: Any, key: str) -> tuple[Family, ...]:
    """Each family: ``{metric, pattern, param}``, the pattern a regular expression with one group."""
    items = check_list(value, key, "a list of {metric, pattern, param}")
    families = []
    for i, item in enumerate(items):
        where = f"{key}[{i}]"
        if not isinstance(item, Mapping) or set(item) != {"metric", "pattern", "param"}:
            raise ConfigError(where, item, "a mapping of exactly metric, pattern and param")
        pattern = check_text(item["pattern"], f"{where}.pattern", "a regular expression")
        try:
            groups = re.compile(pattern).groups
        except re.error as error:
            raise ConfigError(f"{where}.pattern", pattern, f"a regular expression ({error})") from None
        if groups != 1:
            raise ConfigError(f"{where}.pattern", pattern, "a regular expression with exactly one group (the value)")
        metric = _name(item["metric"], f"{where}.metric", METRIC)
        families.append(Family(metric, pattern, _name(item["param"], f"{where}.param", PARAM)))
    return tuple(families)


def _overlays(value: Any, key: str) -> tuple[Overlay, ...]:
    """Each overlay: a built-in's name, or a mapping of ``name`` (a built-in) or ``_target_``
    (``module.function``), an optional ``label`` and the function's options."""
    items = check_list(value, key, "a list of overlays: names of built-in ones or mappings with _target_")
    return tuple(_overlay(item, f"{key}[{i}]") for i, item in enumerate(items))


def _overlay(item: Any, key: str) -> Overlay:
    builtins = ", ".join(OVERLAYS)
    entry = {"name": item} if isinstance(item, str) else item
    if not isinstance(entry, Mapping) or ("name" in entry) == ("_target_" in entry):
        raise ConfigError(key, item, f"a built-in overlay ({builtins}) or a mapping with name or _target_")
    options = {str(k): v for k, v in entry.items() if k not in ("name", "_target_", "label")}
    if "name" in entry:
        builtin = OVERLAYS.get(entry["name"]) if isinstance(entry["name"], str) else None
        if builtin is None:
            where = key if isinstance(item, str) else f"{key}.name"
            raise ConfigError(where, entry["name"], f"a built-in overlay: {builtins} (or _target_: module.function)")
        name, function, label = entry["name"], builtin.function, builtin.label
        if builtin.check is not None:
            builtin.check(options, key)
    else:
        name, function = entry["_target_"], import_target(entry["_target_"], f"{key}._target_")
        label = str(name).rpartition(".")[2]
    check_options(function, options, key)
    label = check_text(entry.get("label", label), f"{key}.label", "a legend entry (a non-empty string)")
    return Overlay(name, label, function, frozen(options), key)
