"""Refactoring keeps results: every mechanism's job gives bit-identical metrics to those
pinned in ``metrics.json`` (written by ``python -m tests.pinned.cases`` before a refactoring)."""

from __future__ import annotations

import json

import pytest

from tests.pinned.cases import CASES, PINNED, case_id, measure

#: The adult jobs take seconds each: end to end (make test-fast skips them).
PARAMS = [
    pytest.param(case, marks=[pytest.mark.slow] if case[1] == "adult" else [], id=case_id(*case)) for case in CASES
]


@pytest.mark.parametrize("case", PARAMS)
def test_the_same_config_and_seed_give_the_pinned_metrics(case):
    expected = json.loads(PINNED.read_text())[case_id(*case)]
    assert measure(*case) == expected
