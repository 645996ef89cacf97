"""Tables: the Domain + integer-code Dataset, and the dataset generators and loaders."""

from dp2pub.data.dataset import Dataset, code_dtype
from dp2pub.data.domain import Domain
from dp2pub.data.synthetic import make_synthetic

__all__ = ["Dataset", "Domain", "code_dtype", "make_synthetic"]
