"""What a publisher releases, as types: each kind says which questions it answers.

Every release answers marginal queries about the original table (:meth:`Release.marginal`);
what else it offers is part of its type, not probed by the job:

- :class:`TableRelease`: a published table. Classifiers are trained on it; with ``covers``
  it is a generalized table (k-anonymity) whose published values stand for sets of original
  values.
- a table of reports (:class:`dp2pub.publish.oracle_table.GRRReportsRelease`): a table whose
  marginals are estimated through the inverse channel.
- marginal estimates only (:class:`dp2pub.publish.oracle_table.OracleRelease`): no table,
  no classifier.
- a model that predicts (:class:`dp2pub.publish.ldp_nb.NaiveBayesRelease`).
- noisy projected records (:class:`dp2pub.publish.dppro.DPProRelease`): classifiers, no
  marginals (``max_way`` 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.data.marginals import marginal_counts
from dp2pub.learn.utility import Classifier, baseline_classifier, table_classifier


class Release:
    """A release: estimates of the original table's marginals, and what else it offers."""

    @property
    def max_way(self) -> int | None:
        """The largest number of attributes a marginal query may join (None: any; 0: the
        release answers no marginal query, and the marginal metrics are skipped)."""
        return None

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        """Estimated joint frequencies of ``columns``, an array shaped by their domain sizes."""
        raise NotImplementedError

    def expected_mse(self, column: int, truth: np.ndarray) -> float | None:
        """Closed-form expected ``mse_freq`` of one attribute's estimate, if one exists
        (``truth`` is the attribute's true distribution, which some closed forms need)."""
        return None

    @property
    def published(self) -> Dataset | None:
        """The published table, if the release is one."""
        return None

    @property
    def models(self) -> tuple[str, ...]:
        """The models the release itself is (a learned classifier): always measured, beside
        those of ``metrics.models``."""
        return ()

    def classifier(self, model: str, original: Dataset, random_state: int) -> Classifier | None:
        """Model ``model`` learned from the release, predicting ``original``'s target from the
        original codes of the other attributes; None if the release gives none."""
        return None

    def baseline(self, model: str, original: Dataset, random_state: int) -> Classifier:
        """The same model learned from ``original`` itself (no privacy)."""
        return baseline_classifier(model, original, random_state)


@dataclass(frozen=True)
class TableRelease(Release):
    """A published table; it answers marginal queries by counting its rows.

    With ``covers`` the table is generalized: ``covers[j]`` is a (published size, original
    size) matrix whose row ``g`` is the uniform distribution over the original values that
    published value ``g`` of column ``j`` covers (the identity for columns that are not
    generalized); a marginal spreads each published value uniformly over them.
    """

    table: Dataset
    covers: tuple[np.ndarray, ...] | None = None
    max_way: int | None = None

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        cols = list(columns)
        joint = marginal_counts(self.table.codes[:, cols], self.table.domain.sizes[cols]) / self.table.n
        if self.covers is None:
            return joint
        for axis, j in enumerate(cols):  # spread axis by axis: joint[.., g, ..] -> [.., v, ..]
            joint = np.moveaxis(np.tensordot(joint, self.covers[j], axes=([axis], [0])), -1, axis)
        return joint

    @property
    def published(self) -> Dataset:
        return self.table

    def classifier(self, model: str, original: Dataset, random_state: int) -> Classifier | None:
        return table_classifier(model, self.table, original, random_state, self.covers)
