"""The memory estimates are honest: within a small factor of the traced peak on a grid of
small shapes for every shipped mechanism (publishing, the marginal metrics, the table), and a
job too large is refused naming the key that drives its estimate, after the range checks.

The grid starts at 2,000 records. Below, fixed-size work arrays that an estimate must count
but a run may not allocate dominate (measured, ``python -m dp2pub.bench estimates --n 300``):
GRR's block buffers (384 KiB) for ``ldp_nb``'s adaptive oracle when it picks OUE, and
Samarati's class sizes over up to 2^16 cells when no such lattice node is visited; there the
estimate is up to 15-20 times the peak."""

from __future__ import annotations

import re

import numpy as np
import pytest
from omegaconf import OmegaConf

from dp2pub.bench.estimates import SIZES as BENCH_SIZES
from dp2pub.bench.estimates import shipped_mechanisms
from dp2pub.data.dataset import table_bytes
from dp2pub.data.synthetic import make_synthetic
from dp2pub.job import run_job
from dp2pub.limits import GIB, TooLarge, check_job_size
from dp2pub.publish.base import MemoryAllowance, allowance, claim_memory
from dp2pub.registry import PUBLISHERS, build_publisher
from dp2pub.settings import JobSettings, LimitSettings, MetricSettings
from dp2pub.testing.memory import MAX_RATIO, measure_metrics, measure_publishing
from dp2pub.testing.runs import run
from dp2pub.testing.tables import random_table
from dp2pub.validation import ConfigError
from tests.conftest import compose_config

#: Hundreds of traced measurements, each collecting only what the module allocated.
pytestmark = pytest.mark.usefixtures("settled_heap")

SHIPPED = shipped_mechanisms()
#: The slack of both bounds (PublisherCase.memory_slack): the Python objects of a call.
SLACK = 1 << 16
#: The grid: records, attributes (at least what the mechanism needs), domain size ranges.
RECORDS = (2_000, 20_000)
#: InpHT's binary tables (the bench's sizes) up to acs's 23 attributes.
ATTRIBUTES = {"dp2pub": (3, 6), "privbayes": (3, 6), "inpht": (6, 23)}
SIZES = ((2, 5), (5, 12))

#: Releases whose joint marginals spread generalized values over the original ones: the
#: estimate of a k-way answer counts every range of k(k+1)/2 a QI may publish (Mondrian), far
#: above what a partition publishes at k >= 3 (measured: up to 1,211 times at 6 ways).
GENERALIZED = {"mondrian"}
#: Releases that answer a joint marginal from every user's vectors (a minute for the 6-way
#: ones of the grid): their 3-way answers already check that work.
PER_USER = {"oue", "olh", "rappor"}


def publisher(stem: str):
    settings = dict(SHIPPED[stem])
    return PUBLISHERS[settings.pop("name")](**settings)


def grid(stem: str):
    for n in RECORDS:
        for d in ATTRIBUTES.get(stem, (3, 6)):
            for sizes in [BENCH_SIZES[stem]] if stem in BENCH_SIZES else SIZES:
                yield random_table(np.random.default_rng(1), n, dims=(d, d), sizes=sizes)


SLACKS: dict[str, int] = {}


def outside(measured, what: str, slack: int = SLACK) -> str | None:
    return None if measured.within(slack) else f"{what}: estimate {measured.estimate:,}, peak {measured.peak:,}"


@pytest.mark.parametrize("stem", sorted(SHIPPED))
def test_a_publisher_estimate_is_within_a_factor_of_the_traced_peak(stem):
    mechanism = publisher(stem)
    sizes = BENCH_SIZES.get(stem, SIZES[0])
    run(mechanism, random_table(np.random.default_rng(0), 200, dims=(6, 6), sizes=sizes), 1.0, 0)  # warm up
    failures, slack = [], SLACKS.get(stem, SLACK)
    for data in grid(stem):
        measured, _ = measure_publishing(mechanism, data, 1.0, 0)
        failures.append(outside(measured, f"n={data.n}, sizes={list(data.domain.sizes)}", slack))
    assert not [f for f in failures if f], f"outside [peak - {slack}, {MAX_RATIO} peak + {slack}]: {failures}"


@pytest.mark.parametrize("stem", ["grr", "grr_table", "pram", "privbayes", "oue", "olh", "rappor", "mondrian"])
def test_a_metrics_estimate_is_within_a_factor_of_the_traced_peak(stem):
    mechanism, failures = publisher(stem), []
    for data in grid(stem):
        outcome = run(mechanism, data, 1.0, 0)
        for ways in [(1,), (1, 2), (3,), (data.d,)]:
            if (stem in GENERALIZED and max(ways) > 2) or (stem in PER_USER and max(ways) > 3):
                continue
            measured = measure_metrics(mechanism, data, outcome, MetricSettings(ways=ways, max_subsets=100))
            failures.append(outside(measured, f"ways={ways}, n={data.n}, sizes={list(data.domain.sizes)}"))
    assert not [f for f in failures if f], failures


@pytest.mark.parametrize("n, d, k", [(2_000, 3, 5), (20_000, 10, 12), (200_000, 10, 300)])
def test_the_table_estimate_is_what_a_drawn_table_holds(n, d, k):
    import gc
    import tracemalloc

    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        table = make_synthetic(n=n, d=d, k_min=k, k_max=k, rng=np.random.default_rng(0))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    estimate = table_bytes(table.n, table.domain.sizes)
    assert held <= estimate + SLACK and estimate <= MAX_RATIO * held + SLACK, (estimate, held)


# ---------------------------------------------------------------- refusals
def job(overrides: list[str]) -> dict:
    return OmegaConf.to_container(compose_config(overrides), resolve=True)


