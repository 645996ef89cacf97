"""Hydra's and OmegaConf's errors in one line, naming the key and the value.

Hydra reports a composition error (an unknown key, an override it cannot parse, an
interpolation it cannot resolve) in several lines and exits with status 1; dp2pub reports
every refused input in one line with status 2. :func:`one_line` rewrites such an error,
using the command line to name the override that caused it.
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException, HydraException, OverrideParseException
from omegaconf.errors import OmegaConfBaseException

#: Hydra's and OmegaConf's errors that :func:`one_line` rewrites.
CONFIG_ERRORS = (HydraException, OmegaConfBaseException)

_NOISE = ("See https://", "Set the environment variable", "object_type=", "full_key:")


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
    """``error`` (from composing or resolving the config of command line ``argv``) as one line."""
    cause = error.__cause__
    if isinstance(error, OverrideParseException):
        bad = _unparsable(argv)
        reason = "; ".join(_lines(error))
        return f"{bad if bad else 'an override'} is invalid: expected key=value in Hydra's override grammar ({reason})"
    if isinstance(error, ConfigCompositionException) and isinstance(cause, OmegaConfBaseException):
        key = getattr(cause, "full_key", None) or ""
        arg = _argument(argv, key) or key
        if "not in struct" in str(cause):
            return f"{arg} is invalid: expected a key of the config ({key!r} is not one; +{arg.lstrip('+')} adds a new key)"
        return f"{arg}: {'; '.join(_lines(cause))}"
    if isinstance(error, OmegaConfBaseException):
        key = getattr(error, "full_key", None)
        reason = "; ".join(_lines(error))
        return f"{key}: {reason}" if key else reason
    return "; ".join(_lines(error)) or type(error).__name__
