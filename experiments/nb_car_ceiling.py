"""How close can LDP naive Bayes get to non-private naive Bayes on car? (the criterion: within 5 points at epsilon 4)

Car has 1728 records; with ``test_size`` 0.3 the model learns from 1209 users, each of whom
sends d + 1 = 7 reports (the class and six (feature, class) pairs). Two bounds explain the
accuracies of ``mechanism=ldp_nb``:

- ``split`` gives every report epsilon / 7. At epsilon = 4 that is 0.57 per report on a
  domain of 12 or 16 (value, class) pairs, where GRR's standard deviation of one estimated
  frequency, sqrt(Var) from Wang et al. 2017, is larger than the frequencies themselves.
- ``sample`` gives one report per user with the whole epsilon, so each of the 7 estimates
  comes from about 1209 / 7 = 173 users. Its ceiling is the same protocol without noise:
  ``epsilon = 1000`` (GRR then reports the true value), which no estimator can beat.

The script prints, as a mean over seeds (same splits as the CLI's ``metrics.test_size``):
non-private CategoricalNB, ldp_nb split and sample at several epsilons, and the sample
ceiling, plus the per-report standard deviation at epsilon / 7. No MLflow; about a minute.
Usage: ``python experiments/nb_car_ceiling.py [--seeds 10] [--test-size 0.3]``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from dp2pub.data.car import load_car
from dp2pub.learn.split import split_train_test
from dp2pub.learn.utility import classifier_metrics
from dp2pub.mechanisms import GRR
from dp2pub.publish.ldp_nb import LDPNBPublisher
from dp2pub.seeding import phase_rng

EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 1000.0)


def accuracies(strategy: str, epsilon: float, seeds: int, test_size: float) -> tuple[float, float]:
    """Mean ``accuracy_nb`` and ``accuracy_nb_baseline`` over ``seeds`` jobs, as run_job splits them."""
    data = load_car()
    private, baseline = [], []
    for seed in range(seeds):
        train, test = split_train_test(data, test_size, phase_rng(seed, "split"))
        publisher = LDPNBPublisher(oracle="grr", estimator="norm_sub", strategy=strategy, prior="report")
        outcome = publisher.publish(train, epsilon, phase_rng(seed, "mechanism"))
        measured = classifier_metrics(outcome.release, train, test, ["nb"], phase_rng(seed, "learn"))
        private.append(measured["accuracy_nb"])
        baseline.append(measured["accuracy_nb_baseline"])
    return float(np.mean(private)), float(np.mean(baseline))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--test-size", type=float, default=0.3)
    args = parser.parse_args()
    n_train = 1728 - math.ceil(1728 * args.test_size)  # scikit-learn rounds the test part up
    print(f"car: {n_train} training users, 7 reports each; mean over {args.seeds} seeds, oracle grr\n")
    print(f"{'epsilon':>8}  {'split':>6}  {'sample':>6}  {'non-private NB':>14}")
    for epsilon in EPSILONS:
        split, base = accuracies("split", epsilon, args.seeds, args.test_size)
        sample, _ = accuracies("sample", epsilon, args.seeds, args.test_size)
        print(f"{epsilon:8g}  {split:6.3f}  {sample:6.3f}  {base:14.3f}")
    print("\nGRR standard deviation of one estimated frequency under split (epsilon / 7 per report):")
    for epsilon in (4.0, 8.0):
        for k in (12, 16):
            sd = np.sqrt(GRR(epsilon=epsilon / 7, k=k).variance(n_train))
            print(f"  epsilon={epsilon:g}: k={k}: sd {sd:.3f} vs a uniform cell frequency {1 / k:.3f}")


if __name__ == "__main__":
    main()
