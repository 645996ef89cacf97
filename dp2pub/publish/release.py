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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.data.marginals import marginal_counts, stacked_marginal_counts
from dp2pub.learn.utility import Classifier, baseline_classifier, table_classifier


class Release:
    """A release: estimates of the original table's marginals, and what else it offers.

    Every release answers marginal queries about the original table (:meth:`marginal`,
    :meth:`marginals`) up to :attr:`max_way` attributes; what else it offers is part of its
    type: a published table (:class:`TableRelease`, :attr:`published`), classifiers
    (:meth:`classifier`), closed-form errors (:meth:`expected_mse`). It takes no parameter.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import OUEPublisher, Release, load_car
    >>> car = load_car()
    >>> release = OUEPublisher().publish(car, epsilon=4.0, rng=np.random.default_rng(0)).release
    >>> isinstance(release, Release), release.published is None  # estimates, no table
    (True, True)
    >>> print(release.marginal((car.target_column,)).round(2))
    [0.63 0.28 0.04 0.05]
    >>> release.marginal((0, 1)).shape
    (4, 4)
    """

    @property
    def max_way(self) -> int | None:
        """The largest number of attributes a marginal query may join (None: any; 0: the
        release answers no marginal query, and the marginal metrics are skipped)."""
        return None

    def marginal(self, columns: tuple[int, ...]) -> np.ndarray:
        """Estimated joint frequencies of some columns of the original table.

        Parameters
        ----------
        columns : tuple of int
            Column positions, at most :attr:`max_way` of them.

        Returns
        -------
        numpy.ndarray
            The estimated frequencies, an array shaped by the columns' domain sizes.
        """
        raise NotImplementedError

    def marginals(self, subsets: Sequence[tuple[int, ...]]) -> np.ndarray:
        """:meth:`marginal` of each of ``subsets``, flattened (C order) and concatenated in
        order, as float64. A release may answer the batch faster, with the same values."""
        if not subsets:
            return np.zeros(0)
        return np.concatenate([np.ravel(np.asarray(self.marginal(c), dtype=np.float64)) for c in subsets])

    def expected_mse(self, column: int, truth: np.ndarray) -> float | None:
        """Closed-form expected ``mse_freq`` of one attribute's estimate, if one exists
        (``truth`` is the attribute's true distribution, which some closed forms need)."""
        return None

    def diagnostics(self) -> dict[str, float]:
        """Metrics of how the release computed the estimates asked of it so far (an
        iterative estimator's iterations: :meth:`dp2pub.mechanisms.ibu.IBUTrace.metrics`)."""
        return {}

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

    With ``covers`` the table is generalized (k-anonymity): a marginal spreads each published
    value uniformly over the original values it covers. Classifiers are trained on the table.

    Parameters
    ----------
    table : Dataset
        The published table.
    covers : tuple of numpy.ndarray, optional
        Per column ``j``, a (published size, original size) matrix whose row ``g`` is the
        uniform distribution over the original values that published value ``g`` covers
        (the identity for columns that are not generalized); None (default): not generalized.
    max_way : int, optional
        The most attributes a marginal query may join (None, default: any).

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import Dataset, Domain, TableRelease
    >>> domain = Domain(("age", "sex"), (("young", "old"), ("f", "m")))
    >>> release = TableRelease(Dataset(np.array([[0, 1], [1, 0], [1, 1], [1, 1]]), domain))
    >>> print(release.marginal((0, 1)))
    [[0.   0.25]
     [0.25 0.5 ]]

    Generalized: published ``age`` has one value, ``*``, covering both original ones:

    >>> star = Domain(("age", "sex"), (("*",), ("f", "m")))
    >>> covers = (np.array([[0.5, 0.5]]), np.eye(2))
    >>> general = TableRelease(Dataset(np.array([[0, 1], [0, 0], [0, 1], [0, 1]]), star), covers)
    >>> print(general.marginal((0, 1)))
    [[0.125 0.375]
     [0.125 0.375]]
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

    def marginals(self, subsets: Sequence[tuple[int, ...]]) -> np.ndarray:
        """A plain table counts all subsets together (:func:`stacked_marginal_counts`); a
        generalized table, or a subclass that estimates through its own :meth:`marginal`
        (reports through a channel), answers subset by subset."""
        if self.covers is not None or type(self).marginal is not TableRelease.marginal:
            return super().marginals(subsets)
        return stacked_marginal_counts(self.table.codes, self.table.domain.sizes, subsets) / self.table.n

    @property
    def published(self) -> Dataset:
        return self.table

    def classifier(self, model: str, original: Dataset, random_state: int) -> Classifier | None:
        return table_classifier(model, self.table, original, random_state, self.covers)
