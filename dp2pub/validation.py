"""Checks for user-supplied parameters, with errors that name the key, the value and the
allowed range.

Library functions raise :class:`ConfigError` with the bare parameter name (``epsilon``,
``n``); the configuration layer re-raises it under the full config key (``dataset.n``) with
:meth:`ConfigError.under`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any


class ConfigError(ValueError):
    """A parameter is outside its allowed range.

    Attributes:
        key: the parameter or config key (``epsilon``, ``dataset.k_min``).
        value: the offending value, as given.
        allowed: a human description of the allowed values.
    """

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"{key}={value!r} is invalid: expected {allowed}")

    def under(self, prefix: str) -> ConfigError:
        """The same error, its key prefixed by a config path such as ``dataset``."""
        return ConfigError(f"{prefix}.{self.key}", self.value, self.allowed)


def check_epsilon(value: Any, key: str = "epsilon") -> float:
    """Return ``value`` as a float if it is a finite number > 0, else raise ConfigError."""
    allowed = "a finite number > 0"
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ConfigError(key, value, allowed)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(key, value, allowed)
    return float(value)


def check_int(value: Any, key: str, low: int, high: int | None = None) -> int:
    """Return ``value`` if it is an integer in ``[low, high]`` (``high`` None = unbounded)."""
    allowed = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ConfigError(key, value, allowed)
    if value < low or (high is not None and value > high):
        raise ConfigError(key, value, allowed)
    return int(value)


def check_choice(value: Any, key: str, choices: tuple[str, ...] | list[str]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ConfigError(key, value, "one of " + ", ".join(map(str, choices)))
    return value


def check_bool(value: Any, key: str) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (not 0/1 or a string)."""
    if not isinstance(value, bool):
        raise ConfigError(key, value, "true or false")
    return value
