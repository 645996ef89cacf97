"""Publishers ``samarati`` and ``mondrian``: k-anonymous tables by generalization.

Both generalize the quasi-identifiers (QIs) so that every combination of published QI
values is shared by at least ``k`` records (Samarati & Sweeney 1998); the other columns
(sensitive attributes, the target) are published as they are. No epsilon is involved:
``uses_epsilon = False`` and the ledger is empty, so no ``epsilon_spent`` is logged.

- ``samarati``: full-domain generalization over hierarchy levels with suppression
  (:mod:`dp2pub.anonymity.samarati`; Samarati, IEEE TKDE 2001).
- ``mondrian``: multidimensional median partitioning, values generalized to ranges
  (:mod:`dp2pub.anonymity.mondrian`; LeFevre et al., ICDE 2006).

The published table is a Dataset whose QI columns have as domain the generalized labels
actually used (hierarchy nodes such as ``30-39``; Mondrian ranges such as ``[30-34..35-39]``
or a single label) and no suppressed rows. For the marginal metrics, which compare with the
original domain, :class:`GeneralizedRelease` spreads each generalized value uniformly over
the original values it covers (the usual uniform-within-generalization assumption) and is
normalized over the published, not suppressed, records.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dp2pub.anonymity.hierarchy import load_hierarchies
from dp2pub.anonymity.metrics import cavg, class_sizes, discernibility, ncp
from dp2pub.anonymity.mondrian import MODES, mondrian
from dp2pub.anonymity.samarati import samarati
from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.domain import Domain
from dp2pub.metrics.marginals import marginal_counts
from dp2pub.publish.base import Outcome
from dp2pub.validation import ConfigError, check_choice, check_int


@dataclass(frozen=True)
class GeneralizedRelease:
    """Marginals of a generalized table on the original domain.

    ``covers[j]`` is a (published size, original size) matrix whose row ``g`` is the uniform
    distribution over the original values that published value ``g`` of column ``j`` covers
    (the identity for columns that are not generalized).
    """

    table: Dataset
    covers: tuple[np.ndarray, ...]
    max_way: int | None = None

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        cols = list(columns)
        joint = marginal_counts(self.table.codes[:, cols], self.table.domain.sizes[cols]) / self.table.n
        for axis, j in enumerate(cols):  # spread axis by axis: joint[.., g, ..] -> [.., v, ..]
            joint = np.moveaxis(np.tensordot(joint, self.covers[j], axes=([axis], [0])), -1, axis)
        return joint

    def expected_mse(self, column: int, truth: np.ndarray) -> float | None:
        return None


def _names(value: str | Sequence[str] | None, key: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Sequence) and not hasattr(value, "__iter__"):
        raise ConfigError(key, value, "a list of attribute names or null")
    names = [str(v) for v in value]
    if len(set(names)) != len(names):
        raise ConfigError(key, value, "a list of distinct attribute names")
    return names


def uniform_cover(members: np.ndarray) -> np.ndarray:
    """Row-normalize a boolean (generalized value x original value) membership matrix."""
    members = members.astype(np.float64)
    return members / members.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class _KAnonymity:
    """Shared configuration checks and table building of the two publishers."""

    k: int = 10
    quasi_identifiers: Sequence[str] | None = None
    sensitive: Sequence[str] | None = None
    #: k-anonymity spends no privacy budget: run_job skips the epsilon check.
    uses_epsilon: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_int(self.k, "k", 1)
        object.__setattr__(self, "quasi_identifiers", _names(self.quasi_identifiers, "quasi_identifiers"))
        object.__setattr__(self, "sensitive", _names(self.sensitive, "sensitive") or [])
        overlap = set(self.quasi_identifiers or []) & set(self.sensitive)
        if overlap:
            raise ConfigError("sensitive", self.sensitive,
                              f"attributes that are not quasi-identifiers (both: {sorted(overlap)})")

    def columns(self, data: Dataset) -> list[int]:
        """Positions of the QIs in ``data`` (default: every attribute but the target and the
        sensitive ones); checks them and ``k`` against the data."""
        names = list(data.domain.names)
        for key, given in (("quasi_identifiers", self.quasi_identifiers or []), ("sensitive", self.sensitive)):
            for name in given:
                if name not in names:
                    raise ConfigError(f"mechanism.{key}", name, f"an attribute of {data.name}: {names}")
        qis = self.quasi_identifiers
        if qis is None:
            qis = [a for a in names if a != data.target and a not in self.sensitive]
        if not qis:
            raise ConfigError("mechanism.quasi_identifiers", qis, f"at least one attribute of {names}")
        if self.k > data.n:
            raise ConfigError("mechanism.k", self.k, f"an integer in [1, {data.n}] (the number of records)")
        return [names.index(a) for a in qis]

    def build(
        self,
        data: Dataset,
        qi: list[int],
        generalized: np.ndarray,
        labels: list[tuple[str, ...]],
        members: list[np.ndarray],
        keep: np.ndarray,
        elapsed: float,
        artifact: dict,
    ) -> Outcome:
        """The Outcome of a generalization: ``generalized[:, i]`` codes QI ``qi[i]`` into
        ``labels[i]``, ``members[i][g]`` the original values covered by code g; ``keep``
        false for suppressed records."""
        codes = data.codes.astype(np.int64)
        domain_labels = list(data.domain.labels)
        covers = [np.eye(int(s)) for s in data.domain.sizes]
        widths = np.empty((int(keep.sum()), len(qi)), dtype=np.int64)
        for i, j in enumerate(qi):
            used, recoded = np.unique(generalized[keep, i], return_inverse=True)
            codes[keep, j] = recoded.ravel()
            domain_labels[j] = tuple(labels[i][g] for g in used)
            covers[j] = uniform_cover(members[i][used])
            widths[:, i] = members[i].sum(axis=1)[generalized[keep, i]]
        domain = Domain(data.domain.names, tuple(domain_labels))
        published = Dataset(
            codes[keep].astype(code_dtype(int(domain.sizes.max()))), domain, data.target, data.name,
            None if data.is_test is None else data.is_test[keep],
        )
        sizes = class_sizes(published.codes[:, qi])
        n_suppressed = int(data.n - published.n)
        metrics = {
            "ncp": float(ncp(widths, data.domain.sizes[qi], n_suppressed)),
            "discernibility": discernibility(sizes, n_suppressed, data.n),
            "cavg": cavg(sizes, self.k),
            "suppressed": float(n_suppressed),
            "n_classes": float(len(sizes)),
        }
        artifact = {"k": self.k, "quasi_identifiers": [data.domain.names[j] for j in qi],
                    "sensitive": list(self.sensitive), **artifact}
        return Outcome(GeneralizedRelease(published, tuple(covers)), published, [], {"anonymize": elapsed},
                       metrics, {"generalization": artifact})


@dataclass(frozen=True)
class SamaratiPublisher(_KAnonymity):
    """``mechanism=samarati``: minimal full-domain generalization with at most
    ``max_suppression`` suppressed records (Samarati, IEEE TKDE 2001). Hierarchies come
    from ``dp2pub/data/hierarchies/<dataset>/<attribute>.csv`` (``value -> *`` where there
    is no file)."""

    max_suppression: int = 0
    name: str = "samarati"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.max_suppression, "max_suppression", 0)

    def publish(self, data: Dataset, epsilon: float | None = None, rng: np.random.Generator | None = None) -> Outcome:
        """Generalize ``data``'s QIs (``epsilon`` and ``rng`` are unused)."""
        qi = self.columns(data)
        names = [data.domain.names[j] for j in qi]
        try:
            hierarchies = load_hierarchies(data.name, names, [data.domain.labels[j] for j in qi])
        except ConfigError as error:
            raise error.under("mechanism") from None
        start = time.perf_counter()
        limit = min(self.max_suppression, data.n - self.k)  # keep at least k records
        result = samarati(data.codes[:, qi].astype(np.int64), hierarchies, self.k, limit)
        elapsed = time.perf_counter() - start
        labels = [h.labels[level] for h, level in zip(hierarchies, result.levels)]
        members = [np.equal.outer(np.arange(len(h.labels[level])), h.maps[level])
                   for h, level in zip(hierarchies, result.levels)]
        artifact = {"levels": dict(zip(names, result.levels)), "height": result.height,
                    "max_height": sum(h.height for h in hierarchies), "nodes_checked": result.nodes_checked,
                    "max_suppression": self.max_suppression}
        return self.build(data, qi, result.generalized, labels, members, result.keep, elapsed, artifact)


