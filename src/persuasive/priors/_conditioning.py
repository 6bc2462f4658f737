r"""Moments and evidence of a Gaussian prior conditioned on linear statistics, in scaled
square-root form (the numerical core of :func:`persuasive.bayes.gaussian_condition`).

Lives with the priors (below :mod:`persuasive.bayes`) so that the posteriors built here, such as
:class:`~persuasive.priors.laplace_posterior.LaplaceMeanPosterior`, can use it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from persuasive import _tolerances as tol
from persuasive.errors import UnsupportedCombinationError

__all__ = ["gaussian_condition", "gaussian_log_evidence"]


def _exponent(x: float) -> int:
    """e with 2**e <= x < 2**(e + 1), for x > 0."""
    return math.frexp(x)[1] - 1


def _factor(s: NDArray[np.float64]) -> NDArray[np.float64]:
    """F with F Fᵀ = s for a PSD matrix s (Cholesky, or eigen-decomposition if singular)."""
    try:
        return np.asarray(np.linalg.cholesky(s))
    except np.linalg.LinAlgError:
        w, u = np.linalg.eigh(s)
        return np.asarray(u * np.sqrt(np.clip(w, 0.0, None)))


def _noise_eig(
    noise: NDArray[np.float64], k: int, log2_unit: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Eigen-decomposition of the noise covariance R in the working units ``2**log2_unit``:
    ``(rho, W, exact)`` with R = 2**log2_unit · W diag(rho) Wᵀ; ``exact`` marks directions
    without noise (rho <= PSD_RTOL x the largest, or below the smallest float in those units)."""
    r = noise * np.eye(k) if noise.ndim == 0 else noise
    top = float(np.max(np.abs(r))) if r.size else 0.0
    if top == 0.0:
        return np.zeros(k), np.eye(k), np.ones(k, dtype=bool)
    w, u = np.linalg.eigh(0.5 * (r / top) + 0.5 * (r / top).T)
    w = np.clip(w, 0.0, None)
    exact = w <= tol.PSD_RTOL * float(w[-1])
    e = _exponent(top)
    with np.errstate(over="ignore", under="ignore"):
        rho = np.ldexp(w * (top / 2.0**e), e - log2_unit)  # R's scale moved by exact powers of 2
    return rho, u, exact | (rho == 0.0)


