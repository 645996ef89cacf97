"""How a check reports: a failure is a :class:`ConformanceError` (an ``AssertionError``, so
pytest shows it as a failed test), a check that does not apply is skipped with its reason."""

from __future__ import annotations

import unittest
from typing import NoReturn


class ConformanceError(AssertionError):
    """A publisher or an oracle broke a promise of its interface; the message says which
    promise, on which input, and how to reproduce it."""


def expect(condition: object, message: str) -> None:
    """Raise :class:`ConformanceError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ConformanceError(message)


def skip(reason: str) -> NoReturn:
    """Skip the running check, saying why it does not apply: pytest's skip when pytest is
    installed (imported here, lazily), else :class:`unittest.SkipTest` (which pytest and
    unittest both report as a skip)."""
    try:
        import pytest
    except ImportError:
        raise unittest.SkipTest(reason) from None
    pytest.skip(reason)
