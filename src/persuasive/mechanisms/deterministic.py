"""Deterministic releases M(x, ·) = δ_{f(x)}: exact mean, linear statistics, cell suppression."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.mechanisms.base import Mechanism


def _point_mass(f_x: NDArray[np.float64], t: Any, axes: int) -> NDArray[np.float64]:
    tt = np.asarray(t, dtype=np.float64)
    diff = np.abs(f_x - tt)
    scale = 1.0 + np.abs(tt)
    close = np.asarray(diff <= tol.OUTPUT_ATOL * scale)
    if axes:
        close = np.asarray(close.all(axis=tuple(range(-axes, 0))))
    return np.where(close, 0.0, -np.inf)


class _Deterministic(Mechanism):
    deterministic = True
    finite = True

    def _f(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError

    _out_axes: int = 0

    def apply(self, x: ArrayLike) -> Any:
        xs = np.atleast_1d(v.array("x", x, ndim=(0, 1)))
        self._check(xs)
        out = self._f(xs)
        return float(out) if np.ndim(out) == 0 else out

    def _check(self, x: NDArray[np.float64]) -> None:
        """Validate a dataset; subclasses add domain checks."""

    def sample(self, x: ArrayLike, size: int, rng: np.random.Generator | None = None) -> Any:
        out = np.asarray(self.apply(x))
        return np.broadcast_to(out, (size, *out.shape)).copy()

    def sample_batch(self, xs: ArrayLike, rng: np.random.Generator | None = None) -> Any:
        return self._f(np.asarray(xs, dtype=np.float64))

    def log_likelihood(self, x: ArrayLike, t: Any) -> NDArray[np.float64]:
        return _point_mass(self._f(np.asarray(x, dtype=np.float64)), t, self._out_axes)

    def output_distribution(self, x: ArrayLike) -> tuple[Any, NDArray[np.float64]]:
        out = np.asarray(self.apply(x))
        return out[None, ...], np.ones(1)


@dataclass(frozen=True)
class ExactMean(_Deterministic):
    r"""The exact empirical mean :math:`M(x,\cdot) = \delta_{\bar x}` (Prop 7, Bon et al. 2026).

    Examples
    --------
    >>> import persuasive as pp
    >>> pp.ExactMean().apply([1.0, 2.0, 6.0])
    3.0
    """

    def _f(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return x.mean(axis=-1)

    def coefficients(self, n: int) -> NDArray[np.float64]:
        """The statistic as a 1 x n matrix A = 1ᵀ/n."""
        return np.full((1, n), 1.0 / n)

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "ExactMean"}


@dataclass(frozen=True, eq=False)
class LinearStatistic(_Deterministic):
    r"""An exact linear release :math:`T = A x` for a k x n matrix A.

    Parameters
    ----------
    A : array_like, shape (k, n) or (n,)
        The coefficients; a 1-d array is a single statistic (k = 1).

    Examples
    --------
    >>> import persuasive as pp
    >>> pp.LinearStatistic([[1, 1, 0], [0, 1, 1]]).apply([1, 2, 3]).tolist()
    [3.0, 5.0]
    """

    A: NDArray[np.float64] = field(repr=False)
    _out_axes = 1

    def __init__(self, A: ArrayLike) -> None:
        a = np.atleast_2d(dm.LINEAR_A.check("A", A))
        a.setflags(write=False)
        object.__setattr__(self, "A", a)

    def __repr__(self) -> str:
        return f"LinearStatistic(A={self.A.tolist()})"

    def _check(self, x: NDArray[np.float64]) -> None:
        if x.shape[-1] != self.A.shape[1]:
            raise ValidationError(
                f"x must have {self.A.shape[1]} entries to match A's columns; got {x.shape[-1]}"
            )

    def _f(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return x @ self.A.T

    def coefficients(self, n: int) -> NDArray[np.float64]:
        if n != self.A.shape[1]:
            raise ValidationError(f"A has {self.A.shape[1]} columns but the prior has n = {n}")
        return self.A

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "LinearStatistic", "A": self.A.tolist()}


@dataclass(frozen=True)
class CellSuppression(_Deterministic):
    r"""Suppress every count cell below the threshold h (Prop 8, Bon et al. 2026).

    .. math:: M_i^h(x_i, \cdot) = \delta_{x_i} \text{ if } x_i \ge h, \quad
              \delta_{-1} \text{ otherwise (suppressed)}.

    Parameters
    ----------
    h : int
        Threshold, ``1 <= h <= 10**6`` (:data:`persuasive._domains.THRESHOLD`).

    Examples
    --------
    >>> import persuasive as pp
    >>> pp.CellSuppression(3).apply([0, 2, 3, 10]).tolist()
    [-1.0, -1.0, 3.0, 10.0]
    """

    h: int
    _out_axes = 1

    #: The published value of a suppressed cell.
    SUPPRESSED = -1

    def __post_init__(self) -> None:
        object.__setattr__(self, "h", dm.THRESHOLD.check("h", self.h))

    def _check(self, x: NDArray[np.float64]) -> None:
        if np.any(x < 0) or np.any(x != np.round(x)):
            bad = int(np.argmax((x < 0) | (x != np.round(x))))
            raise ValidationError(f"x must be non-negative integer counts; cell {bad} is {x[bad]}")

    def _f(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.where(x >= self.h, x, float(self.SUPPRESSED))

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "CellSuppression", "h": self.h}
