"""LDP naive Bayes with ``accounting: per_report`` on Car, beside the published curve of the
public reimplementation kusabhadranv/nb_dp (``de/car_DE.csv``: direct encoding, i.e. GRR).

That reimplementation gives every report the whole epsilon, trains on a 95/5 split drawn once
(``np.random.seed(496)``, a permutation of the rows) and averages 100 perturbation runs. Its
published accuracies (%) are 73.37 / 81.69 / 87.02 / 89.29 / 90.32 / 90.87 at
epsilon 0.5 / 1 / 2 / 3 / 4 / 5. This script measures, at the same epsilons, dp2pub's
``ldp_nb`` with ``oracle=grr strategy=split prior=report accounting=per_report`` in both
encodings: ``pairs`` (every user sends 7 reports of epsilon each, so ``epsilon_spent`` is
7 epsilon) and ``slots``, the reimplementation's (25 reports: 25 epsilon):

- over ``--runs`` random stratified 95/5 splits (one perturbation each, seeded as the CLI's
  jobs are: ``metrics.test_size=0.05 seed=0..runs-1``), with non-private naive Bayes on the
  same splits;
- on the reimplementation's own split, rebuilt: it reads ``car.data`` with pandas'
  ``read_csv`` without ``header=None``, so line 1 becomes the header and 1,727 records remain;
  ``np.random.seed(496); np.random.permutation(1727)`` then puts the first
  ``int(0.95 * 1727) = 1640`` in the training part and 87 in the test part. ``--runs``
  perturbation runs, as it does.

The reimplementation draws the slots' uniform filler once, before its 100 runs (in
``deldp.__init__``), so its curve is the mean over perturbations given one filler draw; the
last line measures how much that one draw can move it: the spread, run to run, of the slot
encoding's accuracy on its split at epsilon 50, where GRR is all but noiseless and what
varies is the filler.

No MLflow; about 25 s. Usage: ``python experiments/nb_per_report.py [--runs 100]
[--estimator clip] [--alpha 0.01]`` (the reimplementation sets every count <= 0 to 1 and does
not smooth: ``clip`` and a small ``alpha`` come closest).
"""

from __future__ import annotations

import argparse

import numpy as np

from dp2pub.data.car import load_car
from dp2pub.data.dataset import Dataset
from dp2pub.learn.split import split_train_test
from dp2pub.learn.utility import baseline_classifier
from dp2pub.publish.ldp_nb import LDPNBPublisher
from dp2pub.seeding import phase_rng

#: kusabhadranv/nb_dp de/car_DE.csv: epsilon -> mean accuracy (%) of 100 runs.
PUBLISHED = {0.5: 73.37, 1.0: 81.69, 2.0: 87.02, 3.0: 89.29, 4.0: 90.32, 5.0: 90.87}


def publishers(estimator: str, alpha: float) -> dict[str, LDPNBPublisher]:
    """The reimplementation's protocol in each encoding: GRR, per-report epsilon, a class report."""
    return {
        encoding: LDPNBPublisher(
            oracle="grr",
            strategy="split",
            prior="report",
            accounting="per_report",
            encoding=encoding,
            estimator=estimator,
            alpha=alpha,
        )
        for encoding in ("pairs", "slots")
    }


def their_split(data: Dataset) -> tuple[Dataset, Dataset]:
    """The reimplementation's training and test parts of Car (see the module docstring)."""
    kept = np.ones(data.n, dtype=bool)
    kept[0] = False  # car.data's line 1, read as the header
    rows = data.rows(kept)
    order = np.random.RandomState(496).permutation(rows.n)  # its np.random.seed(496) + permutation
    train = np.zeros(rows.n, dtype=bool)
    train[order[: int(0.95 * rows.n)]] = True
    return rows.rows(train), rows.rows(~train)


def accuracy(model, test: Dataset) -> float:
    """Percent of the test records whose class ``model`` predicts."""
    features = [j for j in range(test.d) if j != test.target_column]
    return 100.0 * float(np.mean(model.predict(test.codes[:, features]) == test.codes[:, test.target_column]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--estimator", default="norm_sub", help="clip or norm_sub (default)")
    parser.add_argument("--alpha", type=float, default=1.0, help="Laplace smoothing (default 1)")
    args = parser.parse_args()
    encodings = publishers(args.estimator, args.alpha)
    data = load_car()
    splits = [split_train_test(data, 0.05, phase_rng(seed, "split")) for seed in range(args.runs)]
    theirs = their_split(data)
    random_nb = np.mean([accuracy(baseline_classifier("nb", train, 0, 1.0), test) for train, test in splits])
    their_nb = accuracy(baseline_classifier("nb", theirs[0], 0, 1.0), theirs[1])
    print(f"car, per_report GRR, {args.runs} runs; accuracy in %")
    print(f"non-private naive Bayes: {random_nb:.2f} (mean of the random 95/5 splits), {their_nb:.2f} (their split)")
    for encoding, publisher in encodings.items():
        print(
            f"\nencoding {encoding}:\n{'epsilon':>7}  {'spent':>5}  {'published':>9}  {'random splits ± SE':>18}  {'their split':>11}"
        )
        rng = np.random.default_rng(0)
        for epsilon, published in PUBLISHED.items():
            outcomes = [
                publisher.publish(train, epsilon, phase_rng(seed, "mechanism"))
                for seed, (train, _) in enumerate(splits)
            ]
            random = [accuracy(o.release.model, test) for o, (_, test) in zip(outcomes, splits)]
            spread = np.std(random, ddof=1) / np.sqrt(len(random))
            fixed = np.mean(
                [
                    accuracy(publisher.publish(theirs[0], epsilon, rng).release.model, theirs[1])
                    for _ in range(args.runs)
                ]
            )
            spent = outcomes[0].epsilon_spent
            print(f"{epsilon:7g}  {spent:5g}  {published:9.2f}  {np.mean(random):11.2f} ± {spread:4.2f}  {fixed:11.2f}")
    rng = np.random.default_rng(1)
    filler = [
        accuracy(encodings["slots"].publish(theirs[0], 50.0, rng).release.model, theirs[1]) for _ in range(args.runs)
    ]
    print(
        f"\nslots on their split at epsilon 50: {np.mean(filler):.2f}, standard deviation {np.std(filler, ddof=1):.2f} run to run"
    )


if __name__ == "__main__":
    main()
