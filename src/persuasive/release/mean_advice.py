r"""Whether noise pays for a mean: what a noisy mean's certificate cannot say by itself.

Against the class :math:`\mathcal G^{r,V}_x` (Prop 7's class with the Receiver's prior sd of
the mean at most V; ``docs/release_means.md``) the exact mean has
:math:`\kappa_0 = r_1 + \log r_2` at δ = 0 (Prop 7, Bon et al. 2026), and Gaussian noise of sd
s has the certified :math:`\kappa(\delta; s, V)` of :func:`persuasive.certify.noisy_mean
.gaussian_noise_kappa`. Two facts bound what noise can do (``docs/release_means.md``, "What
noise can and cannot do"):

* **Proven, for every noise level**: the class holds Receivers whose prior on the mean is
  precise and whose prior mean of one person is far from her value, and they give
  :math:`\kappa(\delta) \ge z_{1-\delta}^2` — so when :math:`\kappa_0 \le z_{1-\delta}^2` no
  noise can beat the exact mean;
* **the certified bound** tends to :math:`z_{1-\delta/2}^2` (the :math:`\chi^2_1` quantile) as
  the prior sd of the mean tends to 0, and every V allows that limit, so it never falls below
  it — when :math:`\kappa_0 \le z_{1-\delta/2}^2` no noise can be *certified* below the exact
  mean;
* otherwise the bound is non-decreasing in V (:math:`\gamma_{\max} = V^2/(V^2+s^2)`), and
  :func:`noise_advice` finds by bisection the largest V under which the noise certifies below
  :math:`\kappa_0`.

The class cannot be made to favour noise by shrinking V alone when :math:`\kappa_0` is small:
it bounds the Receiver's error on the mean, not on any one person, and a Receiver arbitrarily
wrong about one person gains :math:`O(1)` nats from any signal, however noisy. In the first two
cases the sentence names the class under which this noise would pay: Receivers also at most
:math:`r_0` prior sds wrong about any one person (``--max-person-error``, ``docs/release_means.md``
section (e)), with :math:`r_0` the largest (found by bisection, rounded down; κ is
non-decreasing in :math:`r_0`) under which the noise certifies below :math:`\kappa_0`
(:func:`largest_person_error`).

Against that class itself (``max_person_error`` given) the comparison is with the exact mean's
bound in the same class, and the sentence names a noise sd that certifies below it
(:func:`noise_beating_exact`).
"""

from __future__ import annotations

import math

from scipy import stats

from persuasive._wording import prior_sds
from persuasive.certify.bounded_error import (
    bounded_error_kappa,
    person_error_bound,
    pointwise_bound,
)
from persuasive.certify.noisy_mean import gaussian_noise_kappa

__all__ = [
    "largest_mean_sd",
    "largest_person_error",
    "noise_advice",
    "noise_beating_exact",
    "noise_floors",
]

#: Bisection steps on log r0 and log σ (brackets of at most 80 nats: 2^-60 of it).
ADVICE_STEPS = 60


def noise_floors(delta: float) -> tuple[float, float]:
    r"""``(proven, certified)``: :math:`z_{1-\delta}^2`, below which no Gaussian noise takes
    κ(δ), and :math:`z_{1-\delta/2}^2`, below which no certificate for it goes.

    Examples
    --------
    >>> [round(f, 4) for f in noise_floors(0.05)]
    [2.7055, 3.8415]
    """
    return float(stats.norm.isf(delta) ** 2), float(stats.chi2.isf(delta, 1))


