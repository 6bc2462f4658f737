r"""Whether noise pays for linear statistics, and under which Receiver class it would.

Against the class :math:`\mathcal G^{r}_{A,x}` of ``docs/linear.md`` (with the Receiver's prior
sd of the statistics at most V) Gaussian noise of sd s on every statistic is certified at the
same :math:`\kappa(\delta; s, V)` as a noisy mean (Thm 4 there), and the exact statistics at
:math:`r_1 + \log r_2` (Thm 3). So the mean's facts hold unchanged (``docs/linear_bounded.md``,
"What noise cannot do"): when :math:`r_1 + \log r_2 \le z_{1-\delta}^2` no noise beats the exact
statistics (proven, a lower bound), when it is at most :math:`z_{1-\delta/2}^2` no noise can be
*certified* below them, and otherwise only a smaller V helps.

Noise pays as far as wanted under :math:`\mathcal G^{r,V,r_0}_{A,x}`
(:class:`~persuasive.linear.bounded_error.BoundedErrorLinearClass`), which also bounds every
person's prior error by :math:`r_0` prior sds: :func:`linear_noise_advice` names the
:math:`r_0` under which this noise certifies below the exact statistics (compared under the
same class), and :func:`calibrate_bounded_noise` the smallest noise that meets a target.
"""

from __future__ import annotations

import math

from persuasive import _domains as dm
from persuasive._wording import prior_sds
from persuasive.errors import ValidationError

__all__ = ["calibrate_bounded_noise", "largest_person_error", "linear_noise_advice"]

#: Relative width at which the bisections on log r0 and log s stop.
BISECT_RTOL: float = 1e-6
#: The bisections search e^-SPAN to e^SPAN times their reference scale.
SPAN: float = 30.0


def _bounded(r1: float, r2: float, r0: float, v: float | None, s: float, delta: float) -> float:
    from persuasive.certify.linear_bounded_error import bounded_kappa

    return bounded_kappa(r1, r2, r0, v, s, delta, exact=s == 0.0)


def _beats(r1: float, r2: float, r0: float, v: float | None, s: float, delta: float) -> bool:
    """Noise of sd s certifies strictly below the exact statistics, both under 𝒢^{r,V,r0}."""
    return _bounded(r1, r2, r0, v, s, delta) < _bounded(r1, r2, r0, v, 0.0, delta)


def largest_person_error(
    r1: float, r2: float, noise_sd: float, max_stat_sd: float, delta: float
) -> float | None:
    r"""The largest :math:`r_0` (to a relative 1e-6, rounded down) under which noise of sd
    ``noise_sd`` on every statistic certifies a smaller κ(δ) than the exact statistics, both
    under :math:`\mathcal G^{r,V,r_0}_{A,x}`; None when none does down to :math:`e^{-30}`.

    The set of such :math:`r_0` is an interval :math:`(0, r_0^*)` whenever the noise does not
    beat the exact statistics under :math:`\mathcal G^{r}_{A,x}` (``docs/linear_bounded.md``),
    so bisection on :math:`\log r_0` finds its end; the value returned is checked.

    Examples
    --------
    >>> r0 = largest_person_error(1.0, 4.0, 1.0, 1.0, 0.05)
    >>> [_beats(1.0, 4.0, u, 1.0, 1.0, 0.05) for u in (r0, r0 * 1.01)]
    [True, False]
    >>> round(r0, 3)
    1.384
    """
    lo, hi = -SPAN, SPAN

    def beats(log_r0: float) -> bool:
        return _beats(r1, r2, math.exp(log_r0), max_stat_sd, noise_sd, delta)

    if not beats(lo):
        return None
    if beats(hi):
        return math.inf
    while hi - lo > BISECT_RTOL:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if beats(mid) else (lo, mid)
    found = math.exp(lo)
    return found if beats(lo) else None


def calibrate_bounded_noise(
    target: float,
    r1: float,
    r2: float,
    *,
    max_person_error: float,
    max_stat_sd: float,
    delta: float,
) -> float:
    r"""The smallest noise sd s on every statistic (to a relative 1e-6, rounded up) with
    κ(δ) ≤ ``target`` under :math:`\mathcal G^{r,V,r_0}_{A,x}`; 0 when the exact statistics
    meet it. κ is non-increasing in s and tends to 0 (``docs/linear_bounded.md``), so every
    target > 0 is reached and bisection on log s is exact.

    Examples
    --------
    >>> s = calibrate_bounded_noise(1.0, 1.0, 4.0, max_person_error=1.0, max_stat_sd=1.0,
    ...                             delta=0.05)
    >>> k = [_bounded(1.0, 4.0, 1.0, 1.0, u, 0.05) for u in (s, s / 1.01)]
    >>> round(s, 3), k[0] <= 1.0 < k[1]
    (4.045, True)
    """
    target = dm.check("target_kappa", target, name="target")
    r0 = dm.check("max_stat_sd", max_person_error, name="max_person_error")
    v = dm.check("max_stat_sd", max_stat_sd)
    if _bounded(r1, r2, r0, v, 0.0, delta) <= target:
        return 0.0
    if delta <= 0.0 and r0 * r0 >= target:
        raise ValidationError(
            f"target = {target} is unreachable at delta = 0: only the pointwise bound "
            f"-log(1 - c g) + r0^2 holds, above r0^2 = {r0 * r0:.4g}; give delta > 0"
        )
    lo, hi = math.log(v) - SPAN, math.log(v) + SPAN

    def meets(log_s: float) -> bool:
        return _bounded(r1, r2, r0, v, math.exp(log_s), delta) <= target

    if meets(lo):
        return math.exp(lo)
    if not meets(hi):
        raise ValidationError(
            f"target = {target} is unreachable by noise up to sd {math.exp(hi):.3g}; raise it"
        )
    while hi - lo > BISECT_RTOL:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return math.exp(hi)


