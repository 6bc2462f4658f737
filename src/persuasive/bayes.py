r"""Exact Bayes updates :math:`Q_T(dx) \propto Q(dx)\, m(x, T)` (eq. 1, Bon et al. 2026).

This is the one place where posteriors are computed. Supported pairs (all exact):

=============================  ==============================================================
prior                          mechanism
=============================  ==============================================================
DiscretePrior                  any mechanism with a likelihood (reweighting, log domain)
GaussianPrior                  ExactMean / LinearStatistic (degenerate conditioning on Ax = t)
GaussianPrior                  GaussianMechanism (T = x + N(0, σ²I))
GaussianPrior                  Chain(ExactMean | LinearStatistic, GaussianMechanism)
GaussianPrior                  Chain(ExactMean | 1-row LinearStatistic, LaplaceMechanism):
                               a two-piece truncated-normal mixture (LaplaceMeanPosterior)
GaussianPrior                  LinearGaussian (T = A x + N(0, R), any PSD R incl. 0)
IndependentCellsPrior          CellSuppression (cell-wise truncation / point mass)
any of the above               Joint(M, K) with K post-processing (Prop 4: Q_{T,U} = Q_T)
any of the above               Composition(M₁, M₂) (sequential update)
=============================  ==============================================================

Anything else raises :class:`~persuasive.errors.UnsupportedCombinationError`: the library never
silently approximates a posterior.
"""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray
from scipy import stats
from scipy.special import logsumexp

from persuasive import _tolerances as tol
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import (
    CellSuppression,
    Chain,
    Composition,
    ExactMean,
    GaussianMechanism,
    Joint,
    LaplaceMechanism,
    LinearGaussian,
    LinearStatistic,
    Mechanism,
)
from persuasive.priors import DiscretePrior, GaussianPrior, IndependentCellsPrior, Prior
from persuasive.priors.laplace_posterior import LaplaceMeanPosterior


def _unsupported(prior: Prior, mechanism: Mechanism, what: str = "posterior") -> NoReturn:
    raise UnsupportedCombinationError(
        f"no exact {what} for {type(prior).__name__} x {type(mechanism).__name__}; supported: "
        "DiscretePrior x any mechanism with a likelihood, GaussianPrior x ExactMean / "
        "LinearStatistic / GaussianMechanism / Chain(linear, GaussianMechanism) / "
        "Chain(one-row linear, LaplaceMechanism), "
        "IndependentCellsPrior x CellSuppression (and Joint / Composition of these)"
    )


def _linear_gaussian(
    mechanism: Mechanism, n: int
) -> tuple[NDArray[np.float64], float | NDArray[np.float64]] | None:
    """(A, noise) if the mechanism is T = A x + N(0, R), else None; noise is s² (R = s² I)
    or the (k, k) matrix R of a LinearGaussian."""
    if isinstance(mechanism, LinearGaussian):
        return mechanism.coefficients(n), np.asarray(mechanism.R)
    if isinstance(mechanism, (ExactMean, LinearStatistic)):
        return mechanism.coefficients(n), 0.0
    if isinstance(mechanism, GaussianMechanism):
        return np.eye(n), mechanism.sigma**2
    if (
        isinstance(mechanism, Chain)
        and isinstance(mechanism.first, (ExactMean, LinearStatistic))
        and isinstance(mechanism.post, GaussianMechanism)
    ):
        return mechanism.first.coefficients(n), mechanism.post.sigma**2
    return None


def _linear_laplace(mechanism: Mechanism, n: int) -> tuple[NDArray[np.float64], float] | None:
    """(a, Laplace scale) if the mechanism is T = aᵀx + Lap(b) for one row a, else None."""
    if (
        isinstance(mechanism, Chain)
        and isinstance(mechanism.first, (ExactMean, LinearStatistic))
        and isinstance(mechanism.post, LaplaceMechanism)
    ):
        a = mechanism.first.coefficients(n)
        if a.shape[0] == 1:
            return a[0], mechanism.post.scale
    return None


def _laplace_posterior(
    prior: GaussianPrior, a: NDArray[np.float64], scale: float, t: Any
) -> LaplaceMeanPosterior | None:
    """The exact Laplace posterior, or None when the prior fixes aᵀx (flat likelihood)."""
    tt = np.asarray(t, dtype=np.float64).reshape(-1)
    if tt.shape != (1,):
        raise ValidationError(f"t must be one number for a one-row statistic; got {t!r}")
    if float(a @ prior.cov_ @ a) <= tol.PSD_RTOL * max(float(np.trace(prior.cov_)), 1e-300):
        return None
    return LaplaceMeanPosterior(prior, a, scale, float(tt[0]))


