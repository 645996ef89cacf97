"""How honest the memory estimates are: estimate / traced peak, measured in the same run.

For every shipped mechanism config (``conf/mechanism/*.yaml``) on a grid of random tables
(records ``--n``, attributes ``--d``, domain sizes drawn from the ranges ``--k``), the
publisher's estimate (:meth:`~dp2pub.publish.base.Publisher.memory_bytes`, with what its data
decided in place of the parts it defers: DP2-Pub's clusters) next to the traced peak of
publishing (:func:`dp2pub.testing.memory.measure_publishing`, after a warm-up); for the
mechanisms of ``--metric-mechanisms`` the marginal metrics of each ``--ways``
(:func:`dp2pub.testing.memory.measure_metrics`; at most :data:`PER_USER_WAYS` attributes on a
release that answers from every user's vectors); and the input table
(:func:`~dp2pub.data.dataset.table_bytes`) next to what a drawn table holds. An estimate is
within bounds when ``peak <= estimate + slack`` and ``estimate <= 4 peak + slack``
(:data:`~dp2pub.testing.memory.MAX_RATIO`; the slack, :data:`SLACK`: the Python objects no
estimate counts).
A shape whose estimate exceeds ``--max-gib`` is not run (listed under ``skipped``). The
table is printed and written to ``outputs/bench/estimates.json``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import platform
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dp2pub.config import config_dir
from dp2pub.data.dataset import Dataset, table_bytes
from dp2pub.data.synthetic import make_synthetic
from dp2pub.limits import answer_part, marginal_bytes
from dp2pub.publish.base import Publisher
from dp2pub.publish.oracle_table import OraclePublisher
from dp2pub.registry import PUBLISHERS
from dp2pub.settings import MetricSettings
from dp2pub.testing.memory import MAX_RATIO, Measured, measure_metrics, measure_publishing
from dp2pub.testing.runs import run
from dp2pub.testing.tables import random_table

#: Settings of a shipped config that fit only its dataset (adult's quasi-identifiers).
ADULT_ONLY = {"quasi_identifiers": None}
#: The fewest attributes and records a mechanism needs (a degree-2 network: 3 attributes).
NEEDS: dict[str, dict[str, int]] = {"dp2pub": {"d": 3}, "privbayes": {"d": 3}, "ldp_marginals": {"n": 100}}
#: Domain-size ranges a mechanism takes instead of the grid's (InpHT: binary tables).
SIZES: dict[str, tuple[int, int]] = {"inpht": (2, 2)}
#: Settings that shorten what the memory does not depend on: a graphical model's fit
#: (mirror-descent steps) and AIM's rounds (the model's size is capped and claimed as the
#: data decide it). The checks of ledgers, releases and determinism use them too
#: (tests/test_conformance.py).
SHORT_FITS: dict[str, dict] = {
    "mst": {"iterations": 20, "select_iterations": 20},
    "aim": {"iterations": 20, "rounds": 7, "workload_degree": 2},
}
#: The slack of both bounds: Python objects of a call, which no estimate from the shape counts.
SLACK = 1 << 16
#: The budget of every publication measured.
EPSILON = 1.0
#: The most attributes of a joint marginal measured on a release that answers it from every
#: user's vectors (minutes for 6-way ones of 20,000 users); tables are measured at every way.
PER_USER_WAYS = 3


def shipped_settings(path: Path) -> dict:
    """A shipped mechanism config as keyword settings with its ``name``: its ``defaults``
    merged in, without interpolations (``${...}``, filled by Hydra from other groups)."""
    entry = yaml.safe_load(path.read_text())
    merged: dict = {}
    for base in entry.pop("defaults", []):
        merged.update(entry if base == "_self_" else shipped_settings(path.parent / f"{base}.yaml"))
    merged.update(entry)
    settings = {k: v for k, v in merged.items() if not (isinstance(v, str) and v.startswith("${"))}
    settings.update({k: v for k, v in ADULT_ONLY.items() if k in settings})
    return settings


def shipped_mechanisms() -> dict[str, dict]:
    """Every shipped mechanism config by its stem, as :func:`shipped_settings`, with
    :data:`SHORT_FITS`."""
    shipped = {path.stem: shipped_settings(path) for path in sorted((config_dir() / "mechanism").glob("*.yaml"))}
    return {stem: {**settings, **SHORT_FITS.get(settings["name"], {})} for stem, settings in shipped.items()}


def row(kind: str, name: str, shape: dict, measured: Measured) -> dict[str, Any]:
    """One line of the results."""
    return {
        "kind": kind,
        "name": name,
        **shape,
        "estimate": measured.estimate,
        "peak": measured.peak,
        "ratio": measured.ratio,
        "within": measured.within(SLACK),
    }


def tables(name: str, ns: list[int], ds: list[int], ks: list[tuple[int, int]]) -> Iterator[tuple[dict, Any]]:
    """The grid's tables a mechanism can take, with their shape for the results."""
    needs = NEEDS.get(name, {})
    for n in ns:
        for d in sorted({max(d, needs.get("d", 1)) for d in ds}):
            for k in [SIZES[name]] if name in SIZES else ks:
                data = random_table(np.random.default_rng(1), max(n, needs.get("n", 1)), dims=(d, d), sizes=k)
                yield {"n": data.n, "d": d, "sizes": [int(s) for s in data.domain.sizes]}, data


