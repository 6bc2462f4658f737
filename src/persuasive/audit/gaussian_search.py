r"""Search audit of the exact mean against the Gaussian class 𝒢^r_x (Prop 7, Bon et al. 2026).

For a prior :math:`\mathcal N(\mu, \Sigma)` write :math:`s = \Sigma\mathbf 1`,
:math:`S = \mathbf 1^\top\Sigma\mathbf 1`, :math:`\rho_i = s_i/(\sigma_i\sqrt S)`,
:math:`z_i = (x_i - \mu_i)/\sigma_i` and :math:`w = (\bar x - \bar\mu)/\sqrt{\bar\Sigma}`. The
marginal DSS loss of releasing :math:`\bar x` is [RECON, docs/math.md §8]

.. math::

    \Delta_i = -\log(1 - \rho_i^2) + z_i^2 - \frac{(z_i - \rho_i w)^2}{1 - \rho_i^2},
    \qquad \sup_{z_i}\Delta_i = w^2 - \log(1 - \rho_i^2),

attained at :math:`z_i = w/\rho_i`. The search therefore maximises :math:`\max_i\rho_i^2` over
covariances satisfying :math:`c_\Phi \le r_2(1 - \max_i\sigma_i^2/\|\sigma\|^2)` (diagonal,
equicorrelated, AR(1) and free-Cholesky correlation families; random starts screened in batch,
then Nelder–Mead refinement), sets :math:`w^2 = r_1`, builds a concrete (x, μ) realising
:math:`z_i = w/\rho_i`, checks membership and evaluates the loss with
:func:`persuasive.relative_loss`. The supremum :math:`r_1 + \log r_2` is attained by
:math:`\Phi = I`, :math:`\sigma_1^2/\|\sigma\|^2 = 1 - 1/r_2`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize

from persuasive.audit.core import finish
from persuasive.classes import GaussianMeanClass
from persuasive.errors import ValidationError
from persuasive.loss import relative_loss
from persuasive.mechanisms import Mechanism
from persuasive.priors import GaussianPrior
from persuasive.results import Audit, Witness
from persuasive.scores import MarginalDSS

#: Candidate priors are pushed this far (relatively) inside the class constraint
#: :math:`c_\Phi \le r_2(1 - \max\sigma^2/\|\sigma\|^2)` so that membership never hinges on
#: rounding; costs about :math:`r_2 \cdot 10^{-12}` of κ.
CLASS_MARGIN: float = 1e-12

#: The free-Cholesky family is searched only up to this dimension (n(n-1)/2 parameters).
CHOLESKY_MAX_N: int = 8


def batch_marginal_loss(means: ArrayLike, covs: ArrayLike, x: ArrayLike) -> NDArray[np.float64]:
    r"""Closed-form :math:`\Delta_i` of releasing :math:`\bar x` for a batch of Gaussian priors.

    Uses only :math:`s = \Sigma\mathbf 1` and the diagonal, never a posterior (docs/math.md §8).

    Parameters
    ----------
    means : array_like, shape (B, n)
    covs : array_like, shape (B, n, n)
        Dense covariance matrices.
    x : array_like, shape (n,) or (B, n)

    Returns
    -------
    ndarray, shape (B, n)
        :math:`\Delta_i` per prior and coordinate.

    Examples
    --------
    >>> from persuasive.audit.gaussian_search import batch_marginal_loss
    >>> round(float(batch_marginal_loss([[0.0, 0.0]], [[[3.0, 0.0], [0.0, 1.0]]],
    ...                                 [2.0, 0.0]).max()), 10)
    2.3862943611
    """
    mu = np.asarray(means, dtype=np.float64)
    cov = np.asarray(covs, dtype=np.float64)
    xs = np.asarray(x, dtype=np.float64)
    n = cov.shape[-1]
    s = np.einsum("...ij->...i", cov)  # s = Σ1 (a streaming row sum: memory bound)
    tot = s.sum(axis=-1, keepdims=True)
    var = np.diagonal(cov, axis1=-2, axis2=-1)
    sd = np.sqrt(var)
    rho = s / (sd * np.sqrt(tot))
    z = (xs - mu) / sd
    w = (xs.mean(axis=-1, keepdims=True) - mu.mean(axis=-1, keepdims=True)) / np.sqrt(tot / n**2)
    one_m = 1.0 - rho**2
    return np.asarray(-np.log(one_m) + z**2 - (z - rho * w) ** 2 / one_m)


def batch_rho2(covs: NDArray[np.float64]) -> NDArray[np.float64]:
    r""":math:`\rho_i^2 = s_i^2/(\sigma_i^2 S)` for a batch of covariances (B, n, n)."""
    s = covs.sum(axis=-1)
    var = np.diagonal(covs, axis1=-2, axis2=-1)
    return np.asarray(s**2 / (var * s.sum(axis=-1, keepdims=True)))


def project(
    var: NDArray[np.float64], phi: NDArray[np.float64], r2: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Shrink a batch of (variances, correlations) into the class: blend towards (uniform, I).

    With :math:`\Phi_\lambda = (1-\lambda)\Phi + \lambda I` and
    :math:`v_\lambda = (1-\lambda)v + \lambda/n` (v normalised to sum one), the eigenvalues of
    :math:`\Phi_\lambda` are :math:`(1-\lambda)e_k + \lambda`, so the constraint
    :math:`c_{\Phi_\lambda} \le r_2(1 - \max v_\lambda)` reads :math:`f(\lambda) \ge 0` for a
    quadratic f that is increasing on [0, 1]. The smallest feasible λ is its root, hence
    infeasible candidates land exactly on the class boundary (where the worst case lives).
    """
    var = var / var.sum(axis=-1, keepdims=True)
    n = var.shape[-1]
    eig = np.linalg.eigvalsh(phi)
    a, b = eig[:, -1], np.maximum(eig[:, 0], 0.0)
    k = r2 * (1.0 - CLASS_MARGIN)
    vmax = var.max(axis=-1)
    s0, g = 1.0 - vmax, vmax - 1.0 / n
    qa = k * g * (1.0 - b)
    qb = k * (s0 * (1.0 - b) + g * b) + (a - 1.0)
    qc = k * s0 * b - a
    with np.errstate(invalid="ignore", divide="ignore"):
        root = -2.0 * qc / (qb + np.sqrt(np.maximum(qb * qb - 4.0 * qa * qc, 0.0)))
    lam = np.clip(np.where(qc >= 0.0, 0.0, np.nan_to_num(root, nan=1.0)), 0.0, 1.0)
    lv, lp = lam[:, None], lam[:, None, None]
    return (1 - lv) * var + lv / n, (1 - lp) * phi + lp * np.eye(n)


