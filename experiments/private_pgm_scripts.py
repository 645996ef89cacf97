"""dp2pub's MST and AIM against private-pgm's own scripts, on the same small table.

The published mechanisms are private-pgm's ``mechanisms/mst.py`` and ``mechanisms/aim.py``
(McKenna et al.; they run on its ``mbi`` package, 1.1.0, the extra ``pgm``). They draw their
noise from ``np.random`` and sample with ``mbi``'s ``synthetic_data``, so no seed makes their
tables and ours the same; what must agree is the error, seed for seed in distribution. For
each seed this prints the 3-way AVD of dp2pub's published table and, for the script, of its
fitted model's own marginals and of the table it samples (the latter loses the model's
dependence: tests/synthesis/test_pgm.py), and first the error of n records drawn i.i.d. from
the table itself: the floor that dp2pub's i.i.d. sample of its model adds to the model's
error (the scripts' ``synthetic_data`` rounds the model's counts instead).

Usage (a private-pgm checkout, and the extra ``pgm``)::

    python experiments/private_pgm_scripts.py PATH/TO/private-pgm --mechanism mst --seeds 5
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import math
import os
import sys
import time

import numpy as np
import pandas as pd
from scipy import stats

from dp2pub import load_privbayes
from dp2pub.data.dataset import Dataset
from dp2pub.data.domain import Domain
from dp2pub.data.marginals import marginal_counts
from dp2pub.metrics.distances import tvd
from dp2pub.publish.aim import AIMPublisher
from dp2pub.publish.mst import MSTPublisher


def avd(truth: np.ndarray, answer, sizes, triples) -> float:
    """Mean TVD over ``triples`` between the table ``truth`` and ``answer(columns)`` (a distribution)."""
    total = []
    for columns in triples:
        shape = [sizes[a] for a in columns]
        exact = marginal_counts(truth[:, list(columns)], shape).ravel() / truth.shape[0]
        total.append(tvd(exact, answer(columns)))
    return float(np.mean(total))


def table_answer(codes: np.ndarray, sizes):
    return lambda columns: marginal_counts(codes[:, list(columns)], [sizes[a] for a in columns]).ravel() / len(codes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("private_pgm", help="a checkout of github.com/ryan112358/private-pgm")
    parser.add_argument("--mechanism", choices=["mst", "aim"], default="mst")
    parser.add_argument("--table", default="nltcs", help="a PrivBayes table (default nltcs)")
    parser.add_argument("--columns", type=int, default=6, help="its first columns kept (default 6)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, os.path.join(args.private_pgm, "mechanisms"))
    import mbi

    captured = []
    original = mbi.MarkovRandomField.synthetic_data

    def capture(self, *a, **k):
        captured.append(self)
        return original(self, *a, **k)

    mbi.MarkovRandomField.synthetic_data = capture

    full = load_privbayes(args.table)
    codes = np.ascontiguousarray(full.codes[:, : args.columns]).astype(np.int64)
    domain = Domain(full.domain.names[: args.columns], full.domain.labels[: args.columns])
    data = Dataset(codes, domain, name=args.table)
    sizes = [int(k) for k in data.domain.sizes]
    names = [str(a) for a in range(len(sizes))]
    theirs_data = mbi.Dataset(pd.DataFrame(codes, columns=names), mbi.Domain(names, sizes))
    triples = list(itertools.combinations(range(len(sizes)), min(3, len(sizes))))
    print(
        f"{args.table}, first {len(sizes)} columns {sizes}, n={len(codes)}, epsilon={args.epsilon}, delta={args.delta}"
    )
    boot = np.random.default_rng(12345)
    draws = [codes[boot.integers(len(codes), size=len(codes))] for _ in range(20)]
    floor = np.mean([avd(codes, table_answer(drawn, sizes), sizes, triples) for drawn in draws])
    print(f"sampling floor: n records drawn i.i.d. from the table itself, 3-way AVD {floor:.4f} (20 draws)")

    rows = []
    for seed in range(args.seeds):
        np.random.seed(seed)
        captured.clear()
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # the scripts print every round
            if args.mechanism == "mst":
                import mst

                synth = mst.MST(theirs_data, args.epsilon, args.delta)
                ours_publisher = MSTPublisher(delta=args.delta)
            else:
                import aim

                workload = [(w, 1.0) for w in itertools.combinations(names, min(3, len(names)))]
                _, synth = aim.AIM(args.epsilon, args.delta).run(theirs_data, workload)
                ours_publisher = AIMPublisher(delta=args.delta)
        theirs_s = time.perf_counter() - start
        model = captured[-1]
        their_codes = np.stack([np.asarray(synth.df[c]) for c in names], axis=1).astype(np.int64)

        def model_answer(columns, model=model):
            table = np.asarray(model.project(tuple(names[a] for a in columns)).datavector())
            return np.clip(table, 0, None) / max(np.clip(table, 0, None).sum(), 1e-300)

        start = time.perf_counter()
        outcome = ours_publisher.publish(data, args.epsilon, np.random.default_rng(seed))
        ours_s = time.perf_counter() - start
        row = (
            avd(codes, table_answer(outcome.published.codes.astype(np.int64), sizes), sizes, triples),
            avd(codes, model_answer, sizes, triples),
            avd(codes, table_answer(their_codes, sizes), sizes, triples),
        )
        rows.append(row)
        print(
            f"seed {seed}: dp2pub table {row[0]:.4f} ({ours_s:.1f} s)   script's model {row[1]:.4f}, "
            f"its table {row[2]:.4f} ({theirs_s:.1f} s)",
            flush=True,
        )
    values = np.array(rows)
    half = (
        stats.t.ppf(0.975, len(values) - 1) * values.std(axis=0, ddof=1) / math.sqrt(len(values))
        if len(values) > 1
        else np.zeros(values.shape[1])
    )
    for label, mean, h in zip(["dp2pub table", "script's model", "script's table"], values.mean(axis=0), half):
        print(f"{label:15s} 3-way AVD {mean:.4f} ± {h:.4f} (95% t, {len(values)} seeds)")


if __name__ == "__main__":
    main()