def publisher_of(settings: dict) -> Publisher:
    """The publisher of a shipped config's settings (with its ``name``)."""
    settings = dict(settings)
    return PUBLISHERS[settings.pop("name")](**settings)


def bench_publishers(mechanisms: dict[str, dict], grid: tuple, limit: int, skipped: list) -> list[dict]:
    """Publisher estimate / traced peak of every mechanism on every table of the grid; a
    table whose estimate exceeds ``limit`` bytes is not run but listed in ``skipped``."""
    rows = []
    for stem, settings in mechanisms.items():
        publisher = publisher_of(settings)
        warm = random_table(np.random.default_rng(0), 200, dims=(6, 6), sizes=SIZES.get(stem, (2, 5)))
        run(publisher, warm, EPSILON, 0)
        for shape, data in tables(stem, *grid):
            if publisher.memory_bytes(data.n, data.domain.sizes) > limit:
                skipped.append({"kind": "publisher", "name": stem, **shape})
                continue
            measured, _ = measure_publishing(publisher, data, EPSILON, 0)
            rows.append(row("publisher", stem, shape, measured))
    return rows


def bench_metrics(
    mechanisms: dict[str, dict], grid: tuple, ways: list[list[int]], limit: int, skipped: list
) -> list[dict]:
    """Metrics estimate / traced peak of each way list on every mechanism's release; one
    whose estimate exceeds ``limit`` bytes is not run but listed in ``skipped``."""
    rows = []
    for stem, settings in mechanisms.items():
        publisher = publisher_of(settings)
        for shape, data in tables(stem, *grid):
            outcome = run(publisher, data, EPSILON, 0)
            for way in ways:
                metrics = MetricSettings(ways=tuple(sorted({min(w, data.d) for w in way})), max_subsets=100)
                shaped = {**shape, "ways": list(metrics.ways)}
                if max(metrics.ways) > PER_USER_WAYS and per_user(publisher):
                    continue
                if metrics_estimate(publisher, data, metrics) > limit:
                    skipped.append({"kind": "metrics", "name": stem, **shaped})
                    continue
                rows.append(row("metrics", stem, shaped, measure_metrics(publisher, data, outcome, metrics)))
    return rows


def per_user(publisher: Publisher) -> bool:
    """Whether the release answers a joint marginal from every user's vectors (time
    O(n x cells)): an oracle's reports other than GRR's published table."""
    return isinstance(publisher, OraclePublisher) and not (publisher.name == "grr" and publisher.strategy == "split")


def metrics_estimate(publisher: Publisher, data: Dataset, metrics: MetricSettings) -> int:
    """The metrics' part of a job's estimate, before they are measured."""
    sizes = data.domain.sizes
    return (
        marginal_bytes(data.n, sizes, metrics, publisher.max_way) + answer_part(publisher, data.n, sizes, metrics).size
    )


