"""Frequency-oracle throughput: dp2pub against pure-ldp and multi-freq-ldpy, same run.

For each oracle, one column of n users (domain k) is perturbed and estimated (unbiased); the
rate is users per second (for GRR on a table, user-attribute reports per second). When the
optional ``bench`` extra is installed, the same work is timed with pure-ldp and
multi-freq-ldpy, whose clients are per-user Python loops (multi-freq-ldpy's numba-jitted).

Every side is first run once on ``--warmup-n`` users (numba compiles, imports and caches
fill), then timed ``--repeats`` times; a rate comes from the fastest run (minimum time) and
the median run is reported beside it. A reference is timed at dp2pub's n when its projected
time (``--repeats`` runs) fits ``--reference-budget`` seconds, otherwise at ``--reference-n``
users, and its per-user rate is then extrapolated to n; the output marks which.

Both references' OLH hash a value with ``xxhash.xxh32(str(value), seed=seed)``, which
xxhash 4 rejects (``TypeError: Strings must be encoded before hashing``); xxhash 3 encoded
the string as UTF-8 itself. While the references run, the name ``xxhash`` in their OLH
modules is a shim that does that encoding (:mod:`dp2pub.bench.references`), so their OLH is timed as
written; its cost per hash is measured and reported, and the OLH ratios without it are given
too. Every timed oracle, dp2pub's and the references', is also checked: its estimate of a
skewed distribution at ε = 4 must correlate with the truth.

Results are printed as the markdown block the site's benchmark page shows
(:mod:`dp2pub.bench.oracles_report`) and written to ``outputs/bench/oracles.json``; the page is
rendered from the committed ``docs/bench/oracles.json`` when the site is built
(:mod:`dp2pub.bench.pages`). ``--render [JSON]`` prints a results file's block (by default the
committed one) without running anything.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import numpy as np

from dp2pub.bench.oracles_report import DOCS_JSON, render
from dp2pub.bench.pages import print_rendering
from dp2pub.bench.references import (
    CHECK_EPSILON,
    CHECK_N,
    LIBRARIES,
    RAPPOR_HASHES,
    check,
    reference,
    skewed,
    xxhash_shim,
)
from dp2pub.bench.timing import Result, warmed
from dp2pub.data import make_synthetic
from dp2pub.mechanisms import GRR, OLH, OUE, RAPPOR, SUE, FrequencyOracle
from dp2pub.publish import GRRPublisher

#: Distributions whose versions the results record.
PACKAGES = ("dp2pub", "numpy", "pure-ldp", "multi-freq-ldpy", "xxhash", "numba")
#: Options that do not change what is measured.
NOT_MEASURED = ("out", "render")


def dp2pub_oracles(k: int, epsilon: float) -> dict[str, FrequencyOracle]:
    """dp2pub's five oracles on a domain of ``k`` values (RAPPOR: 2k bits, 2 hashes, f from
    the budget, no instantaneous response)."""
    return {
        "grr": GRR(epsilon=epsilon, k=k),
        "sue": SUE(epsilon=epsilon, k=k),
        "oue": OUE(epsilon=epsilon, k=k),
        "olh": OLH(epsilon=epsilon, k=k),
        "rappor": RAPPOR(epsilon=epsilon, k=k, num_bits=2 * k, num_hashes=RAPPOR_HASHES),
    }


def round_trip(oracle: FrequencyOracle, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The unbiased estimate of ``oracle``'s reports of ``values``."""
    return oracle.estimate(oracle.perturb(values, rng), "unbiased")


