r"""κ of the exact and the noisy mean against Receivers with bounded error on every person.

*Not a result of the paper*: this library's extension of Prop 7 (Bon et al. 2026), proved in
``docs/release_means.md``, section (e). The release is :math:`T = \bar x + e`,
:math:`e \sim \mathcal N(0, s^2)` (``sigma = 0``: the exact mean), the scores the marginal
Dawid–Sebastiani family and the priors :math:`\mathcal G^{r,V,r_0}_x`
(:class:`~persuasive.classes.bounded_error.BoundedErrorGaussianClass`). With
:math:`c = 1 - 1/r_2`, :math:`\gamma_{\max} = V^2/(V^2 + s^2)` (1 for the exact mean or
V = ∞) and :math:`k = \sqrt{r_1\gamma_{\max}} + z_{1-\delta/2}` (:math:`k = \sqrt{r_1}` and
δ = 0 for the exact mean), two bounds follow from Lemma 2's loss
:math:`\Delta_i = -\log b + z_i^2 - (z_i - \rho_i m)^2/b`, :math:`b = 1 - \rho_i^2 g`:

.. math::

    \kappa_{r_0} = -\log(1 - c\gamma_{\max})
        + \frac{2 r_0 \sqrt{c\gamma_{\max}}\, k}{1 - c\gamma_{\max}}
    \quad\text{(at δ)}, \qquad
    \kappa_{\mathrm{pt}} = -\log(1 - c\gamma_{\max}) + r_0^2 \quad\text{(at every δ, also 0)}.

The first decreases to 0 as s grows, the second to :math:`r_0^2`. The class is a subclass of
:math:`\mathcal G^{r,V}_x`, so the bound of :func:`persuasive.certify.noisy_mean
.gaussian_noise_kappa` (Prop 7's :math:`r_1 + \log r_2` for the exact mean) holds too: the
certificate is the smallest of the three. :class:`BoundedError` is the theorem
:func:`persuasive.certify` asks for this class (registered before Prop 7, whose class it
refines); Laplace noise gets :math:`\kappa_{\mathrm{pt}}` with :math:`\gamma_{\max} = 1`, since
Lemma 2 holds for any noise law and :math:`g \le 1`.
"""

from __future__ import annotations

import math
from typing import Any

from scipy import stats

from persuasive import _domains as dm
from persuasive._rounding import above, ceil_log_sum
from persuasive.certify.noisy_mean import gamma_max, gaussian_noise_kappa, noise_of
from persuasive.certify.prop7 import _n_of
from persuasive.certify.registry import THEOREMS, Bound, Theorem, tail_definition_reason
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.mechanisms import GaussianMechanism, LaplaceMechanism, Mechanism
from persuasive.scores import MarginalDSS

__all__ = ["BoundedError", "bounded_error_kappa", "person_error_bound", "pointwise_bound"]

BASIS = (
    "Prop 7 with bounded error on every person "
    "(persuasive extension of Bon et al. 2026, docs/release_means.md)"
)


def _gamma(sigma: float, v: float | None) -> float:
    return 1.0 if sigma == 0.0 else gamma_max(sigma, v)


