r"""The structured prior families of the Prop 7 search audit, held in O(n) memory.

Split from :mod:`persuasive.audit.gaussian_search`, which searches them (and re-exports the
names below). A candidate is :math:`\Sigma = \mathrm{diag}(\sigma)\,\Phi_\lambda\,
\mathrm{diag}(\sigma)`, with Φ diagonal, equicorrelated, AR(1), low-rank or (small n) a free
Cholesky factor, blended towards the identity until it is in the class
(:func:`project`); the loss needs only :math:`s = \Sigma\mathbf 1` and the diagonal
(:func:`_loss_from_moments`), and the class test the extreme eigenvalues of Φ, in closed form or
bounded on the safe side. :class:`StructuredGaussianPrior` is a witness of this form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import eigvalsh_tridiagonal
from scipy.signal import lfilter

from persuasive.errors import ValidationError
from persuasive.priors import GaussianPrior, Prior

#: Candidate priors are pushed this far (relatively) inside the class constraint
#: :math:`c_\Phi \le r_2(1 - \max\sigma^2/\|\sigma\|^2)` so that membership never hinges on
#: rounding; costs about :math:`r_2 \cdot 10^{-12}` of κ.
CLASS_MARGIN: float = 1e-12

#: The free-Cholesky family is searched only up to this dimension (n(n-1)/2 parameters).
CHOLESKY_MAX_N: int = 8

#: AR(1) extreme eigenvalues exactly up to this n (dense up to 32, tridiagonal Φ⁻¹ above),
#: else the symbol bounds (within 10⁻⁵ of exact at n = 10⁴; safe: c_Φ only overestimated).
AR1_EXACT_MAX_N: int = 200


def _loss_from_moments(
    mu: NDArray[np.float64],
    var: NDArray[np.float64],
    s: NDArray[np.float64],
    xs: NDArray[np.float64],
) -> NDArray[np.float64]:
    r""":math:`\Delta_i` from the prior mean, marginal variances and :math:`s = \Sigma\mathbf 1`."""
    n = var.shape[-1]
    tot = s.sum(axis=-1, keepdims=True)
    sd = np.sqrt(var)
    rho = s / (sd * np.sqrt(tot))
    z = (xs - mu) / sd
    w = (xs.mean(axis=-1, keepdims=True) - mu.mean(axis=-1, keepdims=True)) / np.sqrt(tot / n**2)
    one_m = 1.0 - rho**2
    return np.asarray(-np.log(one_m) + z**2 - (z - rho * w) ** 2 / one_m)


def _blend(
    vmax: NDArray[np.float64],
    n: int,
    emin: NDArray[np.float64],
    emax: NDArray[np.float64],
    r2: float,
) -> NDArray[np.float64]:
    """The smallest λ in [0, 1] putting (v_λ, Φ_λ) in the class (see :func:`project`)."""
    if vmax.shape == (1,):  # one candidate (the Nelder–Mead steps): the same formula in floats
        return np.array([_blend1(float(vmax[0]), n, float(emin[0]), float(emax[0]), r2)])
    a, b = emax, np.maximum(emin, 0.0)
    k = r2 * (1.0 - CLASS_MARGIN)
    s0, g = 1.0 - vmax, vmax - 1.0 / n
    qa = k * g * (1.0 - b)
    qb = k * (s0 * (1.0 - b) + g * b) + (a - 1.0)
    qc = k * s0 * b - a
    with np.errstate(invalid="ignore", divide="ignore"):
        root = -2.0 * qc / (qb + np.sqrt(np.maximum(qb * qb - 4.0 * qa * qc, 0.0)))
    root = np.where(np.isfinite(root), root, 1.0)
    return np.asarray(np.clip(np.where(qc >= 0.0, 0.0, root), 0.0, 1.0))


def _blend1(vmax: float, n: int, emin: float, emax: float, r2: float) -> float:
    a, b = emax, max(emin, 0.0)
    k = r2 * (1.0 - CLASS_MARGIN)
    s0, g = 1.0 - vmax, vmax - 1.0 / n
    qa = k * g * (1.0 - b)
    qb = k * (s0 * (1.0 - b) + g * b) + (a - 1.0)
    qc = k * s0 * b - a
    if qc >= 0.0:
        return 0.0
    den = qb + math.sqrt(max(qb * qb - 4.0 * qa * qc, 0.0))
    root = -2.0 * qc / den if den != 0.0 else math.inf
    return min(max(root, 0.0), 1.0) if math.isfinite(root) else 1.0


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
    The constraint is monotone in the extreme eigenvalues, so bounds :math:`e_{\min}' \le
    e_{\min}`, :math:`e_{\max}' \ge e_{\max}` give a larger λ: still inside the class.
    """
    var = var / var.sum(axis=-1, keepdims=True)
    n = var.shape[-1]
    eig = np.asarray(np.linalg.eigvalsh(phi), dtype=np.float64)
    lam = _blend(var.max(axis=-1), n, eig[:, 0], eig[:, -1], r2)
    lv, lp = lam[:, None], lam[:, None, None]
    return (1 - lv) * var + lv / n, (1 - lp) * phi + lp * np.eye(n)


