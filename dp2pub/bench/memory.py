"""Peak memory of a whole job on a large table: n = 10^7 users x d = 10 attributes.

Each case runs :func:`dp2pub.job.run_job` (data generation, perturbation, estimation and the
marginal metrics) in a fresh Python process, which reports its own peak resident set size
when the job is done (Linux: ``VmHWM`` of ``/proc/self/status``, since ``ru_maxrss`` keeps
the launching process's peak across fork and exec; elsewhere ``ru_maxrss``); the peak of a
process that only imports dp2pub is measured the same way, as the reference. The target is a peak
under 2 GiB for GRR. Results are printed and written to ``outputs/bench/memory.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

#: Each case: mechanism config and metric ways.
CASES = {
    "grr": ({"name": "grr", "estimator": "unbiased", "strategy": "split"}, [1, 2]),
    "oue": ({"name": "oue", "estimator": "unbiased", "strategy": "split"}, [1]),
}
LIMIT_GIB = 2.0

CHILD = """
import json, resource, sys
from dp2pub.job import run_job
cfg = json.loads(sys.argv[1])
metrics = run_job(cfg).metrics if cfg else {}
report = {k: v for k, v in metrics.items() if k.startswith(("time_", "tvd_1way"))}
try:  # this process's own peak (ru_maxrss would include the parent's)
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
except (OSError, StopIteration):  # not Linux: ru_maxrss, in bytes on macOS, KiB elsewhere
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // (1024 if sys.platform == "darwin" else 1)
print(json.dumps({"peak_kib": peak, **report}))
"""


def peak_of(cfg: dict) -> tuple[float, dict]:
    """Peak RSS in GiB of a fresh process that runs ``run_job(cfg)`` (``{}``: imports only),
    and the job's timing metrics."""
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the job {json.dumps(cfg)} failed: {done.stderr.strip().splitlines()[-1:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report.pop("peak_kib") / 2**20, report


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m dp2pub.bench memory", description=__doc__)
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--cases", nargs="+", default=["grr"], choices=sorted(CASES))
    parser.add_argument("--out", default="outputs/bench/memory.json")
    args = parser.parse_args(argv)

    idle, _ = peak_of({})
    results = {
        "n": args.n,
        "d": args.d,
        "k": args.k,
        "idle_peak_gib": idle,
        "limit_gib": LIMIT_GIB,
        "python": platform.python_version(),
        "cases": {},
    }
    print(f"idle process (imports only): peak {idle:.3f} GiB")
    for name in args.cases:
        mechanism, ways = CASES[name]
        cfg = {
            "epsilon": 1.0,
            "seed": 0,
            "mechanism": mechanism,
            "dataset": {"name": "synthetic", "n": args.n, "d": args.d, "k_min": args.k, "k_max": args.k},
            "metrics": {"ways": ways, "max_subsets": 45, "models": []},
        }
        peak, metrics = peak_of(cfg)
        results["cases"][name] = {"peak_gib": peak, "ways": ways, "under_limit": peak < LIMIT_GIB, **metrics}
        print(
            f"{name}: n={args.n:,} x d={args.d}, k={args.k}, ways {ways}: peak {peak:.3f} GiB "
            f"({peak / idle:.1f} x idle; limit {LIMIT_GIB} GiB) time_total {metrics.get('time_total_s', float('nan')):.1f} s"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    return results
