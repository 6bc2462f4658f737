"""Privacy scores: negatively oriented (mostly proper) scoring rules (Bon et al. 2026, §2)."""

from persuasive.scores.base import Score
from persuasive.scores.dss import DawidSebastiani, MarginalDSS
from persuasive.scores.finite import BrierScore, SphericalScore
from persuasive.scores.interval import IntervalPrivacyFunction, IntervalScore, interval_bayes_act
from persuasive.scores.log import LogScore
from persuasive.scores.privacy_function import (
    FinitePrivacyFunction,
    InducedScore,
    LogPrivacyFunction,
    PrivacyFunction,
    ScorePrivacyFunction,
    privacy_function_from_score,
)
from persuasive.scores.properness import ProperCheck, ProperCounterexample, check_properness
from persuasive.scores.smallcell import SmallCellLogScore

__all__ = [
    "BrierScore",
    "DawidSebastiani",
    "FinitePrivacyFunction",
    "InducedScore",
    "IntervalPrivacyFunction",
    "IntervalScore",
    "LogPrivacyFunction",
    "LogScore",
    "MarginalDSS",
    "PrivacyFunction",
    "ProperCheck",
    "ProperCounterexample",
    "Score",
    "ScorePrivacyFunction",
    "SmallCellLogScore",
    "SphericalScore",
    "check_properness",
    "interval_bayes_act",
    "privacy_function_from_score",
]
