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

import hashlib
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms.base import Mechanism

if TYPE_CHECKING:
    from persuasive.linear.structured import ColumnPatterns


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
        a.setflags(write=False)
        self._a: NDArray[np.float64] | None = a
        self.patterns: ColumnPatterns | None = None
        self._set_noise(R, a.shape[0])

    def _set_noise(self, R: ArrayLike | None, k: int) -> None:
        r = noise_covariance(R, k)
        r.setflags(write=False)
        self.R: NDArray[np.float64] = r
        self.exact: bool = bool(not np.any(r))
        self.deterministic = self.exact
        self._exposed: NDArray[np.bool_] | None = None

    @classmethod
    def from_patterns(cls, patterns: ColumnPatterns, R: ArrayLike | None = None) -> LinearGaussian:
        r"""The mechanism of :math:`A = C E` given by A's column patterns
        (:class:`persuasive.linear.structured.ColumnPatterns`: C the distinct columns, E who
        has which), without the dense k × n matrix: ``A`` is formed only when asked for, and
        who is exposed (:meth:`exposed`) comes from the k × m matrix C.

        Examples
        --------
        >>> import persuasive as pp
        >>> from persuasive.linear.structured import patterns_of_masks
        >>> p = patterns_of_masks([[1, 1, 1, 1], [1, 1, 0, 0]], [0.25, 0.5])
        >>> m = pp.LinearGaussian.from_patterns(p)
        >>> m.k, m.n, m.A.tolist()
        (2, 4, [[0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0.0, 0.0]])
        >>> m.describe()["A"]["columns"], m.exposed().tolist()
        ([[0.25, 0.25], [0.0, 0.5]], [False, False, False, False])
        """
        from persuasive.linear.structured import ColumnPatterns

        if not isinstance(patterns, ColumnPatterns):
            raise ValidationError(
                f"patterns must be a persuasive.linear.structured.ColumnPatterns; got "
                f"{type(patterns).__name__}"
            )
        cols = np.atleast_2d(dm.LINEAR_A.check("A", patterns.columns))
        index, count = np.asarray(patterns.index), np.asarray(patterns.count)
        m = cols.shape[1]
        if (
            index.ndim != 1
            or index.dtype.kind not in "iu"
            or count.shape != (m,)
            or (index.size and (int(index.min()) < 0 or int(index.max()) >= m))
            or not np.array_equal(np.bincount(index, minlength=m), count)
        ):
            raise ValidationError(
                f"patterns: index must hold, for each of n individuals, one of the {m} columns, "
                "and count how many have each"
            )
        self = cls.__new__(cls)
        self._a = None
        self.patterns = ColumnPatterns(cols, index, count)
        self._set_noise(R, cols.shape[0])
        return self

    @property
    def A(self) -> NDArray[np.float64]:
        """The statistics, one per row (k, n)."""
        if self._a is None:
            assert self.patterns is not None
            a = self.patterns.dense()
            a.setflags(write=False)
            self._a = a
        return self._a

    @property
    def n(self) -> int:
        return int(self.A.shape[1] if self.patterns is None else self.patterns.shape[1])

    @property
    def k(self) -> int:
        return int(self.R.shape[0])

    def exposed(self) -> NDArray[np.bool_]:
        """Who the statistics expose, :math:`e_i` in A's row space (computed once): from the
        column patterns when they are known, else
        :func:`persuasive.linear.classes.exposed_by`."""
        if self._exposed is None:
            if self.patterns is not None:
                from persuasive.linear.exposure import spread_of

                bad = np.asarray(spread_of(self.patterns).spread <= tol.VAR_RTOL)
            else:
                from persuasive.linear.classes import exposed_by

                bad = exposed_by(self.A)
            bad.setflags(write=False)
            self._exposed = bad
        return self._exposed

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
        if self.patterns is not None:
            return (
                f"LinearGaussian.from_patterns(k={self.k}, n={self.n}, "
                f"m={self.patterns.count.size}, R={self.R.tolist()})"
            )
        return f"LinearGaussian(A={self.A.tolist()}, R={self.R.tolist()})"

    def describe(self) -> dict[str, Any]:
        """A written out; for a mechanism built :meth:`from_patterns`, A by its distinct
        columns and the SHA-256 of the pattern index (int64, little-endian), not n × k numbers."""
        if self.patterns is None:
            return {"mechanism": "LinearGaussian", "A": self.A.tolist(), "R": self.R.tolist()}
        idx = np.ascontiguousarray(self.patterns.index, dtype="<i8")
        return {
            "mechanism": "LinearGaussian",
            "A": {
                "columns": self.patterns.columns.tolist(),
                "n": self.n,
                "index_sha256": hashlib.sha256(idx.data).hexdigest(),
            },
            "R": self.R.tolist(),
        }
