"""Independent count cells: one pmf per cell (Bon et al. 2026, §5.2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.priors.base import Prior


def _cell(i: int, pmf: Any) -> Any:
    """A cell marginal: a finite pmf array on {0, 1, ...} or a frozen scipy discrete law."""
    if hasattr(pmf, "logpmf") and hasattr(pmf, "cdf") and hasattr(pmf, "rvs"):
        lo = pmf.support()[0]
        if lo < 0:
            raise ValidationError(
                f"pmfs[{i}] must live on counts 0, 1, 2, ...; its support starts at {lo}"
            )
        return pmf
    arr = v.probabilities(f"pmfs[{i}]", v.array(f"pmfs[{i}]", pmf, ndim=1))
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class IndependentCellsPrior(Prior):
    r"""Product prior over count cells, :math:`Q = \bigotimes_i q_i` on :math:`\mathbb N^n`.

    Parameters
    ----------
    pmfs : sequence
        ``pmfs[i][v] = Q(x_i = v)`` for ``v = 0, 1, ...``: each entry is a 1-d array summing to
        one (mass beyond its end is zero) or a frozen :mod:`scipy.stats` discrete distribution
        on the non-negative integers (e.g. ``scipy.stats.poisson(4)``).

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.IndependentCellsPrior([[0.5, 0.5], [0.1, 0.2, 0.7]])
    >>> q.dim, round(float(q.logpdf([1, 2])), 6)
    (2, -1.049822)
    """

    cells: tuple[Any, ...] = field(repr=False)

    discrete = True

    def __init__(self, pmfs: Sequence[Any]) -> None:
        if isinstance(pmfs, (str, bytes)) or not hasattr(pmfs, "__len__") or len(pmfs) == 0:
            raise ValidationError(f"pmfs must be a non-empty sequence of cell pmfs; got {pmfs!r}")
        object.__setattr__(self, "cells", tuple(_cell(i, p) for i, p in enumerate(pmfs)))

    def __repr__(self) -> str:
        parts = [p.tolist() if isinstance(p, np.ndarray) else repr(p.dist.name) for p in self.cells]
        return f"IndependentCellsPrior({parts})"

    @property
    def dim(self) -> int:
        return len(self.cells)

    def cell_logpmf(self, i: int, values: ArrayLike) -> NDArray[np.float64]:
        """Log pmf of cell i at the given values (-inf at non-integers and outside the support)."""
        vals = np.asarray(values, dtype=np.float64)
        cell = self.cells[i]
        is_int = (vals == np.round(vals)) & (vals >= 0)
        if isinstance(cell, np.ndarray):
            idx = np.clip(vals, 0, cell.size - 1).astype(np.intp)
            with np.errstate(divide="ignore"):
                lp = np.log(cell[idx])
            ok = is_int & (vals < cell.size)
        else:
            lp = np.asarray(cell.logpmf(np.where(is_int, vals, 0)), dtype=np.float64)
            ok = is_int
        return np.where(ok, lp, -np.inf)

    def cell_cdf_below(self, i: int, h: float) -> float:
        """``Q(x_i < h)`` for cell i."""
        cell = self.cells[i]
        k = int(np.ceil(h)) - 1  # largest integer strictly below h
        if k < 0:
            return 0.0
        if isinstance(cell, np.ndarray):
            return float(cell[: k + 1].sum())
        return float(cell.cdf(k))

    def cell_moments(self, i: int) -> tuple[float, float]:
        cell = self.cells[i]
        if isinstance(cell, np.ndarray):
            vals = np.arange(cell.size)
            m = float(cell @ vals)
            return m, float(cell @ (vals - m) ** 2)
        return float(cell.mean()), float(cell.var())

    def logpdf(self, x: ArrayLike) -> NDArray[np.float64] | float:
        xs = np.asarray(x, dtype=np.float64)
        if xs.shape[-1] != self.dim:
            raise ValidationError(f"x must have {self.dim} cells; got shape {xs.shape}")
        total = sum(self.cell_logpmf(i, xs[..., i]) for i in range(self.dim))
        out = np.asarray(total)
        return float(out) if out.ndim == 0 else out

    def mean(self) -> NDArray[np.float64]:
        return np.array([self.cell_moments(i)[0] for i in range(self.dim)])

    def cov(self) -> NDArray[np.float64]:
        return np.diag([self.cell_moments(i)[1] for i in range(self.dim)])

    def sample(self, size: int, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
        rng = np.random.default_rng(rng)
        cols = []
        for cell in self.cells:
            if isinstance(cell, np.ndarray):
                cols.append(rng.choice(cell.size, size=size, p=cell))
            else:
                cols.append(cell.rvs(size=size, random_state=rng))
        return np.stack(cols, axis=-1).astype(np.float64)