def refusal(overrides: list[str]) -> TooLarge:
    with pytest.raises(TooLarge) as refused:
        run_job(job(overrides))
    return refused.value


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["mechanism=rappor", "mechanism.num_bits=1000000"], "mechanism.num_bits=1000000"),
        (["mechanism=privbayes", "mechanism.degree=9"], "mechanism.degree=9"),
        (["mechanism=dppro", "mechanism.k=100000000"], "mechanism.k=100000000"),
        (["dataset.d=20", "dataset.k_min=20", "dataset.k_max=20", "metrics.ways=[8]"], "metrics.ways=[8]"),
    ],
)
def test_a_job_too_large_names_the_key_that_drives_its_estimate(overrides, key):
    message = str(refusal([*overrides, "limits.memory_gib=4"]))
    name = key.partition("=")[0]
    assert message.startswith(f"job too large: {key} with "), message
    assert message.endswith(f"; lower {name} or raise limits.memory_gib"), message
    assert refusal([*overrides, "limits.memory_gib=4"]).key == name


def test_a_job_too_large_for_its_shape_says_so():
    message = str(refusal(["dataset.n=1000000000000", "limits.memory_gib=4"]))
    assert message.startswith("job too large: dataset.n=1000000000000, dataset.d=10, dataset.k_max=10 would need")
    assert message.endswith("; shrink the job or raise limits.memory_gib")


@pytest.mark.parametrize("mechanism", ["dp2pub", "privbayes"])
def test_a_degree_out_of_range_is_refused_before_the_estimate(mechanism):
    with pytest.raises(ConfigError) as refused:
        run_job(job([f"mechanism={mechanism}", "mechanism.degree=100"]))
    assert not isinstance(refused.value, TooLarge)
    assert str(refused.value) == "mechanism.degree=100 is invalid: expected an integer in [1, 9] (d=10)"


# ---------------------------------------------------------------- jobs that fit
def test_a_ten_way_metric_runs_within_its_estimate():
    """The job of the report: metrics.ways=[10] on the default table (10 domains of 2 to
    10 values, 2.5 million cells drawn), refused at 298 GiB before; its estimate bounds the
    traced peak of its metrics."""
    result = run_job(job(["metrics.ways=[10]", "limits.memory_gib=2"]))
    assert 0.0 <= result.metrics["tvd_10way"] <= 1.0
    data = random_table(np.random.default_rng(3), 10_000, dims=(10, 10), sizes=(2, 10), target=False)
    mechanism = publisher("grr")
    measured = measure_metrics(mechanism, data, run(mechanism, data, 1.0, 0), MetricSettings(ways=(10,)))
    assert measured.within(SLACK), (measured.estimate, measured.peak)


@pytest.mark.parametrize("dataset", ["synthetic", "adult"])
def test_a_dp2pub_job_with_uncapped_clusters_runs(dataset):
    """max_cells caps a cluster, it is not its size: the job of the report, refused at 43.7
    TiB on adult before, runs; its clusters are claimed once known."""
    overrides = [f"dataset={dataset}", "mechanism=dp2pub", "mechanism.max_cells=1000000000000"]
    result = run_job(job([*overrides, "mechanism.max_cluster_size=14", "epsilon=8", "metrics.models=[]"]))
    assert result.metrics["epsilon_spent"] == 8.0


def test_a_cluster_too_large_is_refused_once_known_naming_its_cap():
    """A limit that leaves 1 KiB beside the estimate from the shape: the job starts, and its
    first cluster is refused when the clusters are known, before it is estimated."""
    overrides = ["dataset=synthetic_bn", "dataset.n=5000", "dataset.d=6", "dataset.k_min=4", "dataset.k_max=4"]
    overrides += ["mechanism=dp2pub", "mechanism.max_cells=1000000000000", "mechanism.max_cluster_size=14", "epsilon=8"]
    message = str(refusal([*overrides, f"limits.memory_gib={(shape_need(overrides) + 1024) / GIB!r}"]))
    assert re.match(r"job too large: mechanism\.(max_cells|max_cluster_size)=\d+ with synthetic_bn \(", message), (
        message
    )
    assert "dp2pub's largest cluster (" in message, message
    assert re.search(r"; lower mechanism\.(max_cells|max_cluster_size) or raise limits\.memory_gib$", message), message


def shape_need(overrides: list[str]) -> int:
    """The estimate of the job of ``overrides`` before its clusters are known (its domains
    all of ``dataset.k_max`` values, as drawn when k_min = k_max)."""
    cfg = job(overrides)
    settings = JobSettings.parse(cfg)
    mechanism = build_publisher(cfg["mechanism"])
    n, sizes = int(cfg["dataset"]["n"]), [int(cfg["dataset"]["k_max"])] * int(cfg["dataset"]["d"])
    granted = check_job_size(mechanism, n, sizes, settings.metrics, LimitSettings(memory_gib=1000), "x")
    assert granted.available is not None
    return 1000 * GIB - granted.available


def test_a_claim_outside_a_job_is_only_recorded_inside_one():
    claim_memory("max_cells", 10, 1 << 40, "a cluster")  # no job: nothing happens
    with allowance(MemoryAllowance()) as granted:
        claim_memory("max_cells", 10, 123, "a cluster")
    assert granted.claimed == {"max_cells": 123}
    refused = []
    with allowance(MemoryAllowance(available=100, refuse=lambda *claim: refused.append(claim))):
        claim_memory("max_cells", 10, 99, "a cluster")
        claim_memory("max_cells", 10, 101, "a cluster")
    assert refused == [("max_cells", 10, 101, "a cluster")]
