"""Tables from noisy marginals: consistency (CALM), pair selection and GUM (PrivSyn)."""

from dp2pub.synthesis.consistency import Consistency, make_consistent, shared_sets
from dp2pub.synthesis.gum import gum, initial_records
from dp2pub.synthesis.selection import dependence, expected_l1, select_pairs

__all__ = [
    "Consistency",
    "dependence",
    "expected_l1",
    "gum",
    "initial_records",
    "make_consistent",
    "select_pairs",
    "shared_sets",
]
