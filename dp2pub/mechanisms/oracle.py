"""The frequency-oracle interface shared by GRR, unary encoding, OLH and RAPPOR.

Wang, Blocki, Li, Jha (USENIX Security 2017) call a protocol *pure* when each report
``y`` defines a support set and ``Pr[v in Support(y) | x = v] = p*`` while
``Pr[v in Support(y) | x != v] = q*``. For such an oracle every user's report gives the
linear unbiased vector ``u = (S - q*) / (p* - q*)`` of ``e_x``, where ``S`` is the report's
support indicator; the population estimate is their mean, ``(C - n q*) / (n (p* - q*))``,
and the mean of outer products over independently perturbed attributes is an unbiased joint
estimate. The likelihood of a report depends on ``x`` only through ``S_x``:
``Pr[y | x] proportional to r^{S_x}``, which is all iterative Bayesian update needs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from dp2pub.data.tally import describe
from dp2pub.mechanisms.chunks import chunk_rows, chunks
from dp2pub.mechanisms.estimators import ESTIMATORS, postprocess
from dp2pub.mechanisms.ibu import IBUTrace, ibu, ibu_histogram
from dp2pub.validation import ConfigError, check_choice, check_epsilon, check_int


class FrequencyOracle(ABC):
    """An epsilon-LDP frequency oracle for one attribute with domain ``0 .. k-1``.

    A *pure* protocol: each report ``y`` supports a set of values, the true value with
    probability ``p*`` and any other with probability ``q*`` ([1]_). Every user's report
    gives the linear unbiased vector ``(S - q*) / (p* - q*)`` of their one-hot value, and the
    population estimate is their mean, ``(C - n q*) / (n (p* - q*))`` (:meth:`estimate`).
    Subclasses (:class:`~dp2pub.mechanisms.grr.GRR`, :class:`~dp2pub.mechanisms.unary.SUE`,
    :class:`~dp2pub.mechanisms.unary.OUE`, :class:`~dp2pub.mechanisms.olh.OLH`,
    :class:`~dp2pub.mechanisms.rappor.RAPPOR`) implement the client side (:meth:`perturb`),
    the support of a chunk of reports (:meth:`support`), the support probabilities
    (:attr:`p_star`, :attr:`q_star`), the likelihood ratio :attr:`ratio` and the exact
    channel (:meth:`transition_matrix`).

    Parameters
    ----------
    epsilon : float
        The privacy budget of one report, a finite number > 0.
    k : int
        The domain size, >= 2.

    Attributes
    ----------
    epsilon : float
        The budget, as checked.
    k : int
        The domain size.

    Raises
    ------
    ConfigError
        If ``epsilon`` is not a finite number > 0 (``epsilon=0 is invalid: expected a
        finite number > 0``) or ``k`` not an integer >= 2.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, section 3 (pure protocols).

    Examples
    --------
    Every oracle has the same interface; the variances of their estimates for 10,000 users
    at epsilon 1 over 16 values (:meth:`variance`):

    >>> from dp2pub import GRR, OLH, OUE, SUE, FrequencyOracle
    >>> for kind in (GRR, SUE, OUE, OLH):
    ...     oracle = kind(epsilon=1.0, k=16)
    ...     print(oracle.name, isinstance(oracle, FrequencyOracle), f"{oracle.variance(10_000):.2e}")
    grr True 5.66e-04
    sue True 3.92e-04
    oue True 3.68e-04
    olh True 3.69e-04
    """

    name: ClassVar[str] = "oracle"
    #: Whether a report is a value of the domain drawn through a symmetric k x k channel, so
    #: the reports' histogram is a sufficient statistic and :meth:`forward` applies the
    #: channel to a frequency table (GRR); iterative Bayesian update then needs no per-user work.
    reports_values: ClassVar[bool] = False

    def __init__(self, *, epsilon: float, k: int) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.k = check_int(k, "k", 2)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon!r}, k={self.k!r})"

    @classmethod
    def memory_bytes(cls, n: int, k: int, **options: object) -> int:
        """Upper bound of the memory that building the oracle and perturbing ``n`` values of
        a ``k``-value attribute takes at its peak, reports included, from the parameters alone
        (before the oracle is built): here at most one int64 report and one 64-bit random word
        per user."""
        return 16 * n

    @classmethod
    def report_bytes(cls, n: int, k: int, **options: object) -> int:
        """The part of :meth:`memory_bytes` still held once the values are perturbed: the
        reports of ``n`` users and what the oracle keeps (here one int64 report a user)."""
        return 8 * n

    @classmethod
    def count_bytes(cls, n: int, k: int, **options: object) -> int:
        """Upper bound of what counting ``n`` reports takes (:meth:`report_counts`, which
        every estimator but IBU reads): here each report's support over the k values, unpacked
        (int64) and summed, users in chunks (:func:`~dp2pub.mechanisms.chunks.chunk_rows`)."""
        return 16 * chunk_rows(n, k) * k + 8 * k

    def check_informative(self) -> None:
        """Refuse a budget so small that the realized channel is uniform (``p* <= q*`` in
        float64, or after the 2^-32 rounding of exact bits): no estimate would exist, and
        the unbiased estimator would divide by zero. Subclasses call it once p* and q* exist.

        Raises:
            ConfigError: naming the budget and the realized probabilities.
        """
        if not self.p_star > self.q_star:
            raise ConfigError(
                "epsilon",
                self.epsilon,
                f"a budget per report at which {self.name} on {self.k} values can tell values apart "
                f"(here its realized channel is uniform, p* = q* = {self.q_star:.6g}): a larger budget",
            )

    # ----- client side
    @abstractmethod
    def perturb(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Perturb a whole column of values, one report per user (the client side).

        Parameters
        ----------
        values : numpy.ndarray
            One column of codes in ``0 .. k-1``, one per user.
        rng : numpy.random.Generator
            The source of the users' randomness.

        Returns
        -------
        numpy.ndarray
            The reports; the first axis indexes users (GRR: codes; unary encoding and
            RAPPOR: packed bits; OLH: ``(a, b, y)`` rows).

        Raises
        ------
        ConfigError
            Naming a value outside the domain (``value=7 is invalid: expected a code in 0..3``).
        """

    def check_values(self, values: np.ndarray) -> np.ndarray:
        """Return ``values`` as an array, or raise ConfigError naming a value outside the domain."""
        values = np.asarray(values)
        if values.ndim != 1:
            raise ValueError(f"values must be one column (1-d), got shape {values.shape}")
        if values.size and (values.min() < 0 or values.max() >= self.k):
            bad = values[(values < 0) | (values >= self.k)][0]
            raise ConfigError("value", int(bad), f"a code in 0..{self.k - 1}")
        return values

    # ----- server side
    @property
    @abstractmethod
    def p_star(self) -> float:
        """``Pr[x in Support(y) | value x]``."""

    @property
    @abstractmethod
    def q_star(self) -> float:
        """``Pr[v in Support(y) | value x != v]``."""

    @property
    @abstractmethod
    def ratio(self) -> float:
        """``r`` with ``Pr[y | x] = c(y) r^{S_x(y)}`` for every report y."""

    @abstractmethod
    def support(self, reports: np.ndarray) -> np.ndarray:
        """``S[i, v]``: whether (or how often) report ``i`` supports value ``v``; (m, k)."""

    def forward(self, table: np.ndarray, axis: int = 0) -> np.ndarray:
        """Apply the channel along one axis of a frequency table (only if :attr:`reports_values`)."""
        raise NotImplementedError(f"{self.name} reports are not values: its channel has no table form")

    def n_reports(self, reports: np.ndarray) -> int:
        """Number of users behind ``reports``."""
        return int(np.shape(reports)[0])

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        """``C(v) = sum_i S[i, v]``, computed chunk by chunk."""
        counts = np.zeros(self.k, dtype=np.int64)
        for part in chunks(self.n_reports(reports), self.k):
            counts += self.support(reports[part]).sum(axis=0, dtype=np.int64)
        return counts

    @property
    def linear(self) -> bool:
        """Whether :meth:`user_estimates` exists (a linear unbiased per-user estimate)."""
        return True

    def user_estimates(self, reports: np.ndarray) -> np.ndarray:
        """Per-user unbiased vectors ``(S - q*) / (p* - q*)`` of shape (m, k)."""
        return (self.support(reports) - self.q_star) / (self.p_star - self.q_star)

    def likelihoods(self, reports: np.ndarray) -> np.ndarray:
        """``Pr[y_i | x = v]`` up to a factor of ``y_i``: ``r^{S[i, v]}``, shape (m, k)."""
        return np.power(self.ratio, self.support(reports).astype(np.float64))

    def estimate(self, reports: np.ndarray, estimator: str = "unbiased", trace: IBUTrace | None = None) -> np.ndarray:
        """Estimated frequencies of the k values from the users' reports (the server side).

        Parameters
        ----------
        reports : numpy.ndarray
            What :meth:`perturb` returned, at least one report.
        estimator : str, optional
            ``none``: the raw support fractions ``C / n``; ``unbiased`` (default):
            ``(C - n q*) / (n (p* - q*))`` ([1]_, section 3); ``clip`` / ``norm_sub``: that,
            post-processed (:func:`~dp2pub.mechanisms.estimators.postprocess`); ``ibu``:
            iterative Bayesian update (:func:`dp2pub.mechanisms.ibu.ibu`).
        trace : IBUTrace, optional
            Where ``ibu`` records its iterations.

        Returns
        -------
        numpy.ndarray
            The k estimated frequencies, float64 (``unbiased``: may be negative).

        Raises
        ------
        ConfigError
            For an unknown ``estimator`` or no report.

        References
        ----------
        .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols
           for Frequency Estimation", USENIX Security 2017.

        Examples
        --------
        >>> import numpy as np
        >>> from dp2pub import GRR
        >>> rng = np.random.default_rng(0)
        >>> values = rng.choice(4, size=20_000, p=[0.5, 0.3, 0.15, 0.05])
        >>> oracle = GRR(epsilon=2.0, k=4)
        >>> reports = oracle.perturb(values, rng)
        >>> print(oracle.estimate(reports, "norm_sub").round(2))
        [0.49 0.31 0.15 0.05]
        """
        check_choice(estimator, "estimator", ESTIMATORS)
        n = self.n_reports(reports)
        if n == 0:
            raise ConfigError("reports", 0, "at least one report")
        if estimator == "ibu":
            return ibu([self], [reports], trace=trace)
        return self.estimate_counts(self.report_counts(reports), n, estimator)

    def report_counts(self, reports: np.ndarray) -> np.ndarray:
        """The counts of ``reports`` that every estimator but IBU reads: the support counts
        ``C`` (RAPPOR: its bit sums)."""
        return self.support_counts(reports)

    def estimate_counts(
        self, counts: np.ndarray, n: int, estimator: str = "unbiased", trace: IBUTrace | None = None
    ) -> np.ndarray:
        """:meth:`estimate` from the counts of ``n`` reports alone (what :meth:`report_counts`
        or :meth:`simulate_counts` return): every estimator but ``ibu``, which needs the
        reports themselves unless they are values (GRR, whose report histogram is ``C``)."""
        check_choice(estimator, "estimator", ESTIMATORS)
        if n <= 0:
            raise ConfigError("reports", n, "at least one report")
        counts = np.asarray(counts, dtype=np.float64)
        if estimator == "ibu":
            if not self.reports_values:
                raise ValueError(f"{self.name}: ibu needs the reports, not only their support counts")
            return ibu_histogram([self], counts, trace=trace)
        if estimator == "none":
            return counts / n
        unbiased = (counts - n * self.q_star) / (n * (self.p_star - self.q_star))
        return postprocess(unbiased, estimator)

    # ----- aggregate-level simulation
    #: Whether :meth:`simulate_counts` exists: the report counts of a column drawn
    #: exactly in distribution from the column's histogram, without a record per user.
    simulates_counts: ClassVar[bool] = False

    def simulate_counts(self, true_counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Counts distributed exactly as ``report_counts(perturb(values, rng))`` for any
        column ``values`` whose histogram is ``true_counts`` (length k): O(k) or O(m k) work
        instead of O(n). Only oracles whose counts have a closed-form distribution
        (:attr:`simulates_counts`) implement it."""
        raise NotImplementedError(f"{self.name}: its support counts have no exact aggregate form")

    def check_counts(self, true_counts: np.ndarray) -> np.ndarray:
        """``true_counts`` as int64, or ValueError unless it is a histogram over the k values."""
        counts = np.asarray(true_counts)
        if counts.shape != (self.k,) or not np.issubdtype(counts.dtype, np.integer) or counts.min() < 0:
            raise ValueError(f"true_counts must be {self.k} non-negative integers, got {describe(counts)}")
        return counts.astype(np.int64)

    def variance(self, n: int) -> float:
        """``Var[f_hat(v)]`` for a value of frequency near 0: ``q*(1-q*) / (n (p*-q*)^2)``
        (Wang et al. 2017, section 3); docs/mechanisms/frequency-oracles.md lists it per oracle."""
        p, q = self.p_star, self.q_star
        return q * (1 - q) / (n * (p - q) ** 2)

    def expected_mse(self, n: float, freq: np.ndarray | None = None) -> float:
        """Exact expected squared error of the unbiased estimate, averaged over the k values.

        ``Var[f_hat(v)] = [f_v p*(1-p*) + (1-f_v) q*(1-q*)] / (n (p*-q*)^2)`` (Wang et al.
        2017, Theorem 2); the mean over v uses only ``sum_v f_v = 1``, so ``freq`` (the true
        distribution, which other oracles need) is not used.
        """
        p, q, k = self.p_star, self.q_star, self.k
        return (p * (1 - p) + (k - 1) * q * (1 - q)) / (k * n * (p - q) ** 2)

    @abstractmethod
    def transition_matrix(self) -> np.ndarray:
        """The exact channel ``P[x, y] = Pr[report y | value x]``, for privacy audits.

        The output space is enumerated, so only small domains are supported.

        Returns
        -------
        numpy.ndarray
            A (k, number of outputs) float64 matrix whose rows sum to one
            (:func:`dp2pub.audit.privacy_loss` reads it).
        """

    @property
    def epsilon_promised(self) -> float:
        """The budget this oracle promises each user and the ledger records (the epsilon it
        was built with; RAPPOR names the guarantee it was built for)."""
        return self.epsilon

    @abstractmethod
    def privacy_loss(self) -> float:
        """The epsilon this oracle's exact channel guarantees (at most ``epsilon``)."""
