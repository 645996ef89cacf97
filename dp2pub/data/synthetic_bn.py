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
    """Draw a random network (degree, domain sizes in ``[k_min, k_max]``, ``strength``) with
    ``rng`` and then ``n`` records from it. Attributes are named ``a0 .. a{d-1}``."""
    degree = check_int(degree, "degree", 0)
    strength = check_probability(strength, "strength", open_low=False, open_high=False)
    n, sizes = table_shape(n, d, k_min, k_max, rng)
    network = random_network(sizes, degree, strength, rng)
    return Dataset(network.sample(n, rng), Domain.from_sizes(sizes), name="synthetic_bn")


#: ``dataset=synthetic_bn`` (entry point ``dp2pub.datasets``).
SYNTHETIC_BN = Generator(make_synthetic_bn, largest_shape)
