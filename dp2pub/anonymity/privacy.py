"""Privacy models of an equivalence class: k-anonymity, distinct l-diversity, t-closeness.

- k-anonymity (Samarati & Sweeney 1998): the class has at least ``k`` records.
- Distinct l-diversity (Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam, "l-Diversity:
  Privacy Beyond k-Anonymity", ICDE 2006 / TKDD 2007, section 4.1, the "distinct" instance):
  the class holds at least ``l`` distinct values of every sensitive attribute.
- t-closeness (Li, Li, Venkatasubramanian, "t-Closeness: Privacy Beyond k-Anonymity and
  l-Diversity", ICDE 2007, section 4): the Earth Mover's Distance between the class's
  distribution of every sensitive attribute and its distribution in the whole table is at
  most ``t``. With the paper's two ground distances: *equal distance* for a categorical
  attribute, where EMD = ½ Σ_i |p_i − q_i| (its equation for equal distance), and *ordered
  distance* for an ordinal attribute of m values, where EMD = Σ_i |Σ_{j<=i} (p_j − q_j)| / (m − 1)
  (its equation for ordered distance).

Classes are given as an ``inverse`` array (class index of every row) with optional row
weights, so that the same code serves records, distinct rows with multiplicities (Samarati)
and the two sides of a candidate cut (Mondrian). Everything is a ``bincount``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def class_histograms(
    inverse: np.ndarray, n_classes: int, codes: np.ndarray, m: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """(n_classes, m) counts of the sensitive ``codes`` (each < m) per class."""
    flat = np.bincount(inverse * m + codes, weights=weights, minlength=n_classes * m)
    return flat.reshape(n_classes, m)


def emd(histograms: np.ndarray, reference: np.ndarray, ordered: bool) -> np.ndarray:
    """EMD of every row of ``histograms`` (normalized) to the distribution ``reference``;
    an empty row has distance 0."""
    totals = histograms.sum(axis=1, keepdims=True)
    p = np.divide(histograms, totals, out=np.zeros_like(histograms, dtype=np.float64), where=totals > 0)
    diff = np.where(totals > 0, p - reference, 0.0)
    if ordered:
        m = histograms.shape[1]
        return np.abs(np.cumsum(diff, axis=1)).sum(axis=1) / max(m - 1, 1)
    return 0.5 * np.abs(diff).sum(axis=1)


@dataclass(frozen=True)
class SensitiveAttribute:
    """One sensitive attribute: its codes per row, domain size, global distribution, and
    whether its values are ordered (the ground distance of t-closeness)."""

    name: str
    codes: np.ndarray
    size: int
    ordered: bool
    reference: np.ndarray

    @classmethod
    def of(cls, name: str, codes: np.ndarray, size: int, ordered: bool) -> SensitiveAttribute:
        """The attribute with ``reference`` its distribution over all of ``codes``."""
        codes = np.asarray(codes, dtype=np.int64)
        reference = np.bincount(codes, minlength=size) / max(len(codes), 1)
        return cls(name, codes, int(size), bool(ordered), reference)

    def subset(self, rows: np.ndarray) -> SensitiveAttribute:
        """The same attribute on ``rows`` only, keeping the global ``reference``."""
        return SensitiveAttribute(self.name, self.codes[rows], self.size, self.ordered, self.reference)


@dataclass(frozen=True)
class ClassStats:
    """Per class: its size, its fewest distinct sensitive values (over the sensitive
    attributes; None without any), and its largest EMD to the global distributions."""

    size: np.ndarray
    distinct: np.ndarray | None
    distance: np.ndarray | None


@dataclass(frozen=True)
class PrivacyModel:
    """The constraints a published class must meet: ``k`` records, and with sensitive
    attributes ``l`` distinct values (None: not required) and EMD <= ``t`` (None: not required)."""

    k: int
    l: int | None = None
    t: float | None = None
    sensitive: tuple[SensitiveAttribute, ...] = ()

    @property
    def constrains_sensitive(self) -> bool:
        """Whether l or t constrains the classes beyond their size."""
        return bool(self.sensitive) and (self.l is not None or self.t is not None)

    def stats_of_histograms(self, size: np.ndarray, histograms: list[np.ndarray], full: bool = False) -> ClassStats:
        """:class:`ClassStats` from the class sizes and one (classes, m) histogram per
        sensitive attribute; only what the model constrains unless ``full``."""
        if not histograms:
            return ClassStats(size, None, None)
        distinct = distance = None
        if full or self.l is not None:
            distinct = np.min([(h > 0).sum(axis=1) for h in histograms], axis=0)
        if full or self.t is not None:
            distance = np.max([emd(h, s.reference, s.ordered) for h, s in zip(histograms, self.sensitive)], axis=0)
        return ClassStats(size, distinct, distance)

    def stats(
        self,
        inverse: np.ndarray,
        n_classes: int,
        weights: np.ndarray | None = None,
        sensitive: tuple[SensitiveAttribute, ...] | None = None,
        full: bool = False,
    ) -> ClassStats:
        """:class:`ClassStats` of the classes ``inverse`` (rows weighted by ``weights``);
        ``sensitive`` replaces the model's attributes (the same attributes on other rows);
        l and t statistics only where the model constrains them, unless ``full``."""
        attributes = self.sensitive if sensitive is None else sensitive
        size = np.bincount(inverse, weights=weights, minlength=n_classes)
        if not (full or self.constrains_sensitive):
            return ClassStats(size, None, None)
        return self.stats_of_histograms(
            size, [class_histograms(inverse, n_classes, s.codes, s.size, weights) for s in attributes], full
        )

    def satisfied(self, stats: ClassStats) -> np.ndarray:
        """Boolean per class: does it meet k, l and t?"""
        ok = stats.size >= self.k
        if self.l is not None and stats.distinct is not None:
            ok &= stats.distinct >= self.l
        if self.t is not None and stats.distance is not None:
            ok &= stats.distance <= self.t  # no slack: a rounding error can only refuse a class
        return ok


def achieved(model: PrivacyModel, inverse: np.ndarray, n_classes: int) -> dict[str, float]:
    """``k_achieved`` (smallest class), and with sensitive attributes ``l_achieved`` (fewest
    distinct sensitive values in a class) and ``t_achieved`` (largest EMD of a class)."""
    stats = model.stats(inverse, n_classes, full=True)
    found = {"k_achieved": float(stats.size.min()) if n_classes else 0.0}
    if stats.distinct is not None and stats.distance is not None and n_classes:  # full: both or neither
        found["l_achieved"] = float(stats.distinct.min())
        found["t_achieved"] = float(stats.distance.max())
    return found
