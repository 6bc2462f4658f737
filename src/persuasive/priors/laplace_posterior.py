r"""The exact posterior of a Gaussian prior after a linear statistic plus Laplace noise.

The release is :math:`T = a^\top x + \mathrm{Lap}(b)` for one row :math:`a` (for the mean,
:math:`a = \mathbf 1/n`; this library's extension of Prop 7, Bon et al. 2026,
``docs/release_means.md``). Under :math:`Q = \mathcal N(\mu, \Sigma)` write
:math:`S = a^\top\Sigma a`, :math:`u = (a^\top x - a^\top\mu)/\sqrt S \sim \mathcal N(0, 1)`,
:math:`\lambda = b/\sqrt S`, :math:`\alpha = 1/\lambda` and
:math:`y = (T - a^\top\mu)/\sqrt S`. Since
:math:`\varphi(u)e^{\pm\alpha u} = e^{\alpha^2/2}\varphi(u \mp \alpha)`, the posterior of u is a
two-piece truncated-normal mixture,

.. math::

    p(u \mid y) \propto e^{-\alpha y}\varphi(u - \alpha)\mathbf 1\{u < y\}
    + e^{\alpha y}\varphi(u + \alpha)\mathbf 1\{u > y\},
    \qquad p_1 \propto e^{-\alpha y}\Phi(y - \alpha),\ p_2 \propto e^{\alpha y}\Phi(-y - \alpha).

Stein's identity for the tilted Gaussian (integration by parts of
:math:`\varphi' = -u\varphi` against the absolutely continuous likelihood
:math:`e^{-\alpha|y - u|}`) gives the moments in closed form, with :math:`\pi(y)` the posterior
density at :math:`u = y`:

.. math::

    m(y) = E[u \mid y] = \alpha(p_1 - p_2), \qquad
    g(y) = 1 - \mathrm{Var}(u \mid y) = 2\alpha\pi(y) - 4\alpha^2 p_1p_2 \in [0, 1].

Given :math:`a^\top x` the data are Gaussian, so with :math:`h = \Sigma a/S`,
:math:`E[x \mid T] = \mu + h\sqrt S\, m` and :math:`\mathrm{Cov}(x \mid T) = \Sigma - S\,g\,hh^\top`
(the laws of total expectation and variance). The prior predictive is
:math:`m_Q(t) = \frac{1}{2b}e^{\alpha^2/2}\,(e^{-\alpha y}\Phi(y - \alpha) +
e^{\alpha y}\Phi(-y - \alpha))`. Everything is computed in the log domain
(:func:`scipy.special.log_ndtr`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats
from scipy.special import erfcx, log_ndtr

from persuasive.priors._conditioning import gaussian_condition
from persuasive.priors.base import Prior
from persuasive.priors.gaussian import GaussianPrior

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)

#: Below ``-_TAIL`` the truncated-normal moments are taken from their asymptotic series (the
#: direct formulas lose about eps·β² relative precision to cancellation).
_TAIL = 60.0


def _log_mills(beta: NDArray[np.float64]) -> NDArray[np.float64]:
    r""":math:`\log\Phi(\beta) + \beta^2/2`, without overflow or cancellation for any β
    (``erfcx`` in the lower tail)."""
    b = np.asarray(beta, dtype=np.float64)
    with np.errstate(over="ignore"):
        lower = np.log(0.5 * erfcx(-np.minimum(b, 0.0) / math.sqrt(2.0)))
        upper = log_ndtr(np.maximum(b, 0.0)) + 0.5 * np.maximum(b, 0.0) ** 2
    return np.asarray(np.where(b < 0.0, lower, upper))


def _truncated(beta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""For :math:`Z \sim N(0, 1)` given :math:`Z < \beta`: :math:`\delta = \beta - E[Z \mid
    Z < \beta] > 0` and :math:`V = \mathrm{Var}(Z \mid Z < \beta)`, stable for every β.

    :math:`r = \varphi(\beta)/\Phi(\beta)`, :math:`\delta = \beta + r`, :math:`V = 1 - r\delta`;
    below :math:`\beta = -60` the series :math:`\delta = x^{-1} - 2x^{-3} + 10x^{-5} - 74x^{-7}
    + 706x^{-9}`, :math:`V = x^{-2} - 6x^{-4} + 50x^{-6} - 518x^{-8} + 6354x^{-10}`
    (:math:`x = -\beta`; from the asymptotic expansion of Mills' ratio).
    """
    b = np.asarray(beta, dtype=np.float64)
    r = np.exp(-_LOG_SQRT_2PI - _log_mills(b))
    delta = b + r
    var = 1.0 - r * delta
    x = np.where(b < -_TAIL, -b, _TAIL)
    u = 1.0 / x
    u2 = u * u
    delta_s = u * (1.0 + u2 * (-2.0 + u2 * (10.0 + u2 * (-74.0 + 706.0 * u2))))
    var_s = u2 * (1.0 + u2 * (-6.0 + u2 * (50.0 + u2 * (-518.0 + 6354.0 * u2))))
    tail = b < -_TAIL
    return np.where(tail, delta_s, delta), np.where(tail, var_s, np.clip(var, 0.0, 1.0))


