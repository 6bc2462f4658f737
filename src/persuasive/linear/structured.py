r"""Structure the linear analysis exploits: covariances never formed n x n, and A's columns.

The analysis of :math:`T = Ax + e` only uses :math:`A\Sigma` (k x n, kept in that wide layout:
BLAS multiplies k x n blocks fast, tall n x k ones slowly when threads are contended) and
:math:`\mathrm{diag}\,\Sigma`. A dense Σ costs :math:`O(n^2k)`; the structured
:math:`\Sigma = \mathrm{diag}(v) + UU^\top` (U of shape (n, p)) costs :math:`O(nkp)`.

Statistics over subsets of records have few distinct columns: :func:`column_patterns` writes
:math:`A = C E` (C the m distinct columns, E the m x n indicator of who has which), and
:func:`pattern_svd` gets A's thin SVD from the k x m matrix :math:`C\,\mathrm{diag}(w)^{1/2}`
(w_p the summed weights of pattern p) in O(nk + mk²) instead of O(nk²) (``docs/linear_release.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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

    def times_A(self, A: NDArray[np.float64]) -> NDArray[np.float64]:
        """:math:`A\\Sigma` (k, n), C-contiguous, in O(nkp)."""
        out = A * self.diag[None, :]
        if self.U.shape[1]:
            out += (A @ self.U) @ self.U.T
        return np.asarray(out)

    def times_At(self, A: NDArray[np.float64]) -> NDArray[np.float64]:
        """:math:`\\Sigma A^\\top` (n, k) in O(nkp) (the transpose of :meth:`times_A`)."""
        return self.times_A(A).T

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

    def times_A(self, A: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(A @ self.cov)  # Σ is symmetric: A Σ = (Σ Aᵀ)ᵀ

    def times_At(self, A: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.times_A(A).T

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


#: Columns of A are compressed into patterns only when at most this share of them are distinct.
PATTERN_MAX_SHARE: float = 0.5


@dataclass(frozen=True)
class ColumnPatterns:
    """:math:`A = C E`: ``columns`` C (k, m) the distinct columns of A, ``index`` (n,) the
    pattern of each individual (E[p, i] = 1 iff index[i] = p) and ``count`` (m,) their sizes."""

    columns: NDArray[np.float64]
    index: NDArray[np.intp]
    count: NDArray[np.int64]

    def svd(self, weights: NDArray[np.float64] | None = None) -> tuple[Any, ...]:
        r"""Thin SVD ``(u, s, wt)`` of :math:`M = C\,\mathrm{diag}(w)^{1/2}` (k x m) and ``w``,
        :math:`w_p = \sum_{i: index_i = p} v_i` (``weights`` v, default 1: the counts).

        With :math:`\tilde E = \mathrm{diag}(w)^{-1/2} E\,\mathrm{diag}(v)^{1/2}` (orthonormal
        rows), :math:`A\,\mathrm{diag}(v)^{1/2} = M\tilde E = u\,s\,(w_t\tilde E)`: the same
        singular values, and right singular vectors ``wt[:, index] * sqrt(v / w[index])``.
        """
        w = (
            self.count.astype(float)
            if weights is None
            else np.bincount(self.index, weights=weights, minlength=self.count.size)
        )
        u, s, wt = np.linalg.svd(self.columns * np.sqrt(w)[None, :], full_matrices=False)
        return u, s, wt, w

    @property
    def shape(self) -> tuple[int, int]:
        """The shape (k, n) of A."""
        return int(self.columns.shape[0]), int(self.index.size)

    def dense(self) -> NDArray[np.float64]:
        """A = C E as a dense (k, n) array."""
        return np.ascontiguousarray(self.columns[:, self.index])


#: Above this many statistics the pattern codes of :func:`patterns_of_masks` are sorted
#: instead of counted in a table of 2^k entries.
CODE_TABLE_MAX_K = 20


def patterns_of_masks(masks: Sequence[ArrayLike], coef: ArrayLike) -> ColumnPatterns | None:
    r"""The column patterns of :math:`A_{ji} = c_j [i \in S_j]` (statistic j the ``coef[j]``
    multiple of the indicator ``masks[j]``, coefficients non-zero), exact, in O(nk).

    Column i of A is fixed by the set of statistics covering i, so the patterns are the
    distinct codes :math:`\sum_j 2^j [i \in S_j]`, numbered in increasing order (the same
    masks give the same numbering). None for more than 62 statistics (then
    :func:`column_patterns` of the dense A is used).

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.linear.structured import patterns_of_masks
    >>> p = patterns_of_masks([[1, 1, 1, 1], [0, 0, 1, 1]], [0.25, 1.0])
    >>> p.columns.tolist(), p.index.tolist(), p.count.tolist()
    ([[0.25, 0.25], [0.0, 1.0]], [0, 0, 1, 1], [2, 2])
    >>> bool(np.array_equal(p.dense(), [[0.25] * 4, [0, 0, 1, 1]]))
    True
    """
    m = [np.asarray(row, dtype=bool) for row in masks]
    c = np.asarray(coef, dtype=np.float64)
    k = len(m)
    if k == 0 or k > 62 or c.shape != (k,) or not np.all(np.isfinite(c)) or np.any(c == 0):
        return None
    n = m[0].size
    code = np.zeros(n, dtype=np.int64)
    for j, row in enumerate(m):  # k statistics, each one vectorised pass over the n records
        code |= row.view(np.uint8).astype(np.int64) << j
    if k <= CODE_TABLE_MAX_K:
        table = np.bincount(code, minlength=1 << k)
        present = np.flatnonzero(table)
        number = np.zeros(1 << k, dtype=np.intp)
        number[present] = np.arange(present.size)
        index = number[code]
        count = table[present]
    else:
        present, index, count = np.unique(code, return_inverse=True, return_counts=True)
    bits = (present[None, :] >> np.arange(k)[:, None]) & 1
    return ColumnPatterns(
        np.ascontiguousarray(bits * c[:, None], dtype=np.float64),
        index.astype(np.intp, copy=False),
        count.astype(np.int64),
    )


def column_patterns(a: NDArray[np.float64]) -> ColumnPatterns | None:
    """The distinct columns of A (k, n) and who has which, or None when more than
    ``PATTERN_MAX_SHARE`` of them are distinct (then compression does not pay).

    Columns are grouped by a fixed random projection and every column is then checked equal
    to its group's representative, so the result is exact (None if a check fails).

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.linear.structured import column_patterns
    >>> p = column_patterns(np.array([[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]]))
    >>> p.columns.shape, p.index.tolist(), p.count.tolist()
    ((2, 2), [1, 1, 0, 0], [2, 2])
    """
    k, n = a.shape
    w = np.random.default_rng(0x5EED).uniform(1.0, 2.0, k)
    with np.errstate(all="ignore"):
        h = w @ a
    if not np.all(np.isfinite(h)):
        return None
    values = np.unique(h)  # hashed, no sort of n values
    m = values.size
    if m > PATTERN_MAX_SHARE * n:
        return None
    index = np.searchsorted(values, h).astype(np.intp, copy=False)
    count = np.bincount(index, minlength=m)
    if not np.all(count):  # 0.0 and -0.0 both listed: leave it to the dense path
        return None
    member = np.empty(m, dtype=np.intp)
    member[index] = np.arange(n)  # some member of each group: all are checked against it
    cols = np.ascontiguousarray(a[:, member])
    for j in range(k):
        if not np.array_equal(a[j], cols[j, index]):
            return None
    return ColumnPatterns(cols, index, count.astype(np.int64))
