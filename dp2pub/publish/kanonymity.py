"""Publishers ``samarati`` and ``mondrian``: k-anonymous tables by generalization.

Both generalize the quasi-identifiers (QIs) so that every combination of published QI
values is shared by at least ``k`` records (Samarati & Sweeney 1998), and optionally holds
``l`` distinct values of every sensitive attribute (distinct l-diversity) and a
distribution of each within EMD ``t`` of the whole table's (t-closeness); see
:mod:`dp2pub.anonymity.privacy`. Attributes listed in ``drop`` are published as ``*``; the
other columns (sensitive attributes, the target, the rest) are published as they are, and
before anything is generalized each of them is checked for a functional dependency with a
QI (:mod:`dp2pub.anonymity.dependencies`): one that recodes a QI is refused unless
``allow_dependent`` gives the reason. Every table logs the ``k_achieved`` (and
``l_achieved``, ``t_achieved``) it really has. No epsilon is involved: ``uses_budget =
False`` and the ledger is empty, so no ``epsilon_spent`` is logged.

- ``samarati``: full-domain generalization over hierarchy levels with suppression
  (:mod:`dp2pub.anonymity.samarati`; Samarati, IEEE TKDE 2001).
- ``mondrian``: multidimensional median partitioning, values generalized to ranges
  (:mod:`dp2pub.anonymity.mondrian`; LeFevre et al., ICDE 2006).

The published table is a Dataset whose QI columns have as domain the generalized labels
actually used (hierarchy nodes such as ``30-39``; Mondrian ranges such as ``[30-34..35-39]``
or a single label) and no suppressed rows. For the marginal metrics, which compare with the
original domain, the release (:class:`~dp2pub.publish.release.TableRelease` with ``covers``)
spreads each generalized value uniformly over
the original values it covers (the usual uniform-within-generalization assumption) and is
normalized over the published, not suppressed, records.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from dp2pub.anonymity.dependencies import dependencies
from dp2pub.anonymity.hierarchy import load_hierarchies
from dp2pub.anonymity.metrics import cavg, discernibility, ncp
from dp2pub.anonymity.mondrian import MODES, MondrianResult, mondrian
from dp2pub.anonymity.privacy import PrivacyModel, SensitiveAttribute, achieved
from dp2pub.anonymity.samarati import samarati
from dp2pub.data.dataset import LABEL_BYTES, Dataset, code_dtype, table_bytes
from dp2pub.data.domain import Domain
from dp2pub.products import capped_product
from dp2pub.publish.base import Outcome, Publisher, channel_bytes
from dp2pub.publish.release import TableRelease
from dp2pub.validation import ConfigError, InputPath, check_choice, check_int, check_optional_float, check_text


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
class TableShape:
    """What the memory estimate knows of a table before reading it: ``n`` records over
    domains ``sizes``, ``q`` of them quasi-identifiers and ``s`` sensitive (at most)."""

    n: int
    sizes: list[int]
    q: int
    s: int

    @property
    def largest(self) -> int:
        """K, the largest domain."""
        return max(self.sizes, default=1)

    @property
    def qi_sizes(self) -> list[int]:
        """The q largest domains: the QIs' at most."""
        return sorted(self.sizes, reverse=True)[: self.q]

    @property
    def w(self) -> int:
        """Bytes of a code of the table."""
        return int(code_dtype(self.largest).itemsize)

    @property
    def g(self) -> int:
        """Bytes of a generalized code: a hierarchy level's (at most K values) or a Mondrian
        range's (at most K (K + 1) / 2 ranges)."""
        return int(code_dtype(self.largest * (self.largest + 1) // 2).itemsize)

    @property
    def class_bytes(self) -> int:
        """Bytes of a class's statistics (:mod:`dp2pub.anonymity.privacy`): its size and,
        per sensitive attribute, a histogram of at most K values with the EMD's temporaries
        (five float64 arrays of K)."""
        return 16 + 40 * self.largest * self.s


def kept_ncp(
    generalized: np.ndarray, keep: np.ndarray, members: list[np.ndarray], sizes: np.ndarray, n_suppressed: int
) -> float:
    """NCP (:func:`~dp2pub.anonymity.metrics.ncp`) of the kept records, QI ``i`` generalized
    to ``generalized[:, i]`` covering ``members[i][g]``: the widths, built column by column
    as float64 (the exact integers ncp would convert them to), exist only here."""
    widths = np.empty((int(keep.sum()), len(members)), dtype=np.float64)
    for i, member in enumerate(members):
        widths[:, i] = member.sum(axis=1)[generalized[keep, i]]
    return float(ncp(widths, sizes, n_suppressed))


def _hint(publisher: Publisher, key: str) -> str:
    """What to do about an unknown quasi-identifier: the config's default list is adult's."""
    if key != "quasi_identifiers":
        return ""
    return (
        f" (dp2pub's mechanism={publisher.name} config lists adult's quasi-identifiers: set mechanism.quasi_identifiers "
        "to your table's, or null for every attribute but the target and the sensitive ones)"
    )


def _reasons(value: Mapping | None, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(key, value, "a mapping of attribute names to the reason each may stay dependent")
    for name, reason in value.items():
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"{key}.{name}", reason, "a non-empty reason why publishing it unchanged is safe")
    return {str(name): reason for name, reason in value.items()}


@dataclass(frozen=True, kw_only=True)
class _KAnonymity(Publisher):
    """Shared configuration checks and table building of the two publishers."""

    k: int = 10
    quasi_identifiers: Sequence[str] | None = None
    #: None: the dataset's target (income for adult, class for car); [] for none.
    sensitive: Sequence[str] | None = None
    l: int | None = None
    t: float | None = None
    #: null in a config is read as empty, as are the defaults
    allow_dependent: Mapping[str, str] = field(default_factory=dict)
    drop: Sequence[str] = ()
    #: k-anonymity spends no privacy budget: the job takes no epsilon.
    uses_budget: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_int(self.k, "k", 1)
        if self.l is not None:
            check_int(self.l, "l", 1)
        check_optional_float(self.t, "t", 0.0, 1.0, open_high=False)
        object.__setattr__(self, "quasi_identifiers", _names(self.quasi_identifiers, "quasi_identifiers"))
        object.__setattr__(self, "sensitive", _names(self.sensitive, "sensitive"))
        object.__setattr__(self, "drop", _names(self.drop, "drop") or [])
        object.__setattr__(self, "allow_dependent", _reasons(self.allow_dependent, "allow_dependent"))
        for key, others in (("sensitive", self.sensitive or []), ("drop", self.drop)):
            overlap = set(self.quasi_identifiers or []) & set(others)
            if overlap:
                raise ConfigError(key, others, f"attributes that are not quasi-identifiers (both: {sorted(overlap)})")

    def guarantee(self, epsilon: float | None) -> str:
        """``k=10`` (with ``l`` and ``t`` when set): k-anonymity has no epsilon."""
        extra = "".join(f", {key}={value}" for key, value in (("l", self.l), ("t", self.t)) if value is not None)
        return f"k={self.k}{extra}"

    def shape(self, n: int, sizes: Sequence[int] | np.ndarray) -> TableShape:
        """The shape of a table of ``n`` records over domains ``sizes`` with this publisher's
        roles: the quasi-identifiers and sensitive attributes as configured, else all d
        attributes and one (the target)."""
        sizes = [int(k) for k in sizes]
        d = len(sizes)
        q = min(d, d if self.quasi_identifiers is None else len(self.quasi_identifiers))
        s = min(d, 1 if self.sensitive is None else len(self.sensitive))
        return TableShape(int(n), sizes, q, s)

    def memory_bytes(self, n: int, sizes: Sequence[int] | np.ndarray) -> int:
        """The published table (:func:`table_bytes`), the release's covers (one k x k float64
        matrix per attribute and a membership table: :func:`channel_bytes`), the generalized
        values (:meth:`values_bytes`), and the largest phase (q quasi-identifiers, s sensitive
        attributes, w bytes a code, g a generalized code, c the bytes of a class's statistics:
        :class:`TableShape`), per record:

        - checking dependencies: every attribute's codes as int64 and a pair code (8 d + 16);
        - the search (:meth:`search_bytes`), beside the sensitive codes (int64: 8 s);
        - NCP: the widths as float64 and ncp's two temporaries (24 q + 16), beside the
          sensitive and generalized codes and the kept flags (8 s + g q + 1, also below);
        - building the table: the working copy of the codes, the kept rows' copy and its
          column-major one, the published classes (3 (d + q) max(w, g) + 48), the kept
          sensitive codes (8 s); and the achieved k, l, t: c per class (at most n / k).
        """
        shape = self.shape(n, sizes)
        d, q, s, wide = len(shape.sizes), shape.q, shape.s, max(shape.w, shape.g)
        held = 8 * s + shape.g * q + 1
        per_record = max(8 * d + 16, held + 24 * q + 16, held + 3 * (d + q) * wide + 48 + 8 * s)
        phases = shape.n * per_record + self.classes(shape.n) * shape.class_bytes
        search = 8 * s * shape.n + self.search_bytes(shape)
        fixed = channel_bytes(shape.sizes) + self.values_bytes(shape)
        return table_bytes(n, sizes) + fixed + max(phases, search)

    def answer_bytes(self, n: int, sizes: Sequence[int] | np.ndarray, way: int) -> int:
        """A generalized table answers subset by subset: the columns' codes and their joint
        code (int64) a record; the joint counts over the published values and, spread axis
        by axis over the original ones, three float64 arrays of at most the cells of the way
        largest of :meth:`published_sizes`."""
        shape = self.shape(n, sizes)
        published = sorted(self.published_sizes(shape), reverse=True)[:way]
        return int(n) * (8 + way * max(shape.w, shape.g)) + 24 * capped_product(published)

    def published_sizes(self, shape: TableShape) -> list[int]:
        """The most values a published attribute may have beside its original ones (the
        larger): its domain, for a hierarchy level (at most k values of k)."""
        return list(shape.sizes)

    def classes(self, n: int) -> int:
        """The most classes of at least k of ``n`` records."""
        return -(-int(n) // self.k)

    def search_bytes(self, shape: TableShape) -> int:
        """The memory of the search for a generalization of a table of ``shape``."""
        raise NotImplementedError

    def values_bytes(self, shape: TableShape) -> int:
        """The memory of the generalized values of the QIs of a table of ``shape``: their
        labels, and the original values each covers (a float64 cover and a boolean
        membership, 9 bytes per original value)."""
        raise NotImplementedError

    def sensitive_names(self, data: Dataset) -> list[str]:
        """The sensitive attributes: as given, or the dataset's target when not given."""
        if self.sensitive is not None:
            return list(self.sensitive)
        return [] if data.target is None else [data.target]

    def columns(self, data: Dataset) -> list[int]:
        """Positions of the QIs in ``data`` (default: every attribute but the target and the
        sensitive and dropped ones); checks them, ``k``, ``l`` and the dependencies of the
        attributes published unchanged against the data."""
        names = list(data.domain.names)
        sensitive = self.sensitive_names(data)
        for key, given in (
            ("quasi_identifiers", self.quasi_identifiers or []),
            ("sensitive", sensitive),
            ("drop", self.drop),
            ("allow_dependent", list(self.allow_dependent)),
        ):
            for name in given:
                if name not in names:
                    raise ConfigError(
                        f"mechanism.{key}", name, f"an attribute of {data.name}: {names}{_hint(self, key)}"
                    )
        qis = self.quasi_identifiers
        if qis is None:
            qis = [a for a in names if a != data.target and a not in sensitive and a not in self.drop]
        if not qis:
            raise ConfigError("mechanism.quasi_identifiers", qis, f"at least one attribute of {names}")
        self._check_roles(data, qis, sensitive)
        self._check_models(data, sensitive)
        qi = [names.index(a) for a in qis]
        self._check_dependencies(data, qi)
        return qi

    def _check_roles(self, data: Dataset, qis: Sequence[str], sensitive: list[str]) -> None:
        """No attribute both a QI and sensitive, no sensitive attribute or target dropped,
        and ``k`` at most the number of records."""
        if set(qis) & set(sensitive):
            raise ConfigError(
                "mechanism.sensitive",
                sensitive,
                f"attributes that are not quasi-identifiers (both: {sorted(set(qis) & set(sensitive))})",
            )
        kept = {*sensitive, *([data.target] if data.target else [])}
        if kept & set(self.drop):
            raise ConfigError(
                "mechanism.drop",
                self.drop,
                f"attributes that are neither sensitive nor the target (both: {sorted(kept & set(self.drop))})",
            )
        if self.k > data.n:  # of the table published (a job's training part), so not in check_shape
            raise ConfigError("mechanism.k", self.k, f"an integer in [1, {data.n}] (the number of records)")

    def _check_models(self, data: Dataset, sensitive: list[str]) -> None:
        """l and t need a sensitive attribute, and l at most its distinct values."""
        if (self.l is not None or self.t is not None) and not sensitive:
            key = "mechanism.l" if self.l is not None else "mechanism.t"
            raise ConfigError(
                key,
                self.l if self.l is not None else self.t,
                f"null: {data.name} has no sensitive attribute (set mechanism.sensitive)",
            )
        if self.l is not None:
            for name in sensitive:
                distinct = int(np.unique(data.column(name)).size)
                if self.l > distinct:
                    raise ConfigError(
                        "mechanism.l",
                        self.l,
                        f"an integer in [1, {distinct}] (the distinct values of {name} in {data.name})",
                    )

    def _check_dependencies(self, data: Dataset, qi: list[int]) -> None:
        """Refuse an attribute published unchanged that recodes a QI (see the module doc)."""
        names = data.domain.names
        published = [j for j in range(data.d) if j not in qi and names[j] not in self.drop]
        found = [dep for dep in dependencies(data, qi, published) if dep.attribute not in self.allow_dependent]
        if found:
            pairs = ", ".join(dep.describe() for dep in found)
            first = found[0].attribute
            raise ConfigError(
                "mechanism.quasi_identifiers",
                [names[j] for j in qi],
                f"no published attribute that recodes one of them, but in {data.name} {pairs} (a functional "
                f"dependency in the data): add {first} to mechanism.quasi_identifiers, list it in mechanism.drop, "
                f"or list it in mechanism.allow_dependent with the reason",
            )

    def model(self, data: Dataset) -> PrivacyModel:
        """The privacy model of ``data``'s published classes."""
        sensitive = tuple(
            SensitiveAttribute.of(
                name, data.column(name), int(data.domain.sizes[data.domain.index(name)]), name in data.domain.ordinal
            )
            for name in self.sensitive_names(data)
        )
        return PrivacyModel(self.k, self.l, None if self.t is None else float(self.t), sensitive)

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
        model: PrivacyModel,
    ) -> Outcome:
        """The Outcome of a generalization: ``generalized[:, i]`` codes QI ``qi[i]`` into
        ``labels[i]``, ``members[i][g]`` the original values covered by code g; ``keep``
        false for suppressed records; the ``drop`` attributes become ``*``. ``model`` gives
        the achieved k, l, t."""
        n_suppressed = int(data.n - keep.sum())
        gcp = kept_ncp(generalized, keep, members, data.domain.sizes[qi], n_suppressed)  # before the table
        # the table's codes and the recoded QIs' fit the larger of their dtypes: no int64 copy
        codes = data.codes.astype(np.promote_types(data.codes.dtype, code_dtype(max(map(len, labels), default=1))))
        domain_labels = list(data.domain.labels)
        covers = [np.eye(int(s)) for s in data.domain.sizes]
        for name in self.drop:
            j = data.domain.index(name)
            codes[:, j] = 0
            domain_labels[j] = ("*",)
            covers[j] = uniform_cover(np.ones((1, int(data.domain.sizes[j])), dtype=bool))
        for i, j in enumerate(qi):
            used, recoded = np.unique(generalized[keep, i], return_inverse=True)
            codes[keep, j] = recoded.ravel()
            domain_labels[j] = tuple(labels[i][g] for g in used)
            covers[j] = uniform_cover(members[i][used])
        domain = Domain(data.domain.names, tuple(domain_labels))
        published = Dataset(
            codes[keep].astype(code_dtype(int(domain.sizes.max())), copy=False),
            domain,
            data.target,
            data.name,
            None if data.is_test is None else data.is_test[keep],
        )
        _, inverse, sizes = np.unique(
            np.ascontiguousarray(published.codes[:, qi]), axis=0, return_inverse=True, return_counts=True
        )
        kept = PrivacyModel(model.k, model.l, model.t, tuple(s.subset(keep) for s in model.sensitive))
        metrics = {
            "ncp": gcp,
            "discernibility": discernibility(sizes, n_suppressed, data.n),
            "cavg": cavg(sizes, self.k),
            "suppressed": float(n_suppressed),
            "n_classes": float(len(sizes)),
            **achieved(kept, inverse.ravel(), len(sizes)),
        }
        artifact = {
            "k": self.k,
            "l": self.l,
            "t": self.t,
            "quasi_identifiers": [data.domain.names[j] for j in qi],
            "sensitive": [s.name for s in model.sensitive],
            "drop": list(self.drop),
            "allow_dependent": dict(self.allow_dependent),
            **artifact,
        }
        return Outcome(
            TableRelease(published, covers=tuple(covers)),
            [],
            {"anonymize": elapsed},
            metrics,
            {"generalization": artifact},
        )


@dataclass(frozen=True, kw_only=True)
class SamaratiPublisher(_KAnonymity):
    """``mechanism=samarati``: minimal full-domain generalization with suppression.

    The quasi-identifiers (QIs) are generalized over hierarchy levels so that every
    combination of published QI values is shared by at least ``k`` records [2]_, suppressing
    at most ``max_suppression`` records [1]_ (:mod:`dp2pub.anonymity.samarati`). The other
    columns are published as they are (``drop``: as ``*``). No epsilon is involved
    (``uses_budget = False``, an empty ledger); the outcome logs the ``k_achieved`` (and
    ``l_achieved``, ``t_achieved``) the table really has.

    Parameters
    ----------
    k : int, optional
        Every combination of published QI values is shared by at least ``k`` records
        (default 10).
    quasi_identifiers : sequence of str, optional
        The QIs; None (default): every attribute but the target and the sensitive and
        dropped ones.
    sensitive : sequence of str, optional
        The sensitive attributes of ``l`` and ``t``; None (default): the dataset's target;
        ``[]`` for none.
    l : int, optional
        Distinct l-diversity of every sensitive attribute in every class (default None: not
        required).
    t : float, optional
        t-closeness: each class's distribution of a sensitive attribute within EMD ``t`` of
        the table's, in (0, 1] (default None: not required).
    allow_dependent : mapping, optional
        Attribute -> the reason it may be published unchanged although it recodes a QI
        (a functional dependency, :mod:`dp2pub.anonymity.dependencies`).
    drop : sequence of str, optional
        Attributes published as ``*``.
    max_suppression : int, optional
        The most records suppressed, >= 0 (default 0).
    hierarchies : str, optional
        A directory of ``<attribute>.csv`` hierarchy files (a user's own, relative to the
        working directory); None (default): ``dp2pub/data/hierarchies/<dataset>/``, and
        ``value -> *`` where there is no file.

    Raises
    ------
    ConfigError
        For a value out of range, or an attribute in two roles; when publishing, for an
        unknown attribute or an unexcused dependency of a published attribute on a QI.

    References
    ----------
    .. [1] P. Samarati, "Protecting Respondents' Identities in Microdata Release", IEEE TKDE
       13(6), 2001.
    .. [2] P. Samarati, L. Sweeney, "Protecting Privacy when Disclosing Information:
       k-Anonymity and Its Enforcement through Generalization and Suppression", Technical
       Report SRI-CSL-98-04, SRI International, 1998.

    Examples
    --------
    >>> from dp2pub import SamaratiPublisher, load_car
    >>> car = load_car()
    >>> publisher = SamaratiPublisher(k=50, quasi_identifiers=["buying", "maint", "doors"])
    >>> outcome = publisher.publish(car)
    >>> outcome.epsilon_spent, outcome.extra_metrics["k_achieved"], outcome.published.n
    (None, 54.0, 1728)
    >>> outcome.artifacts["generalization"]["levels"]
    {'buying': 0, 'maint': 0, 'doors': 1}
    >>> outcome.published.domain.labels[car.domain.index("doors")]
    ('2-3', '4-5more')
    """

    name: ClassVar[str] = "samarati"
    max_suppression: int = 0
    hierarchies: InputPath | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.max_suppression, "max_suppression", 0)
        if self.hierarchies is not None:
            allowed = "a directory of <attribute>.csv hierarchy files, or null for the shipped ones"
            folder = Path(check_text(self.hierarchies, "hierarchies", allowed)).expanduser().resolve()
            if not folder.is_dir():
                raise ConfigError("hierarchies", self.hierarchies, f"{allowed} ({folder} is not a directory)")
            object.__setattr__(self, "hierarchies", str(folder))

    def search_bytes(self, shape: TableShape) -> int:
        """Per record, the QIs' codes copied (q w) beside the larger of: their rows with the
        sensitive ones, copied and sorted (3 (q + s) w + 17), or what the lattice search keeps
        per distinct row (at most one a record: its weight and codes, its code at every level
        of the hierarchies, at most k levels for k values: 8 + (q + s) w + w sum(k)) with a
        node's class keys and sort (80), or, at the node chosen, the generalized codes and
        their classes (3 q g + 50); and once, a node's class sizes over at least 2^16 cells
        (float64). With l or t, the statistics of a node's classes, c each: l and t are
        checked only at nodes whose classes smaller than k hold at most max_suppression
        records, so they have at most n / k + max_suppression classes; and once, a node's
        class sizes (float64) over at most its cells (the product of the QIs' domains) and at
        most max(4 n, 2^16) of them (more are numbered by ``np.unique``, at most one a record).
        Not counted: a few hundred bytes per lattice node checked (the hierarchies' heights,
        not the table, decide how many)."""
        q, s, w, g = shape.q, shape.s, shape.w, shape.g
        distinct = 8 + (q + s) * w + w * sum(shape.qi_sizes) + max(80, 3 * q * g + 50)
        per_record = q * w + max(3 * (q + s) * w + 17, distinct)
        stats = 0
        if self.l is not None or self.t is not None:
            stats = (self.classes(shape.n) + self.max_suppression) * shape.class_bytes + 16 * shape.n
        sizes = 8 * capped_product(shape.qi_sizes, max(4 * shape.n, 1 << 16))
        return shape.n * per_record + stats + sizes

    def values_bytes(self, shape: TableShape) -> int:
        """Per QI of k values: the labels of its hierarchy's levels (at most k levels, k (k +
        1) / 2 labels) and the covers of the chosen level's (at most k) values."""
        return sum(LABEL_BYTES * (k * (k + 1) // 2) + 9 * k * k for k in shape.qi_sizes)

    def publish(self, data: Dataset, epsilon: float | None = None, rng: np.random.Generator | None = None) -> Outcome:
        """Generalize ``data``'s QIs at the lowest node of the hierarchies that is k-anonymous.

        Parameters
        ----------
        data : Dataset
            The table to publish.
        epsilon : None, optional
            Unused (k-anonymity spends no budget).
        rng : numpy.random.Generator, optional
            Unused (the search is deterministic).

        Returns
        -------
        Outcome
            A generalized :class:`~dp2pub.publish.release.TableRelease` (with ``covers``),
            an empty ledger, the achieved k, l, t and loss metrics, and the levels chosen.
        """
        qi = self.columns(data)
        model = self.model(data)
        names = [data.domain.names[j] for j in qi]
        try:
            hierarchies = load_hierarchies(
                data.name, names, [data.domain.labels[j] for j in qi], directory=self.hierarchies
            )
        except ConfigError as error:
            raise error.under("mechanism") from None
        start = time.perf_counter()
        limit = min(self.max_suppression, data.n - self.k)  # keep at least k records
        result = samarati(data.codes[:, qi], hierarchies, self.k, limit, model)
        elapsed = time.perf_counter() - start
        labels = [h.labels[level] for h, level in zip(hierarchies, result.levels)]
        members = [
            np.equal.outer(np.arange(len(h.labels[level])), h.maps[level])
            for h, level in zip(hierarchies, result.levels)
        ]
        artifact = {
            "levels": dict(zip(names, result.levels)),
            "height": result.height,
            "max_height": sum(h.height for h in hierarchies),
            "nodes_checked": result.nodes_checked,
            "max_suppression": self.max_suppression,
            "hierarchies": self.hierarchies,
        }
        return self.build(data, qi, result.generalized, labels, members, result.keep, elapsed, artifact, model)


def ranges(
    result: MondrianResult, domain: Domain, qi: list[int]
) -> tuple[np.ndarray, list[tuple[str, ...]], list[np.ndarray]]:
    """Mondrian's generalization: one range per (low, high) pair of QI ``qi[i]`` used by a
    partition, labelled ``[low..high]`` (the label itself when low == high): every record's
    range codes (n, q; the smallest dtype that holds them), the labels and the original
    values each range covers."""
    pairs = [
        np.unique(np.stack([result.low[:, i], result.high[:, i]], axis=1), axis=0, return_inverse=True)
        for i in range(len(qi))
    ]
    generalized = np.empty((len(result.partition), len(qi)), dtype=code_dtype(max(len(p) for p, _ in pairs)))
    labels, members = [], []
    for i, (j, (used, inverse)) in enumerate(zip(qi, pairs)):
        generalized[:, i] = inverse.ravel().astype(generalized.dtype)[result.partition]
        lab = domain.labels[j]
        labels.append(tuple(lab[lo] if lo == hi else f"[{lab[lo]}..{lab[hi]}]" for lo, hi in used))
        values = np.arange(int(domain.sizes[j]))
        members.append((values >= used[:, :1]) & (values <= used[:, 1:]))
    return generalized, labels, members


@dataclass(frozen=True, kw_only=True)
class MondrianPublisher(_KAnonymity):
    """``mechanism=mondrian``: multidimensional median partitioning into k-anonymous ranges.

    The records are split at the median of a QI until no partition can be split with at
    least ``k`` records on each side [1]_ (:mod:`dp2pub.anonymity.mondrian`); QI values
    become ``[min..max]`` ranges of labels in domain order, or the single label when a
    partition has one value. No epsilon is involved (``uses_budget = False``).

    Parameters
    ----------
    k : int, optional
        Every combination of published QI values is shared by at least ``k`` records
        (default 10).
    quasi_identifiers : sequence of str, optional
        The QIs; None (default): every attribute but the target and the sensitive and
        dropped ones.
    sensitive : sequence of str, optional
        The sensitive attributes of ``l`` and ``t``; None (default): the dataset's target;
        ``[]`` for none.
    l : int, optional
        Distinct l-diversity of every sensitive attribute in every class (default None: not
        required).
    t : float, optional
        t-closeness: each class's distribution of a sensitive attribute within EMD ``t`` of
        the table's, in (0, 1] (default None: not required).
    allow_dependent : mapping, optional
        Attribute -> the reason it may be published unchanged although it recodes a QI
        (a functional dependency, :mod:`dp2pub.anonymity.dependencies`).
    drop : sequence of str, optional
        Attributes published as ``*``.
    mode : str, optional
        ``strict`` (default: partitions are disjoint) or ``relaxed`` (records with the
        median value may go to either side).

    Raises
    ------
    ConfigError
        For a value out of range, or an attribute in two roles; when publishing, for an
        unknown attribute or an unexcused dependency of a published attribute on a QI.

    References
    ----------
    .. [1] K. LeFevre, D. J. DeWitt, R. Ramakrishnan, "Mondrian Multidimensional
       K-Anonymity", ICDE 2006.

    Examples
    --------
    >>> from dp2pub import MondrianPublisher, load_car
    >>> car = load_car()
    >>> outcome = MondrianPublisher(k=20, quasi_identifiers=["buying", "maint"], l=2).publish(car)
    >>> outcome.extra_metrics["k_achieved"], outcome.extra_metrics["l_achieved"]
    (108.0, 2.0)
    >>> outcome.published.domain.labels[0]
    ('vhigh', '[vhigh..high]', 'high', 'med', 'low')
    """

    name: ClassVar[str] = "mondrian"
    mode: str = "strict"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice(self.mode, "mode", MODES)

    def search_bytes(self, shape: TableShape) -> int:
        """Per record, the QIs' codes copied (q w), the partition of every record, the rows of
        a partition and of its sides (int64: 24), the partition's codes (q w) and sensitive
        codes (8 s), and a cut's offsets, masks and sort order (48); then the generalized
        codes beside the partitions (q g + g + 8). Per partition (at most n / k): its
        smallest and largest codes, two small arrays (320 + 16 q), and their ranges (48)."""
        q, s, w, g = shape.q, shape.s, shape.w, shape.g
        partitions = self.classes(shape.n) * (368 + 16 * q)
        return shape.n * max(2 * q * w + 8 * s + 72, q * g + g + 8) + partitions

    def published_sizes(self, shape: TableShape) -> list[int]:
        """A QI's ranges, at most k (k + 1) / 2 of k values and at most one a partition."""
        return [max(k, min(k * (k + 1) // 2, self.classes(shape.n))) for k in shape.sizes]

    def values_bytes(self, shape: TableShape) -> int:
        """Per QI of k values, its ranges (at most k (k + 1) / 2, and at most one per
        partition), each with its label and covers."""
        return sum((LABEL_BYTES + 9 * k) * min(k * (k + 1) // 2, self.classes(shape.n)) for k in shape.qi_sizes)

    def publish(self, data: Dataset, epsilon: float | None = None, rng: np.random.Generator | None = None) -> Outcome:
        """Partition ``data``'s records and generalize their QIs to the partitions' ranges.

        Parameters
        ----------
        data : Dataset
            The table to publish.
        epsilon : None, optional
            Unused (k-anonymity spends no budget).
        rng : numpy.random.Generator, optional
            Unused (the partitioning is deterministic).

        Returns
        -------
        Outcome
            A generalized :class:`~dp2pub.publish.release.TableRelease` (with ``covers``),
            an empty ledger, the achieved k, l, t and loss metrics, and the partition count.
        """
        qi = self.columns(data)
        model = self.model(data)
        sizes = data.domain.sizes[qi]
        start = time.perf_counter()
        result = mondrian(np.ascontiguousarray(data.codes[:, qi]), sizes, self.k, self.mode, model)
        elapsed = time.perf_counter() - start
        generalized, labels, members = ranges(result, data.domain, qi)
        artifact = {"mode": self.mode, "n_partitions": result.n_partitions}
        del result  # its partition of every record is no longer needed while the table is built
        keep = np.ones(data.n, dtype=bool)
        return self.build(data, qi, generalized, labels, members, keep, elapsed, artifact, model)
