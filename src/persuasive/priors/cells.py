"""Independent count cells: one pmf per cell (Bon et al. 2026, §5.2).

Cells are stored in a few *groups* of the same kind — finite pmf tables (zero-padded into one
matrix), point masses, and frozen :mod:`scipy.stats` laws of the same family (parameters stacked
into arrays) — so that every per-cell computation is one numpy call per group, never a Python
loop over cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.priors.base import Prior


@dataclass(frozen=True, eq=False)
class _Table:
    """Cells with finite pmfs ``pmf[k, v] = Q(x_idx[k] = v)`` (zero-padded rows)."""

    idx: NDArray[np.intp]
    pmf: NDArray[np.float64]
    length: NDArray[np.intp]  # original length of each row (for materialising cells)


@dataclass(frozen=True, eq=False)
class _Points:
    """Cells known exactly: ``Q(x_idx[k] = value[k]) = 1``."""

    idx: NDArray[np.intp]
    value: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class _Scipy:
    """Cells following one scipy discrete family, parameters stacked along the cells."""

    idx: NDArray[np.intp]
    dist: Any
    args: tuple[NDArray[np.float64], ...]
    kwds: dict[str, NDArray[np.float64]]
    frozen: tuple[Any, ...]


_Group = _Table | _Points | _Scipy


def _is_scipy_law(pmf: Any) -> bool:
    return all(hasattr(pmf, a) for a in ("logpmf", "cdf", "rvs", "dist", "args", "kwds"))


def _check_cell(i: int, pmf: Any) -> Any:
    """Validate one user cell: a finite pmf array on {0, 1, ...} or a frozen scipy law."""
    if hasattr(pmf, "freeze") and hasattr(pmf, "pmf") and not _is_scipy_law(pmf):
        try:  # an unfrozen law without shape parameters, e.g. rv_discrete(values=...)
            pmf = pmf.freeze()
        except TypeError as exc:
            raise ValidationError(
                f"pmfs[{i}] is a scipy family that needs parameters; pass a frozen law such as "
                f"scipy.stats.poisson(4.0); got {pmf!r}"
            ) from exc
    if _is_scipy_law(pmf):
        if not hasattr(pmf.dist, "pmf"):
            raise ValidationError(f"pmfs[{i}] must be a discrete law (a pmf); got {pmf.dist.name}")
        lo = pmf.support()[0]
        if lo < 0:
            raise ValidationError(
                f"pmfs[{i}] must live on counts 0, 1, 2, ...; its support starts at {lo}"
            )
        return pmf
    try:
        arr = np.asarray(pmf, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"pmfs[{i}] must be a 1-d pmf array on 0, 1, 2, ... or a frozen scipy.stats discrete "
            f"law (e.g. scipy.stats.poisson(4.0)); got {pmf!r}"
        ) from exc
    return v.probabilities(f"pmfs[{i}]", v.array(f"pmfs[{i}]", arr, ndim=1))


def _group(cells: Sequence[Any]) -> tuple[_Group, ...]:
    """Sort validated cells into groups (a loop at construction only)."""
    tables = [i for i, c in enumerate(cells) if isinstance(c, np.ndarray)]
    groups: list[_Group] = []
    if tables:
        lengths = np.array([cells[i].size for i in tables], dtype=np.intp)
        pmf = np.zeros((len(tables), int(lengths.max())))
        for row, i in enumerate(tables):
            pmf[row, : cells[i].size] = cells[i]
        groups.append(_Table(np.array(tables, dtype=np.intp), pmf, lengths))
    families: dict[tuple[Any, ...], list[int]] = {}
    for i, c in enumerate(cells):
        if not isinstance(c, np.ndarray):
            # One family = one generator class (frozen laws each carry a copy of it); laws
            # defined by their own values (rv_discrete(values=...)) are kept apart.
            own = id(c.dist) if hasattr(c.dist, "xk") else None
            key = (type(c.dist), c.dist.name, own, len(c.args), tuple(sorted(c.kwds)))
            families.setdefault(key, []).append(i)
    for members in families.values():
        first = cells[members[0]]
        args = tuple(
            np.array([float(cells[i].args[a]) for i in members]) for a in range(len(first.args))
        )
        kwds = {k: np.array([float(cells[i].kwds[k]) for i in members]) for k in first.kwds}
        groups.append(
            _Scipy(
                np.array(members, dtype=np.intp),
                first.dist,
                args,
                kwds,
                tuple(cells[i] for i in members),
            )
        )
    return tuple(groups)


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

    n: int = field(repr=False)
    groups: tuple[_Group, ...] = field(repr=False)

    discrete = True

    def __init__(self, pmfs: Sequence[Any]) -> None:
        if isinstance(pmfs, (str, bytes)) or not hasattr(pmfs, "__len__") or len(pmfs) == 0:
            raise ValidationError(f"pmfs must be a non-empty sequence of cell pmfs; got {pmfs!r}")
        cells = [_check_cell(i, p) for i, p in enumerate(pmfs)]
        object.__setattr__(self, "n", len(cells))
        object.__setattr__(self, "groups", _group(cells))

    @classmethod
    def _from_groups(cls, n: int, groups: tuple[_Group, ...]) -> IndependentCellsPrior:
        """Internal constructor (trusted groups covering every cell exactly once)."""
        obj = cls.__new__(cls)
        object.__setattr__(obj, "n", n)
        object.__setattr__(obj, "groups", groups)
        return obj

    @classmethod
    def _from_parts(
        cls,
        n: int,
        table: tuple[NDArray[np.intp], NDArray[np.float64]] | None = None,
        points: tuple[NDArray[np.intp], NDArray[np.float64]] | None = None,
    ) -> IndependentCellsPrior:
        """Internal constructor from a pmf table (cell indices, rows) and point masses (cell
        indices, values), together covering each of the n cells once (trusted input)."""
        groups: list[_Group] = []
        if table is not None and table[0].size:
            idx, pmf = table
            groups.append(_Table(idx, pmf, np.full(idx.size, pmf.shape[1], dtype=np.intp)))
        if points is not None and points[0].size:
            groups.append(_Points(*points))
        return cls._from_groups(n, tuple(groups))

    @cached_property
    def cells(self) -> tuple[Any, ...]:
        """The cell marginals one by one: pmf arrays or frozen scipy laws (point masses as
        one-hot arrays). Materialised on first use; the computations never need it."""
        out: list[Any] = [None] * self.n
        for g in self.groups:
            if isinstance(g, _Table):
                for row, i in enumerate(g.idx):
                    out[i] = g.pmf[row, : g.length[row]]
            elif isinstance(g, _Points):
                for i, val in zip(g.idx, g.value, strict=True):
                    one = np.zeros(int(val) + 1)
                    one[-1] = 1.0
                    out[i] = one
            else:
                for i, frozen in zip(g.idx, g.frozen, strict=True):
                    out[i] = frozen
        return tuple(out)

    def __repr__(self) -> str:
        if self.n > 20:
            return f"IndependentCellsPrior(<{self.n} cells>)"
        parts = [p.tolist() if isinstance(p, np.ndarray) else p.dist.name for p in self.cells]
        return f"IndependentCellsPrior({parts})"

    @property
    def dim(self) -> int:
        return self.n

    # ---------------------------------------------------------------- vectorised core

    def logpmf_cells(self, values: ArrayLike) -> NDArray[np.float64]:
        """``log q_i(values[..., i])`` for every cell i at once; shape ``(..., n)``.

        -inf at non-integers, negative values and outside a cell's support.
        """
        vals = np.asarray(values, dtype=np.float64)
        if vals.shape[-1:] != (self.n,):
            raise ValidationError(f"values must have {self.n} cells; got shape {vals.shape}")
        out = np.full(vals.shape, -np.inf)
        is_int = (vals == np.round(vals)) & (vals >= 0)
        for g in self.groups:
            vg, ok = vals[..., g.idx], is_int[..., g.idx]
            if isinstance(g, _Table):
                width = g.pmf.shape[1]
                col = np.clip(np.where(ok, vg, 0), 0, width - 1).astype(np.intp)
                with np.errstate(divide="ignore"):
                    lp = np.log(g.pmf[np.arange(g.idx.size), col])
                lp = np.where(ok & (vg < width), lp, -np.inf)
            elif isinstance(g, _Points):
                lp = np.where(vg == g.value, 0.0, -np.inf)
            else:
                lp = np.where(ok, g.dist.logpmf(np.where(ok, vg, 0), *g.args, **g.kwds), -np.inf)
            out[..., g.idx] = lp
        return out

    def cdf_below(self, h: float) -> NDArray[np.float64]:
        """``Q(x_i < h)`` for every cell, shape ``(n,)``."""
        k = int(np.ceil(h)) - 1  # largest integer strictly below h
        out = np.zeros(self.n)
        if k < 0:
            return out
        for g in self.groups:
            if isinstance(g, _Table):
                out[g.idx] = g.pmf[:, : k + 1].sum(axis=1)
            elif isinstance(g, _Points):
                out[g.idx] = (g.value < h).astype(np.float64)
            else:
                out[g.idx] = g.dist.cdf(k, *g.args, **g.kwds)
        return out

    def _moments(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        mean, var = np.zeros(self.n), np.zeros(self.n)
        for g in self.groups:
            if isinstance(g, _Table):
                vals = np.arange(g.pmf.shape[1])
                m = g.pmf @ vals
                mean[g.idx], var[g.idx] = m, g.pmf @ vals**2 - m**2
            elif isinstance(g, _Points):
                mean[g.idx] = g.value
            else:
                mean[g.idx] = g.dist.mean(*g.args, **g.kwds)
                var[g.idx] = g.dist.var(*g.args, **g.kwds)
        return mean, np.maximum(var, 0.0)

    # ---------------------------------------------------------------- per-cell views

    def cell_logpmf(self, i: int, values: ArrayLike) -> NDArray[np.float64]:
        """Log pmf of cell i at the given values (-inf at non-integers and outside the support)."""
        vals = np.asarray(values, dtype=np.float64)
        grid = np.zeros((*vals.shape, self.n))
        grid[..., i] = vals
        return self.logpmf_cells(grid)[..., i]

    def cell_cdf_below(self, i: int, h: float) -> float:
        """``Q(x_i < h)`` for cell i."""
        return float(self.cdf_below(h)[i])

    def cell_moments(self, i: int) -> tuple[float, float]:
        mean, var = self._moments()
        return float(mean[i]), float(var[i])

    # ---------------------------------------------------------------- Prior interface

    def logpdf(self, x: ArrayLike) -> NDArray[np.float64] | float:
        xs = np.asarray(x, dtype=np.float64)
        if xs.shape[-1:] != (self.n,):
            raise ValidationError(f"x must have {self.n} cells; got shape {xs.shape}")
        out = self.logpmf_cells(xs).sum(axis=-1)
        return float(out) if np.ndim(out) == 0 else np.asarray(out)

    def mean(self) -> NDArray[np.float64]:
        return self._moments()[0]

    def cov(self) -> NDArray[np.float64]:
        return np.diag(self._moments()[1])

    def marginal_var(self) -> NDArray[np.float64]:
        return self._moments()[1]

    def sample(self, size: int, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
        rng = np.random.default_rng(rng)
        out = np.empty((size, self.n))
        for g in self.groups:
            if isinstance(g, _Table):
                cum = np.cumsum(g.pmf, axis=1)
                u = rng.random((size, g.idx.size, 1)) * cum[None, :, -1:]
                draws = (u >= cum[None, :, :]).sum(axis=-1)
                out[:, g.idx] = np.minimum(draws, g.length - 1)
            elif isinstance(g, _Points):
                out[:, g.idx] = g.value
            else:
                out[:, g.idx] = g.dist.rvs(
                    *g.args, **g.kwds, size=(size, g.idx.size), random_state=rng
                )
        return out
