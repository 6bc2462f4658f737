r"""Step 3 of the switching bound (``docs/margins_bounds.md``): the weight ratio of a move.

:class:`Ratios` holds the log ratios :math:`\log q_j(y \pm 1) - \log q_j(y)` and their minimum
over a range; :func:`best_ratios` the best proven :math:`\log c_t^\pm` of a (cell, value) pair,
from one move feasible on all of :math:`F_t` or a set of moves that covers it, the cover proven
by an integer program (:class:`Cover`, HiGHS). Split from :mod:`persuasive.margins.switching`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

__all__ = [
    "COVER_SIZES",
    "COVER_TIME",
    "MAX_COVER_CALLS",
    "SAFETY",
    "Cover",
    "Ratios",
    "best_ratios",
]

#: Each log weight ratio is lowered by this much (floating-point rounding of the log weights).
SAFETY: float = 1e-9
#: Sizes of the covering move sets tried (the best moves first).
COVER_SIZES: tuple[int, ...] = (2, 3, 4, 6, 8)
#: Integer programs per component, and the time limit of each (s).
MAX_COVER_CALLS: int = 400
COVER_TIME: float = 1.0


class Ratios:
    """``d[s][j, y - lo_j] = log q_j(y + s) - log q_j(y)`` for s = ±1, and the minimum over a
    range of y: at an end when the sequence is monotone on the support, else over the support
    (a zero-weight source, -inf - -inf, imposes nothing: +inf)."""

    def __init__(self, logw: NDArray[np.float64], width: NDArray[np.int64]) -> None:
        n, wd = logw.shape
        pad = np.full((n, 1), -np.inf)
        ext = np.concatenate([pad, logw, pad], axis=1)
        col = np.arange(wd)[None, :]
        inside = col < width[:, None]
        self.d: dict[int, NDArray[np.float64]] = {}
        self.mono: dict[int, NDArray[np.bool_]] = {}
        self.gmin: dict[int, NDArray[np.float64]] = {}
        for s in (1, -1):
            with np.errstate(invalid="ignore"):
                d = ext[:, 1 + s : 1 + s + wd] - logw
            d = np.where(np.isnan(d), np.inf, d)
            d = np.where(inside, d, np.inf)
            self.d[s] = d
            pair = inside[:, 1:]  # consecutive values both in the support
            up = np.all(~pair | (d[:, 1:] >= d[:, :-1]), axis=1)
            down = np.all(~pair | (d[:, 1:] <= d[:, :-1]), axis=1)
            self.mono[s] = up | down
            self.gmin[s] = d.min(axis=1)

    def min_over(
        self, s: int, j: NDArray[np.intp], a: NDArray[np.int64], z: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """``min_{a <= y-lo <= z} d[s][j, y-lo]`` (vectorised over j)."""
        d = self.d[s]
        ends = np.minimum(d[j, a], d[j, z])
        return np.where(self.mono[s][j], ends, np.minimum(ends, self.gmin[s][j]))


def best_ratios(
    cand: list[tuple[NDArray[np.intp], NDArray[np.int64]]],
    i: int,
    t: int,
    L: NDArray[np.int64],
    U: NDArray[np.int64],
    lo: NDArray[np.int64],
    hi: NDArray[np.int64],
    rat: Ratios,
    cover: Any = None,
) -> tuple[float, float]:
    """``(log c_t^+, log c_t^-)``: the best proven log switching ratio up / down from F_t.

    A move feasible on all of F_t (its ranges leave room) gives its ratio bound c. Otherwise a
    set S of moves that *covers* F_t (every table of F_t has a feasible move in S: proven by
    ``cover``, an integer program) gives the map "first feasible move of S", at most |S|-to-1,
    and the ratio ``min_S c / |S|``, each c over the values where its move is feasible.
    """
    out = []
    for dirn in (1, -1):
        nxt = t + dirn
        best = -math.inf
        d_i = rat.d[dirn][i, t - lo[i]]
        if nxt < lo[i] or nxt > hi[i] or not np.isfinite(d_i):
            out.append(best)
            continue
        scored: list[tuple[float, NDArray[np.intp], NDArray[np.int64]]] = []
        for cells, sg in cand:
            s = sg * dirn
            o = cells != i
            oc, os_ = cells[o], s[o]
            a_ = np.where(os_ < 0, np.maximum(L[oc], lo[oc] - os_), L[oc])
            z_ = np.where(os_ > 0, np.minimum(U[oc], hi[oc] - os_), U[oc])
            if np.any(a_ > z_):
                continue  # never feasible on F_t
            val = float(d_i)
            for sv in (1, -1):
                sel = os_ == sv
                if sel.any():
                    j = oc[sel]
                    val += float(rat.min_over(sv, j, a_[sel] - lo[j], z_[sel] - lo[j]).sum())
            val -= SAFETY * (1 + cells.size)
            if not math.isfinite(val):
                continue
            free = np.all((a_ == L[oc]) & (z_ == U[oc]))
            if free:
                best = max(best, val)
            else:
                scored.append((val, oc, os_))
        if cover is not None and scored:
            scored.sort(key=lambda z: -z[0])
            for k in COVER_SIZES:
                if k > len(scored):
                    break
                val = scored[k - 1][0] - math.log(k)
                if val <= best:
                    break
                if cover(i, t, L, U, [(c_, s_) for _, c_, s_ in scored[:k]]):
                    best = val
                    break
        out.append(best)
    return out[0], out[1]


class Cover:
    """Proves by an integer program (HiGHS, ``scipy.optimize.milp``) that every table of F_t
    has a feasible move in a set S: the program "y in a relaxation of F_t (the rows touching
    the moves' cells, ranges [L, U], y_i = t) with every move of S blocked (some cell of it at
    the end of its support it would leave)" has no solution."""

    def __init__(self, A: sparse.csr_array, b: NDArray[np.int64], lo: Any, hi: Any) -> None:
        self.A, self.Ac, self.b, self.lo, self.hi = A, sparse.csc_array(A), b, lo, hi
        self.calls = 0

    def __call__(
        self,
        i: int,
        t: int,
        L: NDArray[np.int64],
        U: NDArray[np.int64],
        moves: list[tuple[NDArray[np.intp], NDArray[np.int64]]],
    ) -> bool:
        from scipy.optimize import Bounds, LinearConstraint, milp

        if self.calls >= MAX_COVER_CALLS:
            return False
        self.calls += 1
        touched = np.unique(np.concatenate([c for c, _ in moves] + [np.array([i])]))
        rows = np.unique(self.Ac[:, touched].tocoo().row)
        sub = sparse.csr_array(self.A[rows])
        var = np.unique(sub.indices)
        pos = np.full(self.A.shape[1], -1, dtype=np.intp)
        pos[var] = np.arange(var.size)
        lits: list[tuple[int, int]] = []  # (variable, sign): blocked when at lo (-1) or hi (+1)
        lit_of: dict[tuple[int, int], int] = {}
        groups: list[list[int]] = []
        for cells, sg in moves:
            g = []
            for j, s in zip(cells.tolist(), sg.tolist(), strict=True):
                key = (j, s)
                if key not in lit_of:
                    lit_of[key] = len(lits)
                    lits.append(key)
                g.append(lit_of[key])
            groups.append(g)
        nv, nz = var.size, len(lits)
        lb = np.concatenate([L[var], np.zeros(nz)]).astype(np.float64)
        ub = np.concatenate([U[var], np.ones(nz)]).astype(np.float64)
        lb[pos[i]] = ub[pos[i]] = t
        Asub = sparse.csr_array(sub[:, var], dtype=np.float64)
        cons = [
            LinearConstraint(
                sparse.hstack([Asub, sparse.csr_array((rows.size, nz))]), self.b[rows], self.b[rows]
            )
        ]
        M = sparse.lil_array((len(groups) + nz, nv + nz))
        lo_b, hi_b = [], []
        for r, g in enumerate(groups):
            for z in g:
                M[r, nv + z] = 1
            lo_b.append(1.0)
            hi_b.append(np.inf)
        for z, (j, s) in enumerate(lits):
            r = len(groups) + z
            p = pos[j]
            if s < 0:  # z = 1 -> y_j <= lo_j:  y_j + (U_j - lo_j) z <= U_j
                M[r, p], M[r, nv + z] = 1, float(U[j] - self.lo[j])
                lo_b.append(-np.inf)
                hi_b.append(float(U[j]))
            else:  # z = 1 -> y_j >= hi_j:  y_j - (hi_j - L_j) z >= L_j
                M[r, p], M[r, nv + z] = 1, -float(self.hi[j] - L[j])
                lo_b.append(float(L[j]))
                hi_b.append(np.inf)
        cons.append(LinearConstraint(sparse.csr_array(M), lo_b, hi_b))
        res = milp(
            np.zeros(nv + nz),
            constraints=cons,
            integrality=np.ones(nv + nz),
            bounds=Bounds(lb, ub),
            options={"time_limit": COVER_TIME},
        )
        return bool(res.status == 2)  # infeasible: proven (a time-out proves nothing)
