r"""κ of the exact and the noisy mean against Receivers with bounded error on every person.

*Not a result of the paper*: this library's extension of Prop 7 (Bon et al. 2026), proved in
``docs/release_means.md``, section (e). The release is :math:`T = \bar x + e`,
:math:`e \sim \mathcal N(0, s^2)` (``sigma = 0``: the exact mean), the scores the marginal
Dawid–Sebastiani family and the priors :math:`\mathcal G^{r,V,r_0}_x`
(:class:`~persuasive.classes.bounded_error.BoundedErrorGaussianClass`). With
:math:`c = 1 - 1/r_2`, :math:`\gamma_{\max} = V^2/(V^2 + s^2)` and
:math:`k = \sqrt{r_1\gamma_{\max}} + z_{1-\delta/2}` (:math:`k = \sqrt{r_1}` and δ = 0 for the
exact mean),

.. math::

    \kappa_{r_0} = -\log(1 - c\gamma_{\max})
        + \frac{2 r_0 \sqrt{c\gamma_{\max}}\, k}{1 - c\gamma_{\max}},

which decreases to 0 as s grows. The class is a subclass of :math:`\mathcal G^{r,V}_x`, so the
bound of :func:`persuasive.certify.noisy_mean.gaussian_noise_kappa` (Prop 7's
:math:`r_1 + \log r_2` for the exact mean) holds too: the certificate is the smaller of the two.
"""

from __future__ import annotations

import math

from scipy import stats

from persuasive import _domains as dm
from persuasive._rounding import above, ceil_log_sum
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.errors import ValidationError

__all__ = ["bounded_error_kappa", "person_error_bound"]


def person_error_bound(
    r1: float, r2: float, r0: float, sigma: float, v: float, delta: float
) -> float:
    r""":math:`\kappa_{r_0}` of the module docstring, rounded up (an upper bound).

    Examples
    --------
    >>> round(person_error_bound(1.0, 4.0, 1.0, 0.0, 1.0, 0.0), 6)   # log 4 + 2 sqrt(3/4) * 4
    8.314498
    >>> person_error_bound(1.0, 4.0, 1.0, 1e6, 1.0, 0.05) < 1e-5
    True
    """
    c = 1.0 - 1.0 / r2
    if sigma == 0.0:
        g, k = 1.0, math.sqrt(r1)
    else:
        if delta <= 0.0:
            return math.inf  # the noise is unbounded: no finite kappa at delta = 0
        g = v * v / (v * v + sigma * sigma)
        k = math.sqrt(r1 * g) + float(stats.norm.isf(delta / 2.0))
    one_minus = 1.0 - c * g
    value = -math.log(one_minus) + 2.0 * r0 * math.sqrt(c * g) * k / one_minus
    return above(value, max(1.0, abs(value), 1.0 / one_minus))


def bounded_error_kappa(
    r1: float,
    r2: float,
    *,
    max_person_error: float,
    max_mean_sd: float,
    sigma: float = 0.0,
    delta: float = 0.0,
) -> float:
    r"""Certified κ(δ) of the mean (``sigma = 0``) or the mean plus N(0, sigma²) against
    :math:`(\mathcal I, \mathcal G^{r,V,r_0}_x)`: the smaller of :func:`person_error_bound`
    and the bound against :math:`\mathcal G^{r,V}_x`.

    Parameters
    ----------
    r1, r2 : float
        Prop 7's bounds.
    max_person_error : float
        :math:`r_0`: every person's standardized prior error is at most it.
    max_mean_sd : float
        V: the Receiver's prior sd of the mean is at most it.
    sigma : float
        The noise sd (0: the exact mean).
    delta : float
        Failure probability (> 0 with noise).

    Examples
    --------
    >>> k = [bounded_error_kappa(1.0, 4.0, max_person_error=1.0, max_mean_sd=1.0, sigma=s,
    ...      delta=0.05) for s in (0.5, 2.0, 8.0, 32.0)]
    >>> [round(x, 3) for x in k], all(a > b for a, b in zip(k, k[1:]))
    ([4.011, 2.356, 0.465, 0.109], True)
    >>> bounded_error_kappa(1.0, 4.0, max_person_error=1.0, max_mean_sd=1.0)  # Prop 7's 2.386
    2.386294361119891
    >>> round(bounded_error_kappa(1.0, 4.0, max_person_error=0.1, max_mean_sd=1.0), 4)
    2.0791
    """
    r1, r2 = dm.check("r1", r1), dm.check("r2", r2)
    r0 = dm.check("max_mean_sd", max_person_error, name="max_person_error")
    v = dm.check("max_mean_sd", max_mean_sd)
    delta = dm.check("delta", delta)
    if sigma != 0.0:
        sigma = dm.check("noise_scale", sigma, name="sigma")
    elif delta != 0.0:
        delta = 0.0  # the exact mean's bound holds at delta = 0
    if sigma and delta <= 0.0:
        raise ValidationError(
            "delta must be > 0 with Gaussian noise (e.g. delta = 0.05); got delta = 0: "
            "unbounded noise gives no finite kappa at delta = 0"
        )
    own = person_error_bound(r1, r2, r0, sigma, v, delta)
    if sigma == 0.0:
        return min(own, ceil_log_sum(r1, r2))  # Prop 7's r1 + log r2, rounded up
    return min(own, gaussian_noise_kappa(r1, r2, sigma, v, delta)[0])