def person_error_bound(
    r1: float, r2: float, r0: float, sigma: float, v: float | None, delta: float
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
    g = _gamma(sigma, v)
    if sigma == 0.0:
        k = math.sqrt(r1)
    else:
        if delta <= 0.0:
            return math.inf  # the noise is unbounded: this bound needs delta > 0
        k = math.sqrt(r1 * g) + float(stats.norm.isf(delta / 2.0))
    one_minus = 1.0 - c * g
    value = -math.log(one_minus) + 2.0 * r0 * math.sqrt(c * g) * k / one_minus
    return above(value, max(1.0, abs(value), 1.0 / one_minus))


def pointwise_bound(r2: float, r0: float, sigma: float, v: float | None) -> float:
    r""":math:`\kappa_{\mathrm{pt}} = -\log(1 - c\gamma_{\max}) + r_0^2`, rounded up: a bound
    on :math:`\Delta_i` for *every* output (δ = 0), from
    :math:`\Delta_i \le -\log b + z_i^2` (Lemma 2, the last term is :math:`\le 0`).

    Examples
    --------
    >>> round(pointwise_bound(4.0, 0.5, 0.0, None), 6)   # log 4 + 0.25
    1.636294
    >>> round(pointwise_bound(4.0, 0.5, 1e3, 1.0), 6)    # -> r0^2 as the noise grows
    0.25
    """
    c = 1.0 - 1.0 / r2
    one_minus = 1.0 - c * _gamma(sigma, v)
    value = -math.log(one_minus) + r0 * r0
    return above(value, max(1.0, abs(value), 1.0 / one_minus))


def bounded_error_kappa(
    r1: float,
    r2: float,
    *,
    max_person_error: float,
    max_mean_sd: float | None = None,
    sigma: float = 0.0,
    delta: float = 0.0,
) -> float:
    r"""Certified κ(δ) of the mean (``sigma = 0``) or the mean plus N(0, sigma²) against
    :math:`(\mathcal I, \mathcal G^{r,V,r_0}_x)`: the smallest of :func:`person_error_bound`,
    :func:`pointwise_bound` and the bound against :math:`\mathcal G^{r,V}_x`.

    Parameters
    ----------
    r1, r2 : float
        Prop 7's bounds.
    max_person_error : float
        :math:`r_0`: every person's standardized prior error is at most it.
    max_mean_sd : float, optional
        V: the Receiver's prior sd of the mean is at most it (None: unbounded; the exact mean
        does not use it, and noise cannot certify below the exact mean without it).
    sigma : float
        The noise sd (0: the exact mean).
    delta : float
        Failure probability; with noise and δ = 0 only :func:`pointwise_bound` holds.

    Examples
    --------
    >>> k = [bounded_error_kappa(1.0, 4.0, max_person_error=1.0, max_mean_sd=1.0, sigma=s,
    ...      delta=0.05) for s in (0.5, 2.0, 8.0, 32.0)]
    >>> [round(x, 3) for x in k], all(a > b for a, b in zip(k, k[1:]))
    ([1.916, 1.163, 0.465, 0.109], True)
    >>> bounded_error_kappa(1.0, 4.0, max_person_error=1.0)  # Prop 7's 1 + log 4
    2.386294361119891
    >>> round(bounded_error_kappa(1.0, 4.0, max_person_error=0.1), 4)  # log 4 + 0.01
    1.3963
    """
    r1, r2 = dm.check("r1", r1), dm.check("r2", r2)
    r0 = dm.check("max_mean_sd", max_person_error, name="max_person_error")
    v = None if max_mean_sd is None else dm.check("max_mean_sd", max_mean_sd)
    delta = dm.check("delta", delta)
    if sigma != 0.0:
        sigma = dm.check("noise_scale", sigma, name="sigma")
    else:
        delta = 0.0  # the exact mean's bounds hold at delta = 0
    point = pointwise_bound(r2, r0, sigma, v)
    own = min(point, person_error_bound(r1, r2, r0, sigma, v, delta))
    if sigma == 0.0:
        return min(own, ceil_log_sum(r1, r2))  # Prop 7's r1 + log r2, rounded up
    if delta <= 0.0:
        return point  # unbounded noise: only the pointwise bound holds at delta = 0
    return min(own, gaussian_noise_kappa(r1, r2, sigma, v, delta)[0])


class BoundedError(Theorem):
    r"""κ(δ) of the exact or noisy mean under :math:`(\mathcal I, \mathcal G^{r,V,r_0}_x)`
    (:func:`bounded_error_kappa`; Laplace noise: :func:`pointwise_bound` at
    :math:`\gamma_{\max} = 1`). An upper bound (``exact = False``).

    Examples
    --------
    >>> import persuasive as pp
    >>> from persuasive.classes.bounded_error import BoundedErrorGaussianClass
    >>> cls = BoundedErrorGaussianClass(1.0, 4.0, max_mean_sd=1.0, max_person_error=1.0)
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 1.0, 0.05)
    >>> c = pp.certify(pp.Chain(pp.ExactMean(), pp.GaussianMechanism(8.0)), d)
    >>> round(c.kappa, 3), c.holds, c.exact
    (0.465, True, False)
    """

    name = "bounded_error"
    basis = BASIS

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        why = tail_definition_reason(definition, MarginalDSS, BoundedErrorGaussianClass)
        if why is not None:
            return why
        post = noise_of(mechanism)
        first = mechanism if post is None else mechanism.first  # type: ignore[attr-defined]
        n = _n_of(first)
        if n == -1:
            return "needs the mean (ExactMean or 1ᵀ/n), alone or with Gaussian or Laplace noise"
        if post is not None and not isinstance(post, (GaussianMechanism, LaplaceMechanism)):
            return f"needs Gaussian or Laplace noise on the mean; got {type(post).__name__}"
        if n is not None and n < 2:
            return "needs n >= 2 data points (the class is empty for n = 1)"
        return None

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        cls: BoundedErrorGaussianClass = definition.priors
        post = noise_of(mechanism)
        first = mechanism if post is None else mechanism.first  # type: ignore[attr-defined]
        n = _n_of(first)
        if n is not None and cls.r2 * (1.0 - 1.0 / n) < 1.0:
            return 0.0, True, (f"the class is empty for n = {n}: the guarantee holds vacuously",)
        r0 = float(cls.max_person_error)  # type: ignore[arg-type]
        note = (
            "upper bound: the smallest of Prop 7's bound for the class without the bound on "
            "each person's error, the tail bound 2 r0 sqrt(c g) k / (1 - c g) - log(1 - c g) and "
            "the pointwise bound r0^2 - log(1 - c g), g <= V^2/(V^2 + s^2) "
            "(docs/release_means.md, section (e)); errs towards larger kappa"
        )
        if isinstance(post, LaplaceMechanism):
            return (
                pointwise_bound(cls.r2, r0, 0.0, None),
                False,
                (
                    "upper bound for any noise law: Delta_i <= -log(1 - c g) + r0^2 with g <= 1 "
                    "(Lemma 2; docs/release_means.md, section (e)); never below the exact mean's",
                ),
            )
        sigma = 0.0 if post is None else float(post.sigma)  # type: ignore[attr-defined]
        k = bounded_error_kappa(
            cls.r1, cls.r2, max_person_error=r0, max_mean_sd=cls.max_mean_sd, sigma=sigma,
            delta=delta,
        )  # fmt: skip
        return k, False, (note,)


def _register() -> None:
    """Insert :class:`BoundedError` before Prop 7 (and the noisy-mean theorems), whose class
    :math:`\\mathcal G^{r,V}_x` it refines: the first supporting theorem certifies a pair."""
    if any(t.name == BoundedError.name for t in THEOREMS):
        return
    names = [t.name for t in THEOREMS]
    first = [names.index(n) for n in ("prop7", "noisy_mean", "noisy_mean_laplace") if n in names]
    THEOREMS.insert(min(first, default=len(THEOREMS)), BoundedError())


_register()
