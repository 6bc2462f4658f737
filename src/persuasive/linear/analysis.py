r"""Exact posterior and per-individual worst-case losses of :math:`T = Ax + \mathcal N(0, R)`.

This library's extension of Prop 7 (Bon et al. 2026) to any set of linear statistics; the
derivations and proofs are in ``docs/linear.md``. For a Receiver prior
:math:`\mathcal N(\mu, \Sigma)`, :math:`d = x - \mu`, :math:`G = A\Sigma A^\top + R`,
:math:`a_i = A\Sigma e_i`:

.. math::

    \tau_i^2 = \sigma_i^2 - a_i^\top G^+ a_i, \qquad
    m_i = \mu_i + a_i^\top G^+ (T - A\mu), \qquad
    \rho_i^2 = a_i^\top G^+ a_i / \sigma_i^2 .

For :math:`R = 0` the statistic is first replaced by an orthonormal basis of A's row space
(same σ-algebra, so the same posterior), which keeps the computation of :math:`\tau_i^2`
free of the conditioning of A (a mean of n and a mean of n − 1 are nearly collinear).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.linear.structured import CovOps, as_cov, column_patterns
from persuasive.mechanisms.linear import noise_covariance

#: Singular values of A below ``RANK_RTOL * largest`` are treated as zero (redundant rows).
RANK_RTOL: float = 1e-10

#: γ_i above ``1 - GAMMA_EXACT`` (no noise along the individual's direction) is treated as an
#: exact release of that direction, whose loss is the deterministic r1 − log(1 − ρ_i²).
GAMMA_EXACT: float = 1e-12


#: Above this many noisy individuals, κ's quantile term is bounded per cell of a fixed partition
#: of γ into GAMMA_BINS cells (interval arithmetic of ``tail_threshold``, errs towards larger κ)
#: instead of per individual.
EXACT_MAX: int = 50_000
GAMMA_BINS: int = 1 << 14


def check_A(A: ArrayLike, n: int | None = None) -> NDArray[np.float64]:
    """A as a finite (k, n) array with n >= 2 (and n columns when given)."""
    a = np.atleast_2d(dm.LINEAR_A.check("A", A))
    if n is not None and a.shape[1] != n:
        raise ValidationError(f"A must have n = {n} columns (one per individual); got {a.shape[1]}")
    if a.shape[1] < 2:
        raise ValidationError(f"A must have n >= 2 columns (individuals); got n = {a.shape[1]}")
    return a


@dataclass(frozen=True)
class Exposure:
    """Individual ``i`` is revealed exactly by the combination ``c`` of the statistics:
    :math:`c^\\top T = x_i` (``residual`` = :math:`\\|A^\\top c - e_i\\|`)."""

    i: int
    combination: NDArray[np.float64]
    residual: float


@dataclass(frozen=True)
class LinearAnalysis:
    r"""Everything about :math:`T = Ax + \mathcal N(0, R)` under one Gaussian prior.

    Build with :func:`analyse`. Attributes (shape (n,) unless stated): ``prior_var`` σ²,
    ``post_var`` τ², ``rho2`` ρ², ``gamma`` γ_i (share of the individual's whitened direction
    due to the data rather than the noise, 1 when R = 0), ``exposed`` (τ² ≤ VAR_RTOL σ²).
    """

    mean: NDArray[np.float64]
    A: NDArray[np.float64]
    R: NDArray[np.float64]
    prior_var: NDArray[np.float64]
    post_var: NDArray[np.float64]
    rho2: NDArray[np.float64]
    gamma: NDArray[np.float64]
    exposed: NDArray[np.bool_]
    rank: int
    _B: NDArray[np.float64] = field(repr=False)  # rows b_i = L^T a_i, (n, r) (an F-order view)
    _W: NDArray[np.float64] = field(repr=False)  # y = W (t - A mu), (r, k)
    _svd: tuple[Any, ...] = field(repr=False)
    _cov: Any = field(repr=False)

    @property
    def n(self) -> int:
        return int(self.A.shape[1])

    @property
    def k(self) -> int:
        return int(self.A.shape[0])

    @property
    def exact(self) -> bool:
        return not bool(np.any(self.R))

    @classmethod
    def of(cls, prior: Any, mechanism: Any) -> LinearAnalysis:
        """The analysis of a ``GaussianPrior`` and a linear mechanism (LinearGaussian,
        LinearStatistic, ExactMean)."""
        from persuasive.bayes import _linear_gaussian
        from persuasive.priors import GaussianPrior

        lg = _linear_gaussian(mechanism, prior.dim) if isinstance(prior, GaussianPrior) else None
        if lg is None:
            raise UnsupportedCombinationError(
                "LinearAnalysis.of needs a GaussianPrior and a linear Gaussian mechanism "
                f"(LinearGaussian / LinearStatistic / ExactMean); got {type(prior).__name__} x "
                f"{type(mechanism).__name__}"
            )
        return analyse(prior.mean_, prior.cov_, lg[0], lg[1])

    # -- posterior -----------------------------------------------------------------------
    def _y(self, t: ArrayLike) -> NDArray[np.float64]:
        tt = np.atleast_1d(v.array("t", t, ndim=(0, 1)))
        if tt.shape != (self.k,):
            raise ValidationError(f"t must have k = {self.k} statistics; got shape {tt.shape}")
        return np.asarray(self._W @ (tt - self.A @ self.mean))

    def posterior_mean(self, t: ArrayLike) -> NDArray[np.float64]:
        r""":math:`m = \mu + \Sigma A^\top G^+(t - A\mu)` (O(nk))."""
        return np.asarray(self.mean + self._B @ self._y(t))

    def _t(self, x: NDArray[np.float64], t: ArrayLike | None) -> ArrayLike:
        if t is None:
            if not self.exact:
                raise ValidationError("t is required for a noisy release (R != 0)")
            return np.asarray(self.A @ x)
        return t

    # -- losses ----------------------------------------------------------------------------
    def marginal_loss(self, x: ArrayLike, t: ArrayLike | None = None) -> NDArray[np.float64]:
        r"""Per-individual marginal DSS loss (Def 8) :math:`\Delta_i = D_i(Q, x) - D_i(Q_T, x)`.

        .. math:: \Delta_i = \log\frac{\sigma_i^2}{\tau_i^2} + \frac{d_i^2}{\sigma_i^2}
                  - \frac{(x_i - m_i)^2}{\tau_i^2}

        Exposed individuals get :math:`+\infty` (:math:`D_i(Q_T, x) = -\infty`).
        """
        xs = v.array("x", x, ndim=1)
        if xs.shape[0] != self.n:
            raise ValidationError(f"x must have n = {self.n} entries; got {xs.shape[0]}")
        m = self.posterior_mean(self._t(xs, t))
        with np.errstate(divide="ignore", invalid="ignore"):
            out = (
                np.log(self.prior_var / self.post_var)
                + (xs - self.mean) ** 2 / self.prior_var
                - (xs - m) ** 2 / self.post_var
            )
        return np.where(self.exposed, np.inf, out)

    def dss_loss(self, x: ArrayLike, t: ArrayLike | None = None) -> float:
        r"""Multivariate Dawid–Sebastiani loss, on the posterior's support when it is singular.

        With V the posterior covariance and P the orthogonal projection onto its range
        (basis B), both beliefs are scored on the coordinates :math:`B^\top x`:
        :math:`\mathrm{DSS}(B^\top Q, B^\top x) - \mathrm{DSS}(B^\top Q_T, B^\top x)`.
        For R ≻ 0 (V ≻ 0, B = I) this is the ordinary DSS loss; for R = 0 it is the loss on the
        part of x the release does not reveal (the full-space loss is :math:`+\infty`, as
        ``pp.relative_loss(pp.DawidSebastiani(), ...)`` reports). Dense: O(n³).
        """
        xs = v.array("x", x, ndim=1)
        m = self.posterior_mean(self._t(xs, t))
        cov = self._cov.to_dense()
        post = cov - self._B @ self._B.T
        w, u = np.linalg.eigh(0.5 * (post + post.T))
        keep = w > tol.PSD_RTOL * max(float(w[-1]), 1e-300)
        b = u[:, keep]
        sp = b.T @ cov @ b
        dp, dq = b.T @ (xs - self.mean), b.T @ (xs - m)
        before = np.linalg.slogdet(sp)[1] + dp @ np.linalg.solve(sp, dp)
        after = np.log(w[keep]).sum() + (dq**2 / w[keep]).sum()
        return float(before - after)

    def log_loss(self, x: ArrayLike, t: ArrayLike) -> float:
        r"""Log-score loss :math:`\log m(x, t) - \log m_Q(t)` (App. A); +∞ when R is singular
        (then :math:`Q_T` is singular with respect to Q, incl. the exact release R = 0)."""
        xs = v.array("x", x, ndim=1)
        if self.exact or np.linalg.eigvalsh(self.R)[0] <= tol.PSD_RTOL * np.abs(self.R).max():
            return float(np.inf)
        tt = np.atleast_1d(v.array("t", t, ndim=(0, 1)))
        g = self.A @ self._cov.times_At(self.A) + self.R

        def quad_logdet(mat: NDArray[np.float64], z: NDArray[np.float64]) -> float:
            c = np.linalg.cholesky(mat)
            s = np.linalg.solve(c, z)
            return float(s @ s + 2.0 * np.log(np.diag(c)).sum())

        return 0.5 * (
            quad_logdet(g, tt - self.A @ self.mean) - quad_logdet(self.R, tt - self.A @ xs)
        )

    # -- worst cases -----------------------------------------------------------------------
    def kappa(self, r1: float, delta: float = 0.0) -> NDArray[np.float64]:
        r"""Worst marginal DSS loss per individual over datasets with
        :math:`\|(A\Sigma A^\top)^{+1/2}A(x-\mu)\|^2 \le r_1` (``docs/linear.md``, Thm 1–2).

        R = 0: :math:`r_1 - \log(1 - \rho_i^2)`, attained (exact). R ≠ 0: the (1 − δ)
        quantile bound (binned in γ beyond ``EXACT_MAX`` individuals)
        :math:`-\log(1-\rho_i^2) + q_{1-\delta}[(\sqrt{r_1\gamma_i} +
        \sqrt{1-\gamma_i}Z)^2]` (an upper bound). Exposed individuals: ``inf``.
        """
        # certify sits above linear (certify.linear builds on this module): import lazily
        from persuasive.certify.noisy_mean import tail_threshold

        r1 = dm.R1.check("r1", r1)
        delta = dm.DELTA.check("delta", delta)
        with np.errstate(divide="ignore"):
            base = -np.log1p(-np.minimum(self.rho2, 1.0))
        g = self.gamma
        det = g >= 1.0 - GAMMA_EXACT
        out = base + r1 * g
        noisy = ~det & (self.rho2 > 0)
        if noisy.sum() > EXACT_MAX:  # γ binned into fixed cells, bounded at the cell's worst
            edges = np.linspace(0.0, 1.0, GAMMA_BINS + 1)
            cell = np.minimum(np.searchsorted(edges, g[noisy], side="right") - 1, GAMMA_BINS - 1)
            used = np.unique(cell)
            kc = tail_threshold(
                np.array(np.sqrt(r1)),
                edges[used],
                np.minimum(edges[used + 1], 1.0 - GAMMA_EXACT),
                delta,
            )
            out[noisy] = base[noisy] + kc[np.searchsorted(used, cell)] ** 2
        elif noisy.any():
            k = tail_threshold(np.array(np.sqrt(r1)), g[noisy], g[noisy], delta)
            out[noisy] = base[noisy] + k**2
        out[self.rho2 <= 0] = 0.0
        return np.where(self.exposed, np.inf, out)

    def exposures(self) -> list[Exposure]:
        r"""Exposed individuals and the combination c with :math:`A^\top c = e_i`
        (least squares through the SVD of A; the residual is reported)."""
        u, s, vt = self._svd if self._svd[2] is not None else row_svd(self.A)
        out = []
        for i in np.flatnonzero(self.exposed):
            c = u @ (vt[:, i] / s)
            resid = self.A.T @ c
            resid[i] -= 1.0
            res = float(np.linalg.norm(resid))
            out.append(Exposure(int(i), c, res))
        return out


def row_svd(a: NDArray[np.float64], basis: bool = True) -> tuple[Any, ...]:
    """Thin SVD ``(u, s, vt)`` of A (k, n) without the singular values below ``RANK_RTOL``
    times the largest: vt (r, n) is an orthonormal basis of A's row space (None unless
    ``basis``; the patterns' vt costs O(nr) to expand).

    Through :func:`~persuasive.linear.structured.column_patterns` when A has few distinct
    columns (O(nk + mk²), as exact as the SVD of A), else ``numpy.linalg.svd`` (O(nk²)).
    """
    pat = column_patterns(a)
    if pat is None:
        u, s, vt = np.linalg.svd(a, full_matrices=False)
    else:
        u, s, wt, w = pat.svd()
    keep = s > RANK_RTOL * s[0]
    out: NDArray[np.float64] | None = None
    if basis:
        out = vt[keep] if pat is None else wt[keep][:, pat.index] * (1.0 / np.sqrt(w))[pat.index]
    return u[:, keep], s[keep], out


def analyse(mean: ArrayLike, cov: Any, A: ArrayLike, R: ArrayLike | None = None) -> LinearAnalysis:
    r"""Analyse the release :math:`T = Ax + \mathcal N(0, R)` under the prior N(mean, cov).

    Parameters
    ----------
    mean : array_like, shape (n,)
    cov : array_like (n, n) or StructuredCovariance
        Positive definite prior covariance (dense: O(n²k); structured: O(nkp + nk²)).
    A : array_like, shape (k, n)
    R : None, float, (k,) or (k, k), optional
        Noise covariance (None: exact release).

    Examples
    --------
    Prop 7 as A = 1ᵀ/n (docs/math.md §12): Σ = diag(3, 1), r1 = 1.

    >>> import numpy as np
    >>> from persuasive.linear import analyse
    >>> an = analyse([0.0, 0.0], np.diag([3.0, 1.0]), [[0.5, 0.5]])
    >>> an.kappa(1.0).round(10).tolist()
    [2.3862943611, 1.2876820725]

    Mean of 3 and mean of the first 2 expose the third person, c = (3, -2):

    >>> an = analyse(np.zeros(3), np.eye(3), [[1/3, 1/3, 1/3], [0.5, 0.5, 0.0]])
    >>> an.exposed.tolist(), an.exposures()[0].combination.round(8).tolist()
    ([False, False, True], [3.0, -2.0])
    """
    return Prepared(mean, cov, A)(R)


class Prepared:
    """What :func:`analyse` computes before the noise R enters (A's SVD, AΣ, AΣAᵀ), kept for
    many R: ``Prepared(mean, cov, A)(R)`` is ``analyse(mean, cov, A, R)``, the same
    operations in the same order (the calibration's scan over noise scales uses it)."""

    def __init__(self, mean: ArrayLike, cov: Any, A: ArrayLike) -> None:
        a = check_A(A)
        mu = v.array("mean", mean, ndim=1)
        if mu.shape[0] != a.shape[1]:
            raise ValidationError(
                f"mean must have n = {a.shape[1]} entries (A's columns); got {mu.shape[0]}"
            )
        self.a, self.mu = a, mu
        self.ops: CovOps = as_cov(cov, a.shape[1])
        self._sig2: NDArray[np.float64] | None = None
        self._parts: dict[bool, tuple[Any, ...]] = {}

    def parts(self, exact: bool) -> tuple[Any, ...]:
        """``(svd, stat, w_t, sa, pmat)`` of the exact (row basis) or noisy (A) statistic."""
        if exact not in self._parts:
            a = self.a
            svd = row_svd(a, basis=exact)  # a noisy analysis needs vt only for exposures()
            if exact:  # orthonormal basis of the row space: T' = S^-1 U^T T
                stat, w_t = svd[2], (svd[0] / svd[1]).T
            else:
                stat, w_t = a, np.eye(a.shape[0])
            sa = self.ops.times_A(stat)  # A Σ, (k', n): every n-long product in the wide layout
            self._parts[exact] = (svd, stat, w_t, sa, sa @ stat.T)
        return self._parts[exact]

    def __call__(self, R: ArrayLike | None = None) -> LinearAnalysis:
        a, mu, ops = self.a, self.mu, self.ops
        n, k = a.shape[1], a.shape[0]
        r = noise_covariance(R, k)
        if self._sig2 is None:
            self._sig2 = ops.variances()
        sig2 = self._sig2
        if np.any(sig2 <= 0):
            raise ValidationError("cov must have positive variances (a positive definite prior)")
        exact = not np.any(r)
        svd, stat, w_t, sa, pmat = self.parts(exact)
        noise = np.zeros((stat.shape[0], stat.shape[0])) if exact else r
        g = 0.5 * (pmat + noise + (pmat + noise).T)
        w, q = np.linalg.eigh(g)
        keep = w > tol.PSD_RTOL * max(float(w[-1]), 1e-300)
        lmat = q[:, keep] / np.sqrt(w[keep])
        bt = lmat.T @ sa  # rows of b_i = L^T a_i as columns, (r, n)
        bb = np.einsum("ij,ij->j", bt, bt)
        post = np.maximum(sig2 - bb, 0.0)
        if exact:
            gamma = np.ones(n)
        else:
            mpm = lmat.T @ pmat @ lmat
            with np.errstate(invalid="ignore", divide="ignore"):
                gamma = np.einsum("ij,ij->j", mpm @ bt, bt) / bb
            gamma = np.clip(np.nan_to_num(gamma, nan=1.0), 0.0, 1.0)
        return LinearAnalysis(
            mean=mu,
            A=a,
            R=r,
            prior_var=sig2,
            post_var=post,
            rho2=np.clip(bb / sig2, 0.0, 1.0),
            gamma=gamma,
            exposed=post <= tol.VAR_RTOL * sig2,
            rank=int(svd[1].size),
            _B=bt.T,
            _W=lmat.T @ w_t,
            _svd=svd,
            _cov=ops,
        )
