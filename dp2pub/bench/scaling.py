"""How whole jobs scale: wall time and peak memory against users n and attributes d.

Every point is one whole job (:func:`dp2pub.job.run_job`: the data, the publication and the
1-way metrics) in a fresh Python process (:func:`dp2pub.bench.memory.peak_of`), which reports
the job's ``time_total_s`` and its peak resident memory; the job's own memory is that peak
minus the peak of a process that only imports dp2pub. Cases: GRR, OUE, PRAM and DP2-Pub on
records, and GRR and OUE with ``simulate=aggregates`` (the report counts drawn from their exact
distribution, so n goes to 10^9). Against n at fixed d, and against d at fixed n.

The exponent of a curve is the least-squares slope of log(time) or log(memory) on log(n) (or
log(d)) over its points from :data:`FIT_FROM` on, where the fixed costs of a job (imports
aside: config checks, building the oracles, the metrics' tables) no longer dominate: about 1
for work linear in n, about 0 for the aggregate path. Results are printed, written to
``outputs/bench/scaling.json`` and drawn in ``outputs/bench/scaling.png`` (``--gallery``
also copies it to ``docs/figures/scaling.png``).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
from collections.abc import Sequence
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from dp2pub.bench.memory import peak_of
from dp2pub.bench.timing import Result
from dp2pub.figures import style

#: Each case: its mechanism config (1-way metrics, no classifiers).
CASES: dict[str, dict] = {
    "grr": {"name": "grr", "estimator": "unbiased"},
    "oue": {"name": "oue", "estimator": "unbiased"},
    "pram": {"name": "pram"},
    "dp2pub": {"name": "dp2pub"},
    "grr_aggregates": {"name": "grr", "estimator": "unbiased", "simulate": "aggregates"},
    "oue_aggregates": {"name": "oue", "estimator": "unbiased", "simulate": "aggregates"},
}
#: Fits use the points with n (or d) at least this.
FIT_FROM = {"n": 1_000_000, "d": 6}
#: Only the aggregate path goes beyond 10^7 users.
RECORDS_MAX_N = 10_000_000
FIGURE = "outputs/bench/scaling.png"
GALLERY = "docs/figures/scaling.png"


def job_config(mechanism: dict, n: int, d: int, k: int) -> dict:
    """The plain config of one job: ``n`` users, ``d`` uniform attributes of ``k`` values."""
    return {
        "epsilon": 1.0,
        "seed": 0,
        "mechanism": mechanism,
        "dataset": {"name": "synthetic", "n": n, "d": d, "k_min": k, "k_max": k},
        "metrics": {"ways": [1], "max_subsets": 45, "models": []},
    }


def measure(mechanism: dict, n: int, d: int, k: int, idle_gib: float) -> Result:
    """One job's wall time (``time_total_s``) and own peak memory (above ``idle_gib``)."""
    peak, metrics = peak_of(job_config(mechanism, n, d, k))
    return {"n": n, "d": d, "seconds": metrics["time_total_s"], "memory_gib": max(peak - idle_gib, 0.0)}


def exponent(xs: Sequence[float], ys: Sequence[float], start: float) -> float | None:
    """The least-squares slope of log y on log x over the points with ``x >= start`` (None
    with fewer than two, or a non-positive y)."""
    pairs = [(x, y) for x, y in zip(xs, ys) if x >= start]
    if len(pairs) < 2 or min(y for _, y in pairs) <= 0:
        return None
    x, y = np.log(np.array(pairs, dtype=float)).T
    return float(np.polyfit(x, y, 1)[0])


def curve(points: list[Result], axis: str) -> Result:
    """The points of one case along ``axis`` (``n`` or ``d``) and their fitted exponents."""
    xs = [p[axis] for p in points]
    return {
        "points": points,
        "time_exponent": exponent(xs, [p["seconds"] for p in points], FIT_FROM[axis]),
        "memory_exponent": exponent(xs, [p["memory_gib"] for p in points], FIT_FROM[axis]),
    }


