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
from scipy.special import log_ndtr

from persuasive.priors.base import Prior
from persuasive.priors.gaussian import GaussianPrior

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _pieces(
    y: NDArray[np.float64], alpha: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(log p1, log p2, log normaliser M) of the two pieces (the common e^{α²/2} left out)."""
    l1 = -alpha * y + log_ndtr(y - alpha)
    l2 = alpha * y + log_ndtr(-y - alpha)
    big = np.logaddexp(l1, l2)
    return l1 - big, l2 - big, big


def laplace_moments(
    y: ArrayLike, lam: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Standardised posterior moments :math:`(m(y), g(y))` of :math:`u \sim \mathcal N(0,1)`
    given :math:`y = u + \mathrm{Lap}(\lambda)` (broadcasting).

    .. math:: m = \alpha(p_1 - p_2), \qquad g = 2\alpha\pi(y) - 4\alpha^2p_1p_2, \qquad
              \alpha = 1/\lambda.

    g is clipped to [0, 1] (Brascamp–Lieb: a log-concave likelihood times a standard normal
    prior has variance at most 1); its absolute rounding error is about
    :math:`10^{-16}(1 + \alpha^2)`.

    Examples
    --------
    >>> from persuasive.priors.laplace_posterior import laplace_moments
    >>> m, g = laplace_moments(0.7, 1.0)
    >>> round(float(m), 6), round(float(g), 6)
    (0.357788, 0.48331)
    """
    yy, ll = np.broadcast_arrays(np.asarray(y, dtype=np.float64), np.asarray(lam, dtype=np.float64))
    alpha = 1.0 / ll
    lp1, lp2, big = _pieces(yy, alpha)
    p1, p2 = np.exp(lp1), np.exp(lp2)
    log_pi = -0.5 * yy**2 - _LOG_SQRT_2PI - 0.5 * alpha**2 - big
    g = 2.0 * alpha * np.exp(log_pi) - 4.0 * alpha**2 * p1 * p2
    return alpha * (p1 - p2), np.clip(g, 0.0, 1.0)


def laplace_log_evidence(y: ArrayLike, lam: ArrayLike, scale: float) -> NDArray[np.float64]:
    r"""Log prior predictive density of T, :math:`\log m_Q(t)`, with
    :math:`y = (t - a^\top\mu)/\sqrt S`, :math:`\lambda = b/\sqrt S` and ``scale`` = b."""
    yy, ll = np.broadcast_arrays(np.asarray(y, dtype=np.float64), np.asarray(lam, dtype=np.float64))
    alpha = 1.0 / ll
    _, _, big = _pieces(yy, alpha)
    return np.asarray(-math.log(2.0 * scale) + 0.5 * alpha**2 + big)


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
        sa = prior.cov_ @ self.a
        self.s_var = float(self.a @ sa)
        self.sd = math.sqrt(self.s_var)
        self.lam = self.scale / self.sd
        self.y = (self.t - float(self.a @ prior.mean_)) / self.sd
        m, g = laplace_moments(self.y, self.lam)
        self.m, self.g = float(m), float(g)
        self.h = sa / self.s_var
        self.mean_ = prior.mean_ + self.h * self.sd * self.m
        self.cov_ = prior.cov_ - self.s_var * self.g * np.outer(self.h, self.h)
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
