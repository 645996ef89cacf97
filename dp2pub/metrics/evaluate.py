"""All marginal metrics of one release against the original table (docs/explanation/metric-contract.md)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dp2pub.data.dataset import Dataset
from dp2pub.data.marginals import stacked_marginal_counts, subset_cells
from dp2pub.data.tally import Tally
from dp2pub.metrics.distances import mse, stacked_tvd, tvd
from dp2pub.metrics.subsets import attribute_subsets, cell_chunks
from dp2pub.publish.release import Release
from dp2pub.validation import check_int

#: The columns of the per-attribute table (``per_attribute_metrics.csv``).
PER_ATTRIBUTE = ("attribute", "domain_size", "tvd", "mse_freq", "mse_count", "mse_theory")


def subset_tvds(
    original: Dataset,
    subsets: Sequence[tuple[int, ...]],
    estimates: Callable[[list[tuple[int, ...]]], np.ndarray],
    max_cells: int = 2**22,
) -> np.ndarray:
    """TVD between ``original``'s joint marginal of each subset and its estimate, in order.

    ``estimates`` answers a list of subsets as :meth:`Release.marginals` does (usually that
    method); subsets go in runs of at most ``max_cells`` cells (:func:`cell_chunks`), and the
    original's marginals of a run are counted together (:func:`stacked_marginal_counts`).
    """
    sizes = original.domain.sizes
    out = [np.zeros(0)]
    for chunk, cells in cell_chunks(subsets, subset_cells(sizes, subsets), max_cells):
        truth = stacked_marginal_counts(original.codes, sizes, chunk) / original.n
        out.append(stacked_tvd(truth, estimates(chunk), cells))
    return np.concatenate(out)


#: How far from 1 the total of an estimated marginal may be and still count as a distribution.
SUM_TOLERANCE = 1e-6


@dataclass
class Evaluation:
    """Scalar metrics, the per-attribute table behind them, and wall times.

    ``distributions`` says whether every estimated marginal the metrics compared was a
    probability distribution (no negative entry, total 1): the TVDs are then in [0, 1].
    Unbiased estimates are not, and their TVD can exceed 1.
    """

    metrics: dict[str, float]
    per_attribute: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)
    distributions: bool = True


def are_distributions(estimates: np.ndarray, cells: np.ndarray) -> bool:
    """Whether each of the concatenated marginals (``cells[i]`` values each) has no negative
    entry and a total within :data:`SUM_TOLERANCE` of 1."""
    if estimates.size == 0:
        return True
    totals = np.add.reduceat(estimates, np.cumsum(cells) - cells)
    return bool(estimates.min() >= 0.0 and np.all(np.abs(totals - 1.0) <= SUM_TOLERANCE))


class _Recorded:
    """``release.marginals``, adding the time spent in it to :attr:`seconds` and noting in
    :attr:`distributions` whether every answer was a distribution."""

    def __init__(self, release: Release, sizes: np.ndarray) -> None:
        self.release = release
        self.sizes = sizes
        self.seconds = 0.0
        self.distributions = True

    def __call__(self, subsets: list[tuple[int, ...]]) -> np.ndarray:
        start = time.perf_counter()
        out = self.release.marginals(subsets)
        self.seconds += time.perf_counter() - start
        self.distributions &= are_distributions(out, subset_cells(self.sizes, subsets))
        return out


def _per_attribute(
    original: Dataset | Tally, release: Release, estimates: Callable[[list[tuple[int, ...]]], np.ndarray]
) -> pd.DataFrame:
    """One row per attribute: its TVD, ``mse_freq``, ``mse_count`` and ``mse_theory``."""
    sizes = original.domain.sizes
    answers = estimates([(j,) for j in range(original.d)])
    rows = []
    for j, name in enumerate(original.domain.names):
        counts = original.one_way_counts(j)
        truth = counts / original.n
        estimate = answers[int(sizes[:j].sum()) : int(sizes[: j + 1].sum())]
        rows.append(
            {
                "attribute": name,
                "domain_size": int(sizes[j]),
                "tvd": tvd(truth, estimate),
                "mse_freq": mse(truth, estimate),
                "mse_count": mse(counts, estimate * original.n),
                "mse_theory": release.expected_mse(j, truth),
            }
        )
    return pd.DataFrame(rows)


def evaluate_marginals(
    original: Dataset | Tally,
    release: Release,
    rng: np.random.Generator,
    ways: tuple[int, ...] | list[int] = (1, 2),
    max_subsets: int | None = 100,
) -> Evaluation:
    """Compare a release with the original table on 1-way and k-way marginals.

    The metrics are ``tvd_1way``, ``mse_freq``, ``mse_count`` and, when every attribute has
    one, ``mse_theory`` (all means over attributes of per-attribute means over values), plus
    ``tvd_<k>way`` for each ``k >= 2`` in ``ways`` up to the release's ``max_way``: the mean
    TVD over all k-subsets of attributes, or over a seeded sample of ``max_subsets`` of them
    (docs/explanation/metric-contract.md). The time spent asking the release for its
    marginals (:meth:`Release.marginals`) is reported as ``estimate``, the rest as
    ``metrics``; whether every answer was a distribution as :attr:`Evaluation.distributions`.
    A release whose ``max_way`` is 0 answers no marginal query: no metric, an empty
    per-attribute table. A :class:`~dp2pub.data.tally.Tally` (histograms, no records) has
    only 1-way marginals.

    Parameters
    ----------
    original : Dataset or Tally
        The table that was published (its training part, when there is a split).
    release : Release
        What the publisher released (:attr:`dp2pub.publish.base.Outcome.release`).
    rng : numpy.random.Generator
        The source of the sample of attribute subsets.
    ways : sequence of int, optional
        The marginal orders measured, each in ``[1, d]`` (default ``(1, 2)``).
    max_subsets : int, optional
        The most k-subsets averaged per order, >= 1 (default 100); None: all of them.

    Returns
    -------
    Evaluation
        ``metrics`` (name -> value), ``per_attribute`` (a DataFrame with the columns
        :data:`PER_ATTRIBUTE`), ``timings`` and ``distributions``.

    Raises
    ------
    ConfigError
        For a ``way`` outside ``[1, d]`` or ``max_subsets < 1``.
    ValueError
        For k-way marginals of a Tally.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import OUEPublisher, evaluate_marginals, make_synthetic_bn
    >>> rng = np.random.default_rng(0)
    >>> data = make_synthetic_bn(n=2000, d=4, degree=1, k_min=2, k_max=4, strength=0.8, rng=rng)
    >>> outcome = OUEPublisher(estimator="norm_sub").publish(data, epsilon=2.0, rng=rng)
    >>> evaluation = evaluate_marginals(data, outcome.release, rng, ways=(1, 2))
    >>> {name: round(value, 3) for name, value in evaluation.metrics.items()}
    {'tvd_1way': 0.064, 'mse_freq': 0.004, 'mse_count': 17108.128, 'tvd_2way': 0.443}
    >>> evaluation.distributions, list(evaluation.per_attribute["domain_size"])
    (True, [4, 3, 3, 2])
    """
    for way in ways:
        check_int(way, "ways", 1, original.d)
    if max_subsets is not None:
        check_int(max_subsets, "max_subsets", 1)
    if release.max_way == 0:
        return Evaluation({}, pd.DataFrame(columns=PER_ATTRIBUTE))
    start = time.perf_counter()
    estimates = _Recorded(release, original.domain.sizes)
    table = _per_attribute(original, release, estimates)
    metrics = {
        "tvd_1way": float(table["tvd"].mean()),
        "mse_freq": float(table["mse_freq"].mean()),
        "mse_count": float(table["mse_count"].mean()),
    }
    if table["mse_theory"].notna().all():
        metrics["mse_theory"] = float(table["mse_theory"].astype(float).mean())
    max_way = release.max_way
    for way in sorted(w for w in set(ways) - {1} if max_way is None or w <= max_way):
        if isinstance(original, Tally):
            raise ValueError(f"{way}-way marginals need the records; a tally has only 1-way histograms")
        distances = subset_tvds(original, attribute_subsets(original.d, way, max_subsets, rng), estimates)
        metrics[f"tvd_{way}way"] = float(np.mean(distances))
    total = time.perf_counter() - start
    timings = {"estimate": estimates.seconds, "metrics": total - estimates.seconds}
    return Evaluation(metrics, table, timings, estimates.distributions)
