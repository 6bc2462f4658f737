r"""The smallest noise that meets a PP target (κ, δ) under k-fold composition (Prop 6).

**Gaussian** (closed form, exact). k releases with noise σ are one release with
:math:`s = \sigma/\sqrt k`, whose PDP tail is :math:`\Phi(1/(2s) - \kappa s)`, decreasing in s.
Solving :math:`\Phi(1/(2s) - \kappa s) = \delta`, with :math:`z = \Phi^{-1}(\delta)`,

.. math:: s = \frac{1}{z + \sqrt{z^2 + 2\kappa}}, \qquad \sigma = \sqrt k\, s,

valid when the denominator is positive; otherwise (δ = 0, or κ = 0 with δ <= 1/2) no noise
reaches the target.

**Laplace** (privacy-loss distribution). The scale b is bisected in log scale on *the
certificate itself*: the κ(δ) that :func:`persuasive.certify` proves for the k-fold release
(:class:`~persuasive.certify.tight.TightComposition`: the pessimistic PLD of
:mod:`persuasive.pld` on the grid ``step``, or Prop 3's additive value when smaller). That κ is
non-increasing in b (the Laplace loss decreases stochastically as b grows, and rounding up and
convolution keep the order), so the returned scale is the smallest certified one to the
bracket's precision: ``certify`` holds at ``scale`` and fails at ``bracket[0]``, with
``bracket[1] / bracket[0] <= 1 + CALIBRATION_RTOL``. The search starts at the pure-DP scale
k/κ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy import stats

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.mechanisms import LaplaceMechanism
from persuasive.pld.pmf import STEP

#: Relative width of the final bracket of the Laplace bisection.
CALIBRATION_RTOL: float = 1e-3
#: Default grid width of the calibration PLDs: the certificate's own (persuasive.pld.STEP), so
#: that ``pp.certify`` of the returned scale holds.
CALIBRATION_STEP: float = STEP
_MAX_DOUBLINGS = 60


@dataclass(frozen=True)
class NoiseCalibration:
    """Result of :func:`calibrate_noise`.

    Attributes
    ----------
    kind : str
        ``"gaussian"`` (scale = σ) or ``"laplace"`` (scale = b).
    scale : float
        The calibrated noise (verified to meet the target).
    bracket : tuple of float
        ``(not certified, certified)`` scales: the certificate's κ(δ) exceeds the target at
        the first and meets it at the second (= ``scale``); equal for the exact Gaussian
        solution.
    achieved_kappa : float
        κ(δ) certified at ``scale``.
    exact : bool
        True for the closed-form Gaussian.
    """

    kind: str
    scale: float
    k: int
    kappa: float
    delta: float
    bracket: tuple[float, float]
    achieved_kappa: float
    exact: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "scale": self.scale,
            "k": self.k,
            "kappa": self.kappa,
            "delta": self.delta,
            "bracket": list(self.bracket),
            "achieved_kappa": self.achieved_kappa,
            "exact": self.exact,
        }


def _unreachable(kind: str, kappa: float, delta: float, why: str) -> ValidationError:
    return ValidationError(
        f"target (kappa={kappa!r}, delta={delta!r}) is unreachable with {kind} noise: {why}; "
        "raise kappa or delta"
    )


def _gaussian(k: int, kappa: float, delta: float) -> NoiseCalibration:
    from persuasive.closed.pdp import gaussian_kappa

    if delta <= 0.0:
        raise _unreachable("gaussian", kappa, delta, "its PDP tail is positive at every kappa")
    z = float(stats.norm.ppf(delta))
    den = z + math.sqrt(z * z + 2.0 * kappa)
    if not den > 0.0:
        raise _unreachable(
            "gaussian", kappa, delta, "the tail at kappa = 0 exceeds 1/2 for every sigma"
        )
    sigma = math.sqrt(k) / den
    achieved = gaussian_kappa(sigma / math.sqrt(k), delta)
    return NoiseCalibration("gaussian", sigma, k, kappa, delta, (sigma, sigma), achieved, True)


def certified_laplace_kappa(b: float, k: int, delta: float, step: float = STEP) -> float:
    r"""The κ(δ) that :func:`persuasive.certify` proves for k releases of Laplace(b) noise
    (:class:`~persuasive.certify.tight.TightComposition` on the grid ``step``; at the default
    step exactly ``pp.certify(ComposedRelease.repeat(LaplaceMechanism(b), k), ...).kappa``)."""
    from persuasive.certify.tight import TightComposition
    from persuasive.definitions import probabilistic_dp
    from persuasive.mechanisms.composed import ComposedRelease

    mech = ComposedRelease.repeat(LaplaceMechanism(b), k)
    return float(TightComposition(step).kappa_at(mech, probabilistic_dp(1.0, delta), delta)[0])


def _laplace(k: int, kappa: float, delta: float, step: float) -> NoiseCalibration:
    def ok(b: float) -> bool:
        return certified_laplace_kappa(b, k, delta, step) <= kappa

    hi = k / kappa if kappa > 0 else 1.0  # the pure-DP scale (certified up to an ulp)
    for _ in range(_MAX_DOUBLINGS):
        if ok(hi):
            break
        hi *= 2.0
    else:
        raise _unreachable("laplace", kappa, delta, f"even scale {hi:g} fails")
    lo = hi / 2.0
    for _ in range(_MAX_DOUBLINGS):
        if not ok(lo):
            break
        hi, lo = lo, lo / 2.0
    else:
        raise _unreachable("laplace", kappa, delta, f"no lower scale fails down to {lo:g}")
    while hi / lo > 1.0 + CALIBRATION_RTOL:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    achieved = certified_laplace_kappa(hi, k, delta, step)
    return NoiseCalibration("laplace", hi, k, kappa, delta, (lo, hi), achieved, False)


def calibrate_noise(
    kind: str, k: int, kappa: float, delta: float, step: float = CALIBRATION_STEP
) -> NoiseCalibration:
    r"""Smallest isotropic noise (sensitivity 1) whose k-fold release is
    :math:`(L, \mathcal H, \kappa, \delta)`-PP (= (κ, δ)-PDP, Prop 6, Bon et al. 2026).

    Parameters
    ----------
    kind : {"gaussian", "laplace"}
        Noise family.
    k : int
        Number of releases of the same data (>= 1).
    kappa : float
        Target κ >= 0.
    delta : float
        Target δ in [0, 1).
    step : float
        PLD grid width for Laplace; the default is the certificate's (``pp.certify`` of the
        returned scale then holds). Another step calibrates against that grid's PLD instead
        (pessimistic by at most k * step in κ).

    Returns
    -------
    NoiseCalibration

    Raises
    ------
    ValidationError
        Bad arguments (named), or a target that no noise reaches.

    Examples
    --------
    >>> c = calibrate_noise("gaussian", 100, 1.0, 1e-5)
    >>> round(c.scale, 4), round(c.achieved_kappa, 6)
    (43.7907, 1.0)
    """
    kind = v.choice("kind", kind, ("gaussian", "laplace"))
    k = v.integer("k", k, low=1)
    kappa = v.real("kappa", kappa, low=0.0)
    delta = v.real("delta", delta, low=0.0, high=1.0, high_open=True)
    step = v.real("step", step, low=0.0, low_open=True)
    if kind == "gaussian":
        return _gaussian(k, kappa, delta)
    return _laplace(k, kappa, delta, step)
