r"""Proven upper bounds on the posterior of a suppressed cell, for any component size (issue 12).

The exact DP (:mod:`persuasive.margins.dp`) is limited by its frontier; the Markov chain gives an
estimate only. This module bounds :math:`\Pi_i(v)` from above for **every** prior of the class
(one posterior, by sufficiency: :mod:`persuasive.margins.worst`), with no sampling, by a
*switching argument*. The statement and its proof are in ``docs/margins_bounds.md``; in short:

Write :math:`F_t = \{y \in F : y_i = t\}` for the tables of the fibre :math:`F` with cell i at
t and :math:`W(S) = \sum_{y\in S} w(y)`, :math:`w(y) = \prod_j q_j(y_j)`.

1. **Ranges.** Interval propagation of the equations :math:`A y = b` (each row bounds each of its
   cells by the residual minus the other cells' ranges), integer arithmetic, to a fixed point
   for :math:`F`, then a few rounds with :math:`y_i = t` fixed: every :math:`y \in F_t` has
   :math:`y_j \in [L^t_j, U^t_j]`. An empty range proves :math:`F_t = \varnothing`.
2. **Moves.** An integer :math:`m` with :math:`Am = 0`, :math:`m_i = +1` (alternating 4-cycles
   through i, and the Markov moves of :mod:`persuasive.margins.moves`) is *feasible on*
   :math:`F_t` when :math:`L^t_j + m_j \ge \ell_j` and :math:`U^t_j + m_j \le u_j` for every
   :math:`j \ne i` with :math:`m_j \ne 0`, and :math:`t + 1 \le u_i`: then
   :math:`y \mapsto y + m` maps :math:`F_t` into :math:`F_{t+1}`, one-to-one.
3. **Weight ratio.** :math:`w(y+m)/w(y) = \prod_j q_j(y_j+m_j)/q_j(y_j) \ge c :=
   \prod_j \min_{y_j\in[L^t_j,U^t_j]} q_j(y_j+m_j)/q_j(y_j)` (the minimum at an end of the range
   when the ratio is monotone in :math:`y_j`, as for Poisson and negative binomial laws; over the
   whole support otherwise), so :math:`W(F_{t+1}) \ge c_t^+ W(F_t)`, with :math:`c_t^+` the best
   feasible move; :math:`-m` gives :math:`W(F_{t-1}) \ge c_t^- W(F_t)`.
4. **Chain.** :math:`\Pi_i(v) = W(F_v)/\sum_s W(F_s) \le 1 / \big(1 + \sum_{s>v}\prod_{t=v}^{s-1}
   c_t^+ + \sum_{s<v}\prod_{t=s+1}^{v} c_t^-\big)`.

Every step is an inequality in the safe direction; logarithms of the ratios are lowered by
``SAFETY`` to absorb floating-point rounding. The result is an upper bound, never an estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from persuasive.margins.constraints import UNBOUNDED, ConstraintSystem, constraint_system
from persuasive.margins.moves import markov_moves
from persuasive.margins.table import MarginTable
from persuasive.priors.cells import IndependentCellsPrior

__all__ = ["SwitchingBound", "component_upper", "posterior_upper", "propagate"]

#: Rounds of interval propagation with the cell fixed (after the fibre-wide fixed point).
LOCAL_ROUNDS: int = 6
#: Cap on fibre-wide propagation rounds (any number of rounds is sound).
MAX_ROUNDS: int = 200
#: Each log weight ratio is lowered by this much (floating-point rounding of the log weights).
SAFETY: float = 1e-9
#: (cell, value) pairs propagated together.
BATCH: int = 256
#: Sizes of the covering move sets tried (the best moves first).
COVER_SIZES: tuple[int, ...] = (2, 3, 4, 6, 8)
#: Integer programs per component, and the time limit of each (s).
MAX_COVER_CALLS: int = 400
COVER_TIME: float = 1.0


@dataclass(frozen=True, eq=False)
class SwitchingBound:
    """Upper bounds ``log_upper[k, j] >= log Π(y_{cells[k]} = lo[k] + j)`` for every prior of
    the class (nan where not computed: cells in components left out, values not bounded)."""

    cells: NDArray[np.intp]
    lo: NDArray[np.int64]
    log_upper: NDArray[np.float64]
    component: NDArray[np.intp]


# ----------------------------------------------------------------------------- propagation


def propagate(
    A: sparse.csr_array,
    b: NDArray[np.int64],
    L: NDArray[np.int64],
    U: NDArray[np.int64],
    rounds: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Interval propagation of ``A y = b`` (0/1 ``A``), batched over the rows of ``L``, ``U``.

    For every row e and cell j of it, ``y_j = b_e - sum_{k != j} y_k`` lies in
    ``[b_e - sum U_k, b_e - sum L_k]``; the ranges are intersected, ``rounds`` times (or until
    nothing changes). Integer arithmetic: exact. Returns the new ``(L, U)`` (an empty range,
    ``L > U``, proves that no integer point of the box meets the equations).
    """
    L, U = np.atleast_2d(L).astype(np.int64), np.atleast_2d(U).astype(np.int64)
    coo = sparse.coo_array(A)
    order = np.argsort(coo.col, kind="stable")
    row, col = coo.row[order], coo.col[order]
    starts = np.flatnonzero(np.r_[True, np.diff(col) > 0])
    cells = col[starts]
    At = sparse.csr_array(A)
    for _ in range(rounds):
        SL = (At @ L.T).T  # batch x rows
        SU = (At @ U.T).T
        lo_c = b[row][None, :] - (SU[:, row] - U[:, col])
        hi_c = b[row][None, :] - (SL[:, row] - L[:, col])
        newL, newU = L.copy(), U.copy()
        newL[:, cells] = np.maximum(L[:, cells], np.maximum.reduceat(lo_c, starts, axis=1))
        newU[:, cells] = np.minimum(U[:, cells], np.minimum.reduceat(hi_c, starts, axis=1))
        done = np.array_equal(newL, L) and np.array_equal(newU, U)
        L, U = newL, newU
        if done or np.any(L > U):
            break
    return L, U