def sweep(args: argparse.Namespace, idle: float) -> Result:
    """Every case against n (at ``args.d``) and against d (at ``args.d_n``)."""
    results: Result = {"n": {}, "d": {}}
    for name in args.cases:
        mechanism = CASES[name]
        largest = None if mechanism.get("simulate") == "aggregates" else RECORDS_MAX_N
        ns = [n for n in args.ns if largest is None or n <= largest]
        by_n = [measure(mechanism, n, args.d, args.k, idle) for n in ns]
        results["n"][name] = curve(by_n, "n")
        by_d = [measure(mechanism, args.d_n, d, args.k, idle) for d in args.ds]
        results["d"][name] = curve(by_d, "d")
        for axis in ("n", "d"):
            fitted = results[axis][name]
            print(
                f"{name:<15} vs {axis}: "
                + ", ".join(
                    f"{p[axis]:,} {p['seconds']:.3g} s {p['memory_gib'] * 1024:.0f} MiB" for p in fitted["points"]
                )
                + f"; exponents time {fmt(fitted['time_exponent'])}, memory {fmt(fitted['memory_exponent'])}"
            )
    return results


def fmt(value: float | None) -> str:
    """An exponent, or '-' when it could not be fitted."""
    return "-" if value is None else f"{value:.2f}"


def draw(results: Result, path: Path) -> None:
    """Four log-log panels: time and memory against n and against d, a line per case."""
    with mpl.rc_context(style.RC):
        fig, axes = plt.subplots(2, 2, figsize=(8, 6.2), constrained_layout=True)
        for column, axis in enumerate(("n", "d")):
            for row, (key, unit) in enumerate(
                (("seconds", "wall time of the job (s)"), ("memory_gib", "peak memory above idle (GiB)"))
            ):
                ax = axes[row, column]
                for name, fitted in results[axis].items():
                    points = [p for p in fitted["points"] if p[key] > 0]
                    aggregates = name.endswith("_aggregates")
                    base = name.removesuffix("_aggregates")
                    exp = fitted["time_exponent" if key == "seconds" else "memory_exponent"]
                    ax.plot(
                        [p[axis] for p in points],
                        [p[key] for p in points],
                        marker="o",
                        linestyle="--" if aggregates else "-",
                        color=style.colour(base),
                        label=f"{style.label(base)}{' aggregates' if aggregates else ''} (slope {fmt(exp)})",
                    )
                ax.set_xscale("log")
                ax.set_yscale("log")
                if axis == "d":  # a few attribute counts: name them
                    ds = sorted({p["d"] for fitted in results["d"].values() for p in fitted["points"]})
                    ax.set_xticks(ds, [str(d) for d in ds])
                    ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
                ax.set_xlabel("users n" if axis == "n" else "attributes d")
                ax.set_ylabel(unit)
                ax.legend(fontsize=6)
        fig.suptitle(
            f"Whole jobs (1-way metrics), k = {results['k']}: against n at d = {results['d_fixed']}, "
            f"against d at n = {results['n_fixed']:,}"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=style.DPI, metadata=style.METADATA["png"])
        plt.close(fig)


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m dp2pub.bench scaling``."""
    p = argparse.ArgumentParser(prog="python -m dp2pub.bench scaling", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--ns", type=int, nargs="+", default=[10**e for e in range(4, 10)], help="users (records up to 1e7)")
    p.add_argument("--d", type=int, default=5, help="attributes of the n sweep (default 5)")
    p.add_argument(
        "--ds", type=int, nargs="+", default=[3, 6, 12, 24], help="attributes of the d sweep (DP2-Pub needs 3 or more)"
    )
    p.add_argument("--d-n", type=int, default=100_000, help="users of the d sweep (default 1e5)")
    p.add_argument("--k", type=int, default=8, help="values of every attribute (default 8)")
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--out", default="outputs/bench/scaling.json")
    p.add_argument("--figure", default=FIGURE)
    p.add_argument("--gallery", action="store_true", help=f"also copy the figure to {GALLERY}")
    return p


def main(argv: list[str] | None = None) -> Result:
    """Run the sweep, print and write the results and draw the figure."""
    args = parser().parse_args(argv)
    idle, _ = peak_of({})
    results: Result = {
        "k": args.k,
        "d_fixed": args.d,
        "n_fixed": args.d_n,
        "idle_peak_gib": idle,
        "fit_from": FIT_FROM,
        "python": platform.python_version(),
        "numpy": np.__version__,
        **sweep(args, idle),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    draw(results, Path(args.figure))
    if args.gallery:
        shutil.copyfile(args.figure, GALLERY)
    print(f"wrote {out} and {args.figure}")
    return results
