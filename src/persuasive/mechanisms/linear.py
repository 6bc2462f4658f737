r"""Linear statistics released exactly or with correlated Gaussian noise (issue 4).

.. math:: T = A x + e, \qquad e \sim \mathcal N(0, R),\quad A \in \mathbb R^{k\times n},\
          R \succeq 0 .

:math:`R = 0` is the exact release of :class:`~persuasive.LinearStatistic`; a positive
semi-definite :math:`R` covers independent noise per statistic (diagonal R) and correlated
noise. The analysis (posterior, worst-case losses, certificates) is in
:mod:`persuasive.linear` and ``docs/linear.md`` (this library's extension of Prop 7,
Bon et al. 2026).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms.base import Mechanism


def noise_covariance(R: ArrayLike | None, k: int) -> NDArray[np.float64]:
    """``R`` as a validated (k, k) PSD matrix: None/scalar/vector/matrix accepted."""
    if R is None:
        return np.zeros((k, k))
    r = dm.NOISE_COVARIANCE.check("R", R)
    if r.ndim == 0:
        if r < 0:
            raise ValidationError(f"R (a noise variance) must be >= 0; got {float(r)}")
        return float(r) * np.eye(k)
    if r.ndim == 1:
        if r.shape[0] != k:
            raise ValidationError(
                f"R must have k = {k} variances (one per statistic); got {r.shape}"
            )
        if np.any(r < 0):
            raise ValidationError(f"R (noise variances) must be >= 0; got {r.tolist()}")
        return np.diag(r)
    if r.shape != (k, k):
        raise ValidationError(f"R must be {k} x {k} (one row per statistic of A); got {r.shape}")
    if not np.allclose(r, r.T, rtol=1e-10, atol=1e-12):
        raise ValidationError(f"R must be symmetric; max |R - R^T| = {np.max(np.abs(r - r.T)):.3g}")
    r = np.where(r == r.T, r, 0.5 * r + 0.5 * r.T)  # no overflow near the largest float
    eig = np.linalg.eigvalsh(r / max(float(np.max(np.abs(r))), 1e-300))
    if eig[0] < -tol.PSD_RTOL * max(float(np.max(np.abs(eig))), 1e-300):
        raise ValidationError(
            "R must be positive semi-definite; its smallest eigenvalue is "
            f"{eig[0] * float(np.max(np.abs(r))):.3g}"
        )
    return r


class LinearGaussian(Mechanism):
    r"""Release :math:`T = A x + e`, :math:`e \sim \mathcal N(0, R)` (R = 0: exact).

    Parameters
    ----------
    A : array_like, shape (k, n) or (n,)
        The statistics, one per row. Redundant rows (linear combinations of others) are
        allowed.
    R : None, float, array_like of shape (k,) or (k, k)
        Noise covariance: None or 0 for an exact release, a scalar :math:`s^2` for
        :math:`s^2 I`, a vector of variances, or a PSD matrix.

    Examples
    --------
    >>> import persuasive as pp
    >>> m = pp.LinearGaussian([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    >>> m.apply([2.0, 4.0, 9.0]).tolist(), m.exact
    ([3.0, 2.0], True)
    >>> pp.LinearGaussian([1.0, 1.0], R=4.0).R.tolist()
    [[4.0]]
    """

    discrete_output = False

    def __init__(self, A: ArrayLike, R: ArrayLike | None = None) -> None:
        a = np.atleast_2d(dm.LINEAR_A.check("A", A))
        r = noise_covariance(R, a.shape[0])
        a.setflags(write=False)
        r.setflags(write=False)
        self.A: NDArray[np.float64] = a
        self.R: NDArray[np.float64] = r
        self.exact: bool = bool(not np.any(r))
        self.deterministic = self.exact

    @property
    def n(self) -> int:
        return int(self.A.shape[1])

    @property
    def k(self) -> int:
        return int(self.A.shape[0])

    def _x(self, x: ArrayLike) -> NDArray[np.float64]:
        xs = v.array("x", x, ndim=None)
        if xs.shape[-1] != self.n:
            raise ValidationError(
                f"x must have {self.n} entries to match A's columns; got {xs.shape[-1]}"
            )
        return xs

    def coefficients(self, n: int) -> NDArray[np.float64]:
        if n != self.n:
            raise ValidationError(f"A has {self.n} columns but the prior has n = {n}")
        return self.A

    def apply(self, x: ArrayLike) -> Any:
        if not self.exact:
            return super().apply(x)
        return self._x(x) @ self.A.T

    def sample(self, x: ArrayLike, size: int, rng: np.random.Generator | None = None) -> Any:
        rng = np.random.default_rng(rng)
        mean = self._x(x) @ self.A.T
        if self.exact:
            return np.broadcast_to(mean, (size, *mean.shape)).copy()
        w, u = np.linalg.eigh(self.R)
        root = u * np.sqrt(np.clip(w, 0.0, None))
        return mean + rng.standard_normal((size, *mean.shape)) @ root.T

    def log_likelihood(self, x: ArrayLike, t: Any) -> NDArray[np.float64]:
        z = np.asarray(t, dtype=np.float64) - self._x(x) @ self.A.T
        if self.exact:
            ok = np.all(np.abs(z) <= tol.OUTPUT_ATOL, axis=-1)
            return np.where(ok, 0.0, -np.inf)
        w = np.linalg.eigvalsh(self.R)
        if w[0] <= tol.PSD_RTOL * w[-1]:
            raise UnsupportedCombinationError(
                "R is singular (some combination of statistics is exact): the likelihood has no "
                "Lebesgue density; the log-score loss is +inf (persuasive.linear.analyse)"
            )
        c = np.linalg.cholesky(self.R)
        sol = np.linalg.solve(c, np.moveaxis(z, -1, 0).reshape(self.k, -1))
        quad = (sol**2).sum(axis=0).reshape(z.shape[:-1])
        logdet = 2.0 * float(np.log(np.diag(c)).sum())
        return np.asarray(-0.5 * (quad + logdet + self.k * math.log(2.0 * math.pi)))

    def __repr__(self) -> str:
        return f"LinearGaussian(A={self.A.tolist()}, R={self.R.tolist()})"

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "LinearGaussian", "A": self.A.tolist(), "R": self.R.tolist()}