# ------------------------------------------------------------------ structured correlations


@dataclass(frozen=True)
class _Family:
    """A correlation family Φ(p): parameters from θ, the product Φ(p)v and the extreme
    eigenvalues in O(n) per candidate, and (for tests and small n) the dense matrix."""

    name: str
    extra: int
    param: Callable[[NDArray[np.float64]], NDArray[np.float64]]
    dot: Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]
    eig: Callable[[NDArray[np.float64], int], tuple[NDArray[np.float64], NDArray[np.float64]]]
    dense: Callable[[NDArray[np.float64], int], NDArray[np.float64]]
    structured: bool = True


def _ar1_dot(p: NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
    r""":math:`(\Phi v)_i = \sum_j t^{|i-j|} v_j` by a forward and a backward recursion."""
    out = np.empty_like(v)
    for b in range(v.shape[0]):
        t = float(p[b, 0])
        if t == 0.0:
            out[b] = v[b]
            continue
        fwd = lfilter([1.0], [1.0, -t], v[b])
        bwd = lfilter([1.0], [1.0, -t], v[b, ::-1])[::-1]
        out[b] = fwd + bwd - v[b]
    return out


def _ar1_eig(p: NDArray[np.float64], n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(e_min, e_max) of the AR(1) correlation t^|i-j|: exact (tridiagonal Φ⁻¹) up to
    AR1_EXACT_MAX_N, else the symbol bounds (1-|t|)/(1+|t|) < e < (1+|t|)/(1-|t|)."""
    lo, hi = np.ones(p.shape[0]), np.ones(p.shape[0])
    for b in range(p.shape[0]):
        t = float(p[b, 0])
        at = abs(t)
        if at == 0.0:
            continue
        if at >= 1.0 - 1e-9:  # numerically rank one (all ±1 entries): e in [0, n]
            lo[b], hi[b] = 0.0, float(n)
            continue
        if n > AR1_EXACT_MAX_N:
            lo[b], hi[b] = (1.0 - at) / (1.0 + at), (1.0 + at) / (1.0 - at)
            continue
        if n <= 32:
            idx = np.arange(n)
            eig = np.linalg.eigvalsh(t ** np.abs(idx[:, None] - idx[None, :]).astype(np.float64))
            lo[b], hi[b] = eig[0], eig[-1]
            continue
        c = 1.0 - t * t
        d = np.full(n, (1.0 + t * t) / c)
        d[0] = d[-1] = 1.0 / c
        e = np.full(n - 1, -t / c)
        tmin = eigvalsh_tridiagonal(d, e, select="i", select_range=(0, 0))[0]
        tmax = eigvalsh_tridiagonal(d, e, select="i", select_range=(n - 1, n - 1))[0]
        # e(Φ) = 1/e(Φ⁻¹); never tighter than the strict symbol bounds
        lo[b] = max(1.0 / tmax, (1.0 - at) / (1.0 + at))
        hi[b] = min(1.0 / tmin, (1.0 + at) / (1.0 - at))
    return lo, hi


def _families(n: int) -> dict[str, _Family]:
    """Correlation parametrisations by name (the extra parameters follow the n log-sds)."""
    low = -1.0 / (n - 1)
    idx = np.arange(n)
    ones = np.ones

    def none(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.zeros((t.shape[0], 0))

    def equi_a(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(low + (1.0 - low) / (1.0 + np.exp(-t[:, :1])))

    def equi_dot(p: NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray((1.0 - p) * v + p * v.sum(axis=-1, keepdims=True))

    def equi_eig(p: NDArray[np.float64], n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        a = p[:, 0]
        return np.minimum(1.0 - a, 1.0 + (n - 1) * a), np.maximum(1.0 - a, 1.0 + (n - 1) * a)

    def equi_dense(p: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        a = p[:, 0]
        return np.asarray((1 - a)[:, None, None] * np.eye(n) + a[:, None, None])

    def ar1_t(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.tanh(t[:, :1])

    def ar1_dense(p: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        return np.asarray(p[:, :1, None] ** np.abs(idx[:, None] - idx[None, :]))

    def eye_dense(p: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        return np.broadcast_to(np.eye(n), (p.shape[0], n, n)).copy()

    def chol_dense(p: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        lower = np.broadcast_to(np.eye(n), (p.shape[0], n, n)).copy()
        tri = np.tril_indices(n, -1)
        lower[:, tri[0], tri[1]] = p
        lower /= np.linalg.norm(lower, axis=-1, keepdims=True)
        return np.asarray(lower @ lower.transpose(0, 2, 1))

    def chol_dot(p: NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(np.einsum("bij,bj->bi", chol_dense(p, v.shape[-1]), v))

    def chol_eig(p: NDArray[np.float64], n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        eig = np.asarray(np.linalg.eigvalsh(chol_dense(p, n)), dtype=np.float64)
        return eig[:, 0], eig[:, -1]

    def eye_eig(p: NDArray[np.float64], n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return ones(len(p)), ones(len(p))

    fams = {
        "diagonal": _Family("diagonal", 0, none, lambda p, v: v, eye_eig, eye_dense),
        "equicorrelated": _Family("equicorrelated", 1, equi_a, equi_dot, equi_eig, equi_dense),
        "ar1": _Family("ar1", 1, ar1_t, _ar1_dot, _ar1_eig, ar1_dense),
    }
    if n <= CHOLESKY_MAX_N:
        fams["cholesky"] = _Family(
            "cholesky", n * (n - 1) // 2, lambda t: t, chol_dot, chol_eig, chol_dense, False
        )
    return fams


@dataclass(frozen=True)
class _Batch:
    """Structured candidates: Σ = diag(σ) Φ_λ(p) diag(σ), σ² = ``var`` (summing to one)."""

    var: NDArray[np.float64]
    p: NDArray[np.float64]
    lam: NDArray[np.float64]
    s: NDArray[np.float64]  # Σ1

    def rho2(self) -> NDArray[np.float64]:
        return np.asarray(self.s**2 / (self.var * self.s.sum(axis=-1, keepdims=True)))


def _normalised_var(theta: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    lv = 2.0 * theta[:, :n]
    var = np.exp(lv - lv.max(axis=-1, keepdims=True))
    return np.asarray(var / var.sum(axis=-1, keepdims=True))


def _structured(theta: NDArray[np.float64], n: int, fam: _Family, r2: float) -> _Batch:
    """Project θ into the class and compute s = Σ1 without forming Σ (O(n) per candidate)."""
    var = _normalised_var(theta, n)
    p = fam.param(theta[:, n:])
    emin, emax = fam.eig(p, n)
    lam = _blend(var.max(axis=-1), n, emin, emax, r2)
    lv = lam[:, None]
    var = (1 - lv) * var + lv / n
    sd = np.sqrt(var)
    s = sd * ((1 - lv) * fam.dot(p, sd) + lv * sd)
    return _Batch(var, p, lam, s)


def _covs(theta: NDArray[np.float64], n: int, fam: _Family, r2: float) -> NDArray[np.float64]:
    """The dense covariances of the same candidates as :func:`_structured` (small n only)."""
    b = _structured(theta, n, fam, r2)
    lp = b.lam[:, None, None]
    phi = (1 - lp) * fam.dense(b.p, n) + lp * np.eye(n)
    sd = np.sqrt(b.var)
    return np.asarray(sd[:, :, None] * phi * sd[:, None, :])


class StructuredGaussianPrior(Prior):
    r""":math:`\mathcal N(\mu, \mathrm{diag}(\sigma)\Phi_\lambda\mathrm{diag}(\sigma))` with
    :math:`\Phi_\lambda = (1-\lambda)\Phi(p) + \lambda I` for a family of the search
    (diagonal, equicorrelated, AR(1), free Cholesky), held in O(n) memory.

    :meth:`cov_dot` and :meth:`class_terms` are O(n); :meth:`cov`, :meth:`to_gaussian`,
    :meth:`logpdf` and :meth:`sample` form the dense n × n matrix.

    Examples
    --------
    >>> from persuasive.audit.gaussian_search import StructuredGaussianPrior
    >>> import persuasive as pp
    >>> q = StructuredGaussianPrior([0.0, 0.0], [3.0, 1.0], "diagonal")
    >>> pp.GaussianMeanClass(1.0, 4.0).contains(q, [2.0, 0.0])
    True
    >>> q.to_gaussian().cov().tolist()
    [[3.0, 0.0], [0.0, 1.0]]
    """

    def __init__(
        self,
        mean: ArrayLike,
        var: ArrayLike,
        family: str,
        param: ArrayLike = (),
        lam: float = 0.0,
    ) -> None:
        mu = np.array(mean, dtype=np.float64).reshape(-1)
        v = np.array(var, dtype=np.float64).reshape(-1)
        n = mu.shape[0]
        fams = _families(max(n, 2))
        if v.shape != mu.shape or n < 1 or not np.all(np.isfinite(mu)):
            raise ValidationError("mean and var must be finite vectors of one length n >= 1")
        if not np.all(np.isfinite(v)) or not np.all(v > 0):
            raise ValidationError("var must be positive and finite")
        if family not in fams:
            raise ValidationError(f"family must be one of {', '.join(fams)}; got {family!r}")
        p = np.array(param, dtype=np.float64).reshape(1, -1)
        want = {"diagonal": 0, "cholesky": n * (n - 1) // 2}.get(family, 1)
        if p.shape[1] != want or not (0.0 <= lam <= 1.0):
            raise ValidationError(f"{family} takes {want} parameters and 0 <= lam <= 1")
        self._fam = fams[family]
        self.family, self.param, self.lam = family, p, float(lam)
        self.mean_, self.var_ = mu, v
        mu.setflags(write=False)
        v.setflags(write=False)
        if n > 1 and self.phi_eig_range()[0] <= 0.0:
            raise ValidationError(
                f"the {family} correlation with parameters {p[0].tolist()} and lam = {lam:g} "
                "is not positive definite"
            )

    @property
    def dim(self) -> int:
        return int(self.mean_.shape[0])

    def mean(self) -> NDArray[np.float64]:
        return self.mean_.copy()

    def marginal_var(self) -> NDArray[np.float64]:
        return self.var_.copy()

    def cov_dot(self, v: ArrayLike) -> NDArray[np.float64]:
        r""":math:`\Sigma v` in O(n) (O(n²) for the Cholesky family, n ≤ 8)."""
        sd = np.sqrt(self.var_)
        u = sd * np.asarray(v, dtype=np.float64).reshape(1, -1)
        return np.asarray(sd * ((1 - self.lam) * self._fam.dot(self.param, u)[0] + self.lam * u[0]))

    def phi_eig_range(self) -> tuple[float, float]:
        """Bounds (e_min, e_max) on the extreme eigenvalues of the correlation Φ_λ (exact for
        the diagonal, equicorrelated and Cholesky families and AR(1) up to AR1_EXACT_MAX_N)."""
        lo, hi = self._fam.eig(self.param, self.dim)
        return (
            float((1 - self.lam) * lo[0] + self.lam),
            float((1 - self.lam) * hi[0] + self.lam),
        )

    def class_terms(self, x: ArrayLike) -> tuple[float, float, float, float]:
        r"""``(w², c_Φ, 1 - max σ²/‖σ‖², Σ̄)`` of the prior in O(n); c_Φ is an upper bound where
        the eigenvalues are bounded (so membership is never claimed wrongly)."""
        xs = np.asarray(x, dtype=np.float64)
        n = self.dim
        sbar = float(self.cov_dot(np.ones(n)).sum()) / n**2
        lo, hi = self.phi_eig_range()
        c_phi = hi / lo if lo > 0 else math.inf
        w2 = float((xs.mean() - self.mean_.mean()) ** 2 / sbar)
        return w2, c_phi, float(1.0 - self.var_.max() / self.var_.sum()), sbar

    def marginal_loss(self, x: ArrayLike) -> NDArray[np.float64]:
        r"""Closed-form :math:`\Delta_i` of releasing :math:`\bar x` (all i), O(n)."""
        xs = np.asarray(x, dtype=np.float64)
        s = self.cov_dot(np.ones(self.dim))
        return _loss_from_moments(self.mean_[None], self.var_[None], s[None], xs)[0]

    def cov(self) -> NDArray[np.float64]:
        n = self.dim
        phi = (1 - self.lam) * self._fam.dense(self.param, n)[0] + self.lam * np.eye(n)
        sd = np.sqrt(self.var_)
        return np.asarray(sd[:, None] * phi * sd[None, :])

    def to_gaussian(self) -> GaussianPrior:
        """The dense :class:`GaussianPrior` (an n × n matrix)."""
        return GaussianPrior(self.mean_, self.cov())

    def logpdf(self, x: ArrayLike) -> NDArray[np.float64] | float:
        return self.to_gaussian().logpdf(x)

    def sample(self, size: int, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
        return self.to_gaussian().sample(size, rng)

    def __repr__(self) -> str:
        return (
            f"StructuredGaussianPrior(n={self.dim}, family={self.family!r}, "
            f"param={self.param[0].tolist()}, lam={self.lam!r})"
        )
