"""Correlated synthetic tables: records drawn from a random Bayesian network.

The network over ``d`` attributes is built from an explicit generator:

- a random topological order (a permutation of the columns, so column order reveals nothing);
- the attribute at position ``t`` of that order gets ``min(t, degree)`` parents drawn
  uniformly from the attributes before it (a ``degree``-bounded network as in PrivBayes,
  Zhang et al., SIGMOD 2014);
- each domain size uniform in ``[k_min, k_max]``;
- a root's distribution is ``base_j ~ Dirichlet(1, ..., 1)``; every other attribute's
  conditional distribution is a mixture controlled by ``strength`` in [0, 1]::

      P(x_j = v | parents = u) = (1 - strength) * base_j[v] + strength * [v == f_j(u)]

  where ``base_j ~ Dirichlet(1, ..., 1)`` is the attribute's own distribution and ``f_j`` a
  uniformly random function from parent configurations to values. With probability
  ``strength`` the value is determined by the parents, otherwise it is drawn from ``base_j``.
  ``strength=0`` gives independent attributes (every parent configuration has the same
  row); ``strength=1`` makes each non-root attribute a function of its parents.
  The random draws do not depend on ``strength``: one generator state gives the same
  network (order, parents, ``base_j``, ``f_j``) at every strength.

The network is a :class:`dp2pub.data.bayes_net.BayesianNetwork` with its tables; records are
drawn by its ancestral sampler (one vectorized inverse-CDF step per attribute).
"""

from __future__ import annotations

import math

import numpy as np

from dp2pub.data.bayes_net import BayesianNetwork
from dp2pub.data.dataset import Dataset
from dp2pub.data.domain import Domain
from dp2pub.data.generator import Generator
from dp2pub.data.synthetic import largest_shape, table_shape
from dp2pub.validation import ConfigError, check_int, check_probability

#: Largest CPT (parent configurations x values) a node may have.
MAX_CPT_CELLS = 10**6


def random_network(sizes: np.ndarray, degree: int, strength: float, rng: np.random.Generator) -> BayesianNetwork:
    """A random network over attributes of the given domain sizes (see the module docstring)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    d = len(sizes)
    order = tuple(int(j) for j in rng.permutation(d))
    parents: list[tuple[int, ...]] = [()] * d
    cpts: list[np.ndarray] = [np.empty(0)] * d
    for t, j in enumerate(order):
        chosen = rng.choice(t, size=min(t, degree), replace=False) if t else np.empty(0, np.int64)
        parents[j] = tuple(sorted(order[i] for i in chosen))
        configs = math.prod(int(sizes[p]) for p in parents[j])
        if configs * sizes[j] > MAX_CPT_CELLS:
            raise ConfigError(
                "degree",
                degree,
                f"a degree whose CPTs stay below {MAX_CPT_CELLS} cells "
                f"(attribute a{j} would need {configs * sizes[j]})",
            )
        base = rng.dirichlet(np.ones(sizes[j]))
        if parents[j]:
            function = rng.integers(0, sizes[j], size=configs)
            cpts[j] = (1 - strength) * base[None, :] + strength * np.eye(sizes[j])[function]
        else:  # a root has its own distribution only
            cpts[j] = base[None, :]
    return BayesianNetwork(list(order), parents, sizes, cpts)


def make_synthetic_bn(
    *,
    n: int,
    d: int,
    degree: int,
    k_min: int,
    k_max: int,
    strength: float,
    rng: np.random.Generator,
) -> Dataset:
    """Draw a random Bayesian network and then a table of records from it.

    The network has a random topological order; the attribute at position ``t`` of that
    order gets ``min(t, degree)`` parents drawn uniformly from the attributes before it (a
    ``degree``-bounded network as in PrivBayes [1]_). A root's distribution is
    ``base_j ~ Dirichlet(1, ..., 1)``; any other attribute's conditional distribution is
    ``(1 - strength) * base_j[v] + strength * [v == f_j(u)]`` for a uniformly random function
    ``f_j`` of its parents' values ``u`` (see the module docstring). The random draws do not
    depend on ``strength``: one generator state gives the same network at every strength.
    Records are drawn by the network's ancestral sampler.

    Parameters
    ----------
    n : int
        The number of records, >= 1.
    d : int
        The number of attributes, >= 1; they are named ``a0 .. a{d-1}``.
    degree : int
        The most parents an attribute has, >= 0.
    k_min, k_max : int
        The range of the domain sizes, ``2 <= k_min <= k_max``.
    strength : float
        How strongly an attribute depends on its parents, in [0, 1] (0: independent
        attributes; 1: every non-root attribute a function of its parents).
    rng : numpy.random.Generator
        The source of the network and the records.

    Returns
    -------
    Dataset
        The table, named ``synthetic_bn``.

    Raises
    ------
    ConfigError
        Naming the bare key of a value out of range, or ``degree`` when an attribute's table
        would exceed :data:`MAX_CPT_CELLS` cells.

    References
    ----------
    .. [1] J. Zhang, G. Cormode, C. M. Procopiuc, D. Srivastava, X. Xiao, "PrivBayes: Private
       Data Release via Bayesian Networks", SIGMOD 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from dp2pub import make_synthetic_bn, marginal_counts
    >>> data = make_synthetic_bn(
    ...     n=1000, d=4, degree=1, k_min=2, k_max=4, strength=0.9, rng=np.random.default_rng(0)
    ... )
    >>> data.name, data.n, data.domain.sizes.tolist()
    ('synthetic_bn', 1000, [4, 3, 3, 2])
    >>> print(marginal_counts(data.codes[:, :2], data.domain.sizes[:2]))
    [[ 11   5   0]
     [661 210  96]
     [  6   1   0]
     [  8   2   0]]
    """
    degree = check_int(degree, "degree", 0)
    strength = check_probability(strength, "strength", open_low=False, open_high=False)
    n, sizes = table_shape(n, d, k_min, k_max, rng)
    network = random_network(sizes, degree, strength, rng)
    return Dataset(network.sample(n, rng), Domain.from_sizes(sizes), name="synthetic_bn")


#: ``dataset=synthetic_bn`` (entry point ``dp2pub.datasets``).
SYNTHETIC_BN = Generator(make_synthetic_bn, largest_shape)
