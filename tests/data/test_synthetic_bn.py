"""The Bayesian-network generator: determinism, shapes, the sampler, dependence strength."""

import math

import numpy as np
import pytest

from dp2pub.data import make_synthetic_bn
from dp2pub.data.synthetic_bn import random_network
from dp2pub.validation import ConfigError


def mutual_information(x: np.ndarray, y: np.ndarray) -> float:
    """Plug-in mutual information (nats) of two code columns."""
    kx, ky = int(x.max()) + 1, int(y.max()) + 1
    joint = np.bincount(x.astype(np.int64) * ky + y, minlength=kx * ky).reshape(kx, ky) / len(x)
    px, py = joint.sum(1, keepdims=True), joint.sum(0, keepdims=True)
    nz = joint > 0
    return float((joint[nz] * np.log(joint[nz] / (px @ py)[nz])).sum())


def parent_code(codes, sizes, parents):
    code = np.zeros(len(codes), dtype=np.int64)
    for p in parents:
        code = code * sizes[p] + codes[:, p]
    return code


def test_same_generator_state_same_data_and_shapes():
    a = make_synthetic_bn(n=500, d=6, degree=2, k_min=3, k_max=5, strength=0.7, rng=np.random.default_rng(4))
    b = make_synthetic_bn(n=500, d=6, degree=2, k_min=3, k_max=5, strength=0.7, rng=np.random.default_rng(4))
    c = make_synthetic_bn(n=500, d=6, degree=2, k_min=3, k_max=5, strength=0.7, rng=np.random.default_rng(5))
    assert np.array_equal(a.codes, b.codes) and a.domain == b.domain
    assert not np.array_equal(a.codes, c.codes)
    assert (a.n, a.d) == (500, 6) and a.name == "synthetic_bn"
    assert a.domain.sizes.min() >= 3 and a.domain.sizes.max() <= 5
    assert np.all(a.codes.max(axis=0) < a.domain.sizes)


def test_network_shape_follows_degree_and_order():
    net = random_network(np.array([3, 4, 2, 5, 3, 2]), 2, 0.5, np.random.default_rng(0))
    position = {j: t for t, j in enumerate(net.order)}
    assert sorted(net.order) == list(range(6))
    assert sorted(net.parents) == list(range(6))
    for j, parents in net.parents.items():
        assert len(parents) == min(position[j], 2)
        assert all(position[p] < position[j] for p in parents)
        assert net.cpts[j].shape == (math.prod(net.sizes[list(parents)]), net.sizes[j])
        assert np.allclose(net.cpts[j].sum(axis=1), 1)


def test_sampler_draws_from_the_conditional_tables():
    net = random_network(np.array([3, 4, 5]), 2, 0.6, np.random.default_rng(1))
    n = 200_000
    codes = net.sample(n, np.random.default_rng(2))
    for j in range(3):  # every parent configuration's frequencies within 4.5 standard errors
        rows = parent_code(codes, net.sizes, net.parents[j])
        counts = np.zeros_like(net.cpts[j])
        np.add.at(counts, (rows, codes[:, j]), 1)
        m = counts.sum(axis=1, keepdims=True)
        p = net.cpts[j]
        assert np.all(np.abs(counts / m - p) <= 4.5 * np.sqrt(p * (1 - p) / m) + 1e-12)


def mean_child_parent_mi(strength: float, n: int = 20_000) -> tuple[float, float]:
    """Mean MI between each non-root attribute and its parents' joint, and the mean of the
    plug-in bias (K_parents - 1)(K_child - 1) / 2n that independence gives."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(3, 6, size=8, endpoint=True)
    net = random_network(sizes, 2, strength, rng)
    codes = net.sample(n, rng)
    mi, bias = [], []
    for j, parents in net.parents.items():
        if parents:
            mi.append(mutual_information(parent_code(codes, sizes, parents), codes[:, j]))
            bias.append((math.prod(sizes[list(parents)]) - 1) * (sizes[j] - 1) / (2 * n))
    return float(np.mean(mi)), float(np.mean(bias))


def test_dependence_strength_matters():
    none, bias = mean_child_parent_mi(0.0)
    weak, _ = mean_child_parent_mi(0.3)
    strong, _ = mean_child_parent_mi(0.9)
    # at strength 0 the attributes are independent: MI is the plug-in bias of independence
    assert 0.5 * bias < none < 2 * bias
    assert weak > 10 * none and strong > 2 * weak and strong > 0.5


def test_strength_one_makes_children_functions_of_their_parents():
    sizes = np.array([4, 3, 5, 4])
    net = random_network(sizes, 2, 1.0, np.random.default_rng(3))
    codes = net.sample(5000, np.random.default_rng(4))
    for j, parents in net.parents.items():
        if parents:
            pairs = np.unique(np.column_stack([parent_code(codes, sizes, parents), codes[:, j]]), axis=0)
            assert len(pairs) == len(np.unique(pairs[:, 0]))  # one child value per parent value


def test_degree_zero_gives_independent_attributes():
    net = random_network(np.array([3, 3, 3]), 0, 1.0, np.random.default_rng(0))
    assert net.parents == {0: (), 1: (), 2: ()}


@pytest.mark.parametrize(
    "kwargs,key",
    [
        ({"n": 0}, "n=0"),
        ({"degree": -1}, "degree=-1"),
        ({"strength": 1.5}, "strength=1.5"),
        ({"strength": float("nan")}, "strength=nan"),
        ({"strength": "high"}, "strength='high'"),
        ({"k_min": 6, "k_max": 4}, "k_min=6"),
    ],
)
def test_bad_parameters_name_the_key_and_range(kwargs, key):
    params = {"n": 10, "d": 3, "degree": 1, "k_min": 2, "k_max": 4, "strength": 0.5, **kwargs}
    with pytest.raises(ConfigError, match=key):
        make_synthetic_bn(rng=np.random.default_rng(0), **params)
