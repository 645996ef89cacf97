"""Quantities in words for one-line messages."""

from __future__ import annotations


def human(nbytes: float) -> str:
    """``9.31 GiB``: a byte count with a binary unit, in at most three digits (1000 KiB and
    more is ``0.98 MiB``, never ``1e+03 KiB``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(nbytes) < 1000 or unit == "PiB":
            return f"{nbytes:.3g} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1024
    raise AssertionError("unreachable")