def linear_noise_advice(
    r1: float,
    r2: float,
    noise_sd: float,
    *,
    max_stat_sd: float | None,
    delta: float,
    max_person_error: float | None = None,
) -> str | None:
    r"""One sentence when Gaussian noise of sd ``noise_sd`` on every statistic certifies no
    smaller κ than the exact statistics under the stated class, saying why and naming the
    bounded-error class under which it would; None when the noise does certify below them.

    Parameters
    ----------
    r1, r2, max_stat_sd, delta :
        The class and failure probability of the release.
    noise_sd : float
        The noise sd on every statistic (> 0).
    max_person_error : float, optional
        :math:`r_0` when the release is certified under
        :class:`~persuasive.linear.bounded_error.BoundedErrorLinearClass`.

    Examples
    --------
    >>> print(linear_noise_advice(1.0, 4.0, 1.0, max_stat_sd=None, delta=0.05))
    ... # doctest: +ELLIPSIS
    Noise cannot beat the exact statistics here (proven): ... κ ≥ z² = 2.706 ...
    >>> linear_noise_advice(1.0, 4.0, 8.0, max_stat_sd=1.0, delta=0.05,
    ...                     max_person_error=1.0) is None
    True
    """
    from persuasive.linear.classes import LinearGaussianClass
    from persuasive.release.mean_advice import _down, largest_mean_sd, noise_floors

    s = dm.check("noise_sd", noise_sd)
    delta = dm.check("delta", delta)
    if max_person_error is not None:
        return _bounded_advice(r1, r2, s, max_stat_sd, delta, max_person_error)
    exact = r1 + math.log(r2)
    noisy = LinearGaussianClass(r1, r2, max_stat_sd=max_stat_sd).noise_kappa(s * s, 1, delta)
    if noisy < exact:
        return None
    proven, certified = noise_floors(delta)
    head = (
        f"Noise does not lower κ here: the noisy statistics are certified at {noisy:.4g} "
        f"against the exact statistics' r1 + log r2 = {exact:.4g} (docs/linear.md)"
    )
    if exact <= proven:
        why = (
            "Noise cannot beat the exact statistics here (proven): the class holds Receivers "
            "with a precise prior on the statistics who are far off about one person, and they "
            f"give every Gaussian noise level κ ≥ z² = {proven:.4g} at delta = {delta:g}, above "
            f"the exact statistics' r1 + log r2 = {exact:.4g}"
        )
    elif exact <= certified:
        why = (
            f"{head}; no noise level can be certified below {certified:.4g} under this class "
            f"(the chi-square quantile at delta = {delta:g}, the bound's limit as the "
            "Receiver's prior sd of the statistics tends to 0)"
        )
    else:
        v_star = largest_mean_sd(r1, r2, s, delta)  # the same bound as the mean's (Thm 4)
        bound = "unbounded" if max_stat_sd is None else f"at most {max_stat_sd:g}"
        why = (
            f"{head}, because the class lets the Receiver's prior sd of the statistics be "
            f"{bound}; with --max-stat-sd {_down(v_star) if v_star else '0'} (max_stat_sd) or "
            "less this noise certifies below the exact statistics"
        )
    return f"{why}; {_bounded_offer(r1, r2, s, max_stat_sd, delta)}"


def _bounded_offer(
    r1: float, r2: float, s: float, v: float | None, delta: float, r0: float | None = None
) -> str:
    """The bounded-error class under which this noise pays, with the κ it certifies there (at
    the user's r0 when that pays, else at 1 prior sd or half the largest r0 that pays)."""
    from persuasive.release.mean_advice import _down

    use_v = s if v is None else v
    top = largest_person_error(r1, r2, s, use_v, delta)
    opt = "" if v is not None else f" --max-stat-sd {use_v:g} and"
    if top is None:
        return (
            "even bounding every person's prior error (--max-person-error) does not make this "
            "noise certify below the exact statistics (docs/linear_bounded.md)"
        )
    at = r0 if r0 is not None and r0 < top else 1.0 if top > 1.0 else float(_down(top / 2.0))
    return (
        "under the class that also bounds every person's prior error by r0 prior sds "
        f"(docs/linear_bounded.md), with{opt} --max-person-error {at:g} this noise certifies "
        f"κ = {_bounded(r1, r2, at, use_v, s, delta):.4g} against the exact statistics' "
        f"{_bounded(r1, r2, at, use_v, 0.0, delta):.4g}, and it certifies below them for every "
        f"r0 below {_down(top)}"
    )


def _bounded_advice(
    r1: float, r2: float, s: float, v: float | None, delta: float, r0: float
) -> str | None:
    r0 = dm.check("max_stat_sd", r0, name="max_person_error")
    noisy, exact = _bounded(r1, r2, r0, v, s, delta), _bounded(r1, r2, r0, v, 0.0, delta)
    if noisy < exact:
        return None
    head = (
        f"Noise does not lower κ here: under the class that bounds every person's prior error "
        f"by {prior_sds(r0)} the noisy statistics are certified at {noisy:.4g} against the "
        f"exact statistics' {exact:.4g} (docs/linear_bounded.md)"
    )
    if v is None:
        return (
            f"{head}, because the class does not bound the Receiver's prior sd of the "
            "statistics, and a Receiver with a vague prior learns from noisy statistics as "
            f"from exact ones; {_bounded_offer(r1, r2, s, None, delta, r0)}"
        )
    return f"{head}, because {prior_sds(r0)} is too wide for this noise; " + _bounded_offer(
        r1, r2, s, v, delta
    )
