r"""The Sender's choice for a mean: exact, Gaussian noise, or nothing (eq. 5, Bon et al. 2026).

Given Prop 7's class (with, optionally, a bound V on the Receiver's prior sd of the mean and a
bound :math:`r_0` on its error about any one person), a target (κ, δ) and the utility loss
*expected squared error of the released value as an estimate of the mean*, the families this
library certifies are:

* **exact** — the mean itself: error 0, κ = :math:`r_1 + \log r_2` at δ = 0 (Prop 7), or the
  smaller bound of :func:`persuasive.certify.bounded_error.bounded_error_kappa` with
  :math:`r_0`;
* **gaussian** — the mean plus :math:`\mathcal N(0, \sigma^2)`: error σ², κ(δ; σ) of
  :func:`persuasive.certify.noisy_mean.gaussian_noise_kappa` (or the bounded-error bound),
  non-increasing in σ (``docs/release_means.md``), so the best σ is the smallest that meets
  the target, found by bisection on log σ — exact up to the bisection's tolerance, rounded up;
* **withhold** — nothing released: κ = 0, error unbounded.

Laplace noise is listed and refused: it has no finite κ against this class at δ < 1/2
(``docs/release_means.md``, (c′)); against the bounded-error class its κ is the pointwise
bound :math:`\log r_2 + r_0^2` at every scale, never below the exact mean's, so it is listed
as dominated. Coarsening (rounding the mean) is not certified by this
library and is listed as such.
"""

from __future__ import annotations

import math

import numpy as np

from persuasive import _domains as dm
from persuasive._rounding import ceil_log_sum
from persuasive._wording import prior_sds
from persuasive.certify.bounded_error import bounded_error_kappa, pointwise_bound
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.choose.frontier import Candidate, Choice, best_of, not_certified, withholding

__all__ = ["choose_mean"]

#: Bisection steps on log σ (the bracket is 60 nats wide: 2^-50 of it is ~5e-14 relative).
BISECT_STEPS = 50
#: Points of the frontier over σ.
FRONTIER_POINTS = 25
UTILITY = "expected squared error"


def choose_mean(
    *,
    r1: float,
    r2: float,
    target_kappa: float,
    delta: float = 0.05,
    max_mean_sd: float | None = None,
    max_person_error: float | None = None,
) -> Choice:
    r"""The release of a mean with the least expected squared error among those certified at
    κ ≤ ``target_kappa`` (δ ≤ ``delta``) against the stated class.

    .. math:: M^\star = \arg\min_{M \in \mathcal F} \mathbb E\,(T - \bar x)^2
              \quad\text{s.t. } M \text{ is } (\mathcal I, \mathcal Q_x, \kappa, \delta)\text{-PP}

    Parameters
    ----------
    r1, r2 : float
        Prop 7's class.
    target_kappa : float
        The κ asked for (>= 0).
    delta : float
        The failure probability allowed to noisy families (the exact mean needs none).
    max_mean_sd : float, optional
        V: the Receiver's prior sd of the mean is at most V (noise can pay only then).
    max_person_error : float, optional
        :math:`r_0`: the Receiver's error about any one person is at most :math:`r_0` prior
        sds (:class:`persuasive.classes.bounded_error.BoundedErrorGaussianClass`; noise pays
        only with ``max_mean_sd`` too, and at δ = 0 only down to the pointwise bound
        :math:`-\log(1 - c\gamma_{\max}) + r_0^2`).

    Returns
    -------
    Choice

    Examples
    --------
    >>> c = choose_mean(r1=1.0, r2=4.0, target_kappa=3.0)
    >>> c.best.family, round(c.best.kappa, 4)        # noise cannot beat the exact mean here
    ('exact', 2.3863)
    >>> c = choose_mean(r1=1.0, r2=4.0, target_kappa=1.0, max_mean_sd=1.0, max_person_error=1.0)
    >>> c.best.family, c.best.kappa <= 1.0, round(c.best.parameter, 3)
    ('gaussian', True, 4.045)
    """
    r1, r2 = dm.check("r1", r1), dm.check("r2", r2)
    target = dm.check("target_kappa", target_kappa)
    delta = dm.check("delta", delta)
    v = None if max_mean_sd is None else dm.check("max_mean_sd", max_mean_sd)
    r0 = None
    if max_person_error is not None:
        r0 = dm.check("max_person_error", max_person_error)

    def kappa_of(sigma: float) -> float:
        if r0 is not None:  # without V the noise's bound is the exact mean's (gamma_max = 1)
            return bounded_error_kappa(
                r1, r2, max_person_error=r0, max_mean_sd=v, sigma=sigma, delta=delta
            )
        if sigma == 0.0:
            return ceil_log_sum(r1, r2)
        return gaussian_noise_kappa(r1, r2, sigma, v, delta)[0]

    exact_k = kappa_of(0.0)
    exact = Candidate(
        "exact", None, exact_k, 0.0, 0.0, exact_k <= target,
        f"κ = {exact_k:.4g} at δ = 0 "
        + ("(Prop 7, Bon et al. 2026)" if r0 is None
           else "(Prop 7 with bounded error on every person, docs/release_means.md, (e))"),
    )  # fmt: skip
    gauss = _gaussian(kappa_of, target, delta, v, bounded=r0 is not None)
    if r0 is None:
        laplace = not_certified(
            "laplace",
            "Laplace noise has no finite κ against this class at δ < 1/2 "
            "(docs/release_means.md, (c′))",
            delta,
        )
    else:  # every output: -log(1 - c) + r0^2 = log r2 + r0^2, whatever the scale
        k_lap = pointwise_bound(r2, r0, 1.0, None)
        laplace = Candidate(  # loss left infinite: never chosen over the exact mean
            "laplace", None, k_lap, 0.0, math.inf, k_lap <= target,
            f"every Laplace scale b certifies κ = {k_lap:.4g} (the pointwise bound of "
            "docs/release_means.md, (e)), never below the exact mean's κ, which has no error: "
            "dominated by the exact mean (its error 2b² > 0), so not offered",
        )  # fmt: skip
    coarse = not_certified("coarsening", "a rounded mean is not certified by this library")
    candidates = (exact, gauss, laplace, coarse, withholding(math.inf))
    best = best_of(candidates)
    frontier = [exact, *_curve(kappa_of, target, delta, v, bounded=r0 is not None)]
    receivers = f"Gaussian class r1 = {r1:g}, r2 = {r2:g}"
    if v is not None:
        receivers += f", prior sd of the mean <= {v:g}"
    if r0 is not None:
        receivers += f", error about any one person <= {prior_sds(r0)}"
    setting = (
        ("Receivers", receivers),
        ("target", f"κ <= {target:g} at δ <= {delta:g}"),
        ("loss", UTILITY),
    )
    return Choice(
        best, candidates, tuple(frontier), target, delta, UTILITY, True,
        ("the families are one-parameter and monotone: the best is exact up to the bisection "
         "on log σ, whose σ is rounded up",), setting,
    )  # fmt: skip


