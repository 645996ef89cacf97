"""The dp2pub publisher: exact budget in both splits, artifacts, and input checks."""

import numpy as np
import pytest

from dp2pub.data.synthetic_bn import make_synthetic_bn
from dp2pub.publish.dp2pub_publisher import DP2PubPublisher
from dp2pub.validation import ConfigError


@pytest.fixture(scope="module")
def data():
    return make_synthetic_bn(n=3000, d=6, degree=2, k_min=2, k_max=5, strength=0.8, rng=np.random.default_rng(0))


@pytest.mark.parametrize("split", ["budget", "users"])
def test_every_user_spends_exactly_epsilon(data, split):
    outcome = DP2PubPublisher(split=split, structure_fraction=0.3).publish(data, 2.0, np.random.default_rng(1))
    assert outcome.epsilon_spent == pytest.approx(2.0)
    rows = outcome.published.n
    assert rows == data.n if split == "budget" else rows == data.n - round(0.3 * data.n)
    clusters = outcome.artifacts["clusters"]
    assert sorted(a for c in clusters for a in c["attributes"]) == sorted(data.domain.names)
    assert sum(c["pbc"] for c in clusters) == pytest.approx(1.0)
    assert len(outcome.artifacts["network"]) == data.d
    assert {"structure", "perturb", "pram"} <= set(outcome.timings)


@pytest.mark.parametrize(
    "kwargs,key",
    [
        ({"degree": 0}, "degree=0"),
        ({"structure_fraction": 0}, "structure_fraction=0"),
        ({"structure_fraction": 1.0}, "structure_fraction=1.0"),
        ({"max_cluster_size": 0}, "max_cluster_size=0"),
        ({"max_cells": 0}, "max_cells=0"),
        ({"split": "rows"}, "split='rows'"),
    ],
)
def test_bad_settings_name_the_key(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        DP2PubPublisher(**kwargs)


def test_degree_must_be_below_d(data):
    with pytest.raises(ConfigError, match=r"mechanism.degree=6 .*\[1, 5\]"):
        DP2PubPublisher(degree=6).publish(data, 1.0, np.random.default_rng(0))
