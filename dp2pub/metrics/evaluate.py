"""All marginal metrics of one release against the original table (docs/design.md: the metric contract)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dp2pub.data.dataset import Dataset
from dp2pub.data.marginals import marginal_counts
from dp2pub.metrics.distances import mse, tvd
from dp2pub.metrics.subsets import attribute_subsets
from dp2pub.publish.release import Release
from dp2pub.validation import check_int

#: The columns of the per-attribute table (``per_attribute_metrics.csv``).
PER_ATTRIBUTE = ("attribute", "domain_size", "tvd", "mse_freq", "mse_count", "mse_theory")


@dataclass
class Evaluation:
    """Scalar metrics, the per-attribute table behind them, and wall times."""

    metrics: dict[str, float]
    per_attribute: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)


def evaluate_marginals(
    original: Dataset,
    release: Release,
    rng: np.random.Generator,
    ways: tuple[int, ...] | list[int] = (1, 2),
    max_subsets: int | None = 100,
) -> Evaluation:
    """Compare ``release`` with ``original`` on 1-way and k-way marginals.

    Returns ``tvd_1way``, ``mse_freq``, ``mse_count`` and, when every attribute has one,
    ``mse_theory`` (all means over attributes of per-attribute means over values), plus
    ``tvd_<k>way`` for each ``k >= 2`` in ``ways`` up to the release's ``max_way``: the mean
    TVD over all k-subsets of attributes, or over a seeded sample of ``max_subsets`` of them. The time spent asking the
    release for its marginals is reported as ``estimate``, the rest as ``metrics``. A release
    whose ``max_way`` is 0 answers no marginal query: no metric, an empty per-attribute table.
    """
    for way in ways:
        check_int(way, "ways", 1, original.d)
    if max_subsets is not None:
        check_int(max_subsets, "max_subsets", 1)
    if release.max_way == 0:
        return Evaluation({}, pd.DataFrame(columns=PER_ATTRIBUTE))
    estimate_time = 0.0
    start = time.perf_counter()

    def ask(columns: tuple[int, ...]) -> np.ndarray:
        nonlocal estimate_time
        t = time.perf_counter()
        out = release.marginal(columns)
        estimate_time += time.perf_counter() - t
        return out

    rows = []
    for j, name in enumerate(original.domain.names):
        counts = marginal_counts(original.codes[:, [j]], original.domain.sizes[[j]])
        truth = counts / original.n
        estimate = ask((j,))
        rows.append(
            {
                "attribute": name,
                "domain_size": int(original.domain.sizes[j]),
                "tvd": tvd(truth, estimate),
                "mse_freq": mse(truth, estimate),
                "mse_count": mse(counts, estimate * original.n),
                "mse_theory": release.expected_mse(j, truth),
            }
        )
    table = pd.DataFrame(rows)
    metrics = {
        "tvd_1way": float(table["tvd"].mean()),
        "mse_freq": float(table["mse_freq"].mean()),
        "mse_count": float(table["mse_count"].mean()),
    }
    if table["mse_theory"].notna().all():
        metrics["mse_theory"] = float(table["mse_theory"].astype(float).mean())
    max_way = release.max_way
    for way in sorted(w for w in set(ways) - {1} if max_way is None or w <= max_way):
        distances = []
        for cols in attribute_subsets(original.d, way, max_subsets, rng):
            truth = marginal_counts(original.codes[:, list(cols)], original.domain.sizes[list(cols)])
            distances.append(tvd(truth / original.n, ask(cols)))
        metrics[f"tvd_{way}way"] = float(np.mean(distances))
    total = time.perf_counter() - start
    return Evaluation(metrics, table, {"estimate": estimate_time, "metrics": total - estimate_time})
