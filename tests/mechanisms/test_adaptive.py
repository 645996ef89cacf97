"""``adaptive``: GRR or OUE, whichever estimates with the smaller variance (Wang et al. 2017)."""

import math

import numpy as np
import pytest

from dp2pub.mechanisms import GRR, OUE
from dp2pub.mechanisms.adaptive import adaptive_oracle


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 4.0])
def test_grr_below_three_e_to_the_epsilon_plus_two_values_and_oue_above(epsilon):
    threshold = 3 * math.exp(epsilon) + 2  # Wang et al. 2017, section 5: the variances cross there
    for k in range(2, 200):
        chosen = adaptive_oracle(epsilon, k)
        assert chosen.k == k and chosen.epsilon == epsilon
        assert isinstance(chosen, GRR if k < threshold else OUE), (epsilon, k)


def test_the_chosen_oracle_has_the_smallest_closed_form_variance_and_estimates():
    oracle = adaptive_oracle(1.0, 30)
    assert oracle.variance(1000) == min(GRR(epsilon=1.0, k=30).variance(1000), OUE(epsilon=1.0, k=30).variance(1000))
    values = np.random.default_rng(0).integers(0, 30, size=20_000)
    estimate = oracle.estimate(oracle.perturb(values, np.random.default_rng(1)))
    truth = np.bincount(values, minlength=30) / values.size
    assert np.abs(estimate - truth).max() < 5 * math.sqrt(oracle.variance(values.size))
