"""k-way TVD metrics over all attribute subsets: batched counting against per-subset references.

On the PrivBayes tables (acs: all 4-way and 3-way marginals; br2000 and adult: all 3-way and
2-way), a table published by PRAM (:class:`dp2pub.publish.PRAMPublisher`) is compared with
the original as ``evaluate_marginals`` does with ``metrics.max_subsets=null``: the joint
marginals of every subset in both tables and their TVDs. Timed, in one process:

- ``batched``: :func:`dp2pub.metrics.subset_tvds` with the release's ``marginals`` (subsets
  that share all but their last attribute counted in one ``bincount``), ``--repeat`` runs;
- ``per subset``: the previous evaluation loop, one ``marginal_counts`` and one
  ``release.marginal`` per subset, on all subsets;
- ``np.unique``: each subset's rows counted with ``np.unique(rows, axis=0, return_counts=True)``
  in both tables, timed on ``--reference-subsets`` evenly spaced subsets and extrapolated to
  all of them.

The TVDs must agree: bit for bit with the per-subset loop, to 1e-12 with ``np.unique``. The
target is under 5 s per run for acs's 8,855 4-way marginals. Results are printed and written
to ``outputs/bench/metrics.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from dp2pub.data import Dataset, load_privbayes, marginal_counts
from dp2pub.metrics import subset_tvds, tvd
from dp2pub.publish import PRAMPublisher, TableRelease

#: (table, way) of each case, in order.
CASES = [("acs", 4), ("acs", 3), ("br2000", 3), ("br2000", 2), ("adult", 3), ("adult", 2)]
TARGET_S = 5.0
TOLERANCE = 1e-12


def timed(work: Callable[[], np.ndarray]) -> tuple[float, float, np.ndarray]:
    """Wall and CPU seconds of ``work()`` and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def unique_marginal(data: Dataset, cols: tuple[int, ...]) -> np.ndarray:
    """Frequencies of the joint marginal of ``cols`` (flat, C order) by ``np.unique`` over rows."""
    shape = [int(data.domain.sizes[j]) for j in cols]
    values, counts = np.unique(data.codes[:, list(cols)], axis=0, return_counts=True)
    out = np.zeros(math.prod(shape))
    out[np.ravel_multi_index(tuple(values.T), shape)] = counts
    return out / data.n


def unique_tvds(original: Dataset, published: Dataset, subsets: Sequence[tuple[int, ...]]) -> np.ndarray:
    """The reference: each subset's TVD from two ``np.unique`` marginals."""
    return np.array([0.5 * np.abs(unique_marginal(original, c) - unique_marginal(published, c)).sum() for c in subsets])


def per_subset_tvds(original: Dataset, release: TableRelease, subsets: Sequence[tuple[int, ...]]) -> np.ndarray:
    """The previous evaluation loop: one ``marginal_counts`` and one ``release.marginal`` per subset."""
    sizes = original.domain.sizes
    return np.array(
        [
            tvd(marginal_counts(original.codes[:, list(c)], sizes[list(c)]) / original.n, release.marginal(c))
            for c in subsets
        ]
    )


