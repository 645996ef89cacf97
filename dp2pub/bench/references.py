"""The reference libraries of the oracle benchmark, pure-ldp and multi-freq-ldpy: their
oracles as functions of the values, timed after a warm-up, and checked on a skewed
distribution.

Both references' OLH hash a value with ``xxhash.xxh32(str(value), seed=seed)``, which
xxhash 4 rejects (``TypeError: Strings must be encoded before hashing``); xxhash 3 encoded
the string as UTF-8 itself. While the references run, the name ``xxhash`` in their OLH
modules is a shim that does that encoding (:func:`utf8_xxhash`), so their OLH is timed as
written; :func:`shim_overhead_ns` measures what it costs a hash.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np

from dp2pub.bench.timing import Result, summary, timings, warmed
from dp2pub.mechanisms import RAPPOR

#: dp2pub's oracles, in table order; the references implement all but RAPPOR.
ORACLES = ("grr", "sue", "oue", "olh", "rappor")
LIBRARIES = ("pure-ldp", "multi-freq-ldpy")
#: The references' modules that call ``xxhash.xxh32(str, seed=...)``.
XXHASH_USERS = (
    "pure_ldp.frequency_oracles.local_hashing.lh_client",
    "pure_ldp.frequency_oracles.local_hashing.lh_server",
    "multi_freq_ldpy.pure_frequency_oracles.LH",
    "pure_ldp.core",  # generate_hash: xxhash.xxh64(str(data), seed=seed), RAPPOR's Bloom filter
)
#: Bloom-filter hash functions of the RAPPOR compared (dp2pub's and pure-ldp's), over 2k bits.
RAPPOR_HASHES = 2
#: The correctness check: users, ε, and the least correlation of estimate and truth (a broken
#: hash or encoding gives about 0; measured, dp2pub's oracles 0.98-0.995, pure-ldp's RAPPOR,
#: an ElasticNet fit that does not converge at this size, 0.91).
CHECK_N = 5_000
CHECK_EPSILON = 4.0
CHECK_CORRELATION = 0.8
#: A library's oracle: 0-based values -> estimated frequencies of the k values.
Estimator = Callable[[list[int]], np.ndarray]


def pure_ldp_estimators(k: int, epsilon: float) -> dict[str, Estimator]:
    """pure-ldp's client/server pairs, one privatise and aggregate a user, then the estimate
    (its values are 1..k, so a value v is sent as v + 1; its estimates are counts)."""
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
    from pure_ldp.frequency_oracles.rappor import RAPPORClient, RAPPORServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

    def loop(client: Any, server: Any, values: list[int]) -> np.ndarray:
        for v in values:
            server.aggregate(client.privatise(v + 1))
        server.estimate(1, suppress_warnings=True)
        return np.asarray(server.estimated_data, dtype=float) / len(values)

    def rappor(values: list[int]) -> np.ndarray:
        f = RAPPOR(epsilon=epsilon, k=k, num_bits=2 * k, num_hashes=RAPPOR_HASHES).f  # dp2pub's f, no IRR
        server = RAPPORServer(f, 2 * k, RAPPOR_HASHES, k, num_of_cohorts=1)
        return loop(RAPPORClient(f, 2 * k, server.get_hash_funcs(), num_of_cohorts=1), server, values)

    return {
        "grr": lambda values: loop(DEClient(epsilon, k), DEServer(epsilon, k), values),
        "sue": lambda values: loop(UEClient(epsilon, k), UEServer(epsilon, k), values),
        "oue": lambda values: loop(UEClient(epsilon, k, use_oue=True), UEServer(epsilon, k, use_oue=True), values),
        "olh": lambda values: loop(LHClient(epsilon, k, use_olh=True), LHServer(epsilon, k, use_olh=True), values),
        "rappor": rappor,
    }


def multi_freq_estimators(k: int, epsilon: float) -> dict[str, Estimator]:
    """multi-freq-ldpy's clients, one call a user, and their aggregators (matrix inversion,
    which clips and renormalizes)."""
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client
    from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_MI, LH_Client
    from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client

    return {
        "grr": lambda values: GRR_Aggregator_MI([GRR_Client(v, k, epsilon) for v in values], k, epsilon),
        "sue": lambda values: UE_Aggregator_MI([UE_Client(v, k, epsilon, False) for v in values], epsilon, False),
        "oue": lambda values: UE_Aggregator_MI([UE_Client(v, k, epsilon, True) for v in values], epsilon, True),
        "olh": lambda values: LH_Aggregator_MI([LH_Client(v, k, epsilon, True) for v in values], k, epsilon, True),
    }


REFERENCES: dict[str, Callable[[int, float], dict[str, Estimator]]] = {
    "pure-ldp": pure_ldp_estimators,
    "multi-freq-ldpy": multi_freq_estimators,
}


def utf8_xxhash(module: ModuleType) -> ModuleType:
    """A copy of the xxhash ``module`` whose ``xxh32`` and ``xxh64`` encode a ``str`` input as
    UTF-8 before hashing, as xxhash 3 did itself (xxhash 4 raises ``TypeError``); seeds and
    every other name are the module's own. Plain functions, so they add as little as Python allows."""

    def encoding(hasher: Callable[..., Any]) -> Callable[..., Any]:
        def encoded(data: Any = b"", seed: int = 0) -> Any:
            return hasher(data.encode() if data.__class__ is str else data, seed)

        return encoded

    shim = ModuleType(module.__name__, module.__doc__)
    shim.__dict__.update({key: value for key, value in vars(module).items() if not key.startswith("__")})
    shim.xxh32 = encoding(module.xxh32)  # type: ignore[attr-defined]
    shim.xxh64 = encoding(module.xxh64)  # type: ignore[attr-defined]
    return shim


