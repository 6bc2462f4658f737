"""Receiver data-priors Q (Bon et al. 2026, §3)."""

from persuasive.priors.base import Prior, as_dataset
from persuasive.priors.cells import IndependentCellsPrior
from persuasive.priors.discrete import DiscretePrior, TwoPointPrior
from persuasive.priors.gaussian import GaussianPrior

__all__ = [
    "DiscretePrior",
    "GaussianPrior",
    "IndependentCellsPrior",
    "Prior",
    "TwoPointPrior",
    "as_dataset",
]
