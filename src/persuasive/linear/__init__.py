"""Any set of exact or noisy linear statistics under Gaussian Receivers (issue 4).

This library's extension of Prop 7 (Bon et al. 2026); maths in ``docs/linear.md``, API in
``docs/dev/LINEAR_CONTRACT.md``.
"""

from persuasive.linear.advice import (
    calibrate_bounded_noise,
    largest_person_error,
    linear_noise_advice,
)
from persuasive.linear.analysis import Exposure, LinearAnalysis, analyse
from persuasive.linear.audit import audit_linear, fixed_quantile
from persuasive.linear.bounded_error import BoundedErrorLinearClass
from persuasive.linear.calibrate import (
    NoiseCalibration,
    Withholding,
    calibrate_noise,
    greedy_withhold,
)
from persuasive.linear.classes import LinearGaussianClass, exposed_by, variance_spread
from persuasive.linear.structured import StructuredCovariance

__all__ = [
    "BoundedErrorLinearClass",
    "Exposure",
    "LinearAnalysis",
    "LinearGaussianClass",
    "NoiseCalibration",
    "StructuredCovariance",
    "Withholding",
    "analyse",
    "audit_linear",
    "calibrate_bounded_noise",
    "calibrate_noise",
    "exposed_by",
    "fixed_quantile",
    "greedy_withhold",
    "largest_person_error",
    "linear_noise_advice",
    "variance_spread",
]
