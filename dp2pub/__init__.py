"""dp2pub: privacy-preserving publication of categorical tables, as a library.

Datasets, frequency oracles, publishers and metrics are plain numpy/pandas code usable
without Hydra or MLflow::

    import numpy as np
    from dp2pub import GRR, OraclePublisher, evaluate_marginals, make_synthetic

    rng = np.random.default_rng(0)
    data = make_synthetic(n=10_000, d=5, k_min=2, k_max=8, rng=rng)
    outcome = OraclePublisher("oue", estimator="unbiased").publish(data, epsilon=2.0, rng=rng)
    print(evaluate_marginals(data, outcome.release, rng).metrics)
"""

from dp2pub.data import Dataset, Domain, make_synthetic, marginal_counts
from dp2pub.mechanisms import GRR, OLH, OUE, RAPPOR, SUE, postprocess, project_simplex
from dp2pub.metrics import evaluate_marginals, mse, tvd
from dp2pub.publish import OraclePublisher, Outcome, TableRelease
from dp2pub.validation import ConfigError

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Dataset",
    "Domain",
    "GRR",
    "OLH",
    "OUE",
    "OraclePublisher",
    "RAPPOR",
    "SUE",
    "Outcome",
    "TableRelease",
    "evaluate_marginals",
    "make_synthetic",
    "marginal_counts",
    "mse",
    "postprocess",
    "project_simplex",
    "tvd",
]
