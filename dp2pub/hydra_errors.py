"""Hydra's and OmegaConf's errors in one line, naming the key and the value.

Hydra reports a composition error (an unknown key, an override it cannot parse, an
interpolation it cannot resolve) in several lines and exits with status 1; dp2pub reports
every refused input in one line with status 2. :func:`one_line` rewrites such an error,
using the command line to name the override that caused it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException, HydraException, OverrideParseException
from omegaconf.errors import OmegaConfBaseException

from dp2pub.validation import ECHO_LIMIT, shorten

#: Hydra's and OmegaConf's errors that :func:`one_line` rewrites.
CONFIG_ERRORS = (HydraException, OmegaConfBaseException)

_NOISE = ("See https://", "Set the environment variable", "object_type=", "full_key:")


#: A run of characters without a blank too long for an error line (a long value that
#: Hydra's or OmegaConf's message repeats): :func:`brief` shortens it.
_LONG_WORD = re.compile(r"\S{" + str(2 * ECHO_LIMIT + 1) + ",}")


def _shown(arg: str) -> str:
    """An override as an error line echoes it: ``key=value`` with the value shortened."""
    key, equals, value = arg.partition("=")
    return f"{key}={shorten(value)}" if equals else shorten(arg)


def brief(line: str) -> str:
    """``line`` with every overlong word shortened (:func:`dp2pub.validation.shorten`)."""
    return _LONG_WORD.sub(lambda word: shorten(word.group()), line)


def quoting_hint(arg: str) -> str | None:
    """The quoted form of an override whose value has non-ASCII characters, which Hydra's
    override grammar takes only inside quotes (``tracking.experiment=café`` is refused,
    ``tracking.experiment="café"`` is not); None for another override. A sweep's values
    (``a,b``) are quoted one by one; the whole is wrapped in the shell's single quotes."""
    key, equals, value = arg.partition("=")
    if not equals or value.isascii() or not key.isascii() or not value:
        return None
    if '"' in value or "'" in value:
        return None  # quoted already, or quotes that the suggested form cannot hold as they are
    nested = any(bracket in value for bracket in "[]{}()")
    parts = [value] if nested or "," not in value else value.split(",")
    quoted = ",".join(part if part.isascii() else f'"{part}"' for part in parts)
    return f"'{key}={quoted}'"


def _lines(error: BaseException) -> list[str]:
    return [line.strip() for line in str(error).splitlines() if line.strip() and not line.strip().startswith(_NOISE)]


def _unparsable(argv: Sequence[str]) -> str | None:
    """The first override of ``argv`` that Hydra's grammar rejects."""
    parser = OverridesParser.create()
    for arg in argv:
        if arg.startswith("-"):
            continue
        try:
            parser.parse_overrides([arg])
        except HydraException:
            return arg
    return None


def _argument(argv: Sequence[str], key: str) -> str | None:
    """The override of ``argv`` that sets ``key`` (``key=...``, ``+key=...``, ``++key=...``)."""
    for arg in argv:
        if arg.lstrip("+~").split("=", 1)[0] == key:
            return arg
    return None


def one_line(error: BaseException, argv: Sequence[str] = ()) -> str:
    """``error`` (from composing or resolving the config of command line ``argv``) as one
    line; a long value it echoes is shortened (:func:`dp2pub.validation.shorten`)."""
    return brief(_one_line(error, argv))


def _one_line(error: BaseException, argv: Sequence[str]) -> str:
    cause = error.__cause__
    if isinstance(error, OverrideParseException):
        bad = _unparsable(argv)
        hint = quoting_hint(bad) if bad else None
        if bad and hint:
            return (
                f"{_shown(bad)} is invalid: expected a value in quotes, as Hydra's override grammar takes "
                f"non-ASCII characters only in a quoted string: write {hint}"
            )
        reason = "; ".join(_lines(error))
        return f"{_shown(bad) if bad else 'an override'} is invalid: expected key=value in Hydra's override grammar ({reason})"
    if isinstance(error, ConfigCompositionException) and isinstance(cause, OmegaConfBaseException):
        key = getattr(cause, "full_key", None) or ""
        arg = _shown(_argument(argv, key) or key)
        if "not in struct" in str(cause):
            return f"{arg} is invalid: expected a key of the config ({key!r} is not one; +{arg.lstrip('+')} adds a new key)"
        return f"{arg}: {'; '.join(_lines(cause))}"
    if isinstance(error, OmegaConfBaseException):
        key = getattr(error, "full_key", None)
        reason = "; ".join(_lines(error))
        return f"{key}: {reason}" if key else reason
    return "; ".join(_lines(error)) or type(error).__name__
