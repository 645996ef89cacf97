"""The fo_variance theory curves are the library's exact expected MSE."""

import numpy as np
import pytest

from dp2pub.figures.aggregate import aggregate
from dp2pub.figures.collect import collect
from dp2pub.figures.theory import expected_mse, fo_theory
from dp2pub.mechanisms import ORACLES
from tests.figures.conftest import STUDIES, K, N

SPEC = STUDIES["fo_variance"]


def test_curve_equals_expected_mse_at_the_sweep_points(fake_store):
    curves = fo_theory(SPEC.params, SPEC.x, aggregate(collect(SPEC, fake_store["uri"])))
    assert set(curves["mechanism.name"]) == {"grr", "rappor"}
    assert (curves["metric"] == "mse_freq").all()
    uniform = np.full(K, 1 / K)
    for name, options in (("grr", {}), ("rappor", {"num_bits": 64, "num_hashes": 2, "hash_seed": 0})):
        curve = curves[curves["mechanism.name"] == name].set_index("epsilon")["value"]
        assert len(curve) > 50 and curve.index.min() == 1.0 and curve.index.max() == 4.0
        for eps in (1.0, 4.0):
            assert curve[eps] == pytest.approx(
                ORACLES[name](epsilon=eps, k=K, **options).expected_mse(N, uniform), rel=1e-12
            )
        assert curve.is_monotonic_decreasing


def test_split_and_sample_budgets():
    uniform = np.full(8, 1 / 8)
    assert expected_mse("oue", 2.0, 1000, 4, 8) == pytest.approx(
        ORACLES["oue"](epsilon=0.5, k=8).expected_mse(1000, uniform)
    )
    assert expected_mse("oue", 2.0, 1000, 4, 8, "sample") == pytest.approx(
        ORACLES["oue"](epsilon=2.0, k=8).expected_mse(250, uniform)
    )
