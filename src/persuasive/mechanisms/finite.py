"""Finite Markov kernels given as row-stochastic matrices, and k-ary randomized response."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.mechanisms.base import Mechanism


@dataclass(frozen=True, eq=False)
class FiniteKernel(Mechanism):
    r"""A kernel on finite spaces: datasets ``{0..K-1}``, outputs ``{0..J-1}``.

    .. math:: m(x, t) = P_{x t}, \qquad \sum_t P_{x t} = 1.

    Parameters
    ----------
    matrix : array_like, shape (K, J)
        Row-stochastic matrix; row x is the output distribution M(x, ·).

    Examples
    --------
    >>> import persuasive as pp
    >>> k = pp.FiniteKernel([[0.75, 0.25], [0.25, 0.75]])
    >>> round(float(k.log_likelihood([1], 1)), 6)
    -0.287682
    """

    matrix: NDArray[np.float64] = field(repr=False)
    finite = True
    discrete_output = True

    def __init__(self, matrix: ArrayLike) -> None:
        p = v.array("matrix", dm.KERNEL_MATRIX.check("matrix", matrix), nonneg=True)
        sums = p.sum(axis=1)
        if np.any(np.abs(sums - 1.0) > tol.KERNEL_ROW_ATOL):
            row = int(np.argmax(np.abs(sums - 1.0)))
            raise ValidationError(
                f"matrix must be row-stochastic (each row sums to 1); row {row} sums to "
                f"{sums[row]:.6g}"
            )
        # Renormalise only rows that are off by more than rounding, so that equal entries of
        # different rows (e.g. randomized response) stay bit-identical.
        off = np.abs(sums - 1.0) > 8 * np.finfo(float).eps
        p = np.where(off[:, None], p / sums[:, None], p)
        p.setflags(write=False)
        object.__setattr__(self, "matrix", p)

    def __repr__(self) -> str:
        return f"FiniteKernel({self.matrix.tolist()})"

    @property
    def n_inputs(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def n_outputs(self) -> int:
        return int(self.matrix.shape[1])

    def _row(self, x: ArrayLike) -> NDArray[np.intp]:
        xs = np.asarray(x, dtype=np.float64)
        if xs.ndim and xs.shape[-1] == 1:
            xs = xs[..., 0]
        if np.any(xs != np.round(xs)) or np.any(xs < 0) or np.any(xs >= self.n_inputs):
            raise ValidationError(
                f"x must be an integer dataset in 0..{self.n_inputs - 1}; got {x!r}"
            )
        return xs.astype(np.intp)

    def log_likelihood(self, x: ArrayLike, t: Any) -> NDArray[np.float64]:
        rows = self._row(x)
        tt = np.asarray(t, dtype=np.float64)
        if tt.ndim and tt.shape[-1] == 1:
            tt = tt[..., 0]
        valid = (tt == np.round(tt)) & (tt >= 0) & (tt < self.n_outputs)
        cols = np.where(valid, tt, 0).astype(np.intp)
        with np.errstate(divide="ignore"):
            out = np.log(self.matrix[rows, cols])
        return np.where(valid, out, -np.inf)

    def sample(self, x: ArrayLike, size: int, rng: np.random.Generator | None = None) -> Any:
        row = int(np.ravel(self._row(x))[0])
        rng = np.random.default_rng(rng)
        return rng.choice(self.n_outputs, size=size, p=self.matrix[row]).astype(np.float64)

    def sample_batch(self, xs: ArrayLike, rng: np.random.Generator | None = None) -> Any:
        """Vectorised inverse-CDF sampling: one output per input row."""
        rows = np.ravel(self._row(xs))
        rng = np.random.default_rng(rng)
        cum = np.cumsum(self.matrix, axis=1)[rows]
        u = rng.random(rows.shape[0])[:, None] * cum[:, -1:]
        return np.minimum((u >= cum).sum(axis=1), self.n_outputs - 1).astype(np.float64)

    def output_distribution(self, x: ArrayLike) -> tuple[Any, NDArray[np.float64]]:
        row = self.matrix[int(np.ravel(self._row(x))[0])]
        keep = np.flatnonzero(row > 0)
        return keep.astype(np.float64), row[keep]

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "FiniteKernel", "matrix": self.matrix.tolist()}


class RandomizedResponse(FiniteKernel):
    r"""k-ary randomized response with parameter ε₀ (datasets and outputs in {0,…,k−1}).

    .. math:: m(x, t) = \frac{e^{\varepsilon_0}}{e^{\varepsilon_0}+k-1} \text{ if } t = x, \quad
              \frac{1}{e^{\varepsilon_0}+k-1} \text{ otherwise}.

    Parameters
    ----------
    epsilon : float
        ε₀ >= 0 (finite).
    k : int
        Number of categories, ``2 <= k <= 4096`` (the kernel is a dense k x k matrix;
        :data:`persuasive._domains.RR_K`).

    Examples
    --------
    >>> import persuasive as pp
    >>> rr = pp.RandomizedResponse(1.0, 2)
    >>> round(float(rr.matrix[0, 0]), 6)
    0.731059
    """

    epsilon: float
    k: int

    def __init__(self, epsilon: float, k: int = 2) -> None:
        params = dm.MECHANISMS["randomized_response"]
        eps = params["epsilon"].check("epsilon", epsilon)
        kk = params["k"].check("k", k)
        # e^{-ε} form: no overflow for large ε (keep -> 1, other -> 0).
        other = math.exp(-eps) / (1.0 + (kk - 1) * math.exp(-eps))
        keep = 1.0 / (1.0 + (kk - 1) * math.exp(-eps))
        m = np.full((kk, kk), other)
        np.fill_diagonal(m, keep)
        super().__init__(m)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "k", kk)

    def __repr__(self) -> str:
        return f"RandomizedResponse(epsilon={self.epsilon}, k={self.k})"

    def describe(self) -> dict[str, Any]:
        return {"mechanism": "RandomizedResponse", "epsilon": self.epsilon, "k": self.k}
