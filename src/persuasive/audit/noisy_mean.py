r"""Monte Carlo audit of the mean plus Gaussian noise against :math:`\mathcal G^{r,V}_x`.

A found *lower* bound on κ for :class:`~persuasive.certify.NoisyMean` (this library's extension
of Prop 7, Bon et al. 2026; ``docs/release_means.md``). Writing
:math:`\gamma = \bar\Sigma/(\bar\Sigma + s^2)`, :math:`b = 1 - \rho_i^2\gamma`,
:math:`v = (T - \bar\mu)/\sqrt{\bar\Sigma + s^2} \sim \mathcal N(w\sqrt\gamma, 1 - \gamma)` and
:math:`\zeta = \rho_i\sqrt\gamma\, z_i`, the marginal DSS loss of coordinate i is the concave
quadratic

.. math:: \Delta_i = -\log b + v^2 - \frac{(v - \zeta)^2}{b}.

Step 1 (design): with :math:`\rho_i^2 = 1 - 1/r_2` (Prop 7's sharp witness) the exact
(1 − δ)-quantile of :math:`\Delta_i` is maximised over a grid of (γ, w, ζ), γ ≤ γ_max,
:math:`|w| \le \sqrt{r_1}` (each quantile by bisection on normal cdfs). Step 2 (honest check):
a concrete prior and dataset realising the best (γ, w, ζ) are built, checked to be members of
the class, N outputs are sampled, the posterior is computed by :func:`persuasive.posterior`
(affine in T) and the k-th largest loss (Clopper–Pearson rank) is recomputed with
:func:`persuasive.relative_loss`.

Against the bounded-error class :math:`\mathcal G^{r,V,r_0}_x`
(:class:`~persuasive.classes.bounded_error.BoundedErrorGaussianClass`) step 1 also searches
:math:`\rho_i^2 \le c` and keeps :math:`|z_i| \le r_0`, and the witness puts every other
person within :math:`r_0` too (:func:`persuasive.audit.bounded_mean.noisy_design` and
:func:`~persuasive.audit.bounded_mean.bounded_witness`); step 2 is the same.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from persuasive.audit.bounded_mean import bounded_noisy_witness, gamma_grid
from persuasive.audit.core import finish, required_rank
from persuasive.audit.stream import kth_output
from persuasive.bayes import posterior
from persuasive.certify.noisy_mean import gamma_max
from persuasive.classes import GaussianMeanClass
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.errors import ValidationError
from persuasive.loss import relative_loss
from persuasive.mechanisms import Mechanism
from persuasive.priors import GaussianPrior
from persuasive.results import Audit, Witness
from persuasive.scores import MarginalDSS

#: The witness prior is pushed this far (relatively) inside the class constraints, so that
#: membership never hinges on rounding (costs about 1e-12 of κ).
CLASS_MARGIN: float = 1e-12

#: Grid sizes of the design step: γ, w and ζ.
N_GAMMA, N_W, N_ZETA = 40, 9, 241


def quadratic_quantile(
    gam: NDArray[np.float64],
    w: NDArray[np.float64],
    zeta: NDArray[np.float64],
    c: float | NDArray[np.float64],
    delta: float,
) -> NDArray[np.float64]:
    r"""Exact upper (1 − δ)-quantile :math:`\max\{k : P[\Delta \ge k] > \delta\}` of
    :math:`\Delta = -\log b + v^2 - (v - \zeta)^2/b`, :math:`v \sim \mathcal N(w\sqrt\gamma,
    1 - \gamma)`, :math:`b = 1 - c\gamma` (broadcasting, c too: c = ρ_i²; bisection on normal
    cdfs).

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.audit.noisy_mean import quadratic_quantile
    >>> q = quadratic_quantile(np.array(1e-6), np.array(0.0), np.array(1.6449), 0.75, 0.05)
    >>> round(float(q), 3)  # gamma -> 0 reaches z_{0.95}^2 = 2.706
    2.706
    """
    gam, w, zeta, cc = np.broadcast_arrays(gam, w, zeta, np.asarray(c, dtype=np.float64))
    b = 1.0 - cc * gam
    a2, a1, a0 = 1.0 - 1.0 / b, 2.0 * zeta / b, -np.log(b) - zeta**2 / b
    top = a0 - a1**2 / (4.0 * a2)  # the maximum of the concave quadratic
    loc, sd = w * np.sqrt(gam), np.sqrt(1.0 - gam)
    lo, hi = np.minimum(top - 1.0, -np.log(b)) - 60.0, top
    for _ in range(70):
        k = 0.5 * (lo + hi)
        disc = np.sqrt(np.maximum(a1**2 - 4.0 * a2 * (a0 - k), 0.0))
        r_lo, r_hi = (-a1 + disc) / (2.0 * a2), (-a1 - disc) / (2.0 * a2)
        mass = stats.norm.cdf((r_hi - loc) / sd) - stats.norm.cdf((r_lo - loc) / sd)
        ok = mass > delta
        lo, hi = np.where(ok, k, lo), np.where(ok, hi, k)
    return np.asarray(lo)


def _design(r1: float, r2: float, gmax: float, delta: float) -> tuple[float, float, float]:
    """(γ, w, ζ) maximising the exact quantile on a grid (δ = 0: the largest γ, ζ = 10)."""
    c = 1.0 - 1.0 / r2
    if delta <= 0.0:
        return gmax, math.sqrt(r1), 10.0
    gam = gamma_grid(gmax, N_GAMMA)
    gam = gam[gam < 1.0]
    w = np.linspace(-math.sqrt(r1), math.sqrt(r1), N_W)
    zeta = np.linspace(-12.0, 12.0, N_ZETA)
    g3, w3, z3 = np.meshgrid(gam, w, zeta, indexing="ij")
    q = quadratic_quantile(g3, w3, z3, c, delta)
    j = np.unravel_index(int(np.argmax(q)), q.shape)
    return float(g3[j]), float(w3[j]), float(z3[j])


def witness_prior(
    r1: float, r2: float, sigma: float, gam: float, w: float, zeta: float, i: int, n: int
) -> tuple[GaussianPrior, NDArray[np.float64]]:
    r"""A member of :math:`\mathcal G^{r,V}_x` (x = 0) with :math:`\rho_i^2 = 1 - 1/r_2`,
    :math:`\bar\Sigma = s^2\gamma/(1-\gamma)`, mean error w and :math:`\zeta = \rho_i\sqrt\gamma
    z_i`: :math:`\Phi = I`, :math:`\sigma_i^2 = c(n-1)/(1-c)`, the others 1, rescaled."""
    c = (1.0 - 1.0 / r2) * (1.0 - CLASS_MARGIN)
    var = np.ones(n)
    var[i] = c * (n - 1) / (1.0 - c)
    sbar = sigma**2 * gam / (1.0 - gam)
    var *= sbar * n**2 / var.sum()
    sd = np.sqrt(var)
    rho = math.sqrt(var[i] / var.sum())
    z_i = zeta / (rho * math.sqrt(gam))
    mu = np.empty(n)
    mu[i] = -sd[i] * z_i
    others = np.arange(n) != i
    mu[others] = (-n * w * math.sqrt(sbar) * (1.0 - CLASS_MARGIN) - mu[i]) / (n - 1)
    return GaussianPrior(mu, np.diag(var)), np.zeros(n)


def noisy_mean_audit(
    mech: Mechanism, definition: Any, n_samples: int, confidence: float, rng: np.random.Generator
) -> Audit:
    r"""Monte Carlo audit of Chain(ExactMean, GaussianMechanism) under (ℐ, 𝒢^{r,V}_x, κ, δ).

    Examples
    --------
    >>> import persuasive as pp
    >>> m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(1.0))
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 5.0, 0.05)
    >>> a = pp.audit(m, d, rng=0, n_samples=20_000)
    >>> a.method, bool(a.kappa > 2.39)  # above Prop 7's 1 + log 4: noise does worse here
    ('monte-carlo', True)
    """
    cls: GaussianMeanClass = definition.priors
    sigma = float(mech.post.sigma)  # type: ignore[attr-defined]
    delta = float(definition.delta)
    k = required_rank(n_samples, delta, confidence)
    gmax = gamma_max(sigma, cls.max_mean_sd) * (1.0 - CLASS_MARGIN)
    i = next((s.i for s in definition.scores if s.i is not None), 0)
    if isinstance(cls, BoundedErrorGaussianClass):
        prior, x, design = bounded_noisy_witness(cls, sigma, min(gmax, 1.0 - 1e-9), delta, i)
    else:
        gam, w, zeta = _design(cls.r1, cls.r2, min(gmax, 1.0 - 1e-9), delta)
        n = max(2, i + 1, math.ceil(cls.r2 / (cls.r2 - 1.0) + 1e-9))
        prior, x = witness_prior(cls.r1, cls.r2, sigma, gam, w, zeta, i, n)
        design = (
            f"witness rho_i^2 = 1 - 1/r2, gamma = {gam:.4g}, w = {w:.4g}, zeta = {zeta:.4g} "
            "(grid design on the exact quantile); loss recomputed with relative_loss"
        )
    if not cls.contains(prior, x):  # pragma: no cover - the margins keep it inside
        raise ValidationError("the audit could not place a witness inside the class")
    p0, p1 = posterior(prior, mech, 0.0), posterior(prior, mech, 1.0)
    m0, slope = p0.mean()[i], p1.mean()[i] - p0.mean()[i]
    var_t = float(p0.marginal_var()[i])
    var0 = float(prior.marginal_var()[i])
    before = math.log(var0) + (x[i] - prior.mean()[i]) ** 2 / var0

    def sample(g: np.random.Generator, size: int) -> NDArray[np.float64]:
        return x.mean() + g.normal(0.0, sigma, size=size)

    def loss(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(before - math.log(var_t) - (x[i] - (m0 + slope * t)) ** 2 / var_t)

    tj = float(kth_output(sample, loss, n_samples, k, rng))  # chunked when n_samples is huge
    score = MarginalDSS(i)
    kappa = relative_loss(score, prior, mech, x, tj)
    notes = (
        design,
        f"one-sided Clopper-Pearson bound at confidence {confidence:g}; {n_samples} samples",
    )
    return finish(
        definition,
        kappa,
        Witness(score, x, prior, tj),
        "monte-carlo",
        confidence=confidence,
        evaluations=n_samples,
        notes=notes,
    )
