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

Steps 1 and 2 are in :mod:`persuasive.margins.switching_moves`, step 3 in
:mod:`persuasive.margins.switching_ratio`; this module chains them (step 4) over a component
(:func:`component_upper`) and a table (:func:`posterior_upper`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from persuasive.margins.constraints import UNBOUNDED, ConstraintSystem, constraint_system
from persuasive.margins.switching_moves import moves_through, propagate  # propagate: re-exported
from persuasive.margins.switching_ratio import SAFETY, Cover, Ratios, best_ratios
from persuasive.margins.table import MarginTable
from persuasive.priors.cells import IndependentCellsPrior

__all__ = ["SwitchingBound", "component_upper", "posterior_upper", "propagate"]

#: Rounds of interval propagation with the cell fixed (after the fibre-wide fixed point).
LOCAL_ROUNDS: int = 6
#: Cap on fibre-wide propagation rounds (any number of rounds is sound).
MAX_ROUNDS: int = 200
#: (cell, value) pairs propagated together.
BATCH: int = 256


@dataclass(frozen=True, eq=False)
class SwitchingBound:
    """Upper bounds ``log_upper[k, j] >= log Π(y_{cells[k]} = lo[k] + j)`` for every prior of
    the class (nan where not computed: cells in components left out, values not bounded)."""

    cells: NDArray[np.intp]
    lo: NDArray[np.int64]
    log_upper: NDArray[np.float64]
    component: NDArray[np.intp]


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
    moves = moves_through(A)
    rat = Ratios(logw, width)
    cover = Cover(A, b, lo, hi) if use_ip else None
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
            c_up[s0 + r], c_dn[s0 + r] = best_ratios(moves[i], i, t, L[r], U[r], lo, hi, rat, cover)
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