def _gaussian(
    kappa_of: object, target: float, delta: float, v: float | None, *, bounded: bool = False
) -> Candidate:
    """The smallest noise sd meeting the target (bisection on log σ; κ non-increasing in σ).
    At δ = 0 only the bounded-error class (``bounded``) certifies noise: its pointwise bound
    holds for every output."""
    assert callable(kappa_of)
    if delta <= 0.0 and not bounded:
        return Candidate(
            "gaussian", None, math.inf, 0.0, math.inf, False,
            "Gaussian noise has no finite κ at δ = 0 (the noise is unbounded)",
        )  # fmt: skip
    scale = 1.0 if v is None else v
    lo, hi = math.log(scale) - 30.0, math.log(scale) + 30.0
    top = kappa_of(math.exp(hi))
    if top > target:
        return Candidate(
            "gaussian", math.exp(hi), top, delta, math.exp(2 * hi), False,
            f"no noise sd certifies κ ≤ {target:g}: the bound stays at {top:.4g} or above "
            "(without max_mean_sd, or a bound r0 on the error about one person, it cannot "
            "fall below the chi-square quantile; docs/release_means.md)",
        )  # fmt: skip
    if kappa_of(math.exp(lo)) <= target:
        sigma = math.exp(lo)
        return Candidate(
            "gaussian", sigma, kappa_of(sigma), delta, sigma * sigma, True,
            f"every noise sd searched meets the target, down to {sigma:.3g} (V·e^-30): "
            "the less noise the better, so the exact mean is preferred when it is certified",
        )  # fmt: skip
    else:
        for _ in range(BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if kappa_of(math.exp(mid)) <= target else (mid, hi)
    sigma = math.exp(hi)
    k = kappa_of(sigma)
    return Candidate(
        "gaussian", sigma, k, delta, sigma * sigma, k <= target,
        "the smallest noise sd whose certified κ meets the target (κ is non-increasing in σ)",
    )  # fmt: skip


def _curve(
    kappa_of: object, target: float, delta: float, v: float | None, *, bounded: bool = False
) -> list[Candidate]:
    """κ and error over a geometric grid of σ, for the frontier."""
    assert callable(kappa_of)
    if delta <= 0.0 and not bounded:
        return []
    scale = 1.0 if v is None else v
    out = []
    for s in np.geomspace(scale / 100.0, scale * 100.0, FRONTIER_POINTS):
        k = kappa_of(float(s))
        out.append(Candidate("gaussian", float(s), k, delta, float(s) ** 2, k <= target, ""))
    return out
