"""persuasive — Persuasive Privacy (Bon, Bailie, Rousseau & Robert, ICML 2026).

Certify (prove an upper bound on κ) and audit (exhibit a lower bound with its witness) how much a
data release lets a Bayes-rational Receiver learn, measured by a proper privacy score.

>>> import persuasive as pp
>>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), kappa=2.5)
>>> cert = d.certify(pp.ExactMean())
>>> cert.holds, round(cert.kappa, 6), cert.basis
(True, 2.386294, 'Prop 7 (Bon et al. 2026)')
"""

from importlib.metadata import PackageNotFoundError, version

from persuasive.audit import audit
from persuasive.bayes import log_evidence, posterior
from persuasive.certify import certify
from persuasive.classes import (
    FiniteClass,
    GaussianMeanClass,
    NeighbourPriors,
    PriorClass,
    SmallCellClass,
)
from persuasive.definitions import (
    FDivergence,
    Mean,
    PersuasivePrivacy,
    PersuasivePrivacyExpectation,
    Renyi,
    probabilistic_dp,
    pure_dp,
    renyi_dp,
)
from persuasive.errors import PersuasiveError, UnsupportedCombinationError, ValidationError
from persuasive.loss import relative_loss
from persuasive.mechanisms import (
    CellSuppression,
    Chain,
    Composition,
    ExactMean,
    FiniteKernel,
    GaussianMechanism,
    GeometricMechanism,
    Joint,
    LaplaceMechanism,
    LinearStatistic,
    Mechanism,
    RandomizedResponse,
)
from persuasive.mechanisms.composed import ComposedRelease as ComposedRelease
from persuasive.mechanisms.linear import LinearGaussian
from persuasive.priors import (
    DiscretePrior,
    GaussianPrior,
    IndependentCellsPrior,
    Prior,
    TwoPointPrior,
)
from persuasive.profile import profile
from persuasive.results import Audit, Certificate, Witness
from persuasive.scores import *  # noqa: F403
from persuasive.scores import __all__ as _score_names

try:
    __version__ = version("persuasive-privacy")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "Audit",
    "CellSuppression",
    "Certificate",
    "Chain",
    "Composition",
    "DiscretePrior",
    "ExactMean",
    "FDivergence",
    "FiniteClass",
    "FiniteKernel",
    "GaussianMeanClass",
    "GaussianMechanism",
    "GaussianPrior",
    "GeometricMechanism",
    "IndependentCellsPrior",
    "Joint",
    "LaplaceMechanism",
    "LinearGaussian",
    "LinearStatistic",
    "Mean",
    "Mechanism",
    "NeighbourPriors",
    "PersuasiveError",
    "PersuasivePrivacy",
    "PersuasivePrivacyExpectation",
    "Prior",
    "PriorClass",
    "RandomizedResponse",
    "Renyi",
    "SmallCellClass",
    "TwoPointPrior",
    "UnsupportedCombinationError",
    "ValidationError",
    "Witness",
    "audit",
    "certify",
    "log_evidence",
    "posterior",
    "probabilistic_dp",
    "profile",
    "pure_dp",
    "relative_loss",
    "renyi_dp",
    *_score_names,
]
