"""dp2pub: privacy-preserving publication of categorical tables, as a library.

Datasets, frequency oracles, publishers and metrics are plain numpy/pandas code usable
without Hydra or MLflow:

>>> import numpy as np
>>> from dp2pub import OUEPublisher, evaluate_marginals, make_synthetic
>>> rng = np.random.default_rng(0)
>>> data = make_synthetic(n=10_000, d=5, k_min=2, k_max=8, rng=rng)
>>> outcome = OUEPublisher(estimator="unbiased").publish(data, epsilon=2.0, rng=rng)
>>> evaluation = evaluate_marginals(data, outcome.release, rng)
>>> metrics = evaluation.metrics
>>> round(metrics["mse_freq"], 4), round(metrics["mse_theory"], 4), outcome.epsilon_spent
(0.0033, 0.0025, 2.0)
>>> evaluation.distributions  # unbiased estimates have negative entries: TVDs may exceed 1
False

A whole job from a config mapping (the keys of ``conf/``), as the command line runs it:

>>> from dp2pub import run_job
>>> result = run_job({"epsilon": 1.0, "seed": 0, "dataset": {"name": "car"},
...                   "mechanism": {"name": "grr"}, "metrics": {"models": []}})
>>> round(result.metrics["tvd_1way"], 3), result.metrics["epsilon_spent"]
(0.329, 1.0)
"""

from typing import TYPE_CHECKING

from dp2pub.lazy import lazy_exports

if TYPE_CHECKING:
    from dp2pub.audit import privacy_loss, satisfies_ldp
    from dp2pub.data import (
        Dataset,
        Domain,
        Generator,
        load_adult,
        load_car,
        load_privbayes,
        make_synthetic,
        make_synthetic_bn,
        marginal_counts,
    )
    from dp2pub.job import JobResult, run_job
    from dp2pub.mechanisms import GRR, OLH, OUE, RAPPOR, SUE, FrequencyOracle, postprocess, project_simplex
    from dp2pub.mechanisms.accounting import Spend, epsilon_spent, split_budget
    from dp2pub.metrics import evaluate_marginals, mse, tvd
    from dp2pub.publish import (
        DP2PubPublisher,
        DPProPublisher,
        GRRPublisher,
        LDPNBPublisher,
        MondrianPublisher,
        OLHPublisher,
        OraclePublisher,
        OUEPublisher,
        Outcome,
        PRAMPublisher,
        PrivBayesPublisher,
        Publisher,
        RAPPORPublisher,
        Release,
        SamaratiPublisher,
        SUEPublisher,
        TableRelease,
        working_bytes,
    )
    from dp2pub.validation import ConfigError, InputPath

__version__ = "0.1.0"

__all__ = [
    "GRR",
    "OLH",
    "OUE",
    "RAPPOR",
    "SUE",
    "ConfigError",
    "DP2PubPublisher",
    "DPProPublisher",
    "Dataset",
    "Domain",
    "FrequencyOracle",
    "GRRPublisher",
    "Generator",
    "InputPath",
    "JobResult",
    "LDPNBPublisher",
    "MondrianPublisher",
    "OLHPublisher",
    "OUEPublisher",
    "OraclePublisher",
    "Outcome",
    "PRAMPublisher",
    "PrivBayesPublisher",
    "Publisher",
    "RAPPORPublisher",
    "Release",
    "SUEPublisher",
    "SamaratiPublisher",
    "Spend",
    "TableRelease",
    "epsilon_spent",
    "evaluate_marginals",
    "load_adult",
    "load_car",
    "load_privbayes",
    "make_synthetic",
    "make_synthetic_bn",
    "marginal_counts",
    "mse",
    "postprocess",
    "privacy_loss",
    "project_simplex",
    "run_job",
    "satisfies_ldp",
    "split_budget",
    "tvd",
    "working_bytes",
]

if not TYPE_CHECKING:  # type checkers read the imports above, and flag a name that is not there
    __getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
