"""Exact privacy accounting, property-based (hypothesis): every mechanism of the registry, on
random tables (2-6 attributes of 2-5 values), random budgets (1e-3 .. 1e3, none of them round)
and random settings of its own (DP2-Pub's versions, degrees and cluster caps, hence its cluster
layouts; PrivBayes's degree and beta; an oracle's strategy; DPPro's label share and labels; the marginal synthesizer's
selection, oracle and cell cap; HDG's answers and rounds; InpHT's ways and estimator; MST's and AIM's delta, rounds and workload),
spends ``epsilon_spent <= epsilon`` exactly: no tolerance, not even one ulp.

Hypothesis runs derandomized (a fixed seed per test), so a run is reproducible and never
flakes; a failure prints the smallest example it found.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dp2pub.data.dataset import Dataset
from dp2pub.data.domain import Domain
from dp2pub.registry import PUBLISHERS

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

PROFILE = settings(derandomize=True, deadline=None, max_examples=80, suppress_health_check=list(HealthCheck))

#: Budgets log-uniform over 1e-3 .. 1e3 (10 ** x for a random x is almost never round), and
#: budgets whose plain shares ``epsilon / d`` add up (exactly, ``math.fsum``) to more than
#: epsilon for several d: 3.1 for d = 3 and 6, 3.9 for d = 3, 5 and 6. About 4% of random
#: (epsilon, d) pairs overspend with plain division; these make it likely in every run.
budgets = st.one_of(st.sampled_from([3.1, 3.9]), st.floats(min_value=-3, max_value=3).map(lambda x: 10.0**x))


@st.composite
def tables(draw: st.DrawFn) -> Dataset:
    """A random table with a target (its last attribute), every value of it present."""
    d = draw(st.integers(2, 6))
    sizes = draw(st.lists(st.integers(2, 5), min_size=d, max_size=d))
    n = draw(st.integers(60, 150))
    seed = draw(st.integers(0, 2**32 - 1))
    codes = np.random.default_rng(seed).integers(0, sizes, size=(n, d))
    codes[: sizes[-1], -1] = np.arange(sizes[-1])  # the target's every class occurs
    domain = Domain.from_sizes(sizes)
    return Dataset(codes.astype(np.uint8), domain, target=domain.names[-1], name="random")


def oracle_settings(name: str) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {"strategy": st.sampled_from(["split", "sample"]), "estimator": st.sampled_from(["norm_sub", "unbiased"])}
    )


#: Each budgeted mechanism's settings, drawn.
SETTINGS: dict[str, st.SearchStrategy[dict]] = {
    **{name: oracle_settings(name) for name in ("grr", "sue", "oue", "olh")},
    "rappor": st.fixed_dictionaries(
        {"strategy": st.sampled_from(["split", "sample"]), "num_bits": st.sampled_from([16, 32])}
    ),
    "pram": st.fixed_dictionaries({"prior": st.sampled_from(["inverse", "ibu"])}),
    "dp2pub": st.fixed_dictionaries(
        {
            "trust": st.sampled_from(["local", "trusted", "local_two_phase"]),
            "degree": st.integers(1, 3),
            "max_cluster_size": st.sampled_from([None, 1, 2, 3]),
            "cluster_head": st.sampled_from([None, "random", "max_entropy", "network_order"]),
        }
    ),
    "privbayes": st.one_of(
        st.fixed_dictionaries({"degree": st.integers(1, 3), "beta": st.floats(0.05, 0.95)}),
        st.fixed_dictionaries({"degree": st.none(), "theta": st.floats(1.0, 20.0), "beta": st.floats(0.05, 0.95)}),
    ),
    "dppro": st.fixed_dictionaries({"k": st.integers(1, 8), "label_share": st.floats(0.05, 0.95)}),
    "ldp_nb": st.fixed_dictionaries(
        {
            "oracle": st.sampled_from(["grr", "oue", "olh", "adaptive"]),
            "strategy": st.sampled_from(["split", "sample"]),
            "prior": st.sampled_from(["report", "pairs"]),
            "accounting": st.just("total"),  # per_report spends R x epsilon by request: test_ldp_nb
        }
    ).map(lambda o: o if o["prior"] == "pairs" else {**o, "encoding": "slots"} if o["oracle"] == "grr" else o),
    "ldp_marginals": st.fixed_dictionaries(
        {
            "marginals": st.sampled_from(["adaptive", "all_pairs"]),
            "oracle": st.sampled_from(["adaptive", "grr", "oue", "olh"]),
            "select_fraction": st.sampled_from([0.3, 0.5, 0.8]),  # >= 15 pairs' users at n >= 60
            "max_cells": st.sampled_from([4, 100_000]),  # 4: some attributes measured alone
            "iterations": st.integers(0, 3),
            "rare_sd": st.sampled_from([None, 1.0, 3.0]),
        }
    ),
    "hdg": st.fixed_dictionaries(
        {
            "kway": st.sampled_from(["cells", "table"]),
            "consistency_rounds": st.integers(0, 3),
            "iterations": st.integers(1, 5),
        }
    ),
    "inpht": st.fixed_dictionaries(
        {"ways": st.integers(1, 4), "estimator": st.sampled_from(["norm_sub", "clip", "unbiased"])}
    ),
    # zCDP converted at delta: the ledger's rho's and the conversion (a model's fit is short)
    "mst": st.fixed_dictionaries(
        {"delta": st.sampled_from([1e-9, 1e-5, 0.1]), "iterations": st.just(10), "select_iterations": st.just(10)}
    ),
    "aim": st.fixed_dictionaries(
        {
            "delta": st.sampled_from([1e-9, 1e-5]),
            "rounds": st.integers(7, 12),  # more than the 6 attributes at most
            "workload_degree": st.integers(1, 3),
            "iterations": st.just(10),
        }
    ),
}
#: Fewer examples where each fits graphical models (AIM refits its model every round).
EXAMPLES = {"mst": 12, "aim": 12}


def test_every_budgeted_mechanism_is_covered():
    budgeted = {name for name, build in PUBLISHERS.items() if build().uses_budget}
    assert budgeted == set(SETTINGS)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_every_mechanism_spends_at_most_its_budget_exactly(name):
    @settings(PROFILE, max_examples=EXAMPLES.get(name, PROFILE.max_examples))
    @given(data=tables(), epsilon=budgets, options=SETTINGS[name], seed=st.integers(0, 2**32 - 1))
    def spends_at_most(data, epsilon, options, seed):
        if name in ("dp2pub", "privbayes") and (options["degree"] or 0) >= data.d:
            options = {**options, "degree": data.d - 1}
        if name == "dppro" and seed % 4 and data.d >= 3:
            options = {**options, "labels": list(data.domain.names[-2:])}  # a label per task
        if name == "inpht":  # binary tables only: each value's parity
            data = Dataset(data.codes % 2, Domain.from_sizes([2] * data.d), target=data.target, name=data.name)
        outcome = PUBLISHERS[name](**options).publish(data, epsilon, np.random.default_rng(seed))
        spent = outcome.epsilon_spent
        assert spent is not None and math.isfinite(spent)
        assert spent <= epsilon, (spent, epsilon)  # exact: no tolerance
        assert not outcome.beyond_budget and outcome.allowed_epsilon is None

    spends_at_most()


@pytest.mark.parametrize("name", ["samarati", "mondrian"])
def test_k_anonymity_spends_no_budget(name):
    assert not PUBLISHERS[name]().uses_budget
