"""Release mechanisms (Markov kernels) and their combinators (Bon et al. 2026, §2)."""

from persuasive.mechanisms.base import Mechanism
from persuasive.mechanisms.combinators import Chain, Composition, Joint
from persuasive.mechanisms.composed import ComposedRelease as ComposedRelease
from persuasive.mechanisms.deterministic import CellSuppression, ExactMean, LinearStatistic
from persuasive.mechanisms.finite import FiniteKernel, RandomizedResponse
from persuasive.mechanisms.linear import LinearGaussian
from persuasive.mechanisms.noise import GaussianMechanism, GeometricMechanism, LaplaceMechanism

__all__ = [
    "CellSuppression",
    "Chain",
    "Composition",
    "ExactMean",
    "FiniteKernel",
    "GaussianMechanism",
    "GeometricMechanism",
    "Joint",
    "LaplaceMechanism",
    "LinearGaussian",
    "LinearStatistic",
    "Mechanism",
    "RandomizedResponse",
]
