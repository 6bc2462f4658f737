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
wrong about one person gains :math:`O(1)` nats from any signal, however noisy.
"""

from __future__ import annotations

import math

from scipy import stats

from persuasive.certify.noisy_mean import gaussian_noise_kappa

__all__ = ["largest_mean_sd", "noise_advice", "noise_floors"]


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
    r1: float, r2: float, sigma: float, max_mean_sd: float | None, delta: float
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
    """
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
            f"exact mean's r1 + log r2 = {exact:.4g}; release the exact mean, or state a "
            "class that bounds how wrong a Receiver may be about any one person "
            "(docs/release_means.md, 'What noise can and cannot do')"
        )
    if exact <= certified:
        return (
            f"{head}; no noise level can be certified below {certified:.4g} (the chi-square "
            f"quantile at delta = {delta:g}, the bound's limit as the Receiver's prior sd of the "
            "mean tends to 0), so release the exact mean, or state a class that bounds how "
            "wrong a Receiver may be about any one person (docs/release_means.md)"
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
