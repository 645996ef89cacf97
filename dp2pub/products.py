"""Products of domain sizes that never grow into huge integers."""

from __future__ import annotations

from collections.abc import Iterable

#: Products of domain sizes beyond this are taken as this (no table that large is allocated).
PRODUCT_CAP = 1 << 62


def capped_product(values: Iterable[int], cap: int = PRODUCT_CAP) -> int:
    """The product of ``values``, or ``cap`` once it exceeds it (never a million-digit integer)."""
    product = 1
    for value in values:
        product *= int(value)
        if product > cap:
            return cap
    return product
