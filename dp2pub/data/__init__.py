"""Tables: the Domain + integer-code Dataset, and the dataset generators and loaders."""

from typing import TYPE_CHECKING

from dp2pub.lazy import lazy_exports

if TYPE_CHECKING:
    from dp2pub.data.adult import load_adult
    from dp2pub.data.bayes_net import BayesianNetwork
    from dp2pub.data.car import load_car
    from dp2pub.data.csv_table import load_csv
    from dp2pub.data.dataset import Dataset, code_dtype
    from dp2pub.data.domain import Domain
    from dp2pub.data.errors import DataFileError, DataNotFoundError
    from dp2pub.data.generator import Generator
    from dp2pub.data.marginals import joint_codes, marginal_counts, stacked_marginal_counts
    from dp2pub.data.privbayes import load_privbayes
    from dp2pub.data.sampling import sample_rows
    from dp2pub.data.synthetic import make_synthetic
    from dp2pub.data.synthetic_bn import make_synthetic_bn
    from dp2pub.data.uci_nb import load_uci_nb

__all__ = [
    "BayesianNetwork",
    "DataFileError",
    "DataNotFoundError",
    "Dataset",
    "Domain",
    "Generator",
    "code_dtype",
    "joint_codes",
    "load_adult",
    "load_car",
    "load_csv",
    "load_privbayes",
    "load_uci_nb",
    "make_synthetic",
    "make_synthetic_bn",
    "marginal_counts",
    "sample_rows",
    "stacked_marginal_counts",
]

if not TYPE_CHECKING:  # type checkers read the imports above, and flag a name that is not there
    __getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