def compare(original: Dataset, release: TableRelease, way: int, repeat: int = 1, reference_subsets: int = 50) -> dict:
    """Times and agreement of the three ways to compute every ``way``-subset's TVD."""
    subsets = list(itertools.combinations(range(original.d), way))
    runs = [timed(lambda: subset_tvds(original, subsets, release.marginals)) for _ in range(repeat)]
    batched = runs[0][2]
    old_s, _, old = timed(lambda: per_subset_tvds(original, release, subsets))
    sample = subsets[:: max(1, len(subsets) // reference_subsets)][:reference_subsets]
    positions = [subsets.index(c) for c in sample]
    ref_s, _, ref = timed(lambda: unique_tvds(original, release.table, sample))
    walls = sorted(wall for wall, _, _ in runs)
    return {
        "subsets": len(subsets),
        "batched_s": walls[len(walls) // 2],
        "batched_slowest_s": walls[-1],
        "batched_cpu_s": max(cpu for _, cpu, _ in runs),
        "per_subset_s": old_s,
        "unique_s": ref_s * len(subsets) / len(sample),
        "unique_measured_subsets": len(sample),
        "same_as_per_subset": bool(np.array_equal(batched, old)) and all(np.array_equal(batched, r[2]) for r in runs),
        "max_diff_unique": float(np.abs(batched[positions] - ref).max()),
        f"tvd_{way}way": float(np.mean(batched)),
    }


def published(data: Dataset, epsilon: float, seed: int) -> TableRelease:
    """The table PRAM publishes from ``data`` (a plain TableRelease)."""
    release = PRAMPublisher().publish(data, epsilon, np.random.default_rng(seed)).release
    assert isinstance(release, TableRelease)
    return release


HEADER = (
    f"{'table':>7} {'k':>2} {'subsets':>8} {'median':>8} {'slowest':>8} {'per subset':>11} {'np.unique*':>11} "
    f"{'x per subset':>13} {'x unique':>9} {'bit-equal':>10} {'max |diff| unique':>18}"
)


def line(row: dict) -> str:
    """One case as a row under :data:`HEADER`."""
    return (
        f"{row['table']:>7} {row['way']:>2} {row['subsets']:>8,} {row['batched_s']:>8.3f} "
        f"{row['batched_slowest_s']:>8.3f} {row['per_subset_s']:>11.3f} {row['unique_s']:>11.2f} "
        f"{row['per_subset_s'] / row['batched_s']:>13.1f} {row['unique_s'] / row['batched_s']:>9.0f} "
        f"{row['same_as_per_subset']!s:>10} {row['max_diff_unique']:>18.1e}"
    )


def verdict(rows: list[dict], repeat: int) -> bool | None:
    """Print whether acs's 4-way case ran under :data:`TARGET_S` in every run (None: not run)."""
    for row in rows:
        if (row["table"], row["way"]) == ("acs", 4):
            ok = bool(row["batched_slowest_s"] < TARGET_S)
            print(
                f"verdict: acs, all {row['subsets']:,} 4-way marginals of both tables and their TVDs: "
                f"{row['batched_slowest_s']:.2f} s in the slowest of {repeat} runs ({row['batched_cpu_s']:.2f} CPU s), "
                f"{'under' if ok else 'OVER'} the {TARGET_S:g} s target"
            )
            return ok
    return None


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m dp2pub.bench metrics", description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=["acs", "br2000", "adult"], choices=["acs", "br2000", "adult"])
    parser.add_argument("--epsilon", type=float, default=1.0, help="PRAM's budget (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="runs of the batched path (median reported)")
    parser.add_argument("--reference-subsets", type=int, default=50, help="subsets np.unique is timed on")
    parser.add_argument("--data-dir", default=None, help="directory holding privbayes/ (default: the packaged one)")
    parser.add_argument("--out", default="outputs/bench/metrics.json")
    args = parser.parse_args(argv)

    print(f"all k-way TVDs, original vs PRAM table (epsilon={args.epsilon}), one process; seconds per run")
    print(
        f"batched: median and slowest of {args.repeat} runs; per subset: the previous loop; x: its time / batched median"
    )
    print(HEADER)
    rows = []
    for table, way in [case for case in CASES if case[0] in args.tables]:
        data = load_privbayes(table, args.data_dir)
        release = published(data, args.epsilon, args.seed)
        rows.append({"table": table, "way": way, **compare(data, release, way, args.repeat, args.reference_subsets)})
        print(line(rows[-1]))
    print(
        f"* np.unique timed on {args.reference_subsets} evenly spaced subsets per case (all when fewer), extrapolated"
    )
    agree = all(r["same_as_per_subset"] and r["max_diff_unique"] <= TOLERANCE for r in rows)
    print(f"agreement: {'TVDs equal the per-subset loop bit for bit, np.unique to 1e-12' if agree else 'DISAGREE'}")
    machine = {"python": platform.python_version(), "processor": platform.processor(), "cpus": os.cpu_count()}
    result = {
        "config": vars(args),
        "machine": {**machine, "numpy": np.__version__},
        "cases": rows,
        "agree": agree,
        "under_target": verdict(rows, args.repeat),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
