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

**Scale.** Every family is structured, :math:`\Sigma = \mathrm{diag}(\sigma)\Phi_\lambda
\mathrm{diag}(\sigma)` with :math:`\Phi_\lambda = (1-\lambda)\Phi + \lambda I`, so a candidate is
evaluated from :math:`s = \sigma\circ(\Phi_\lambda\sigma)` (an O(n) product: a rank-one update
for equicorrelation, two first-order recursions for AR(1)) and from the extreme eigenvalues of
Φ in closed form (1 - a and 1 + (n - 1)a; for AR(1) those of the tridiagonal
:math:`\Phi^{-1}` up to ``AR1_EXACT_MAX_N``, above it the Toeplitz-symbol bounds
:math:`(1-|t|)/(1+|t|) < e < (1+|t|)/(1-|t|)`, which err towards a larger :math:`c_\Phi`, i.e.
inside the class). No n × n matrix is formed except for the free-Cholesky family (n ≤ 8);
candidates are screened in batches of at most ``BATCH_BYTES`` of working memory. Above
``FULL_SEARCH_MAX_N`` the Nelder–Mead refinement moves in a low-dimensional subspace of the
start (the target coordinate's log-variance, the spread of the others, the family parameter),
and above ``DENSE_WITNESS_MAX_N`` the witness prior is a :class:`StructuredGaussianPrior`, whose
membership :meth:`GaussianMeanClass.contains` tests in O(n) and whose loss is the closed form
(equal to :func:`persuasive.relative_loss` on the dense prior: ``tests/test_audit_scale.py``).

**Bounded error on every person.** Against
:class:`~persuasive.classes.bounded_error.BoundedErrorGaussianClass` the witness must also keep
every :math:`|z_j| \le r_0`, so :math:`z_i = w/\rho_i` may be out of reach; the search is then
:func:`persuasive.audit.bounded_mean.bounded_exact_audit` (Lemma 2 on a (ρ², w) grid with the
best admissible :math:`z_i`, the others' errors within :math:`r_0`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize

from persuasive.audit.bounded_mean import bounded_exact_audit
from persuasive.audit.core import finish
from persuasive.audit.gaussian_families import (  # the families searched (re-exported)
    AR1_EXACT_MAX_N,
    CHOLESKY_MAX_N,
    CLASS_MARGIN,
    StructuredGaussianPrior,
    _covs,
    _families,
    _Family,
    _loss_from_moments,
    _structured,
    project,
)
from persuasive.classes import GaussianMeanClass
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.errors import ValidationError
from persuasive.loss import relative_loss
from persuasive.mechanisms import Mechanism
from persuasive.priors import GaussianPrior, Prior
from persuasive.results import Audit, Witness
from persuasive.scores import MarginalDSS

__all__ = [
    "AR1_EXACT_MAX_N",
    "BATCH_BYTES",
    "CHOLESKY_MAX_N",
    "CLASS_MARGIN",
    "StructuredGaussianPrior",
    "batch_marginal_loss",
    "batch_rho2",
    "gaussian_mean_audit",
    "project",
]

#: Working memory of one screened batch of candidates, in bytes (the batch size follows n).
BATCH_BYTES: int = 64 * 2**20

#: Up to this n Nelder–Mead refines all n log-variances; above it, a 2-dimensional subspace
#: (plus the family parameter) through the start.
FULL_SEARCH_MAX_N: int = 100

#: Up to this n the witness prior is a dense :class:`GaussianPrior` (its loss evaluated by
#: :func:`persuasive.relative_loss`); above it a :class:`StructuredGaussianPrior`.
DENSE_WITNESS_MAX_N: int = 200

#: At most this many "coordinate i dominant" starts are screened (spread over the targets).
MAX_DOMINANT_STARTS: int = 256

#: Floats of working memory per candidate and coordinate in the structured screen.
_FLOATS_PER_COORD: int = 12


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
    s = np.einsum("...ij->...i", cov)  # s = Σ1 (a streaming row sum: memory bound)
    var = np.diagonal(cov, axis1=-2, axis2=-1)
    return _loss_from_moments(mu, var, s, xs)


def batch_rho2(covs: NDArray[np.float64]) -> NDArray[np.float64]:
    r""":math:`\rho_i^2 = s_i^2/(\sigma_i^2 S)` for a batch of covariances (B, n, n)."""
    s = covs.sum(axis=-1)
    var = np.diagonal(covs, axis1=-2, axis2=-1)
    return np.asarray(s**2 / (var * s.sum(axis=-1, keepdims=True)))


def _batch_size(n: int, floats_per_candidate: int) -> int:
    return max(1, BATCH_BYTES // (8 * floats_per_candidate))


def _screen(
    cand: NDArray[np.float64], n: int, fam: _Family, r2: float, rows: NDArray[np.intp]
) -> NDArray[np.float64]:
    """max over the target rows of ρ_i² per candidate, in batches of at most BATCH_BYTES."""
    per = _FLOATS_PER_COORD * n if fam.structured else 4 * n * n + _FLOATS_PER_COORD * n
    size = _batch_size(n, per)
    out = np.empty(cand.shape[0])
    for lo in range(0, cand.shape[0], size):
        out[lo : lo + size] = _structured(cand[lo : lo + size], n, fam, r2).rho2()[:, rows].max(-1)
    return out


def _best_starts(
    rng: np.random.Generator,
    fam: _Family,
    n: int,
    r2: float,
    rows: NDArray[np.intp],
    dom_rows: NDArray[np.intp],
    keep: int,
) -> tuple[NDArray[np.float64], int]:
    """The ``keep`` best of the dominant starts and 64·keep random starts N(0, 1.5²), drawn
    and screened batch by batch (memory O(batch + keep), not O(#starts · n))."""
    dim = n + fam.extra
    per = _FLOATS_PER_COORD * n if fam.structured else 4 * n * n + _FLOATS_PER_COORD * n
    size = max(1, _batch_size(n, per) // 2)  # θ of a batch and the screen's working arrays
    total = len(dom_rows) + 64 * keep
    top = np.empty((0, dim))
    top_vals = np.empty(0)
    for lo in range(0, total, size):
        hi = min(total, lo + size)
        chunk = np.zeros((hi - lo, dim))
        d_hi = min(hi, len(dom_rows))
        if lo < d_hi:
            chunk[np.arange(d_hi - lo), dom_rows[lo:d_hi]] = 3.0
        n_rand = hi - max(lo, len(dom_rows))
        if n_rand > 0:
            chunk[hi - lo - n_rand :] = rng.normal(0.0, 1.5, size=(n_rand, dim))
        vals = _screen(chunk, n, fam, r2, rows)
        allv = np.concatenate([top_vals, vals])
        order = np.argsort(-allv, kind="stable")[:keep]
        top = np.concatenate([top, chunk])[order]
        top_vals = allv[order]
    return top, total


def _witness_x_mu(
    var: NDArray[np.float64], s: NDArray[np.float64], x: NDArray[np.float64], i: int, w: float
) -> NDArray[np.float64]:
    """Prior mean μ with :math:`w = (\\bar x - \\bar\\mu)/\\sqrt{\\bar\\Sigma}` and
    :math:`z_i = w/\\rho_i` at the given x (the other coordinates absorb the mean)."""
    n = x.shape[0]
    tot = float(s.sum())
    sd_i = math.sqrt(float(var[i]))
    rho = float(s[i]) / (sd_i * math.sqrt(tot))
    mu = x.copy()
    mu[i] = x[i] - sd_i * w / rho
    target_sum = n * (x.mean() - w * math.sqrt(tot) / n)
    others = np.ones(n, dtype=bool)
    others[i] = False
    mu[others] = x[others] + (target_sum - mu[i] - x[others].sum()) / (n - 1)
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
    if isinstance(cls, BoundedErrorGaussianClass):
        return bounded_exact_audit(mech, definition, x)
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
    dom_rows = obj_rows
    if len(targets) > MAX_DOMINANT_STARTS:  # the dominant starts are alike up to position
        dom_rows = obj_rows[np.linspace(0, len(targets) - 1, MAX_DOMINANT_STARTS).astype(int)]
    best: tuple[float, NDArray[np.float64], _Family] | None = None
    evals = 0
    full = n <= FULL_SEARCH_MAX_N
    for _name, fam in _families(n).items():
        dim = n + fam.extra
        # screen "coordinate i dominant" starts per target, then random starts, in batches
        starts, screened = _best_starts(rng, fam, n, r2, obj_rows, dom_rows, max(n_starts, 1))
        evals += screened

        for st in starts:
            if full:
                basis = None
                x0 = st
            else:  # the target coordinate's log-sd, the spread of the others, the family
                j = int(obj_rows[np.argmax(_structured(st[None], n, fam, r2).rho2()[0, obj_rows])])
                basis = np.zeros((2 + fam.extra, dim))
                basis[0, j] = 1.0
                basis[1, :n] = st[:n] - st[:n].mean()
                basis[2:, n:] = np.eye(fam.extra)
                x0 = np.zeros(2 + fam.extra)

            def theta_of(c: NDArray[np.float64], st: Any = st, basis: Any = basis) -> Any:
                return c if basis is None else st + c @ basis

            def neg(c: NDArray[np.float64], fam: _Family = fam, theta_of: Any = theta_of) -> float:
                b = _structured(theta_of(c)[None, :], n, fam, r2)
                return -float(b.rho2()[0, obj_rows].max())

            res = optimize.minimize(
                neg,
                x0,
                method="Nelder-Mead",
                options={"xatol": 1e-10, "fatol": 1e-14, "maxfev": 200 * x0.shape[0]},
            )
            evals += int(res.nfev)
            if best is None or -res.fun > best[0]:
                best = (-float(res.fun), theta_of(res.x), fam)
    assert best is not None
    _, theta, fam = best
    top = _structured(theta[None], n, fam, r2)
    var, s = top.var[0], top.s[0]
    rho2 = top.rho2()[0]
    i = int(obj_rows[np.argmax(rho2[obj_rows])])
    w = math.sqrt(r1)
    score = MarginalDSS() if any(sc.i is None for sc in definition.scores) else MarginalDSS(i)
    dense = n <= DENSE_WITNESS_MAX_N
    prior: Prior
    for _ in range(8):  # shrink w until the concrete prior is a member (rounding only)
        mu = _witness_x_mu(var, s, xs, i, w)
        if dense:
            prior = GaussianPrior(mu, _covs(theta[None], n, fam, r2)[0])
        else:
            prior = StructuredGaussianPrior(mu, var, fam.name, top.p[0], float(top.lam[0]))
        if cls.contains(prior, xs):
            break
        w *= 1.0 - 1e-13
    else:  # pragma: no cover - the projection keeps a relative margin
        raise ValidationError("the search could not place a witness inside the class")
    if isinstance(prior, StructuredGaussianPrior):  # the closed form (tests: = relative_loss)
        losses = prior.marginal_loss(xs)
        kappa = float(losses.max() if score.i is None else losses[score.i])
    else:
        kappa = relative_loss(score, prior, mech, xs)
    notes: tuple[str, ...] = (
        "search over diagonal, equicorrelated, AR(1) and free-Cholesky correlations; "
        "sup over x attained at w^2 = r1, z_i = w / rho_i [RECON, docs/math.md §8]",
    )
    if not dense:
        notes += (
            f"n > {DENSE_WITNESS_MAX_N}: structured witness prior, loss by the closed form of "
            "docs/math.md §8 (O(n), no n x n matrix)",
        )
    return finish(
        definition,
        kappa,
        Witness(score, xs, prior, mech.apply(xs)),
        "optimisation",
        evaluations=evals,
        notes=notes,
    )
