r"""Monte Carlo audit of the mean plus Laplace noise against :math:`\mathcal G^{r,V}_x`.

A found *lower* bound on κ for :class:`~persuasive.certify.noisy_mean_laplace.NoisyMeanLaplace`
(this library's extension of Prop 7, Bon et al. 2026; ``docs/release_means.md``), whose
certificate is κ = ∞. The witness is the theorem's: :math:`\Phi = I`,
:math:`\rho_i^2 = 1 - 1/r_2`, w = 0, a prior sd of the mean :math:`\sqrt{\bar\Sigma} = b/\lambda`
and :math:`\rho_i z_i = \Phi(y_0 - \alpha)/(4\varphi(y_0 - \alpha))`
(:func:`~persuasive.certify.noisy_mean_laplace.witness_bound`), with λ ≥ b/V the largest on a
grid whose :math:`|z_i|` stays below ``Z_MAX`` (beyond it the loss, a difference of two scores
of size :math:`z_i^2`, loses its digits to rounding). N outputs are sampled, the losses
computed from the closed form

.. math:: \Delta_i = -\log(1 - \rho_i^2 g) + z_i^2 - \frac{(z_i - \rho_i m)^2}{1 - \rho_i^2 g}

(:func:`~persuasive.priors.laplace_posterior.laplace_moments`), and the k-th largest
(Clopper–Pearson rank) is recomputed with :func:`persuasive.relative_loss` on the exact
posterior (:class:`~persuasive.priors.laplace_posterior.LaplaceMeanPosterior`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.audit.core import finish, required_rank
from persuasive.audit.noisy_mean import witness_prior
from persuasive.audit.stream import kth_output
from persuasive.certify.noisy_mean_laplace import is_laplace_mean, witness_bound
from persuasive.classes import GaussianMeanClass
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.loss import relative_loss
from persuasive.mechanisms import Mechanism
from persuasive.priors import GaussianPrior
from persuasive.priors.laplace_posterior import laplace_moments
from persuasive.results import Audit, Witness
from persuasive.scores import MarginalDSS

__all__ = ["design", "is_laplace_mean", "laplace_mean_audit"]

#: Largest |z_i| of the witness: the loss is a difference of two scores of size z_i², so its
#: rounding error is about 1e-16 * Z_MAX² (1e-6 here).
Z_MAX: float = 1e5

#: The witness λ is searched on ``LAMBDA_GRID`` points from max(b/V, LAMBDA_FLOOR) up by a
#: factor ``LAMBDA_SPAN``.
LAMBDA_GRID, LAMBDA_FLOOR, LAMBDA_SPAN = 400, 0.05, 1e4

#: λ is kept this far (relatively) above b/V so that the witness is inside the class.
LAMBDA_MARGIN: float = 1e-9


def design(b: float, max_mean_sd: float | None, delta: float) -> tuple[float, float]:
    r"""(λ, ρ_i z_i) of the witness: the largest λ ≥ b/V on the grid whose z stays below
    ``Z_MAX`` (the theorem's bound grows with λ); else the smallest λ with
    :math:`\rho_i z_i = \min(\cdot, Z_{\max}/2)` (1 where the bound does not apply).

    Examples
    --------
    >>> from persuasive.audit.noisy_mean_laplace import design
    >>> lam, rho_z = design(1.0, None, 0.05)
    >>> bool(2.0 < lam < 4.0), bool(rho_z < 1e5)
    (True, True)
    """
    lam_min = 0.0 if max_mean_sd is None else b / max_mean_sd * (1.0 + LAMBDA_MARGIN)
    lo = max(lam_min, LAMBDA_FLOOR)
    lams = lo * np.geomspace(1.0, LAMBDA_SPAN, LAMBDA_GRID)
    _, rho_z = witness_bound(lams, delta)
    ok = np.isfinite(rho_z) & (rho_z <= 0.5 * Z_MAX)
    if ok.any():
        j = int(np.flatnonzero(ok)[-1])
        return float(lams[j]), float(rho_z[j])
    first = float(rho_z[0])
    return float(lo), min(first, 0.5 * Z_MAX) if math.isfinite(first) else 1.0


def laplace_mean_audit(
    mech: Mechanism, definition: Any, n_samples: int, confidence: float, rng: np.random.Generator
) -> Audit:
    r"""Monte Carlo audit of Chain(ExactMean, LaplaceMechanism) under (ℐ, 𝒢^{r,V}_x, κ, δ).

    Examples
    --------
    >>> import persuasive as pp
    >>> m = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(1.0))
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 50.0, 0.05)
    >>> a = pp.audit(m, d, rng=0, n_samples=20_000)
    >>> a.method, a.holds  # far above any Gaussian-noise certificate
    ('monte-carlo', False)
    """
    if not all(isinstance(s, MarginalDSS) for s in definition.scores):
        raise UnsupportedCombinationError(
            "no audit for the mean plus Laplace noise with scores other than MarginalDSS; got "
            + ", ".join(type(s).__name__ for s in definition.scores)
        )
    cls: GaussianMeanClass = definition.priors
    b = float(mech.post.scale)  # type: ignore[attr-defined]
    delta = float(definition.delta)
    k = required_rank(n_samples, delta, confidence)
    i = next((s.i for s in definition.scores if s.i is not None), 0)
    if isinstance(cls, BoundedErrorGaussianClass):
        prior, x, line = _bounded_witness(cls, b, i)
        n = x.shape[0]
    else:
        lam, rho_z = design(b, cls.max_mean_sd, delta)
        gam = 1.0 / (1.0 + lam**2)  # witness_prior's Sigma_bar = b^2 gam/(1 - gam) = (b/lam)^2
        n = max(2, i + 1, math.ceil(cls.r2 / (cls.r2 - 1.0) + 1e-9))
        prior, x = witness_prior(cls.r1, cls.r2, b, gam, 0.0, math.sqrt(gam) * rho_z, i, n)
        line = (
            f"witness Phi = I, rho_i^2 = 1 - 1/r2, w = 0, lambda = b / sqrt(Sigma_bar) = "
            f"{lam:.4g}, z_i = {{z:.4g}} (the theorem's witness, docs/release_means.md); loss "
            "recomputed with relative_loss on the exact Laplace posterior"
        )
    if not cls.contains(prior, x):  # pragma: no cover - the margins keep it inside
        raise ValidationError("the audit could not place a witness inside the class")
    mu, cov = prior.mean(), prior.cov()
    sbar = float(cov.sum()) / n**2
    rho = float(cov[i].sum() / n / math.sqrt(cov[i, i] * sbar))
    z = float((x[i] - mu[i]) / math.sqrt(cov[i, i]))

    def sample(gen: np.random.Generator, size: int) -> Any:
        return x.mean() + gen.laplace(0.0, b, size=size)

    def loss(t: Any) -> Any:
        m, g = laplace_moments((t - mu.mean()) / math.sqrt(sbar), b / math.sqrt(sbar))
        bb = 1.0 - rho**2 * g
        return -np.log(bb) + z**2 - (z - rho * m) ** 2 / bb

    tj = float(kth_output(sample, loss, n_samples, k, rng))  # chunked when n_samples is huge
    score = MarginalDSS(i)
    kappa = relative_loss(score, prior, mech, x, tj)
    notes = (
        line.replace("{z:.4g}", f"{z:.4g}"),
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


def _bounded_witness(
    cls: BoundedErrorGaussianClass, b: float, i: int
) -> tuple[GaussianPrior, NDArray[np.float64], str]:
    r"""A member of the bounded-error class (``docs/release_means.md``, (e)) near its Laplace
    bound :math:`\log r_2 + r_0^2`: Φ = I, person i's share :math:`\rho^2` just below
    :math:`c = 1 - 1/r_2` at error :math:`z_i = r_0`, the mean error
    :math:`w = \min(r_0/\rho, \sqrt{r_1})` (the posterior mean then lands near x_i), and
    :math:`\bar\Sigma` as large as the class allows (V², or (1000 b)² without V) so that the
    noise is small against the prior (:func:`persuasive.audit.bounded_mean.bounded_witness`)."""
    from persuasive.audit.bounded_mean import bounded_witness, people_cap

    r0 = float(cls.max_person_error)  # type: ignore[arg-type]
    rho2 = (1.0 - 1.0 / cls.r2) * (1.0 - 1e-6)
    w = min(r0 / math.sqrt(rho2), math.sqrt(cls.r1) * (1.0 - 1e-9))
    v = cls.max_mean_sd
    sbar = (1000.0 * b) ** 2 if v is None else v * v * (1.0 - 1e-9)
    n = people_cap(cls.r2, i)
    prior, x = bounded_witness(rho2, w, r0 * (1.0 - 1e-9), sbar, i, np.zeros(n))
    line = (
        f"witness Phi = I, rho_i^2 = {rho2:.6g} (just below c), w = {w:.4g}, z_i = {{z:.4g}}, "
        f"n = {n}, Sigma_bar = {sbar:.4g}, every |z_j| <= r0 = {r0:g} (docs/release_means.md, "
        "(e)); loss recomputed with relative_loss on the exact Laplace posterior"
    )
    return prior, x, line