def held_bytes(build: Callable[[], object]) -> int:
    """The traced memory the result of ``build()`` holds once built (its transients freed)."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        result = build()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        del result
    finally:
        if not tracing:
            tracemalloc.stop()
    return held


def bench_table(ns: list[int], ds: list[int], ks: list[tuple[int, int]]) -> list[dict]:
    """:func:`table_bytes` next to what a drawn synthetic table holds (all domains at the
    range's largest size, as the job's check before the draw assumes)."""
    rows = []
    for n in ns:
        for d in ds:
            for _, k_max in ks:
                params = {"n": n, "d": d, "k_min": k_max, "k_max": k_max}
                make_synthetic(**params, rng=np.random.default_rng(0))
                held = held_bytes(functools.partial(make_synthetic, **params, rng=np.random.default_rng(0)))
                estimate = table_bytes(n, [k_max] * d)
                rows.append(
                    row(
                        "table", "synthetic", {"n": n, "d": d, "sizes": [k_max] * d}, Measured(estimate, held, estimate)
                    )
                )
    return rows


def print_rows(rows: list[dict]) -> None:
    """The results as a table, one line each."""
    print(
        f"{'kind':9} {'name':22} {'n':>7} {'d':>3} {'sizes':26} {'ways':8} {'estimate':>14} {'peak':>14} {'ratio':>7}"
    )
    for r in rows:
        ways = ",".join(map(str, r.get("ways", []))) or "-"
        mark = "" if r["within"] else "  OUTSIDE"
        print(
            f"{r['kind']:9} {r['name']:22} {r['n']:>7} {r['d']:>3} {r['sizes']!s:26.26} {ways:8} "
            f"{r['estimate']:>14,} {r['peak']:>14,} {r['ratio']:>7.2f}{mark}"
        )


def summary(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per kind: the smallest and largest ratio and how many rows are outside the bounds."""
    out = {}
    for kind in dict.fromkeys(r["kind"] for r in rows):
        ratios = [r["ratio"] for r in rows if r["kind"] == kind]
        outside = sum(not r["within"] for r in rows if r["kind"] == kind)
        out[kind] = {"rows": len(ratios), "min_ratio": min(ratios), "max_ratio": max(ratios), "outside": outside}
    return out


def k_range(text: str) -> tuple[int, int]:
    """``2-5`` as (2, 5)."""
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m dp2pub.bench estimates", description=__doc__)
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 20000, 100000])
    parser.add_argument("--d", type=int, nargs="+", default=[3, 6, 10])
    parser.add_argument("--k", type=k_range, nargs="+", default=[(2, 5), (5, 12)], help="domain size ranges, lo-hi")
    parser.add_argument("--mechanisms", nargs="+", default=None, help="shipped configs (default: all)")
    parser.add_argument("--metric-mechanisms", nargs="+", default=["grr", "grr_table", "pram", "oue", "rappor"])
    parser.add_argument("--metric-n", type=int, nargs="+", default=[2000, 20000], help="records of the metrics' tables")
    parser.add_argument("--ways", nargs="+", default=["1", "1,2", "3", "10"], help="way lists, comma-separated")
    parser.add_argument("--max-gib", type=float, default=1.0, help="shapes estimated above this are not run")
    parser.add_argument("--out", default="outputs/bench/estimates.json")
    args = parser.parse_args(argv)

    shipped, limit = shipped_mechanisms(), int(args.max_gib * (1 << 30))
    skipped: list[dict] = []
    chosen = {stem: shipped[stem] for stem in (args.mechanisms or shipped)}
    ways = [[int(w) for w in text.split(",")] for text in args.ways]
    rows = bench_publishers(chosen, (args.n, args.d, args.k), limit, skipped)
    metric_mechanisms = {stem: shipped[stem] for stem in args.metric_mechanisms}
    rows += bench_metrics(metric_mechanisms, (args.metric_n, args.d, args.k), ways, limit, skipped)
    rows += bench_table(args.n, args.d, args.k)
    print_rows(rows)
    results = {
        "max_ratio": MAX_RATIO,
        "slack": SLACK,
        "max_gib": args.max_gib,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "summary": summary(rows),
        "skipped": skipped,
        "rows": rows,
    }
    for kind, stats in results["summary"].items():
        print(
            f"{kind}: {stats['rows']} rows, ratio {stats['min_ratio']:.2f} .. {stats['max_ratio']:.2f}, "
            f"{stats['outside']} outside"
        )
    print(f"not run (estimated above {args.max_gib:g} GiB): {len(skipped)}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    return results