def _update(
    mu: NDArray[np.float64],
    f: NDArray[np.float64],
    a1: NDArray[np.float64],
    w: NDArray[np.float64],
    rho: NDArray[np.float64],
    exact: NDArray[np.bool_],
    t1: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The square-root update of :func:`gaussian_condition` in scaled units: the posterior mean
    and a factor F of the (scaled) posterior covariance F Fᵀ."""
    a_rot = w.T @ a1  # statistics rotated so that their noises are independent
    y = w.T @ (t1 - a1 @ mu)
    dm = np.zeros_like(mu)
    if exact.any():
        b = a_rot[exact] @ f
        u, s, vt = np.linalg.svd(b, full_matrices=True)
        keep = s * s > tol.PSD_RTOL * float(s[0]) ** 2 if s.size and s[0] > 0 else s > 0
        r = int(keep.sum())
        resid = y[exact] - a_rot[exact] @ dm
        dm = dm + f @ (vt[:r].T @ ((u[:, :r].T @ resid) / s[:r]))
        f = f @ vt[r:].T  # the directions the exact statistics leave free
    noisy = ~exact
    if noisy.any() and f.shape[1]:
        scale = 1.0 / np.sqrt(rho[noisy])
        c = scale[:, None] * (a_rot[noisy] @ f)
        resid = scale * (y[noisy] - a_rot[noisy] @ dm)
        u, s, vt = np.linalg.svd(c, full_matrices=True)
        r = s.size
        with np.errstate(divide="ignore"):
            gain = np.where(s > 0, 1.0 / (s + 1.0 / s), 0.0)
            shrink = 1.0 / (1.0 + s * s)
        dm = dm + f @ (vt[:r].T @ (gain * (u[:, :r].T @ resid)))
        d = np.concatenate([np.sqrt(shrink), np.ones(vt.shape[0] - r)])
        f = f @ (vt.T * d)
    return mu + dm, f


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
              V = \Sigma - \Sigma A^\top G^{+} A \Sigma, \quad G = A\Sigma A^\top + R

    Computed in square-root form, so that no variance is a difference of large numbers:
    with :math:`\Sigma = F F^\top`, the exact statistics (the null directions of R) condition
    :math:`z \sim N(0, I)`, :math:`x = \mu + Fz`, on :math:`AFz = y` through the SVD of
    :math:`AF` (a projection), and the noisy ones, whitened by R, through the SVD
    :math:`CF = U\,\mathrm{diag}(s)\,V^\top`, which leaves :math:`z` the variances
    :math:`1/(1 + s_j^2)` along V (no cancellation however informative the release). A, Σ and
    R are first scaled by exact powers of two, so that neither huge (~1e308) nor tiny
    (~1e-308) variances overflow or underflow. A rank-deficient :math:`A\Sigma A^\top`
    (redundant statistics) is handled by the SVD's rank.

    Coordinates that an exact statistic determines (posterior variance at rounding level,
    ``VAR_RTOL`` x the prior's, e.g. a differencing attack) are set exactly known, so scores
    see a point mass, not 1e-16; a noisy release never determines a coordinate.

    Raises
    ------
    UnsupportedCombinationError
        If the posterior moments are not representable in double precision (e.g. a prior mean
        or an output near 1e308).
    """
    mu = np.asarray(mean, dtype=np.float64)
    k = A.shape[0]
    a_top = float(np.max(np.abs(A))) if A.size else 0.0
    s_top = float(np.max(np.abs(cov)))
    if a_top == 0.0 or s_top == 0.0:  # nothing to learn: zero statistics or a point-mass prior
        return mu.copy(), np.array(cov, dtype=np.float64)
    ea = _exponent(a_top)
    half = _exponent(s_top) // 2  # Σ = 4**half · S, |S| < 4; sqrt(4**half) = 2**half exactly
    a1 = np.ldexp(A, -ea)
    f = _factor(np.ldexp(cov, -2 * half))
    noise = np.asarray(noise_var, dtype=np.float64)
    rho, w, exact = _noise_eig(noise, k, 2 * ea + 2 * half)
    with np.errstate(over="ignore", invalid="ignore"):  # non-finite results refused below
        m, f = _update(
            mu, f, a1, w, rho, exact, np.ldexp(np.asarray(t, dtype=np.float64).reshape(k), -ea)
        )
    v = np.ldexp(f @ f.T, 2 * half)
    v = 0.5 * v + 0.5 * v.T
    if exact.any():
        # Coordinates the release determines (posterior variance at rounding level, e.g. a
        # differencing attack) are set exactly known, so scores see a point mass, not 1e-16.
        known = np.diag(v) <= tol.VAR_RTOL * np.diag(cov)
        if known.any():
            v[known, :] = 0.0
            v[:, known] = 0.0
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(v))):
        raise UnsupportedCombinationError(
            "the posterior moments overflow double precision (a prior mean, an output or a "
            "variance near 1e308); rescale the data"
        )
    return m, v


def gaussian_log_evidence(
    mean: NDArray[np.float64],
    cov: NDArray[np.float64],
    A: NDArray[np.float64],
    noise_var: float | NDArray[np.float64],
    t: NDArray[np.float64],
) -> float:
    r""":math:`\log N(t; A\mu, A\Sigma A^\top + R)` for a positive definite R, in the scaled,
    whitened coordinates of :func:`gaussian_condition` (no overflow of G for huge or tiny
    variances): :math:`y' = C z + \varepsilon \sim N(0, CC^\top + I)`."""
    k = A.shape[0]
    mu = np.asarray(mean, dtype=np.float64)
    a_top = float(np.max(np.abs(A))) if A.size else 0.0
    s_top = float(np.max(np.abs(cov)))
    ea = _exponent(a_top) if a_top > 0 else 0
    half = _exponent(s_top) // 2 if s_top > 0 else 0
    a1 = np.ldexp(A, -ea)
    f = _factor(np.ldexp(cov, -2 * half)) if s_top > 0 else np.zeros_like(cov)
    noise = np.asarray(noise_var, dtype=np.float64)
    rho, w, _ = _noise_eig(noise, k, 2 * ea + 2 * half)
    scale = 1.0 / np.sqrt(rho)
    c = scale[:, None] * (w.T @ a1 @ f)
    y = np.ldexp(w.T @ (np.ldexp(np.asarray(t, dtype=np.float64).reshape(k), -ea) - a1 @ mu), -half)
    y = scale * y
    u, s, _ = np.linalg.svd(c, full_matrices=True)
    s_all = np.zeros(k)
    s_all[: s.size] = s[:k]
    proj = u.T @ y
    with np.errstate(over="ignore"):
        log1p_s2 = np.where(
            s_all > 1e150, 2.0 * np.log(np.where(s_all > 0, s_all, 1.0)), np.log1p(s_all * s_all)
        )
        quad = float(np.sum((proj / np.sqrt(1.0 + s_all * s_all)) ** 2))
    log_det = float(np.sum(log1p_s2)) - float(np.sum(np.log(scale * scale)))
    log_det += k * (2 * ea + 2 * half) * math.log(2.0)
    return -0.5 * (k * math.log(2.0 * math.pi) + log_det + quad)