def noise_advice(
    r1: float,
    r2: float,
    sigma: float,
    max_mean_sd: float | None,
    delta: float,
    max_person_error: float | None = None,
) -> str | None:
    r"""One sentence when Gaussian noise of sd ``sigma`` certifies no smaller κ than the
    exact mean under the stated class, saying why and under which class it would; None when
    the noise does certify below it.

    Examples
    --------
    >>> print(noise_advice(1.0, 4.0, 1.0, None, 0.05))  # doctest: +ELLIPSIS
    Noise cannot beat the exact mean here (proven): ... κ ≥ z² = 2.706 ...
    >>> noise_advice(4.0, 4.0, 1.0, 0.1, 0.05) is None   # r = (4, 4), V = 0.1: 3.96 < 5.39
    True
    >>> print(noise_advice(0.1, 4.0, 0.1, 1.0, 0.05, max_person_error=1.0))
    ... # doctest: +ELLIPSIS
    Noise does not lower κ here: against Receivers at most 1 prior sd wrong ... or more ...
    """
    if max_person_error is not None:
        return _bounded_advice(r1, r2, sigma, max_mean_sd, delta, max_person_error)
    exact = r1 + math.log(r2)
    noisy = gaussian_noise_kappa(r1, r2, sigma, max_mean_sd, delta)[0]
    if noisy < exact:
        return None
    proven, certified = noise_floors(delta)
    head = (
        f"Noise does not lower κ here: the noisy mean is certified at {noisy:.4g} against "
        f"the exact mean's r1 + log r2 = {exact:.4g} (Prop 7)"
    )
    if exact <= proven:
        return (
            f"Noise cannot beat the exact mean here (proven): the class holds Receivers with a "
            f"precise prior on the mean who are far off about one person, and they give every "
            f"Gaussian noise level κ ≥ z² = {proven:.4g} at delta = {delta:g}, above the "
            f"exact mean's r1 + log r2 = {exact:.4g}; release the exact mean, or "
            + _person_clause(r1, r2, sigma, max_mean_sd, delta)
        )
    if exact <= certified:
        return (
            f"{head}; no noise level can be certified below {certified:.4g} (the chi-square "
            f"quantile at delta = {delta:g}, the bound's limit as the Receiver's prior sd of the "
            "mean tends to 0), so release the exact mean, or "
            + _person_clause(r1, r2, sigma, max_mean_sd, delta)
        )
    v_star = largest_mean_sd(r1, r2, sigma, delta)
    if v_star is None:
        return f"{head}; no bound on the Receiver's prior sd of the mean makes it certify lower"
    bound = "unbounded" if max_mean_sd is None else f"at most {max_mean_sd:g}"
    return (
        f"{head}, because the class lets the Receiver's prior sd of the mean be {bound}; "
        f"with --max-mean-sd {_down(v_star)} (max_mean_sd) or less this noise certifies "
        "below the exact mean (docs/release_means.md)"
    )


def largest_mean_sd(r1: float, r2: float, sigma: float, delta: float) -> float | None:
    r"""The largest V (found to a relative 1e-6) under which Gaussian noise of sd ``sigma``
    certifies κ(δ) below the exact mean's :math:`r_1 + \log r_2`, the bound being
    non-decreasing in V; None when none does down to :math:`e^{-30} s`.

    Examples
    --------
    >>> v = largest_mean_sd(4.0, 4.0, 1.0, 0.05)
    >>> from persuasive.certify.noisy_mean import gaussian_noise_kappa as k
    >>> k(4, 4, 1, v, 0.05)[0] < 4 + math.log(4) <= k(4, 4, 1, v * 1.001, 0.05)[0]
    True
    """
    exact = r1 + math.log(r2)
    lo, hi = math.log(sigma) - 30.0, math.log(sigma) + 30.0

    def beats(log_v: float) -> bool:
        return gaussian_noise_kappa(r1, r2, sigma, math.exp(log_v), delta)[0] < exact

    if not beats(lo):
        return None
    if beats(hi):
        return math.inf
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if beats(mid) else (lo, mid)
    return math.exp(lo)


def _down(x: float) -> str:
    """``x`` to three significant digits, rounded down (a bound stated must still hold)."""
    if not math.isfinite(x):
        return "any value"
    step = 10.0 ** (math.floor(math.log10(x)) - 2)
    return f"{math.floor(x / step) * step:.3g}"


def largest_person_error(
    r1: float, r2: float, sigma: float, max_mean_sd: float, delta: float
) -> float:
    r"""The largest :math:`r_0` (to a relative :math:`2^{-60}` of the bracket, the lower end)
    under which the bounds of ``docs/release_means.md`` section (e) that depend on :math:`r_0`
    put Gaussian noise of sd ``sigma`` below the exact mean's :math:`r_1 + \log r_2`; both are
    increasing in :math:`r_0` and tend to :math:`-\log(1 - c\gamma_{\max}) < \log r_2` as
    :math:`r_0 \to 0`, so it exists. The certificate of the class is at most their minimum.

    Examples
    --------
    >>> r0 = largest_person_error(1.0, 4.0, 1.0, 1.0, 0.05)
    >>> from persuasive.certify.bounded_error import bounded_error_kappa as k
    >>> k(1, 4, max_person_error=r0, max_mean_sd=1, sigma=1, delta=0.05) < 1 + math.log(4)
    True
    """
    exact = r1 + math.log(r2)

    def beats(log_r0: float) -> bool:
        r0 = math.exp(log_r0)
        own = pointwise_bound(r2, r0, sigma, max_mean_sd)
        return min(own, person_error_bound(r1, r2, r0, sigma, max_mean_sd, delta)) < exact

    lo, hi = -40.0, 40.0
    for _ in range(ADVICE_STEPS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if beats(mid) else (lo, mid)
    return math.exp(lo)


def _person_clause(
    r1: float, r2: float, sigma: float, max_mean_sd: float | None, delta: float
) -> str:
    """The class under which this noise would certify below the exact mean, as a clause."""
    v = sigma if max_mean_sd is None else max_mean_sd
    r0 = float(_down(largest_person_error(r1, r2, sigma, v, delta)))
    k = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=v, sigma=sigma, delta=delta)
    k0 = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=v)
    flag, who = f"--max-person-error {r0:g}", f"Receivers at most {prior_sds(r0)} wrong about "
    who += "any one person"
    if max_mean_sd is None:
        flag += f" and --max-mean-sd {v:g}"
        who += f", prior sd of the mean at most {v:g}, the noise sd"
    a, b = _pair(k, r1 + math.log(r2))
    return (
        f"state a class that bounds how wrong a Receiver may be about any one person: with "
        f"{flag} ({who}) this noise would certify κ = {a} < {b}, while the exact mean would "
        f"certify κ = {k0:.4g} (docs/release_means.md, section (e))"
    )


