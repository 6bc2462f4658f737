r"""Covariances with the few operations the linear analysis needs, never forming n x n.

The analysis of :math:`T = Ax + e` only uses :math:`\Sigma A^\top` (n x k) and
:math:`\mathrm{diag}\,\Sigma`. A dense Σ costs :math:`O(n^2k)`; the structured
:math:`\Sigma = \mathrm{diag}(v) + UU^\top` (U of shape (n, p)) costs :math:`O(nkp)`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive.errors import ValidationError


class StructuredCovariance:
    r""":math:`\Sigma = \mathrm{diag}(v) + U U^\top` with :math:`v > 0` (so :math:`\Sigma \succ 0`).

    Parameters
    ----------
    diag : array_like, shape (n,)
        The diagonal part v, positive.
    U : array_like, shape (n, p), optional
        The low-rank factor (p = 0 when omitted).

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.linear import StructuredCovariance
    >>> s = StructuredCovariance([1.0, 2.0], [[1.0], [1.0]])
    >>> s.to_dense().tolist(), s.variances().tolist()
    ([[2.0, 1.0], [1.0, 3.0]], [2.0, 3.0])
    >>> s.times_At(np.array([[1.0, 1.0]])).ravel().tolist()
    [3.0, 4.0]
    """

    def __init__(self, diag: ArrayLike, U: ArrayLike | None = None) -> None:
        d = v.array("diag", diag, ndim=1)
        if np.any(d <= 0):
            raise ValidationError(f"diag must be positive; min is {float(d.min())}")
        u = np.zeros((d.shape[0], 0)) if U is None else v.array("U", U, ndim=(1, 2))
        if u.ndim == 1:
            u = u[:, None]
        if u.shape[0] != d.shape[0]:
            raise ValidationError(f"U must have n = {d.shape[0]} rows; got shape {u.shape}")
        self.diag, self.U = d, u

    @classmethod
    def block_equicorrelated(
        cls, groups: ArrayLike, sd: ArrayLike, rho: ArrayLike
    ) -> StructuredCovariance:
        r"""Correlation ρ_g within group g, 0 across: one rank-one term per group.

        :math:`\Sigma_{ij} = \sigma_i\sigma_j\rho_g` for i ≠ j in group g, i.e.
        :math:`\mathrm{diag}((1-\rho_{g(i)})\sigma_i^2) + \sum_g u_g u_g^\top`,
        :math:`(u_g)_i = \sqrt{\rho_g}\,\sigma_i 1\{g(i) = g\}`, :math:`0 \le \rho_g < 1`.
        """
        g = np.asarray(groups)
        labels, idx = np.unique(g, return_inverse=True)
        s = np.broadcast_to(v.array("sd", sd, ndim=(0, 1)), g.shape).astype(float)
        r = np.broadcast_to(v.array("rho", rho, ndim=(0, 1)), labels.shape).astype(float)
        if np.any((r < 0) | (r >= 1)):
            raise ValidationError(f"rho must be in [0, 1); got {r.tolist()}")
        u = np.zeros((g.shape[0], labels.shape[0]))
        u[np.arange(g.shape[0]), idx] = np.sqrt(r[idx]) * s
        return cls((1.0 - r[idx]) * s**2, u)

    @property
    def n(self) -> int:
        return int(self.diag.shape[0])

    def variances(self) -> NDArray[np.float64]:
        """:math:`\\mathrm{diag}\\,\\Sigma`, O(np)."""
        return np.asarray(self.diag + np.einsum("ij,ij->i", self.U, self.U))

    def times_At(self, A: NDArray[np.float64]) -> NDArray[np.float64]:
        """:math:`\\Sigma A^\\top` (n, k) in O(nkp)."""
        return np.asarray(self.diag[:, None] * A.T + self.U @ (self.U.T @ A.T))

    def to_dense(self) -> NDArray[np.float64]:
        return np.asarray(np.diag(self.diag) + self.U @ self.U.T)

    def __repr__(self) -> str:
        return f"StructuredCovariance(n={self.n}, p={self.U.shape[1]})"


class _Dense:
    """Adapter giving a dense matrix the StructuredCovariance interface."""

    def __init__(self, cov: NDArray[np.float64]) -> None:
        self.cov = cov

    @property
    def n(self) -> int:
        return int(self.cov.shape[0])

    def variances(self) -> NDArray[np.float64]:
        return np.asarray(np.diag(self.cov).copy())

    def times_At(self, A: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.cov @ A.T)

    def to_dense(self) -> NDArray[np.float64]:
        return self.cov


CovOps = StructuredCovariance | _Dense


def as_cov(cov: Any, n: int | None = None) -> CovOps:
    """Wrap ``cov`` (dense array or StructuredCovariance) after validating its size."""
    if isinstance(cov, (StructuredCovariance, _Dense)):
        ops: CovOps = cov
    else:
        c = v.array("cov", cov, ndim=(1, 2))
        if c.ndim == 1:
            c = np.diag(c)
        if c.shape[0] != c.shape[1]:
            raise ValidationError(f"cov must be a square matrix; got shape {c.shape}")
        if not np.allclose(c, c.T, rtol=1e-10, atol=1e-12):
            raise ValidationError("cov must be symmetric")
        ops = _Dense(0.5 * (c + c.T))
    if n is not None and ops.n != n:
        raise ValidationError(
            f"cov must be {n} x {n} to match A's columns / the mean; got n = {ops.n}"
        )
    return ops
