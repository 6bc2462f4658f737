r"""The Sender's design problem for count tables: the smallest threshold meeting a target κ.

By Prop 8 (Bon et al. 2026) the suppression threshold h certifies
:math:`\kappa(h) = -\log\alpha(h)` against a Receiver model with :math:`\alpha(h) =
\inf_{P} P(X < h)`. Since :math:`\{X < h\} \subseteq \{X < h + 1\}`, α(h) is non-decreasing in h
for every model, hence κ(h) is non-increasing, and

.. math:: h^\star = \min\{h \in \mathbb Z : h \ge \max(R_{\min}, r),\ \kappa(h) \le \kappa^\star\}

is found by an exponential search for a bracket followed by bisection on the integers.
"""

from __future__ import annotations

import math
from typing import Any

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive._rounding import ceil_log_sum
from persuasive.certify.bounded_error import bounded_error_kappa
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.certify.noisy_mean_laplace import LAPLACE_NO_FINITE_KAPPA
from persuasive.classes.receivers import R_MIN, Receiver
from persuasive.errors import UnsupportedCombinationError, ValidationError

#: Relative width at which the calibration bisections stop (the proven end is returned).
CALIBRATION_RTOL: float = 1e-6


def calibrate_threshold(
    receiver: Receiver, target_kappa: float, r: int | None = None, h_max: int = 10_000
) -> int:
    r"""The smallest integer threshold h whose Prop 8 certificate has κ(h) <= ``target_kappa``.

    .. math:: h^\star = \min\{h \ge \max(R_{\min}, r) : -\log\alpha(h) \le \kappa^\star\}

    Parameters
    ----------
    receiver : Receiver
        The Receiver model giving α(h).
    target_kappa : float
        The target κ* >= 0 (``inf`` accepted: the smallest allowed h).
    r : int, optional
        Score threshold of :math:`L^r`; Prop 8 needs h >= r. Default ``None``: r = h, i.e.
        every count below the threshold is treated as small (the default of
        :func:`~persuasive.release.tables.release_table`), so only h >= R_MIN (= 2, the spec
        format's smallest r) constrains the search.
    h_max : int
        Largest threshold searched.

    Returns
    -------
    int
        h*, with ``receiver.kappa(h*) <= target_kappa`` and ``receiver.kappa(h* - 1) >
        target_kappa`` (unless h* is the smallest allowed threshold).

    Raises
    ------
    ValidationError
        If the target is negative or NaN, or no h <= h_max reaches it.

    Examples
    --------
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> rc = PoissonReceiver(0.0, 4.0)
    >>> h = calibrate_threshold(rc, 0.5)
    >>> h, rc.kappa(h) <= 0.5 < rc.kappa(h - 1)
    (5, True)
    """
    if not isinstance(receiver, Receiver):
        raise ValidationError(f"receiver must be a Receiver model; got {type(receiver).__name__}")
    target = dm.check("target_kappa", target_kappa)
    lo_h = R_MIN if r is None else v.integer("r", r, low=R_MIN)
    top = v.integer("h_max", h_max, low=lo_h)

    def ok(h: int) -> bool:
        k = receiver.kappa(h)
        return not math.isnan(k) and k <= target

    if ok(lo_h):
        return lo_h
    # Exponential search: invariant not ok(lo); find hi with ok(hi).
    lo, step = lo_h, 1
    hi = min(lo + step, top)
    while not ok(hi):
        if hi >= top:
            raise _unreachable(receiver, target, top)
        lo, step = hi, step * 2
        hi = min(lo + step, top)
    # Bisection on integers: not ok(lo), ok(hi).
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _unreachable(receiver: Any, target: float, top: int) -> ValidationError:
    return ValidationError(
        f"target_kappa = {target:g} is not reached by any threshold h <= h_max = {top}: the "
        f"Receiver model {receiver!r} gives kappa(h_max) = {receiver.kappa(top):.6g}; raise "
        "target_kappa or h_max, or state a Receiver model with more mass on small counts"
    )


def _bisect(f: Any, lo: float, hi: float, want_lo: bool) -> float:
    """Bisect a monotone predicate ``f`` (True at the proven end); return the proven end."""
    for _ in range(200):
        if hi - lo <= CALIBRATION_RTOL * max(abs(hi), 1e-300):
            break
        mid = 0.5 * (lo + hi)
        if f(mid) == want_lo:
            lo = mid
        else:
            hi = mid
    return lo if want_lo else hi


def _kappa_fn(r2: float, v: float | None, delta: float, r0: float | None) -> Any:
    """κ(r1, σ) of the mean (σ = 0: exact) under the stated class: Prop 7 / the noisy-mean
    bound, or :func:`~persuasive.certify.bounded_error.bounded_error_kappa` with r0."""

    def kappa(r1: float, sigma: float) -> float:
        if r0 is not None:
            return bounded_error_kappa(
                r1, r2, max_person_error=r0, max_mean_sd=v, sigma=sigma, delta=delta
            )
        if sigma == 0.0:
            return ceil_log_sum(r1, r2)
        return gaussian_noise_kappa(r1, r2, sigma, v, delta)[0]

    return kappa