def _pair(a: float, b: float) -> tuple[str, str]:
    """``a`` and ``b`` (a < b) to the fewest significant digits (at least 4) that tell them
    apart, ``a`` rounded down and ``b`` up, so the stated inequality stays true."""
    for d in range(4, 16):
        step = 10.0 ** (math.floor(math.log10(max(abs(b), 1e-300))) - d + 1)
        lo, hi = math.floor(a / step) * step, math.ceil(b / step) * step
        sa, sb = f"{lo:.{d}g}", f"{hi:.{d}g}"
        if sa != sb:
            return sa, sb
    return repr(a), repr(b)


def noise_beating_exact(
    r1: float, r2: float, max_mean_sd: float, delta: float, max_person_error: float
) -> float | None:
    r"""A noise sd (rounded up to three digits) from which on Gaussian noise certifies below
    the exact mean against :math:`\mathcal G^{r,V,r_0}_x`: the smallest σ whose bounds
    depending on :math:`r_0` fall below the exact mean's, by bisection on log σ (they are
    non-increasing in σ and tend to 0, or to :math:`r_0^2` at δ = 0); None when none does.
    Every larger σ certifies below too.

    Examples
    --------
    >>> s = noise_beating_exact(1.0, 4.0, 1.0, 0.05, 1.0)
    >>> from persuasive.certify.bounded_error import bounded_error_kappa as k
    >>> k(1, 4, max_person_error=1, max_mean_sd=1, sigma=s, delta=0.05) < k(
    ...     1, 4, max_person_error=1)
    True
    """
    r0, v = max_person_error, max_mean_sd
    exact = bounded_error_kappa(r1, r2, max_person_error=r0)

    def beats(log_s: float) -> bool:
        s = math.exp(log_s)
        own = pointwise_bound(r2, r0, s, v)
        return min(own, person_error_bound(r1, r2, r0, s, v, delta)) < exact

    lo, hi = math.log(v) - 40.0, math.log(v) + 40.0
    if not beats(hi):
        return None
    for _ in range(ADVICE_STEPS):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if beats(mid) else (mid, hi)
    return _up(math.exp(hi))


def _bounded_advice(
    r1: float, r2: float, sigma: float, v: float | None, delta: float, r0: float
) -> str | None:
    """:func:`noise_advice` against the bounded-error class (``v`` is required there)."""
    if v is None:
        return None  # refused by the release (noise with r0 needs V)
    exact = bounded_error_kappa(r1, r2, max_person_error=r0)
    noisy = bounded_error_kappa(
        r1, r2, max_person_error=r0, max_mean_sd=v, sigma=sigma, delta=delta
    )
    if noisy < exact:
        return None
    head = (
        f"Noise does not lower κ here: against Receivers at most {prior_sds(r0)} wrong about "
        f"any one person the noisy mean is certified at {noisy:.4g} against the exact mean's "
        f"{exact:.4g}"
    )
    s = noise_beating_exact(r1, r2, v, delta, r0)
    if s is None:
        return f"{head}; no noise sd certifies below it at delta = {delta:g}"
    k = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=v, sigma=s, delta=delta)
    a, b = _pair(k, exact)
    return (
        f"{head}, because this noise is small against the prior sd of the mean (at most "
        f"{v:g}); a noise sd of {s:g} or more (--noise gaussian:{s:g}) certifies below it, "
        f"κ = {a} < {b} at {s:g}, falling to 0 as the sd grows (docs/release_means.md, "
        "section (e))"
    )


def _up(x: float) -> float:
    """``x`` to three significant digits, rounded up (a noise sd stated must still pay)."""
    step = 10.0 ** (math.floor(math.log10(x)) - 2)
    return float(f"{math.ceil(x / step - 1e-9) * step:.3g}")