def rejects_str(module: Any) -> bool:
    """Whether ``module.xxh32`` refuses a string (xxhash 4 and later)."""
    try:
        module.xxh32("0", seed=0)
    except TypeError:
        return True
    return False


@contextlib.contextmanager
def xxhash_shim(module_names: tuple[str, ...] = XXHASH_USERS) -> Iterator[Result]:
    """While open, the ``xxhash`` of each of ``module_names`` is :func:`utf8_xxhash` when the
    installed xxhash rejects strings; yields what was done (``applied``, the measured
    ``overhead_ns_per_hash``). The modules' own ``xxhash`` is restored on exit."""
    import xxhash

    if not rejects_str(xxhash):
        yield {"applied": False, "xxhash": xxhash.VERSION}
        return
    modules = []
    for name in module_names:
        with contextlib.suppress(ImportError):  # a reference that is not installed needs no shim
            modules.append(importlib.import_module(name))
    shim = utf8_xxhash(xxhash)
    for module in modules:
        module.xxhash = shim  # type: ignore[attr-defined]
    try:
        yield {
            "applied": True,
            "xxhash": xxhash.VERSION,
            "error_without": "TypeError: Strings must be encoded before hashing (xxhash.xxh32(str(value), seed=seed))",
            "modules": [module.__name__ for module in modules],
            "overhead_ns_per_hash": shim_overhead_ns(shim, xxhash),
            "hashes_per_user": {"olh": "k + 1 (one by the client, k by the server)", "rappor": RAPPOR_HASHES},
        }
    finally:
        for module in modules:
            module.xxhash = xxhash  # type: ignore[attr-defined]


def shim_overhead_ns(shim: ModuleType, module: ModuleType, calls: int = 200_000) -> float:
    """Nanoseconds the shim adds to a hash: its call on a string minus a direct call on bytes
    (the fastest of three runs of each)."""
    seed = 123_456_789

    def through_shim() -> None:
        for _ in range(calls):
            shim.xxh32("17", seed=seed).intdigest()

    def direct() -> None:
        for _ in range(calls):
            module.xxh32(b"17", seed=seed).intdigest()

    return (min(timings(through_shim, 3)) - min(timings(direct, 3))) / calls * 1e9


def time_reference(estimate: Estimator, values: list[int], args: argparse.Namespace) -> Result:
    """A reference oracle after a warm-up: timed on ``args.reference_n`` users, then on all
    of ``values`` when ``args.repeats`` such runs are projected to fit the budget."""
    n, small = len(values), min(args.reference_n, len(values))

    def work(count: int) -> Callable[[], object]:
        return lambda: estimate(values[:count])

    at_reference_n = warmed(work(small), args.repeats, work(args.warmup_n), small)
    projected = args.repeats * n / at_reference_n["per_s_median"]
    fits = small == n or projected <= args.reference_budget
    at_n = at_reference_n if small == n else summary(timings(work(n), args.repeats), n) if fits else None
    return {"at_reference_n": at_reference_n, "projected_s": projected, "at_n": at_n}


def skewed(k: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` values of a geometric-like distribution on k values (Pr[v] ∝ 0.7^v)."""
    weights = 0.7 ** np.arange(k)
    return rng.choice(k, size=n, p=weights / weights.sum())


def check(estimate: np.ndarray, values: np.ndarray, k: int) -> Result:
    """How well ``estimate`` recovers the frequencies of ``values``: its correlation with the
    truth (a broken hash or encoding gives about 0) and its largest error."""
    truth = np.bincount(values, minlength=k) / len(values)
    estimated = np.asarray(estimate, dtype=float)
    correlation = float(np.corrcoef(truth, estimated)[0, 1])
    return {
        "correlation": correlation,
        "max_abs_error": float(np.abs(estimated - truth).max()),
        "ok": correlation >= CHECK_CORRELATION,
    }


def reference(name: str, values: np.ndarray, args: argparse.Namespace, rng: np.random.Generator) -> Result:
    """One reference library's timings and checks of every oracle it has, or why it has none."""
    try:
        timed = REFERENCES[name](args.k, args.epsilon)
        checked = REFERENCES[name](args.k, CHECK_EPSILON)
    except ImportError as error:
        return {"error": f"not installed ({error.name}); pip install -e '.[bench]'"}
    as_list, sample = values.tolist(), skewed(args.k, CHECK_N, rng)
    oracles: Result = {}
    for oracle, estimate in timed.items():
        try:
            oracles[oracle] = {
                **time_reference(estimate, as_list, args),
                "check": check(checked[oracle](sample.tolist()), sample, args.k),
            }
        except Exception as error:  # a reference's own failure is reported, not fatal
            oracles[oracle] = {"error": f"{type(error).__name__}: {error}"}
    return {"oracles": oracles}