def dp2pub_estimators(
    k: int, epsilon: float, rng: np.random.Generator
) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Each dp2pub oracle as a function of the values (drawing from ``rng``)."""
    return {name: functools.partial(round_trip, oracle, rng=rng) for name, oracle in dp2pub_oracles(k, epsilon).items()}


def time_dp2pub(
    values: np.ndarray, k: int, epsilon: float, rng: np.random.Generator, args: argparse.Namespace
) -> Result:
    """Every dp2pub oracle on all of ``values``, warmed up on the first ``args.warmup_n``."""
    return {
        name: warmed(
            functools.partial(estimate, values),
            args.repeats,
            functools.partial(estimate, values[: args.warmup_n]),
            len(values),
        )
        for name, estimate in dp2pub_estimators(k, epsilon, rng).items()
    }


def grr_table(n: int, d: int, k: int, epsilon: float, rng: np.random.Generator, repeats: int) -> Result:
    """The GRR publisher on an n x d table of domain ``k``: user-attribute reports per second
    perturbing, and perturbing with every 1-way unbiased estimate."""
    data = make_synthetic(n=n, d=d, k_min=k, k_max=k, rng=rng)
    publisher = GRRPublisher()

    def perturb() -> None:
        publisher.publish(data, epsilon, rng)

    def both() -> None:
        release = publisher.publish(data, epsilon, rng).release
        for j in range(d):
            release.marginal((j,))

    return {
        "n": n,
        "d": d,
        "k": k,
        "perturb": warmed(perturb, repeats, perturb, n * d),
        "perturb_and_estimate": warmed(both, repeats, both, n * d),
    }


def ratio(ours: Result, theirs: Result, n: int) -> Result:
    """dp2pub's rate over a reference's: from the fastest runs (``best``) and the medians,
    at equal n when the reference ran on n users, otherwise extrapolated from its smaller n
    (its per-user rate taken to hold at n; both seconds at n are given)."""
    timed = theirs["at_n"] or theirs["at_reference_n"]
    return {
        "best": ours["per_s_best"] / timed["per_s_best"],
        "median": ours["per_s_median"] / timed["per_s_median"],
        "n": n,
        "reference_n": timed["n"],
        "equal_n": timed["n"] == n,
        "dp2pub_min_s": ours["min_s"],
        "reference_min_s_at_n": n / timed["per_s_best"],
    }


def without_shim(compared: Result, timed: Result, shim_s: float) -> Result:
    """``compared`` (a :func:`ratio` of OLH) with what the xxhash shim costs the reference:
    its share of the reference's time, and the rate and ratios with ``shim_s`` seconds a user
    taken off (an upper bound of the reference's rate on xxhash 3, which encoded in C)."""
    used = timed["at_n"] or timed["at_reference_n"]
    best, median = 1 / (1 / used["per_s_best"] - shim_s), 1 / (1 / used["per_s_median"] - shim_s)
    return {
        **compared,
        "shim_share": shim_s * used["per_s_best"],
        "per_s_best_without_shim": best,
        "best_without_shim": compared["best"] * used["per_s_best"] / best,
        "median_without_shim": compared["median"] * used["per_s_median"] / median,
    }


def ratios(ours: Result, references: Result, n: int, shim_s: dict[str, float]) -> Result:
    """:func:`ratio` of every oracle timed by both dp2pub and a reference library; also
    :func:`without_shim` for each oracle the xxhash shim cost ``shim_s[oracle]`` seconds a user."""
    found: Result = {}
    for library, outcome in references.items():
        found[library] = {}
        for oracle, timed in outcome.get("oracles", {}).items():
            if "error" in timed:
                continue
            found[library][oracle] = ratio(ours[oracle], timed, n)
            if shim_s.get(oracle):
                found[library][oracle] = without_shim(found[library][oracle], timed, shim_s[oracle])
    return found


def processor() -> str:
    """The processor's model name (``/proc/cpuinfo`` where ``platform`` knows none)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> Result:
    """Processor, cores, Python and the thread settings of the run."""
    return {
        "processor": processor(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "threads": {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
    }


def versions() -> dict[str, str | None]:
    """Installed version of every package of :data:`PACKAGES` (None when absent)."""
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def configuration(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Result:
    """The options measured, and which differ from the defaults (a small run is marked)."""
    options = {key: value for key, value in vars(args).items() if key not in NOT_MEASURED}
    differs = {
        key: [value, parser.get_default(key)] for key, value in options.items() if value != parser.get_default(key)
    }
    return {**options, "default": not differs, "differs_from_default": differs}


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m dp2pub.bench oracles``."""
    p = argparse.ArgumentParser(prog="python -m dp2pub.bench oracles", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000, help="users per oracle (default 1e6)")
    p.add_argument("--k", type=int, default=128, help="domain size (default 128)")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--table-n", type=int, default=2_000_000, help="users of the GRR table run")
    p.add_argument("--table-d", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5, help="timed runs of every side (default 5)")
    p.add_argument("--warmup-n", type=int, default=300, help="users of the untimed warm-up run (default 300)")
    p.add_argument(
        "--reference-n", type=int, default=20_000, help="users a reference is timed on when n does not fit the budget"
    )
    p.add_argument(
        "--reference-budget",
        type=float,
        default=60.0,
        help="seconds the repeats of a reference oracle may take at n; beyond, it is extrapolated (default 60)",
    )
    p.add_argument("--out", default="outputs/bench/oracles.json")
    p.add_argument(
        "--render",
        nargs="?",
        const=DOCS_JSON,
        metavar="JSON",
        help=f"run nothing: print the block that JSON (default {DOCS_JSON}) gives the site's page",
    )
    return p


def shim_seconds(shim: Result, k: int) -> dict[str, float]:
    """Seconds the xxhash shim costs a user of each oracle that hashes (OLH: k + 1 hashes,
    RAPPOR: one per Bloom hash function); empty when it was not applied."""
    if not shim.get("applied"):
        return {}
    return {
        "olh": (k + 1) * shim["overhead_ns_per_hash"] * 1e-9,
        "rappor": RAPPOR_HASHES * shim["overhead_ns_per_hash"] * 1e-9,
    }


def run(args: argparse.Namespace, config: Result) -> Result:
    """Time everything ``args`` asks for; the results dict."""
    rng = np.random.default_rng(0)
    values = rng.integers(0, args.k, size=args.n)
    ours = time_dp2pub(values, args.k, args.epsilon, rng, args)
    sample = skewed(args.k, CHECK_N, rng)
    checks = {
        name: check(estimate(sample), sample, args.k)
        for name, estimate in dp2pub_estimators(args.k, CHECK_EPSILON, rng).items()
    }
    table = grr_table(args.table_n, args.table_d, 16, args.epsilon, rng, args.repeats)
    with contextlib.ExitStack() as stack:
        try:
            shim = stack.enter_context(xxhash_shim())
        except ImportError:
            shim = {"applied": False}
        references = {library: reference(library, values, args, rng) for library in LIBRARIES}
    return {
        "config": config,
        "machine": machine(),
        "versions": versions(),
        "dp2pub": ours,
        "checks": checks,
        "grr_table": table,
        "references": references,
        "xxhash_shim": shim,
        "ratios": ratios(ours, references, args.n, shim_seconds(shim, args.k)),
    }


def main(argv: list[str] | None = None) -> Result:
    """Run the benchmark (print its table, write its JSON), or with ``--render`` print a
    results file's block."""
    p = parser()
    args = p.parse_args(argv)
    if args.render:
        return print_rendering(args.render, render)
    result = run(args, configuration(args, p))
    print(render(result))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return result
