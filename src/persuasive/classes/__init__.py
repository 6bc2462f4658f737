"""Prior classes 𝒬_x (Assumption 5, Bon et al. 2026)."""

from persuasive.classes.base import PriorClass
from persuasive.classes.finite import FiniteClass
from persuasive.classes.gaussian_mean import GaussianMeanClass, class_terms
from persuasive.classes.neighbours import NeighbourPriors
from persuasive.classes.small_cell import SmallCellClass

__all__ = [
    "FiniteClass",
    "GaussianMeanClass",
    "NeighbourPriors",
    "PriorClass",
    "SmallCellClass",
    "class_terms",
]