def _largest_r1(ok: Any, why: str) -> float:
    """The largest r1 with ``ok(r1)`` (κ non-decreasing in r1; the proven end), capped at 1e9."""
    lo = 1e-9
    if not ok(lo):
        raise ValidationError(why)
    hi = 1.0
    while ok(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e9:
            return lo
    return _bisect(ok, lo, hi, want_lo=True)


def calibrate_mean(
    target_kappa: float,
    *,
    r2: float,
    r1: float | None = None,
    noise: Any = None,
    max_mean_sd: float | None = None,
    delta: float = 0.0,
    scale_max: float = 1e6,
    max_person_error: float | None = None,
) -> float:
    r"""The Sender's design problem for means: the largest r1, or the smallest noise, meeting κ.

    * ``noise=None``: the largest r1 with :math:`r_1 + \log r_2 \le` target (Prop 7).
    * ``noise=("gaussian", sigma)``: the largest r1 with the certified κ(δ) <= target
      (κ increases with r1; bisection, the proven end is returned).
    * ``noise="gaussian"`` with ``r1``: the smallest noise sd with κ(δ) <= target (κ does not
      increase with the sd; needs ``max_mean_sd`` and δ > 0).
    * ``max_person_error`` = r0: the same problems against Receivers also at most r0 prior sds
      wrong about any one person, with the certificate of
      :func:`~persuasive.certify.bounded_error.bounded_error_kappa` (non-decreasing in r1,
      non-increasing in σ: bisection, the proven end; δ = 0 allowed with noise). The largest r1
      is capped at 1e9 (κ stays below :math:`\log r_2 + r_0^2` for every r1).

    Raises ValidationError when the target cannot be met (the message says why); never returns
    a negative, NaN or unproven value.

    Examples
    --------
    >>> from persuasive.release.means import calibrate_mean
    >>> round(calibrate_mean(2.0, r2=4.0), 6)
    0.613706
    >>> s = calibrate_mean(4.5, r2=4.0, r1=4.0, noise="gaussian", max_mean_sd=1.0, delta=0.05)
    >>> round(s, 3)
    4.085
    >>> s = calibrate_mean(1.0, r2=4.0, r1=1.0, noise="gaussian", max_mean_sd=1.0, delta=0.05,
    ...                    max_person_error=1.0)
    >>> round(s, 3)    # the bounded-error class: noise pays
    4.045
    """
    from persuasive.release.means import _noise, check_person_error

    target = dm.check("target_kappa", target_kappa)
    r2 = dm.check("r2", r2)
    delta = dm.check("delta", delta)
    vm = None if max_mean_sd is None else dm.check("max_mean_sd", max_mean_sd)
    nz = ("gaussian", 1.0) if noise == "gaussian" else None if isinstance(noise, str) else noise
    r0 = check_person_error(max_person_error, _noise(nz), vm)
    kappa = _kappa_fn(r2, vm, delta, r0)
    if noise is None and r0 is not None:
        return _largest_r1(
            lambda x: kappa(x, 0.0) <= target,
            f"target_kappa = {target:g} is unreachable for the exact mean with r2 = {r2:g} and "
            f"max_person_error = {r0:g}: kappa > -log(1 - (1 - 1/r2)) = log r2 = "
            f"{math.log(r2):.6g} for every r1 > 0",
        )
    if noise is None:
        out = target - math.log(r2)
        while out > 0.0 and ceil_log_sum(out, r2) > target:  # the certificate rounds κ up
            out = math.nextafter(out, 0.0)
        if out <= 0.0:
            raise ValidationError(
                f"target_kappa = {target:g} is unreachable for the exact mean with r2 = {r2:g}: "
                f"kappa = r1 + log r2 > log r2 = {math.log(r2):.6g} for every r1 > 0"
            )
        return out
    if isinstance(noise, str):
        if noise == "laplace":
            raise UnsupportedCombinationError(LAPLACE_NO_FINITE_KAPPA)
        if noise != "gaussian":
            raise ValidationError(f'noise must be "gaussian" to calibrate its sd; got {noise!r}')
        if r1 is None or vm is None or (delta <= 0.0 and r0 is None):
            raise ValidationError(
                "calibrating the noise sd needs r1, max_mean_sd (without a bound on the prior sd "
                "of the mean noise cannot help) and delta > 0; got "
                f"r1 = {r1!r}, max_mean_sd = {max_mean_sd!r}, delta = {delta:g}"
            )
        r1f = dm.check("r1", r1)

        def ok_s(s: float) -> bool:
            return kappa(r1f, s) <= target

        hi = vm
        while not ok_s(hi):
            hi *= 4.0
            if hi > scale_max * vm:
                floor = (
                    "the bound cannot go below the chi-square(1) quantile at 1 - delta"
                    if r0 is None
                    else f"with delta = 0 the bound cannot go below r0^2 = {r0 * r0:.6g}"
                    if delta <= 0.0
                    else "raise scale_max or the target"
                )
                raise ValidationError(
                    f"target_kappa = {target:g} is unreachable with Gaussian noise: even sd = "
                    f"{scale_max:g} * max_mean_sd gives kappa > target ({floor}, "
                    "docs/release_means.md)"
                )
        lo = hi / 4.0
        while ok_s(lo) and lo > 1e-9 * vm:
            hi, lo = lo, lo / 4.0
        return _bisect(ok_s, lo, hi, want_lo=False)
    nz = _noise(noise)
    assert nz is not None
    if nz[0] == "laplace":
        raise UnsupportedCombinationError(LAPLACE_NO_FINITE_KAPPA)
    if delta <= 0.0 and r0 is None:
        raise ValidationError("delta must be > 0 with Gaussian noise (kappa is infinite at 0)")
    return _largest_r1(
        lambda x: kappa(x, nz[1]) <= target,
        f"target_kappa = {target:g} is unreachable with {nz}: kappa exceeds it even as "
        "r1 -> 0 (the bound cannot go below the chi-square(1) quantile at 1 - delta"
        + ("" if r0 is None else ", or below -log(1 - (1 - 1/r2) gamma_max) with r0")
        + ")",
    )
