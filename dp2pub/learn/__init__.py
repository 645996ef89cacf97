"""Learning on published data: the LDP naive Bayes classifier (Yilmaz et al. 2019), the
train/test split of a job and the classifier-utility metrics ``accuracy_<model>``."""

from typing import TYPE_CHECKING

from dp2pub.lazy import lazy_exports

if TYPE_CHECKING:
    from dp2pub.learn.ldp_nb import LDPNaiveBayes
    from dp2pub.learn.models import MODELS, build_model
    from dp2pub.learn.split import split_train_test
    from dp2pub.learn.utility import classifier_metrics

__all__ = ["MODELS", "LDPNaiveBayes", "build_model", "classifier_metrics", "split_train_test"]

if not TYPE_CHECKING:  # type checkers read the imports above, and flag a name that is not there
    __getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)