# ----------------------------------------------------------------------------- moves


def _four_cycles(A: sparse.csr_array) -> list[tuple[int, int, int, int]]:
    """Alternating 4-cycles (i, j, k, l): +i -j +k -l, i and j share a row, j and k, k and l,
    l and i, each of the four cells in exactly the two rows it shares along the cycle (so the
    cycle is a move of those rows; the caller checks it against every row)."""
    Ac = sparse.csc_array(A)
    deg = np.diff(Ac.indptr)
    rows_of = [Ac.indices[Ac.indptr[j] : Ac.indptr[j + 1]] for j in range(A.shape[1])]
    Ar = sparse.csr_array(A)
    cells_of = [Ar.indices[Ar.indptr[e] : Ar.indptr[e + 1]] for e in range(A.shape[0])]
    out: list[tuple[int, int, int, int]] = []
    for i in range(A.shape[1]):
        if deg[i] < 2:
            continue
        for a_ in range(len(rows_of[i])):
            for b_ in range(len(rows_of[i])):
                if a_ == b_:
                    continue
                e1, e2 = int(rows_of[i][a_]), int(rows_of[i][b_])
                for j in cells_of[e1]:
                    if j == i:
                        continue
                    for f in rows_of[j]:
                        if f == e1:
                            continue
                        fc = set(cells_of[int(f)].tolist())
                        for ll in cells_of[e2]:
                            if ll == i or ll == j:
                                continue
                            for g in rows_of[ll]:
                                if g == e2 or g == f:
                                    continue
                                for k in cells_of[int(g)]:
                                    if int(k) in fc and k not in (i, j, ll):
                                        out.append((i, int(j), int(k), int(ll)))
    return out