@dataclass(frozen=True)
class MondrianPublisher(_KAnonymity):
    """``mechanism=mondrian``: median partitioning, ``mode`` strict or relaxed (LeFevre,
    DeWitt & Ramakrishnan, ICDE 2006); QI values become ``[min..max]`` ranges of labels in
    domain order, or the single label when a partition has one value."""

    mode: str = "strict"
    name: str = "mondrian"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice(self.mode, "mode", MODES)

    def publish(self, data: Dataset, epsilon: float | None = None, rng: np.random.Generator | None = None) -> Outcome:
        """Partition and generalize ``data``'s QIs (``epsilon`` and ``rng`` are unused)."""
        qi = self.columns(data)
        sizes = data.domain.sizes[qi]
        start = time.perf_counter()
        result = mondrian(data.codes[:, qi], sizes, self.k, self.mode)
        elapsed = time.perf_counter() - start
        generalized = np.empty((data.n, len(qi)), dtype=np.int64)
        labels, members = [], []
        for i, j in enumerate(qi):  # one range per (low, high) pair used by a partition
            pairs, inverse = np.unique(np.stack([result.low[:, i], result.high[:, i]], axis=1),
                                       axis=0, return_inverse=True)
            generalized[:, i] = inverse.ravel()[result.partition]
            lab = data.domain.labels[j]
            labels.append(tuple(lab[lo] if lo == hi else f"[{lab[lo]}..{lab[hi]}]" for lo, hi in pairs))
            values = np.arange(int(sizes[i]))
            members.append((values >= pairs[:, :1]) & (values <= pairs[:, 1:]))
        keep = np.ones(data.n, dtype=bool)
        artifact = {"mode": self.mode, "n_partitions": result.n_partitions}
        return self.build(data, qi, generalized, labels, members, keep, elapsed, artifact)
