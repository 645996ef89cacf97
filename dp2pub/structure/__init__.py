"""Structure learning: entropy and mutual information of coded columns, and PrivBayes'
GreedyBayes network (Zhang et al., SIGMOD 2014), the first step of DP2-Pub.

Modules: ``information`` (entropy, mutual information), ``bayes_net`` (GreedyBayes; the
network type is :class:`dp2pub.data.bayes_net.BayesianNetwork`), ``clustering`` (DP2-Pub's Markov-blanket clusters), ``budget`` (CIF / PBC weights).
"""

from typing import TYPE_CHECKING

from dp2pub.lazy import lazy_exports

if TYPE_CHECKING:
    from dp2pub.structure.bayes_net import (
        BayesianNetwork,
        PairSelector,
        Selector,
        argmax_select,
        greedy_bayes,
        total_mutual_information,
    )
    from dp2pub.structure.information import (
        conditional_entropy,
        entropy,
        entropy_from_counts,
        entropy_of_distribution,
        mutual_information,
        mutual_information_of_distribution,
    )

__all__ = [
    "BayesianNetwork",
    "PairSelector",
    "Selector",
    "argmax_select",
    "conditional_entropy",
    "entropy",
    "entropy_from_counts",
    "entropy_of_distribution",
    "greedy_bayes",
    "mutual_information",
    "mutual_information_of_distribution",
    "total_mutual_information",
]

if not TYPE_CHECKING:  # type checkers read the imports above, and flag a name that is not there
    __getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
