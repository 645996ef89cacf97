"""The one Bayesian-network type: graph checks, tables, equality, ancestral sampling."""

import numpy as np
import pytest

from dp2pub.data.bayes_net import BayesianNetwork
from dp2pub.data.marginals import joint_codes


def chain() -> BayesianNetwork:
    """0 -> 1 -> 2 with a deterministic last step (2 = 1)."""
    graph = BayesianNetwork([0, 1, 2], {0: (), 1: (0,), 2: (1,)})
    return graph.with_tables(
        [2, 3, 3], {0: np.array([[0.25, 0.75]]), 1: np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]), 2: np.eye(3)}
    )


def test_parents_by_mapping_or_by_attribute_give_the_same_network():
    assert BayesianNetwork([1, 0], [(1,), ()]) == BayesianNetwork([1, 0], {0: (1,), 1: ()})
    assert BayesianNetwork([0, 1], {0: (), 1: (0,)}) != chain()


def test_tables_are_checked_against_the_sizes():
    graph = BayesianNetwork([0, 1], {0: (), 1: (0,)})
    with pytest.raises(ValueError, match="expected"):
        graph.with_tables([2, 3], [np.ones((1, 2)), np.ones((3, 3))])
    with pytest.raises(ValueError, match="both"):
        BayesianNetwork([0, 1], {0: (), 1: (0,)}, sizes=np.array([2, 3]))
    with pytest.raises(ValueError, match="no conditional tables"):
        graph.sample(10, np.random.default_rng(0))


def test_sample_follows_the_tables_and_draws_one_uniform_per_attribute():
    net = chain()
    rng = np.random.default_rng(3)
    codes = net.sample(100_000, rng)
    assert codes.dtype == np.uint8 and codes.flags.f_contiguous
    assert np.all(codes[codes[:, 0] == 0, 1] == 0) and np.all(codes[:, 2] == codes[:, 1])
    assert abs(codes[:, 0].mean() - 0.75) < 0.01
    after = np.random.default_rng(3)
    for _ in range(3):
        after.random(100_000)
    assert rng.random() == after.random()


def test_sample_is_the_inverse_cdf_of_each_row_in_order():
    rng = np.random.default_rng(5)
    sizes = np.array([3, 4, 2])
    cpts = {0: rng.dirichlet(np.ones(3))[None, :], 1: rng.dirichlet(np.ones(4), 3), 2: rng.dirichlet(np.ones(2), 12)}
    net = BayesianNetwork([0, 1, 2], {0: (), 1: (0,), 2: (0, 1)}, sizes, cpts)
    codes = net.sample(1000, np.random.default_rng(6))
    u = np.random.default_rng(6).random((3, 1000))
    for t, (x, parents) in enumerate(net.pairs()):
        rows = joint_codes(codes[:, list(parents)], sizes[list(parents)]) if parents else np.zeros(1000, np.int64)
        cdf = np.cumsum(cpts[x], axis=1) / np.cumsum(cpts[x], axis=1)[:, -1:]
        assert np.array_equal(codes[:, x], (cdf[rows, :-1] <= u[t][:, None]).sum(axis=1))
