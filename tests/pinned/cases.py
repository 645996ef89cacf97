"""The jobs whose metrics are pinned: one per mechanism config, small and fast.

``python -m tests.pinned.cases`` rewrites ``metrics.json`` from the code as it is; do that only
when a change is meant to change results, and say so in the commit."""

from __future__ import annotations

import json
import math
from pathlib import Path

from omegaconf import OmegaConf

MECHANISMS = [
    "grr",
    "grr_table",
    "sue",
    "oue",
    "olh",
    "rappor",
    "pram",
    "dp2pub",
    "privbayes",
    "samarati",
    "mondrian",
    "ldp_nb",
    "dppro",
]
#: (mechanism config, dataset config, epsilon): car and adult have a target, so the classifiers
#: run too (the k-anonymity defaults name adult's quasi-identifiers).
CASES = [(name, "adult" if name in ("samarati", "mondrian") else "car", 2.0) for name in MECHANISMS] + [
    ("grr", "synthetic", 1.0),
    ("dp2pub", "synthetic_bn", 4.0),
]
PINNED = Path(__file__).with_name("metrics.json")


def case_id(mechanism: str, dataset: str, epsilon: float) -> str:
    return f"{mechanism}-{dataset}-{epsilon}"


def measure(mechanism: str, dataset: str, epsilon: float) -> dict[str, float]:
    """Every metric of the job but its wall times."""
    from dp2pub.job import run_job
    from tests.conftest import compose_config

    cfg = compose_config([f"mechanism={mechanism}", f"dataset={dataset}", f"epsilon={epsilon}", "seed=7"])
    metrics = run_job(OmegaConf.to_container(cfg, resolve=True)).metrics
    return {k: v for k, v in sorted(metrics.items()) if not k.startswith("time_") and not math.isnan(v)}


if __name__ == "__main__":
    PINNED.write_text(json.dumps({case_id(*case): measure(*case) for case in CASES}, indent=1) + "\n")
    print(f"wrote {PINNED}")
