"""``memory_bytes`` bounds the traced peak beyond the conformance suite's tables (at most 6
attributes of at most 5 values): 10 attributes of up to 20 values, with l and t, small k,
and Mondrian's relaxed cuts; each estimate counts per record what the code allocates, so it
must hold whatever the shape."""

from __future__ import annotations

import pytest

from dp2pub.publish.kanonymity import MondrianPublisher, SamaratiPublisher
from dp2pub.publish.pram import PRAMPublisher
from dp2pub.publish.privbayes import PrivBayesPublisher
from dp2pub.testing import PublisherCase
from dp2pub.testing.memory import check_memory

#: Traced measurements (check_memory), each collecting only what the module allocated.
pytestmark = pytest.mark.usefixtures("settled_heap")

WIDE = {"dims": (3, 10), "sizes": (2, 20), "memory_rows": 20_000}
CASES = [
    PublisherCase(PRAMPublisher, **WIDE),
    PublisherCase(PRAMPublisher, {"prior": "ibu"}, **WIDE),
    PublisherCase(PrivBayesPublisher, **WIDE),
    PublisherCase(PrivBayesPublisher, {"degree": 3}, **WIDE),
    PublisherCase(SamaratiPublisher, {"max_suppression": 1000}, **WIDE),
    PublisherCase(SamaratiPublisher, {"k": 2, "l": 2, "t": 0.9, "max_suppression": 5000}, **WIDE),
    PublisherCase(MondrianPublisher, **WIDE),
    PublisherCase(MondrianPublisher, {"k": 2, "l": 2, "t": 0.9, "mode": "relaxed"}, **WIDE),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_memory_bytes_bounds_the_traced_peak_on_wide_tables(case):
    check_memory(case)
