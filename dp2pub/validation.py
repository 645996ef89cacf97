"""Checks for user-supplied parameters, with errors that name the key, the value and the
allowed range.

Library functions raise :class:`ConfigError` with the bare parameter name (``epsilon``,
``n``); the configuration layer re-raises it under the full config key (``dataset.n``) with
:meth:`ConfigError.under`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Annotated, Any

#: The mark of :data:`InputPath`.
INPUT_PATH = "dp2pub.input_path"
InputPath = Annotated[str, INPUT_PATH]
InputPath.__doc__ = """The annotation of a parameter that names a file or folder a job reads.

A dataset builder's or publisher's parameter annotated ``path: InputPath`` (or
``InputPath | None``) names a file or folder the job reads (a user's table, its domain file,
a folder of hierarchies): the digest of what it names is part of the job's identity
(:func:`dp2pub.plugins.path_parameters`). To everything else it is a ``str``
(``Annotated[str, INPUT_PATH]``).

Examples
--------
A plugin's builder marks the files it reads; dp2pub finds them by their annotation:

>>> from dp2pub import InputPath
>>> from dp2pub.plugins import path_parameters
>>> def load_survey(path: InputPath, domain: InputPath | None = None, sep: str = ","):
...     ...
>>> sorted(path_parameters(load_survey))
['domain', 'path']
"""
#: What doctest collects for :data:`InputPath`, which is no function or class.
__test__ = {"InputPath": InputPath.__doc__}

#: The most characters of a value an error line echoes (:func:`echo`): a 50,000-character
#: value is named by its start and its length, not printed whole.
ECHO_LIMIT = 100


def shorten(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text``, or its first ``limit`` characters and its length when it is longer
    (``aaaa... (50000 characters)``): how error lines echo what a user typed."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def echo(value: Any) -> str:
    """``value`` as an error line shows it: its ``repr`` (quotes say a string is one),
    shortened by :func:`shorten` (a string's length is counted without its quotes)."""
    shown = repr(value)
    if len(shown) <= ECHO_LIMIT:
        return shown
    length = len(value) if isinstance(value, str) else len(shown)
    return f"{shown[:ECHO_LIMIT]}... ({length} characters)"


class ConfigError(ValueError):
    """A parameter is outside its allowed range.

    Its message, ``<key>=<value> is invalid: expected <allowed>``, echoes the value shortened
    to :data:`ECHO_LIMIT` characters (:func:`echo`). Library functions raise it with the bare
    parameter name; the configuration layer re-raises it under the full config key
    (:meth:`under`). It is a :class:`ValueError`.

    Parameters
    ----------
    key : str
        The parameter or config key (``epsilon``, ``dataset.k_min``).
    value : object
        The offending value, as given.
    allowed : str
        A human description of the allowed values.

    Attributes
    ----------
    key : str
        The parameter or config key.
    value : object
        The offending value, as given.
    allowed : str
        The description of the allowed values.

    Examples
    --------
    >>> from dp2pub import GRR, ConfigError
    >>> try:
    ...     GRR(epsilon=-1.0, k=4)
    ... except ConfigError as error:
    ...     print(error)
    ...     print(error.under("mechanism").key)
    epsilon=-1.0 is invalid: expected a finite number > 0
    mechanism.epsilon
    """

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"{key}={echo(value)} is invalid: expected {allowed}")

    def under(self, prefix: str) -> ConfigError:
        """The same error, its key prefixed by a config path such as ``dataset``.

        Parameters
        ----------
        prefix : str
            The config path of the parameter's section (``dataset``, ``mechanism``).

        Returns
        -------
        ConfigError
            A new error whose key is ``<prefix>.<key>``.
        """
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
    number = int(value)  # exact for an Integral, and comparable with int bounds
    if number < low or (high is not None and number > high):
        raise ConfigError(key, value, allowed)
    return number


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


def check_test_size(value: object, key: str = "test_size") -> float:
    """``value`` as a fraction strictly between 0 and 1 (a number, not a string), or
    ConfigError naming ``key``."""
    return check_float(value, key, 0.0, 1.0)


def check_float(
    value: Any, key: str, low: float, high: float = math.inf, *, open_low: bool = True, open_high: bool = True
) -> float:
    """Return ``value`` as a float if it is a number (not a bool or a string) in the interval
    from ``low`` to ``high`` (open ends by default), else raise ConfigError."""
    left, right = "(" if open_low else "[", ")" if open_high else "]"
    allowed = (
        f"a finite number > {low:g}" if high == math.inf and open_low else f"a number in {left}{low:g}, {high:g}{right}"
    )
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(value):
        raise ConfigError(key, value, allowed)
    number = float(value)  # the value returned is the value checked
    if (number <= low if open_low else number < low) or (number >= high if open_high else number > high):
        raise ConfigError(key, value, allowed)
    return number


def check_optional_float(
    value: Any, key: str, low: float, high: float = math.inf, *, open_low: bool = True, open_high: bool = True
) -> float | None:
    """:func:`check_float`, or None for None (the error then says ``or null``)."""
    if value is None:
        return None
    try:
        return check_float(value, key, low, high, open_low=open_low, open_high=open_high)
    except ConfigError as error:
        raise ConfigError(key, value, f"{error.allowed} or null") from None


def check_probability(value: Any, key: str, *, open_low: bool = True, open_high: bool = True) -> float:
    """:func:`check_float` on the interval from 0 to 1 (open ends by default)."""
    return check_float(value, key, 0.0, 1.0, open_low=open_low, open_high=open_high)


def check_text(value: Any, key: str, allowed: str = "a non-empty string") -> str:
    """Return ``value`` if it is a non-empty string (not only blanks)."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, value, allowed)
    return value


def check_list(value: Any, key: str, allowed: str) -> list:
    """Return ``value`` as a list if it is a list or tuple (a scalar or a string is refused:
    ``metrics.ways=2`` must be written ``metrics.ways=[2]``)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ConfigError(key, value, allowed)
    return list(value)
