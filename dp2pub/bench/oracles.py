"""Frequency-oracle throughput: dp2pub against pure-ldp and multi-freq-ldpy, same run.

For each oracle, one column of n users (domain k) is perturbed and estimated (unbiased); the
rate is users per second (for GRR on a table, user-attribute reports per second). When the
optional ``bench`` extra is installed, the same work is timed with pure-ldp and
multi-freq-ldpy; their per-user Python loops are timed on ``reference_n`` users and compared
as rates (both rates are per user, so the ratio does not depend on n). Results are printed
and written to ``outputs/bench/oracles.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dp2pub.data import make_synthetic
from dp2pub.mechanisms import GRR, OLH, OUE, RAPPOR, SUE, FrequencyOracle
from dp2pub.publish import GRRPublisher


def attempt(work: Callable[[], object], units: int) -> float | str:
    """A reference library's rate, or why it could not be measured (its own bug, say)."""
    try:
        return rate(work, units, 1)
    except Exception as error:  # a reference's failure is reported, not fatal
        return f"failed: {type(error).__name__}: {error}"


def rate(work: Callable[[], object], units: int, repeats: int = 3) -> float:
    """Best-of-``repeats`` units per second of ``work``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return units / best


def ours(n: int, k: int, epsilon: float, rng: np.random.Generator) -> dict[str, float]:
    values = rng.integers(0, k, size=n)
    oracles = {
        "grr": GRR(epsilon=epsilon, k=k),
        "sue": SUE(epsilon=epsilon, k=k),
        "oue": OUE(epsilon=epsilon, k=k),
        "olh": OLH(epsilon=epsilon, k=k),
        "rappor": RAPPOR(epsilon=epsilon, k=k, num_bits=2 * k, num_hashes=2),
    }
    rates = {}
    for name, oracle in oracles.items():
        rates[name] = rate(functools.partial(round_trip, oracle, values, rng), n)
    return rates


def round_trip(oracle: FrequencyOracle, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The unbiased estimate of ``oracle``'s reports of ``values``."""
    return oracle.estimate(oracle.perturb(values, rng), "unbiased")


def grr_table_rate(n: int, d: int, k: int, epsilon: float, rng: np.random.Generator) -> tuple[float, float]:
    """User-attribute reports per second of the grr publisher on an n x d table (perturb only,
    and perturb + every 1-way unbiased estimate)."""
    data = make_synthetic(n=n, d=d, k_min=k, k_max=k, rng=rng)
    publisher = GRRPublisher()
    perturb = rate(lambda: publisher.publish(data, epsilon, rng), n * d)

    def both() -> None:
        release = publisher.publish(data, epsilon, rng).release
        for j in range(d):
            release.marginal((j,))

    return perturb, rate(both, n * d)


def pure_ldp_rates(n: int, k: int, epsilon: float) -> dict[str, float | str]:
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

    values = np.random.default_rng(0).integers(1, k + 1, size=n).tolist()

    def run(client, server) -> None:
        for v in values:
            server.aggregate(client.privatise(v))
        server.estimate(1, suppress_warnings=True)

    return {
        "grr": attempt(lambda: run(DEClient(epsilon, k), DEServer(epsilon, k)), n),
        "oue": attempt(lambda: run(UEClient(epsilon, k, use_oue=True), UEServer(epsilon, k, use_oue=True)), n),
        "sue": attempt(lambda: run(UEClient(epsilon, k), UEServer(epsilon, k)), n),
        "olh": attempt(lambda: run(LHClient(epsilon, k, use_olh=True), LHServer(epsilon, k, use_olh=True)), n),
    }


def multi_freq_rates(n: int, k: int, epsilon: float) -> dict[str, float | str]:
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client
    from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_MI, LH_Client
    from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client

    values = np.random.default_rng(0).integers(0, k, size=n)
    return {
        "grr": attempt(lambda: GRR_Aggregator_MI([GRR_Client(v, k, epsilon) for v in values], k, epsilon), n),
        "oue": attempt(lambda: UE_Aggregator_MI([UE_Client(v, k, epsilon, True) for v in values], epsilon, True), n),
        "sue": attempt(lambda: UE_Aggregator_MI([UE_Client(v, k, epsilon, False) for v in values], epsilon, False), n),
        "olh": attempt(lambda: LH_Aggregator_MI([LH_Client(v, k, epsilon, True) for v in values], k, epsilon, True), n),
    }


def reference(fn: Callable[..., dict], *args) -> dict | str:
    try:
        return fn(*args)
    except ImportError as error:
        return f"not installed ({error.name}); pip install -e '.[bench]'"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m dp2pub.bench oracles", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="users per oracle (default 1e6)")
    parser.add_argument("--k", type=int, default=128, help="domain size (default 128)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--table-n", type=int, default=2_000_000, help="users of the GRR table run")
    parser.add_argument("--table-d", type=int, default=10)
    parser.add_argument("--reference-n", type=int, default=20_000, help="users timed per reference library")
    parser.add_argument("--out", default="outputs/bench/oracles.json")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    mine = ours(args.n, args.k, args.epsilon, rng)
    table_perturb, table_total = grr_table_rate(args.table_n, args.table_d, 16, args.epsilon, rng)
    refs = {
        "pure-ldp": reference(pure_ldp_rates, args.reference_n, args.k, args.epsilon),
        "multi-freq-ldpy": reference(multi_freq_rates, args.reference_n, args.k, args.epsilon),
    }

    print(f"frequency oracles: perturb + unbiased estimate, n={args.n}, k={args.k}, epsilon={args.epsilon}")
    print(f"{'oracle':<8} {'dp2pub users/s':>15} " + " ".join(f"{f'x {r}':>18}" for r in refs))
    for name, value in mine.items():
        cells = []
        for ref in refs.values():
            other = ref.get(name) if isinstance(ref, dict) else None
            cells.append(f"{value / other:>18.1f}" if isinstance(other, float) else f"{'-':>18}")
        print(f"{name:<8} {value:>15.3g} " + " ".join(cells))
    print(
        f"grr table n={args.table_n} d={args.table_d} k=16: {table_perturb:.3g} user-attribute reports/s "
        f"(perturb), {table_total:.3g} (perturb + all 1-way estimates)"
    )
    for ref, outcome in refs.items():
        if isinstance(outcome, str):
            print(f"{ref}: {outcome}")
        else:
            print(
                f"{ref} users/s (n={args.reference_n}): "
                + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in outcome.items())
            )

    result = {
        "config": vars(args),
        "machine": {
            "python": platform.python_version(),
            "processor": platform.processor(),
            "cpus": os.cpu_count(),
            "numpy": np.__version__,
        },
        "dp2pub_users_per_s": mine,
        "grr_table_reports_per_s": {"perturb": table_perturb, "perturb_and_estimate": table_total},
        "references_users_per_s": refs,
        "ratios": {
            ref: {name: mine[name] / x for name, x in v.items() if isinstance(x, float)}
            for ref, v in refs.items()
            if isinstance(v, dict)
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    return result
