"""persuasive — Persuasive Privacy (Bon, Bailie, Rousseau & Robert, ICML 2026).

Certify (prove an upper bound on κ) and audit (exhibit a lower bound with its witness) how much a
data release lets a Bayes-rational Receiver learn, measured by a proper privacy score.

>>> import persuasive as pp
>>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), kappa=2.5)
>>> cert = d.certify(pp.ExactMean())
>>> cert.holds, round(cert.kappa, 6), cert.basis
(True, 2.386294, 'Prop 7 (Bon et al. 2026)')
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

#: Every public name and the module that defines it. Importing ``persuasive`` imports none of
#: them: each is loaded on first access (PEP 562), so that ``persuasive --help`` starts fast
#: (and ``import persuasive`` does not import polars until a release function is used).
_EXPORTS: dict[str, str] = {
    "audit": "persuasive.audit",
    "log_evidence": "persuasive.bayes",
    "posterior": "persuasive.bayes",
    "certify": "persuasive.certify",
    "FiniteClass": "persuasive.classes",
    "GaussianMeanClass": "persuasive.classes",
    "NeighbourPriors": "persuasive.classes",
    "PriorClass": "persuasive.classes",
    "SmallCellClass": "persuasive.classes",
    "NegativeBinomialReceiver": "persuasive.classes.receivers",
    "PoissonReceiver": "persuasive.classes.receivers",
    "SmallCellReceiver": "persuasive.classes.receivers",
    "FDivergence": "persuasive.definitions",
    "Mean": "persuasive.definitions",
    "PersuasivePrivacy": "persuasive.definitions",
    "PersuasivePrivacyExpectation": "persuasive.definitions",
    "Renyi": "persuasive.definitions",
    "probabilistic_dp": "persuasive.definitions",
    "pure_dp": "persuasive.definitions",
    "renyi_dp": "persuasive.definitions",
    "PersuasiveError": "persuasive.errors",
    "DataFile": "persuasive.files.sources",
    "UnsupportedCombinationError": "persuasive.errors",
    "ValidationError": "persuasive.errors",
    "relative_loss": "persuasive.loss",
    "CellSuppression": "persuasive.mechanisms",
    "Chain": "persuasive.mechanisms",
    "Composition": "persuasive.mechanisms",
    "ExactMean": "persuasive.mechanisms",
    "FiniteKernel": "persuasive.mechanisms",
    "GaussianMechanism": "persuasive.mechanisms",
    "GeometricMechanism": "persuasive.mechanisms",
    "Joint": "persuasive.mechanisms",
    "LaplaceMechanism": "persuasive.mechanisms",
    "LinearStatistic": "persuasive.mechanisms",
    "Mechanism": "persuasive.mechanisms",
    "RandomizedResponse": "persuasive.mechanisms",
    "ComposedRelease": "persuasive.mechanisms.composed",
    "LinearGaussian": "persuasive.mechanisms.linear",
    "DiscretePrior": "persuasive.priors",
    "GaussianPrior": "persuasive.priors",
    "IndependentCellsPrior": "persuasive.priors",
    "Prior": "persuasive.priors",
    "TwoPointPrior": "persuasive.priors",
    "profile": "persuasive.profile",
    "calibrate_mean": "persuasive.release.calibrate",
    "calibrate_threshold": "persuasive.release.calibrate",
    "optimise": "persuasive.choose",
    "LinearRelease": "persuasive.release.linear",
    "LinkedRelease": "persuasive.release.linked",
    "release_linked_tables": "persuasive.release.linked",
    "MagnitudeRelease": "persuasive.release.magnitude",
    "release_magnitude": "persuasive.release.magnitude",
    "release_linear": "persuasive.release.linear",
    "MarginRelease": "persuasive.release.margins",
    "release_table_with_margins": "persuasive.release.margins",
    "GroupMeansRelease": "persuasive.release.means",
    "MeanRelease": "persuasive.release.means",
    "release_group_means": "persuasive.release.means",
    "release_mean": "persuasive.release.means",
    "write_release": "persuasive.release.pipeline",
    "TableRelease": "persuasive.release.tables",
    "release_table": "persuasive.release.tables",
    "Verification": "persuasive.report.verify",
    "verify_certificate": "persuasive.report.verify",
    "Audit": "persuasive.results",
    "Certificate": "persuasive.results",
    "Witness": "persuasive.results",
    "BrierScore": "persuasive.scores",
    "DawidSebastiani": "persuasive.scores",
    "FinitePrivacyFunction": "persuasive.scores",
    "InducedScore": "persuasive.scores",
    "IntervalPrivacyFunction": "persuasive.scores",
    "IntervalScore": "persuasive.scores",
    "LogPrivacyFunction": "persuasive.scores",
    "LogScore": "persuasive.scores",
    "MarginalDSS": "persuasive.scores",
    "PrivacyFunction": "persuasive.scores",
    "ProperCheck": "persuasive.scores",
    "ProperCounterexample": "persuasive.scores",
    "Score": "persuasive.scores",
    "ScorePrivacyFunction": "persuasive.scores",
    "SmallCellLogScore": "persuasive.scores",
    "SphericalScore": "persuasive.scores",
    "check_properness": "persuasive.scores",
    "interval_bayes_act": "persuasive.scores",
    "privacy_function_from_score": "persuasive.scores",
}

__all__ = sorted(_EXPORTS)


class _Package(types.ModuleType):
    """The ``persuasive`` module object: importing the subpackage ``persuasive.certify`` (or
    ``audit``, ``profile``) must not replace the function ``persuasive.certify`` of the same
    name, which is what the import system does by setting the parent's attribute."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name, "").startswith(
            f"{__name__}.{name}"
        ):
            return  # keep resolving the public name, not the submodule
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("persuasive-privacy")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the installed metadata on first use (slow import)
        globals()["__version__"] = value = _version()
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'persuasive' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # what type checkers and IDEs see
    from persuasive.audit import audit as audit
    from persuasive.bayes import log_evidence as log_evidence
    from persuasive.bayes import posterior as posterior
    from persuasive.certify import certify as certify
    from persuasive.classes import (
        FiniteClass as FiniteClass,
    )
    from persuasive.classes import (
        GaussianMeanClass as GaussianMeanClass,
    )
    from persuasive.classes import (
        NeighbourPriors as NeighbourPriors,
    )
    from persuasive.classes import (
        PriorClass as PriorClass,
    )
    from persuasive.classes import (
        SmallCellClass as SmallCellClass,
    )
    from persuasive.classes.receivers import (
        NegativeBinomialReceiver as NegativeBinomialReceiver,
    )
    from persuasive.classes.receivers import (
        PoissonReceiver as PoissonReceiver,
    )
    from persuasive.classes.receivers import (
        SmallCellReceiver as SmallCellReceiver,
    )
    from persuasive.definitions import (
        FDivergence as FDivergence,
    )
    from persuasive.definitions import (
        Mean as Mean,
    )
    from persuasive.definitions import (
        PersuasivePrivacy as PersuasivePrivacy,
    )
    from persuasive.definitions import (
        PersuasivePrivacyExpectation as PersuasivePrivacyExpectation,
    )
    from persuasive.definitions import (
        Renyi as Renyi,
    )
    from persuasive.definitions import (
        probabilistic_dp as probabilistic_dp,
    )
    from persuasive.definitions import (
        pure_dp as pure_dp,
    )
    from persuasive.definitions import (
        renyi_dp as renyi_dp,
    )
    from persuasive.errors import (
        PersuasiveError as PersuasiveError,
    )
    from persuasive.errors import (
        UnsupportedCombinationError as UnsupportedCombinationError,
    )
    from persuasive.errors import (
        ValidationError as ValidationError,
    )
    from persuasive.files.sources import DataFile as DataFile
    from persuasive.loss import relative_loss as relative_loss
    from persuasive.mechanisms import (
        CellSuppression as CellSuppression,
    )
    from persuasive.mechanisms import (
        Chain as Chain,
    )
    from persuasive.mechanisms import (
        Composition as Composition,
    )
    from persuasive.mechanisms import (
        ExactMean as ExactMean,
    )
    from persuasive.mechanisms import (
        FiniteKernel as FiniteKernel,
    )
    from persuasive.mechanisms import (
        GaussianMechanism as GaussianMechanism,
    )
    from persuasive.mechanisms import (
        GeometricMechanism as GeometricMechanism,
    )
    from persuasive.mechanisms import (
        Joint as Joint,
    )
    from persuasive.mechanisms import (
        LaplaceMechanism as LaplaceMechanism,
    )
    from persuasive.mechanisms import (
        LinearStatistic as LinearStatistic,
    )
    from persuasive.mechanisms import (
        Mechanism as Mechanism,
    )
    from persuasive.mechanisms import (
        RandomizedResponse as RandomizedResponse,
    )
    from persuasive.mechanisms.composed import ComposedRelease as ComposedRelease
    from persuasive.mechanisms.linear import LinearGaussian as LinearGaussian
    from persuasive.priors import (
        DiscretePrior as DiscretePrior,
    )
    from persuasive.priors import (
        GaussianPrior as GaussianPrior,
    )
    from persuasive.priors import (
        IndependentCellsPrior as IndependentCellsPrior,
    )
    from persuasive.priors import (
        Prior as Prior,
    )
    from persuasive.priors import (
        TwoPointPrior as TwoPointPrior,
    )
    from persuasive.profile import profile as profile
    from persuasive.release.calibrate import calibrate_mean as calibrate_mean
    from persuasive.release.calibrate import calibrate_threshold as calibrate_threshold
    from persuasive.release.linear import LinearRelease as LinearRelease
    from persuasive.release.linear import release_linear as release_linear
    from persuasive.release.linked import LinkedRelease as LinkedRelease
    from persuasive.release.linked import release_linked_tables as release_linked_tables
    from persuasive.release.magnitude import MagnitudeRelease as MagnitudeRelease
    from persuasive.release.magnitude import release_magnitude as release_magnitude
    from persuasive.release.margins import MarginRelease as MarginRelease
    from persuasive.release.margins import (
        release_table_with_margins as release_table_with_margins,
    )
    from persuasive.release.means import GroupMeansRelease as GroupMeansRelease
    from persuasive.release.means import MeanRelease as MeanRelease
    from persuasive.release.means import release_group_means as release_group_means
    from persuasive.release.means import release_mean as release_mean
    from persuasive.release.pipeline import write_release as write_release
    from persuasive.release.tables import TableRelease as TableRelease
    from persuasive.release.tables import release_table as release_table
    from persuasive.report.verify import Verification as Verification
    from persuasive.report.verify import verify_certificate as verify_certificate
    from persuasive.results import Audit as Audit
    from persuasive.results import Certificate as Certificate
    from persuasive.results import Witness as Witness
    from persuasive.scores import (
        BrierScore as BrierScore,
    )
    from persuasive.scores import (
        DawidSebastiani as DawidSebastiani,
    )
    from persuasive.scores import (
        FinitePrivacyFunction as FinitePrivacyFunction,
    )
    from persuasive.scores import (
        InducedScore as InducedScore,
    )
    from persuasive.scores import (
        IntervalPrivacyFunction as IntervalPrivacyFunction,
    )
    from persuasive.scores import (
        IntervalScore as IntervalScore,
    )
    from persuasive.scores import (
        LogPrivacyFunction as LogPrivacyFunction,
    )
    from persuasive.scores import (
        LogScore as LogScore,
    )
    from persuasive.scores import (
        MarginalDSS as MarginalDSS,
    )
    from persuasive.scores import (
        PrivacyFunction as PrivacyFunction,
    )
    from persuasive.scores import (
        ProperCheck as ProperCheck,
    )
    from persuasive.scores import (
        ProperCounterexample as ProperCounterexample,
    )
    from persuasive.scores import (
        Score as Score,
    )
    from persuasive.scores import (
        ScorePrivacyFunction as ScorePrivacyFunction,
    )
    from persuasive.scores import (
        SmallCellLogScore as SmallCellLogScore,
    )
    from persuasive.scores import (
        SphericalScore as SphericalScore,
    )
    from persuasive.scores import (
        check_properness as check_properness,
    )
    from persuasive.scores import (
        interval_bayes_act as interval_bayes_act,
    )
    from persuasive.scores import (
        privacy_function_from_score as privacy_function_from_score,
    )
