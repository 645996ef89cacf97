"""Closed-form curves drawn beside the measurements.

:func:`fo_theory` gives the exact expected ``mse_freq`` of every frequency oracle's unbiased
estimate (Wang et al., USENIX Security 2017, Theorem 2; RAPPOR: the least-squares covariance)
on a dense epsilon grid, from the library's own oracles and the runs' parameters alone, so a
figure rebuilt from the runs CSV has the same curves.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dp2pub.mechanisms.oracles import ORACLES

#: Points of the dense epsilon grid (the sweep's own epsilons are added).
GRID_POINTS = 64


def expected_mse(
    mechanism: str, epsilon: float, n: int, d: int, k: int, strategy: str = "split", **options: Any
) -> float:
    """Exact expected ``mse_freq`` of ``mechanism``'s unbiased estimate on uniform data.

    ``split`` gives each of the ``d`` attributes ``epsilon / d`` and all ``n`` users;
    ``sample`` gives it the whole ``epsilon`` and about ``n / d`` users. ``options`` are the
    oracle's further constructor arguments (RAPPOR's ``num_bits``, ``f`` ...).
    """
    share, users = (epsilon / d, n) if strategy == "split" else (epsilon, n / d)
    oracle = ORACLES[mechanism](epsilon=share, k=k, **options)
    return float(oracle.expected_mse(users, np.full(k, 1.0 / k)))


def _plain(value: Any) -> Any:
    """A CSV/MLflow parameter value as the oracle takes it: NaN -> None, 64.0 -> 64."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def oracle_options(mechanism: str, params: dict[str, Any]) -> dict[str, Any]:
    """The oracle's extra constructor arguments found among ``mechanism.<key>`` params."""
    names = [name for name in inspect.signature(ORACLES[mechanism]).parameters if name not in ("epsilon", "k")]
    found = {name: _plain(params.get(f"mechanism.{name}")) for name in names}
    return {name: value for name, value in found.items() if value is not None}


def fo_theory(params: Sequence[str], x: str, summary: pd.DataFrame) -> pd.DataFrame:
    """Dense curves of the exact expected ``mse_freq`` per configuration of ``summary``.

    One curve per distinct combination of the study's ``params`` other than ``x`` and the seed
    (``mechanism.name`` must be among them; ``dataset.n``, ``dataset.d``,
    ``dataset.k_min == dataset.k_max`` give n, d and k). The grid is geometric between the
    smallest and largest epsilon of the summary, plus those epsilons themselves. Returns the
    configuration columns, x, ``metric`` (``mse_freq``) and ``value``.
    """
    rows = summary[summary["metric"] == "mse_freq"]
    if rows.empty:
        return pd.DataFrame(columns=[*params, "metric", "value"])
    columns = [p for p in params if p not in (x, "seed") and p in rows]
    configs = rows[columns].drop_duplicates()
    xs = rows[x].astype(float)
    grid = np.union1d(np.geomspace(xs.min(), xs.max(), GRID_POINTS), xs.unique())
    curves = []
    for config in configs.to_dict("records"):  # a handful of configurations, not runs
        k_min, k_max = _plain(config["dataset.k_min"]), _plain(config["dataset.k_max"])
        if k_min != k_max:
            continue  # the closed form is for one domain size
        name = config["mechanism.name"]
        kwargs = dict(
            n=_plain(config["dataset.n"]),
            d=_plain(config["dataset.d"]),
            k=k_min,
            strategy=_plain(config.get("mechanism.strategy")) or "split",
            **oracle_options(name, config),
        )
        values = [expected_mse(name, float(eps), **kwargs) for eps in grid]
        curves.append(pd.DataFrame({**config, x: grid, "metric": "mse_freq", "value": values}))
    if not curves:
        return pd.DataFrame(columns=[*columns, x, "metric", "value"])
    return pd.concat(curves, ignore_index=True)