_PhiMaker = Callable[[NDArray[np.float64]], NDArray[np.float64]]


def _families(n: int) -> dict[str, tuple[int, _PhiMaker]]:
    """Correlation parametrisations: name -> (number of extra parameters, θ_extra -> Φ batch)."""
    idx = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    low = -1.0 / (n - 1)
    tri = np.tril_indices(n, -1)

    def diag(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.broadcast_to(np.eye(n), (t.shape[0], n, n)).copy()

    def equi(t: NDArray[np.float64]) -> NDArray[np.float64]:
        a = low + (1.0 - low) / (1.0 + np.exp(-t[:, 0]))
        return (1 - a)[:, None, None] * np.eye(n) + a[:, None, None]

    def ar1(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.tanh(t[:, :1, None]) ** idx

    def chol(t: NDArray[np.float64]) -> NDArray[np.float64]:
        lower = np.broadcast_to(np.eye(n), (t.shape[0], n, n)).copy()
        lower[:, tri[0], tri[1]] = t
        lower /= np.linalg.norm(lower, axis=-1, keepdims=True)
        return np.asarray(lower @ lower.transpose(0, 2, 1))

    fams: dict[str, tuple[int, _PhiMaker]] = {
        "diagonal": (0, diag),
        "equicorrelated": (1, equi),
        "ar1": (1, ar1),
    }
    if n <= CHOLESKY_MAX_N:
        fams["cholesky"] = (n * (n - 1) // 2, chol)
    return fams


def _covs(theta: NDArray[np.float64], n: int, make_phi: Any, r2: float) -> NDArray[np.float64]:
    var, phi = project(np.exp(2.0 * theta[:, :n]), make_phi(theta[:, n:]), r2)
    sd = np.sqrt(var)
    return np.asarray(sd[:, :, None] * phi * sd[:, None, :])


def _witness_x_mu(
    cov: NDArray[np.float64], x: NDArray[np.float64], i: int, w: float
) -> NDArray[np.float64]:
    """Prior mean μ with :math:`w = (\\bar x - \\bar\\mu)/\\sqrt{\\bar\\Sigma}` and
    :math:`z_i = w/\\rho_i` at the given x (the other coordinates absorb the mean)."""
    n = x.shape[0]
    s = cov.sum(axis=-1)
    tot = float(s.sum())
    sd = np.sqrt(np.diag(cov))
    rho = s[i] / (sd[i] * math.sqrt(tot))
    mu = np.empty(n)
    mu[i] = x[i] - sd[i] * w / rho
    target_sum = n * (x.mean() - w * math.sqrt(tot) / n)
    others = [j for j in range(n) if j != i]
    mu[others] = x[others] + (target_sum - mu[i] - x[others].sum()) / len(others)
    return mu


def gaussian_mean_audit(
    mech: Mechanism, definition: Any, x: Any, rng: np.random.Generator, n_starts: int
) -> Audit:
    r"""Search audit of ExactMean under (ℐ, 𝒢^r_x, κ, 0)-PP (Prop 7).

    Examples
    --------
    >>> import persuasive as pp
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 2.5)
    >>> round(pp.audit(pp.ExactMean(), d, rng=0, n_starts=2).kappa, 6)
    2.386294
    """
    cls: GaussianMeanClass = definition.priors
    r1, r2 = cls.r1, cls.r2
    n_min = max(2, math.floor(r2 / (r2 - 1.0)) + 1)
    xs = np.zeros(n_min) if x is None else np.atleast_1d(np.asarray(x, dtype=np.float64))
    n = xs.shape[0]
    if xs.ndim != 1 or n < 2 or r2 * (1.0 - 1.0 / n) * (1 - CLASS_MARGIN) < 1.0:
        raise ValidationError(
            f"x must be one dataset of n >= 2 entries with r2 * (1 - 1/n) > 1 "
            f"(else the class G^r_x is empty); got x = {x!r}, r2 = {r2:g}"
        )
    targets = sorted(
        {j for s in definition.scores for j in (range(n) if s.i is None else [s.i]) if j < n}
    )
    obj_rows = np.array(targets)
    best: tuple[float, NDArray[np.float64]] = (-np.inf, np.eye(n))
    evals = 0
    for _name, (extra, make_phi) in _families(n).items():
        dim = n + extra
        # screen random starts in one batch, plus one "coordinate i dominant" start per target
        screen = rng.normal(0.0, 1.5, size=(64 * max(n_starts, 1), dim))
        dom = np.zeros((len(targets), dim))
        dom[np.arange(len(targets)), obj_rows] = 3.0
        cand = np.vstack([dom, screen])
        vals = batch_rho2(_covs(cand, n, make_phi, r2))[:, obj_rows].max(axis=-1)
        evals += cand.shape[0]
        starts = cand[np.argsort(-vals)[: max(n_starts, 1)]]

        def neg(theta: NDArray[np.float64], make_phi: Any = make_phi) -> float:
            cov = _covs(theta[None, :], n, make_phi, r2)
            return -float(batch_rho2(cov)[0, obj_rows].max())

        for st in starts:
            res = optimize.minimize(
                neg,
                st,
                method="Nelder-Mead",
                options={"xatol": 1e-10, "fatol": 1e-14, "maxfev": 200 * dim},
            )
            evals += int(res.nfev)
            if -res.fun > best[0]:
                best = (-float(res.fun), _covs(res.x[None, :], n, make_phi, r2)[0])
    cov = best[1]
    rho2 = batch_rho2(cov[None])[0]
    i = int(obj_rows[np.argmax(rho2[obj_rows])])
    w = math.sqrt(r1)
    score = MarginalDSS() if any(s.i is None for s in definition.scores) else MarginalDSS(i)
    for _ in range(8):  # shrink w until the concrete prior is a member (rounding only)
        prior = GaussianPrior(_witness_x_mu(cov, xs, i, w), cov)
        if cls.contains(prior, xs):
            break
        w *= 1.0 - 1e-13
    else:  # pragma: no cover - the projection keeps a relative margin
        raise ValidationError("the search could not place a witness inside the class")
    kappa = relative_loss(score, prior, mech, xs)
    notes = (
        "search over diagonal, equicorrelated, AR(1) and free-Cholesky correlations; "
        "sup over x attained at w^2 = r1, z_i = w / rho_i [RECON, docs/math.md §8]",
    )
    return finish(
        definition,
        kappa,
        Witness(score, xs, prior, mech.apply(xs)),
        "optimisation",
        evaluations=evals,
        notes=notes,
    )