def _moves_through(A: sparse.csr_array) -> list[list[tuple[NDArray[np.intp], NDArray[np.int64]]]]:
    """Per cell i: candidate moves (cells, signs) with ``A m = 0`` and ``m_i = +1``."""
    n = A.shape[1]
    rows: list[NDArray[np.intp]] = []
    vals: list[NDArray[np.int64]] = []
    if n <= 20000:
        for i, j, k, ll in _four_cycles(A):
            rows.append(np.array([i, j, k, ll], dtype=np.intp))
            vals.append(np.array([1, -1, 1, -1], dtype=np.int64))
    M = markov_moves(A).moves
    for r in range(M.shape[0]):
        rows.append(M.indices[M.indptr[r] : M.indptr[r + 1]].astype(np.intp))
        vals.append(M.data[M.indptr[r] : M.indptr[r + 1]].astype(np.int64))
    per: list[list[tuple[NDArray[np.intp], NDArray[np.int64]]]] = [[] for _ in range(n)]
    seen: list[set[bytes]] = [set() for _ in range(n)]
    if not rows:
        return per
    Ac = sparse.csr_array(A)
    for c, s in zip(rows, vals, strict=True):
        m = np.zeros(n, dtype=np.int64)
        np.add.at(m, c, s)
        if np.any(Ac @ m != 0):  # not a move of every row (e.g. a row outside the graph)
            continue
        nz = np.flatnonzero(m)
        for i in nz[np.abs(m[nz]) == 1]:
            sg = m[nz] * m[i]  # normalised: +1 at i
            key = nz.tobytes() + sg.tobytes()
            if key not in seen[i]:
                seen[i].add(key)
                per[i].append((nz.astype(np.intp), sg))
    return per


# ----------------------------------------------------------------------------- ratios


class _Ratios:
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


# ----------------------------------------------------------------------------- one component


def component_upper(
    A: sparse.csr_array,
    b: NDArray[np.int64],
    lo: NDArray[np.int64],
    hi: NDArray[np.int64],
    logw: NDArray[np.float64],
    want: NDArray[np.intp] | None = None,
    top: int | None = None,
    use_ip: bool = True,
) -> NDArray[np.float64]:
    r"""``out[k, j] >= log Π(y_k = lo_k + j)`` for the cells ``want`` of one component (others
    nan), values ``lo_k + j <= top`` (default all). ``logw[k, j] = log q_k(lo_k + j)``, -inf
    beyond the support; ``A`` 0/1 with every row touching a cell, ``b`` integer."""
    A = sparse.csr_array(A, dtype=np.int64)
    n, wd = logw.shape
    hi = np.minimum(hi, lo + wd - 1).astype(np.int64)
    width = (hi - lo + 1).astype(np.int64)
    out = np.full((n, wd), np.nan)
    want = np.arange(n, dtype=np.intp) if want is None else np.asarray(want, dtype=np.intp)
    if want.size == 0:
        return out
    L0, U0 = propagate(A, b, lo[None, :], hi[None, :], MAX_ROUNDS)
    L0, U0 = L0[0], U0[0]
    if np.any(L0 > U0):  # no table: nothing is possible (the caller checked consistency)
        out[want] = -np.inf
        return out
    moves = _moves_through(A)
    rat = _Ratios(logw, width)
    cover = _Cover(A, b, lo, hi) if use_ip else None
    # (cell, value) pairs: every value of each wanted cell's support, up to ``top``
    pair_i: list[int] = []
    pair_t: list[int] = []
    first: dict[int, tuple[int, int]] = {}
    for i in want:
        first[int(i)] = (len(pair_i), int(U0[i] - L0[i] + 1))
        for t in range(int(L0[i]), int(U0[i]) + 1):
            pair_i.append(int(i))
            pair_t.append(t)
    pi, pt = np.asarray(pair_i, dtype=np.intp), np.asarray(pair_t, dtype=np.int64)
    c_up = np.full(pi.size, -np.inf)  # log c_t^+ of each pair (-inf: no move proven)
    c_dn = np.full(pi.size, -np.inf)
    empty = np.zeros(pi.size, dtype=bool)
    for s0 in range(0, pi.size, BATCH):
        sl = slice(s0, min(s0 + BATCH, pi.size))
        ii, tt = pi[sl], pt[sl]
        L = np.repeat(L0[None, :], ii.size, axis=0)
        U = np.repeat(U0[None, :], ii.size, axis=0)
        L[np.arange(ii.size), ii] = tt
        U[np.arange(ii.size), ii] = tt
        L, U = propagate(A, b, L, U, LOCAL_ROUNDS)
        empty[sl] = np.any(L > U, axis=1)
        for r in range(ii.size):
            if empty[s0 + r]:
                continue
            i, t = int(ii[r]), int(tt[r])
            c_up[s0 + r], c_dn[s0 + r] = _best(moves[i], i, t, L[r], U[r], lo, hi, rat, cover)
    # chain: per cell, its pairs are consecutive values from L0[i]
    for i in want:
        start, cnt = first[int(i)]
        sl = slice(start, start + cnt)
        ts, up, dn, emp = pt[sl], c_up[sl], c_dn[sl], empty[sl]
        for a in range(cnt):
            v = int(ts[a])
            if emp[a]:
                val = -math.inf
            else:
                terms = [0.0]
                acc = 0.0
                for s in range(a, cnt - 1):  # F_v -> F_{v+1} -> ...
                    if emp[s]:
                        break
                    acc += up[s]
                    if not math.isfinite(acc):
                        break
                    terms.append(acc)
                acc = 0.0
                for s in range(a, 0, -1):  # F_v -> F_{v-1} -> ...
                    if emp[s]:
                        break
                    acc += dn[s]
                    if not math.isfinite(acc):
                        break
                    terms.append(acc)
                tm = np.asarray(terms)
                mx = float(tm.max())
                val = -(mx + math.log(float(np.exp(tm - mx).sum())))
                val = min(0.0, val + SAFETY)
            if v - int(lo[i]) < wd:
                out[i, v - int(lo[i])] = val
        # values outside [L0, U0] are impossible
        for j in range(wd):
            if lo[i] + j < L0[i] or lo[i] + j > U0[i]:
                out[i, j] = -np.inf
    return out