def gaussian_condition(
    mean: NDArray[np.float64],
    cov: NDArray[np.float64],
    A: NDArray[np.float64],
    noise_var: float | NDArray[np.float64],
    t: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Posterior moments of :math:`x \sim N(\mu, \Sigma)` given :math:`T = Ax + e`,
    :math:`e \sim N(0, s^2 I)` (s = 0 allowed: degenerate conditioning, docs/math.md §8), or
    :math:`e \sim N(0, R)` when ``noise_var`` is a (k, k) PSD matrix R (``docs/linear.md``).

    .. math:: m = \mu + \Sigma A^\top G^{+}(t - A\mu), \quad
              V = \Sigma - \Sigma A^\top G^{+} A \Sigma, \quad G = A\Sigma A^\top + s^2 I

    :math:`G^+` is the pseudo-inverse from an eigendecomposition, so a rank-deficient
    :math:`A\Sigma A^\top` (redundant statistics) is handled without inverting a singular matrix.
    """
    sa = cov @ A.T
    noise = np.asarray(noise_var, dtype=np.float64)
    g = A @ sa + (noise * np.eye(A.shape[0]) if noise.ndim == 0 else noise)
    w, u = np.linalg.eigh(0.5 * (g + g.T))
    keep = w > tol.PSD_RTOL * max(float(w[-1]), 1e-300)
    resid = t - A @ mean
    coef = (u[:, keep] / w[keep]) @ (u[:, keep].T @ resid)
    m = mean + sa @ coef
    proj = sa @ u[:, keep]
    v = cov - (proj / w[keep]) @ proj.T
    v = 0.5 * (v + v.T)
    # Coordinates the release determines (posterior variance at rounding level, e.g. a
    # differencing attack) are set exactly known, so scores see a point mass, not 1e-16.
    known = np.diag(v) <= tol.VAR_RTOL * np.diag(cov)
    if known.any():
        v[known, :] = 0.0
        v[:, known] = 0.0
    return m, v


def posterior(prior: Prior, mechanism: Mechanism, t: Any) -> Prior:
    r"""The data-posterior :math:`Q_T` of ``prior`` after observing ``t`` from ``mechanism``.

    Parameters
    ----------
    prior : Prior
        The Receiver's data-prior Q.
    mechanism : Mechanism
        The release kernel M (known to the Receiver, Assumption 1).
    t : output
        The observed output T.

    Returns
    -------
    Prior
        :math:`Q_T(dx) \propto Q(dx)\, m(x, T)`, of the same family as ``prior``.

    Raises
    ------
    UnsupportedCombinationError
        When no exact update exists for the pair.
    ValidationError
        When ``t`` has probability zero under the prior predictive.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.GaussianPrior([0.0, 0.0], [3.0, 1.0])
    >>> post = pp.posterior(q, pp.ExactMean(), 1.0)
    >>> post.mean().round(6).tolist(), round(float(post.marginal_var()[0]), 6)
    ([1.5, 0.5], 0.75)
    """
    if isinstance(mechanism, Joint):
        t1, _ = t
        return posterior(prior, mechanism.first, t1)
    if isinstance(mechanism, Composition):
        t1, t2 = t
        return posterior(posterior(prior, mechanism.first, t1), mechanism.second, t2)
    if isinstance(prior, DiscretePrior):
        log_w = prior.log_probs + mechanism.log_likelihood(prior.support, t)
        if not np.isfinite(np.max(log_w)):
            raise ValidationError(f"t = {t!r} has probability zero under the prior predictive")
        keep = np.isfinite(log_w)
        return DiscretePrior._from_log_weights(prior.support[keep], log_w[keep])
    if isinstance(prior, GaussianPrior):
        ll = _linear_laplace(mechanism, prior.dim)
        if ll is not None:
            post = _laplace_posterior(prior, ll[0], ll[1], t)
            return prior if post is None else post
        lg = _linear_gaussian(mechanism, prior.dim)
        if lg is None:
            _unsupported(prior, mechanism)
        A, s2 = lg
        tt = np.atleast_1d(np.asarray(t, dtype=np.float64))
        m, v = gaussian_condition(prior.mean_, prior.cov_, A, s2, tt)
        return GaussianPrior._trusted(m, v)
    if isinstance(prior, IndependentCellsPrior) and isinstance(mechanism, CellSuppression):
        return _suppression_posterior(prior, mechanism, t)
    _unsupported(prior, mechanism)


def _suppression_split(
    prior: IndependentCellsPrior, mech: CellSuppression, t: Any
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Validate a suppression output against the prior; return it and the suppressed mask."""
    tt = np.asarray(t, dtype=np.float64)
    if tt.shape != (prior.dim,):
        raise ValidationError(f"t must have {prior.dim} cells; got shape {tt.shape}")
    supp = tt == CellSuppression.SUPPRESSED
    bad = ~supp & ((tt < mech.h) | (tt != np.round(tt)))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValidationError(
            f"t[{i}] = {tt[i]} cannot be released by CellSuppression(h={mech.h}): a released "
            f"cell is an integer >= h, a suppressed one is {CellSuppression.SUPPRESSED}"
        )
    return tt, supp


def _suppression_posterior(
    prior: IndependentCellsPrior, mech: CellSuppression, t: Any
) -> IndependentCellsPrior:
    """Cell-wise: Q_i(· | x_i < h) for suppressed cells, δ_{t_i} for released ones."""
    tt, supp = _suppression_split(prior, mech, t)
    released = np.flatnonzero(~supp)
    if released.size and not np.all(
        np.isfinite(prior.logpmf_cells(np.where(supp, 0.0, tt))[released])
    ):
        raise ValidationError(f"t = {tt.tolist()} has probability zero under the prior")
    hidden = np.flatnonzero(supp)
    table = None
    if hidden.size:
        grid = np.broadcast_to(np.arange(mech.h, dtype=np.float64)[:, None], (mech.h, prior.dim))
        below = np.exp(prior.logpmf_cells(grid)).T[hidden]  # (suppressed cells, h)
        mass = below.sum(axis=1)
        if np.any(mass <= 0.0):
            i = int(hidden[np.argmax(mass <= 0.0)])
            raise ValidationError(
                f"cell {i} is suppressed but the prior gives it no mass below h = {mech.h}"
            )
        table = (hidden, below / mass[:, None])
    return IndependentCellsPrior._from_parts(prior.dim, table, (released, tt[released]))


def _noise_definite(noise: float | NDArray[np.float64]) -> bool:
    """Whether the noise covariance (scalar s² or matrix R) is positive definite."""
    r = np.asarray(noise, dtype=np.float64)
    if r.ndim == 0:
        return bool(r > 0)
    w = np.linalg.eigvalsh(r)
    return bool(w[0] > tol.PSD_RTOL * max(float(w[-1]), 1e-300))


def log_evidence(prior: Prior, mechanism: Mechanism, t: Any) -> float:
    r"""The log prior predictive :math:`\log m_Q(t) = \log \int m(z, t)\, Q(dz)`.

    Exact for the pairs of :func:`posterior` that have a dominating measure: discrete priors
    (log-sum-exp), Gaussian priors with Gaussian noise, independent cells with suppression.
    Deterministic releases of a Gaussian prior have no density with respect to the noise-free
    likelihood and raise :class:`UnsupportedCombinationError`.
    """
    if isinstance(mechanism, Joint):
        t1, t2 = t
        return log_evidence(prior, mechanism.first, t1) + float(
            mechanism.post.log_likelihood(np.atleast_1d(np.asarray(t1, dtype=float)), t2)
        )
    if isinstance(mechanism, Composition):
        t1, t2 = t
        return log_evidence(prior, mechanism.first, t1) + log_evidence(
            posterior(prior, mechanism.first, t1), mechanism.second, t2
        )
    if isinstance(prior, DiscretePrior):
        return float(logsumexp(prior.log_probs + mechanism.log_likelihood(prior.support, t)))
    if isinstance(prior, GaussianPrior):
        lg = _linear_gaussian(mechanism, prior.dim)
        if lg is not None and _noise_definite(lg[1]):
            A, s2 = lg
            tt = np.atleast_1d(np.asarray(t, dtype=np.float64))
            s2a = np.asarray(s2, dtype=np.float64)
            g = A @ prior.cov_ @ A.T + (s2a * np.eye(A.shape[0]) if s2a.ndim == 0 else s2a)
            return float(stats.multivariate_normal(A @ prior.mean_, g).logpdf(tt))
        ll = _linear_laplace(mechanism, prior.dim)
        if ll is not None:
            post = _laplace_posterior(prior, ll[0], ll[1], t)
            if post is not None:
                return post.log_evidence
            tt = np.atleast_1d(np.asarray(t, dtype=np.float64))
            flat = LaplaceMechanism(ll[1]).log_likelihood(np.atleast_1d(ll[0] @ prior.mean_), tt)
            return float(flat)
    if isinstance(prior, IndependentCellsPrior) and isinstance(mechanism, CellSuppression):
        tt, supp = _suppression_split(prior, mechanism, t)
        with np.errstate(divide="ignore"):
            log_below = np.log(prior.cdf_below(mechanism.h))
        released = prior.logpmf_cells(np.where(supp, 0.0, tt))
        return float(np.where(supp, log_below, released).sum())
    _unsupported(prior, mechanism, "prior predictive density")
