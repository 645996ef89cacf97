"""Structure learning: dp2pub's GreedyBayes against DataSynthesizer's, on the uniform and Bayesian-network tables.

dp2pub's learner (:func:`dp2pub.structure.bayes_net.greedy_bayes`, PrivBayes Algorithm 4, Zhang et al.
SIGMOD 2014) is timed on uniform synthetic tables (``make_synthetic``: n records, d
attributes, domains drawn from [k_min, k_max]) of each requested d, degree k, one process.
When the optional package DataSynthesizer is importable, its ``greedy_bayes`` (non-private:
epsilon=0; strings, sklearn's mutual_info_score per candidate, a process pool over all
cores) is timed on the ``reference_d`` table; dp2pub is run again from the same root, and the
two networks' total mutual information sum_X I(X; Pa(X)) is computed with dp2pub's entropy
code for both. Results are printed and written to ``outputs/bench/structure.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from dp2pub.data import Dataset, make_synthetic
from dp2pub.structure import BayesianNetwork, greedy_bayes, total_mutual_information


def table(n: int, d: int, k_min: int, k_max: int, seed: int) -> Dataset:
    """The benchmark table of dimension ``d`` (its own generator, spawned from ``seed``)."""
    return make_synthetic(n=n, d=d, k_min=k_min, k_max=k_max, rng=np.random.default_rng([seed, d]))


def time_ours(data: Dataset, degree: int, root: int) -> tuple[float, BayesianNetwork]:
    """Wall time (s) of dp2pub's GreedyBayes and the network it learned."""
    start = time.perf_counter()
    network = greedy_bayes(data, degree, root=root)
    return time.perf_counter() - start, network


def time_datasynthesizer(data: Dataset, degree: int, seed: int) -> dict:
    """DataSynthesizer's non-private greedy_bayes on ``data``, or why it could not run.

    DataSynthesizer draws the root itself (``random.choice`` after seeding with ``seed``); the
    root is read back from its first (child, [root]) pair.
    """
    try:
        from DataSynthesizer.lib.PrivBayes import greedy_bayes as ds_greedy_bayes
    except Exception as error:  # not installed, or broken on this Python
        return {"status": f"not available ({type(error).__name__}: {error}); pip install DataSynthesizer"}
    frame = data.to_frame().astype(str)
    names = list(frame.columns)
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints every step
            pairs = ds_greedy_bayes(frame, degree, 0, seed=seed)
    except Exception as error:
        return {"status": f"failed: {type(error).__name__}: {error}"}
    seconds = time.perf_counter() - start
    network = BayesianNetwork.from_pairs(
        (names.index(child), [names.index(p) for p in parents]) for child, parents in pairs
    )
    return {"status": "ok", "seconds": seconds, "network": network, "processes": os.cpu_count()}


def network_json(network: BayesianNetwork) -> list[list]:
    """``[[child, [parents]], ...]`` in order."""
    return [[x, list(ps)] for x, ps in network.pairs()]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m dp2pub.bench structure", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="records (default 10000)")
    parser.add_argument("--d", type=int, nargs="+", default=[10, 20, 50], help="attribute counts timed")
    parser.add_argument("--k-min", type=int, default=100)
    parser.add_argument("--k-max", type=int, default=150)
    parser.add_argument("--degree", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference-d", type=int, default=10, help="d of the DataSynthesizer run")
    parser.add_argument("--no-reference", action="store_true", help="skip DataSynthesizer")
    parser.add_argument("--out", default="outputs/bench/structure.json")
    args = parser.parse_args(argv)

    rows = []
    print(
        f"GreedyBayes (PrivBayes Alg. 4), n={args.n}, domains {args.k_min}-{args.k_max}, "
        f"degree {args.degree}, one process"
    )
    print(f"{'d':>4} {'dp2pub s':>10} {'total MI (nats)':>16}")
    for d in args.d:
        data = table(args.n, d, args.k_min, args.k_max, args.seed)
        seconds, network = time_ours(data, args.degree, root=0)
        total = total_mutual_information(network, data)
        rows.append({"d": d, "seconds": seconds, "total_mi": total, "root": 0, "network": network_json(network)})
        print(f"{d:>4} {seconds:>10.2f} {total:>16.6f}")

    reference: dict = {"status": "skipped (--no-reference)"}
    if not args.no_reference:
        data = table(args.n, args.reference_d, args.k_min, args.k_max, args.seed)
        reference = time_datasynthesizer(data, args.degree, args.seed)
        if reference["status"] == "ok":
            theirs: BayesianNetwork = reference.pop("network")
            seconds, ours = time_ours(data, args.degree, root=theirs.root)
            ours_mi, theirs_mi = total_mutual_information(ours, data), total_mutual_information(theirs, data)
            reference.update(
                d=args.reference_d,
                root=theirs.root,
                network=network_json(theirs),
                total_mi=theirs_mi,
                dp2pub_seconds=seconds,
                dp2pub_total_mi=ours_mi,
                dp2pub_network=network_json(ours),
                same_network=ours == theirs,
                equal_total_mi=bool(abs(ours_mi - theirs_mi) <= 1e-9),
                speedup=reference["seconds"] / seconds,
            )
            print(
                f"DataSynthesizer greedy_bayes (epsilon=0, {reference['processes']} processes), "
                f"d={args.reference_d}, root {theirs.root}: {reference['seconds']:.2f} s, "
                f"total MI {theirs_mi:.6f}; dp2pub from the same root: {seconds:.3f} s, "
                f"total MI {ours_mi:.6f} (x{reference['speedup']:.0f} faster); "
                f"same network: {reference['same_network']}, equal total MI: {reference['equal_total_mi']}"
            )
        else:
            print(f"DataSynthesizer: {reference['status']}")

    result = {
        "config": vars(args),
        "machine": {
            "python": platform.python_version(),
            "processor": platform.processor(),
            "cpus": os.cpu_count(),
            "numpy": np.__version__,
        },
        "dp2pub": rows,
        "datasynthesizer": reference,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