def _best(
    cand: list[tuple[NDArray[np.intp], NDArray[np.int64]]],
    i: int,
    t: int,
    L: NDArray[np.int64],
    U: NDArray[np.int64],
    lo: NDArray[np.int64],
    hi: NDArray[np.int64],
    rat: _Ratios,
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


class _Cover:
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


# ----------------------------------------------------------------------------- a whole table


def posterior_upper(
    table: MarginTable,
    logw_of: Any,
    *,
    components: Any = None,
    top: int | None = None,
    cs: ConstraintSystem | None = None,
    width: int | None = None,
) -> SwitchingBound:
    r"""Switching bounds for the suppressed cells of ``table`` (the components ``components``,
    default all), values up to ``top``.

    ``logw_of`` is an :class:`~persuasive.priors.cells.IndependentCellsPrior` over all cells
    (the class's common member, as the DP uses) or a callable ``(cells, lo, width) -> logw``.
    """
    from persuasive.margins.posterior import cell_log_grid

    cs = constraint_system(table) if cs is None else cs
    n = cs.cells.size
    hi = cs.hi.copy()
    if width is None:
        finite = hi != UNBOUNDED
        width = int((np.where(finite, hi, cs.lo) - cs.lo).max(initial=0) + 1)
    if isinstance(logw_of, IndependentCellsPrior):
        logw = cell_log_grid(logw_of, cs.cells, cs.lo, width)
    else:
        logw = np.asarray(logw_of(cs.cells, cs.lo, width), dtype=np.float64)
    hi = np.where(hi == UNBOUNDED, cs.lo + width - 1, hi)
    logw[np.arange(width)[None, :] > (hi - cs.lo)[:, None]] = -np.inf
    out = np.full((n, width), np.nan)
    want = set(range(cs.n_components)) if components is None else {int(c) for c in components}
    for c, cols in enumerate(cs.components()):
        if c not in want:
            continue
        rows = cs.rows_of(cols)
        A = sparse.csr_array(cs.A[rows][:, cols])
        sel = cols if top is None else cols[cs.lo[cols] <= top]
        if sel.size == 0:
            continue
        where = np.searchsorted(cols, sel) if np.all(np.diff(cols) > 0) else None
        if where is None:
            pos = {int(v_): k for k, v_ in enumerate(cols)}
            where = np.array([pos[int(s_)] for s_ in sel], dtype=np.intp)
        sub = component_upper(A, cs.b[rows], cs.lo[cols], hi[cols], logw[cols], want=where, top=top)
        out[cols] = np.where(np.isnan(out[cols]), sub, out[cols])
    return SwitchingBound(cs.cells, cs.lo, out, cs.labels)
