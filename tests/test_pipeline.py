"""The job is a pipeline of plain stages that dispatch on declared types: every publisher
says by class constants what it is and consumes, the job never probes attributes, and an
outcome that spends more than allowed is refused."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import numpy as np
import pytest

import dp2pub.job
from dp2pub.data import make_synthetic
from dp2pub.job import check_budget
from dp2pub.mechanisms.accounting import Spend
from dp2pub.publish import GRRPublisher, Outcome, Publisher, SamaratiPublisher, TableRelease
from dp2pub.registry import PUBLISHERS, build_publisher

#: The longest a stage of the job may be (lines, docstring included).
STAGE_LINES = 40


@pytest.mark.parametrize("name", sorted(PUBLISHERS))
def test_every_publisher_declares_its_name_and_needs_as_class_constants(name):
    publisher = build_publisher({"name": name})
    assert isinstance(publisher, Publisher)
    cls = type(publisher)
    assert cls.name == name and "name" not in {f.name for f in dataclasses.fields(cls)}
    assert isinstance(cls.uses_budget, bool) and isinstance(cls.needs_target, bool)


def test_the_job_never_probes_attributes():
    tree = ast.parse(inspect.getsource(dp2pub.job))
    probes = [
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("hasattr", "getattr", "isinstance")
    ]
    assert probes == []


def test_every_stage_of_the_job_is_short():
    tree = ast.parse(inspect.getsource(dp2pub.job))
    lengths = {node.name: node.end_lineno - node.lineno + 1 for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert {"run_job", "load", "split", "publish", "check_budget", "measure_utility", "measure_marginals"} <= set(
        lengths
    )
    assert {name: n for name, n in lengths.items() if n > STAGE_LINES} == {}


def test_an_outcome_over_its_budget_is_refused_and_one_within_passes():
    data = make_synthetic(n=50, d=2, k_min=2, k_max=3, rng=np.random.default_rng(0))
    release = TableRelease(data)
    check_budget(GRRPublisher(), Outcome(release, [Spend("perturb", "a", 0.5), Spend("perturb", "b", 0.5)]), 1.0)
    with pytest.raises(RuntimeError, match=r"spent epsilon=1.0000000000000002 > budget 1.0"):
        check_budget(
            GRRPublisher(),
            Outcome(release, [Spend("perturb", "a", 0.5), Spend("perturb", "b", 0.5000000000000002)]),
            1.0,
        )
    with pytest.raises(RuntimeError, match="spent epsilon=None"):
        check_budget(GRRPublisher(), Outcome(release, []), 1.0)  # a budget was promised, none recorded
    with pytest.raises(RuntimeError, match="uses no budget"):
        check_budget(SamaratiPublisher(), Outcome(release, [Spend("anonymize", "a", 1.0)]), None)
    check_budget(SamaratiPublisher(), Outcome(release, []), None)