def _pieces(
    y: NDArray[np.float64], alpha: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    r"""(log p1, log p2, log M) of the two pieces, with the common :math:`e^{\alpha^2/2 -
    y^2/2}` left out of M: :math:`\log p_1 \propto \log\Phi(y - \alpha) + (y - \alpha)^2/2`,
    :math:`\log p_2 \propto \log\Phi(-y - \alpha) + (y + \alpha)^2/2` (no overflow of
    :math:`e^{\alpha^2/2}` for large α)."""
    l1 = _log_mills(y - alpha)
    l2 = _log_mills(-y - alpha)
    big = np.logaddexp(l1, l2)
    return l1 - big, l2 - big, big


def laplace_posterior_stats(
    y: ArrayLike, lam: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Posterior mean and variance of :math:`u \sim \mathcal N(0,1)` given
    :math:`y = u + \mathrm{Lap}(\lambda)` (broadcasting), accurate for every λ.

    The posterior is the two-piece mixture of the module docstring: piece 1 is
    :math:`\alpha + Z` with :math:`Z < \beta_1 = y - \alpha`, piece 2 is :math:`-\alpha + Z'`
    with :math:`Z' > \beta_2 = y + \alpha`. With :math:`(\delta_j, V_j)` the truncated-normal
    moments of :func:`_truncated`,

    .. math:: E[u \mid y] = y - p_1\delta_1 + p_2\delta_2, \qquad
              \mathrm{Var}(u \mid y) = p_1V_1 + p_2V_2 + p_1p_2(\delta_1 + \delta_2)^2,

    a sum of non-negative terms: no cancellation when the noise is small (large α, where the
    variance is about :math:`2\lambda^2`).

    Examples
    --------
    >>> from persuasive.priors.laplace_posterior import laplace_posterior_stats
    >>> m, v = laplace_posterior_stats(0.7, 1.0)
    >>> round(float(m), 6), round(float(v), 6)
    (0.357788, 0.51669)
    >>> m, v = laplace_posterior_stats(1.0, 1e-100)   # tiny noise: u ≈ y, Var ≈ 2 λ²
    >>> float(m), float(v / 2e-200)
    (1.0, 1.0)
    """
    yy, ll = np.broadcast_arrays(np.asarray(y, dtype=np.float64), np.asarray(lam, dtype=np.float64))
    alpha = 1.0 / ll
    lp1, lp2, _ = _pieces(yy, alpha)
    p1, p2 = np.exp(lp1), np.exp(lp2)
    d1, v1 = _truncated(yy - alpha)
    d2, v2 = _truncated(-yy - alpha)
    mean = yy - p1 * d1 + p2 * d2
    var = p1 * v1 + p2 * v2 + p1 * p2 * (d1 + d2) ** 2
    return mean, np.clip(var, 0.0, 1.0)


def laplace_moments(
    y: ArrayLike, lam: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Standardised posterior moments :math:`(m(y), g(y))` of :math:`u \sim \mathcal N(0,1)`
    given :math:`y = u + \mathrm{Lap}(\lambda)` (broadcasting).

    .. math:: m = \alpha(p_1 - p_2), \qquad g = 2\alpha\pi(y) - 4\alpha^2p_1p_2
              = 1 - \mathrm{Var}(u \mid y), \qquad \alpha = 1/\lambda,

    computed through :func:`laplace_posterior_stats` (no cancellation for large α); g is in
    [0, 1] (Brascamp–Lieb: a log-concave likelihood times a standard normal prior has variance
    at most 1). Where the variance matters when it is small, use
    :func:`laplace_posterior_stats` (g = 1 − Var rounds it away).

    Examples
    --------
    >>> from persuasive.priors.laplace_posterior import laplace_moments
    >>> m, g = laplace_moments(0.7, 1.0)
    >>> round(float(m), 6), round(float(g), 6)
    (0.357788, 0.48331)
    """
    m, var = laplace_posterior_stats(y, lam)
    return m, np.clip(1.0 - var, 0.0, 1.0)


def laplace_log_evidence(y: ArrayLike, lam: ArrayLike, scale: float) -> NDArray[np.float64]:
    r"""Log prior predictive density of T, :math:`\log m_Q(t)`, with
    :math:`y = (t - a^\top\mu)/\sqrt S`, :math:`\lambda = b/\sqrt S` and ``scale`` = b:
    :math:`-\log 2b - y^2/2 + \log\big(e^{M(y - \alpha)} + e^{M(-y - \alpha)}\big)`,
    :math:`M(\beta) = \log\Phi(\beta) + \beta^2/2`."""
    yy, ll = np.broadcast_arrays(np.asarray(y, dtype=np.float64), np.asarray(lam, dtype=np.float64))
    alpha = 1.0 / ll
    _, _, big = _pieces(yy, alpha)
    return np.asarray(-math.log(2.0 * scale) - 0.5 * yy**2 + big)


class LaplaceMeanPosterior(Prior):
    r"""The data-posterior of :math:`\mathcal N(\mu, \Sigma)` after :math:`T = a^\top x +
    \mathrm{Lap}(b)` (exact; not Gaussian).

    Stores the exact posterior mean and covariance (what the Dawid–Sebastiani scores need) and
    gives the exact log density and exact samples.

    Parameters
    ----------
    prior : GaussianPrior
        The Receiver's prior Q.
    a : array_like, shape (n,)
        The statistic's coefficients (``1/n`` for the mean).
    scale : float
        The Laplace scale b > 0.
    t : float
        The observed output.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.GaussianPrior([0.0, 0.0], [1.0, 1.0])
    >>> post = pp.posterior(q, pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(1.0)), 0.0)
    >>> post.mean().tolist()
    [0.0, 0.0]
    """

    def __init__(self, prior: GaussianPrior, a: ArrayLike, scale: float, t: float) -> None:
        self.prior = prior
        self.a = np.asarray(a, dtype=np.float64).reshape(-1)
        self.scale = float(scale)
        self.t = float(t)
        # Σ = 4**half · U (|U| < 4): S, sd and h without overflow or underflow.
        top = float(np.max(np.abs(prior.cov_)))
        half = (math.frexp(top)[1] - 1) // 2
        unit = np.ldexp(prior.cov_, -2 * half)
        sa_unit = unit @ self.a
        s_unit = float(self.a @ sa_unit)
        self.s_var = math.ldexp(s_unit, 2 * half)
        self.sd = math.ldexp(math.sqrt(s_unit), half)
        self.lam = self.scale / self.sd
        self.y = (self.t - float(self.a @ prior.mean_)) / self.sd
        m, var = laplace_posterior_stats(self.y, self.lam)
        self.m, self.var_u = float(m), float(var)
        self.g = min(max(1.0 - self.var_u, 0.0), 1.0)
        self.h = sa_unit / s_unit
        self.mean_ = prior.mean_ + self.h * self.sd * self.m
        # Cov(x | T) = Cov(x | aᵀx) + Var(aᵀx | T) h hᵀ: the first term from the exact update
        # (square-root form, no cancellation), the second with Var(aᵀx | T) = S · Var(u | y).
        _, exact = gaussian_condition(
            prior.mean_, prior.cov_, self.a[None, :], 0.0, self.a @ prior.mean_
        )
        spread = math.ldexp(s_unit * self.var_u, 2 * half)
        self.cov_ = exact + spread * np.outer(self.h, self.h)
        self.log_evidence = float(laplace_log_evidence(self.y, self.lam, self.scale))

    def __repr__(self) -> str:
        return (
            f"LaplaceMeanPosterior(t={self.t!r}, scale={self.scale!r}, mean={self.mean_.tolist()})"
        )

    @property
    def dim(self) -> int:
        return int(self.mean_.shape[0])

    def mean(self) -> NDArray[np.float64]:
        return self.mean_.copy()

    def cov(self) -> NDArray[np.float64]:
        return self.cov_.copy()

    def marginal_var(self) -> NDArray[np.float64]:
        return np.diag(self.cov_).copy()

    def logpdf(self, x: ArrayLike) -> NDArray[np.float64] | float:
        r""":math:`\log q(x) - |t - a^\top x|/b - \log 2b - \log m_Q(t)` (Lebesgue on R^n)."""
        xs = np.asarray(x, dtype=np.float64)
        lik = -np.abs(self.t - xs @ self.a) / self.scale - math.log(2.0 * self.scale)
        out = np.asarray(self.prior.logpdf(xs)) + lik - self.log_evidence
        return float(out) if np.ndim(out) == 0 else np.asarray(out)

    def sample(self, size: int, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
        """Exact draws: u from the two truncated-normal pieces, then x given aᵀx (Matheron)."""
        gen = np.random.default_rng(rng)
        alpha = 1.0 / self.lam
        lp1, _, _ = _pieces(np.asarray(self.y), np.asarray(alpha))
        first = gen.random(size) < math.exp(float(lp1))
        lower = stats.truncnorm(-np.inf, self.y - alpha, loc=alpha)
        upper = stats.truncnorm(self.y + alpha, np.inf, loc=-alpha)
        u = np.where(first, lower.rvs(size, random_state=gen), upper.rvs(size, random_state=gen))
        s = float(self.a @ self.prior.mean_) + self.sd * u
        x0 = self.prior.sample(size, gen)
        return np.asarray(x0 + np.outer(s - x0 @ self.a, self.h))
