r"""The cuts of the optimal-pattern program (:mod:`persuasive.margins.optimal`, issue 12).

Every cut below is **valid**: met by every secondary pattern the exact audit certifies at κ,
so adding it never removes a certified pattern (Bon et al. 2026, beyond Prop 8; the audit is
:func:`~persuasive.margins.planning.audit`).

**Propagation cuts.** Exposure is *hereditary*: a non-empty subset of the unknown cells of an
exposed entry leaves it exposed (one cell; every cell at its lower end; every primary at h - 1).
So if a needy cell :math:`i` is determined under :math:`S` (by
:func:`~persuasive.margins.planning.determined`'s propagation) through the entries :math:`E_i`
(the entry that determined it, and recursively those that determined the known cells it
subtracted), with cells :math:`W_i`, it is determined under every :math:`S'` with :math:`S' \cap
W_i \subseteq S \cap W_i`. Every certified pattern therefore meets
:math:`\sum_{j \in W_i \setminus S} z_j \ge 1`.

**LP cuts.** A needy cell the exact posterior pins but propagation does not (the supports
:math:`[0, h-1]` / :math:`[h, \infty)` interplay) is pinned by the LP attacker of its component:
weak duality with multipliers :math:`u` bounds :math:`\max y_i < x_i + 1` and
:math:`\min y_i > x_i - 1`, checked here, not taken from the solver. The same :math:`u` stays a
proof when secondaries are dropped (they become fixed at their counts) or cells are added
outside the entries with :math:`u_e \ne 0` (their reduced costs are 0 and :math:`u^\top b` does
not change), so with :math:`W_i` the cells of those entries every certified pattern meets
:math:`\sum_{j \in W_i \setminus S} z_j \ge 1`.

**Component cuts** (the rest). A suppressed cell's posterior, and whether the DP can compute it,
depend only on its component :math:`K` (its cells, their statuses, the residuals of the entries
touching it). If a cell of :math:`K` fails the audit (bound above κ; on a component too large
for the DP the proven bound is the disclosure loss, above κ at every needy cell), every pattern
in which :math:`K` is again a component fails too; with :math:`N(K)` the released cells of the
entries touching :math:`K`, every certified pattern meets
:math:`\sum_{j \in K \cap T} (1 - z_j) + \sum_{j \in N(K)} z_j \ge 1`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import LinearConstraint, linprog
from scipy.sparse import csgraph

from persuasive.margins.planning import exposed

__all__ = ["Cuts", "around", "components", "cut", "derivation", "lp_support", "propagate"]


def propagate(
    A: sparse.csr_array,
    x: NDArray[np.int64],
    sup: NDArray[np.bool_],
    sec: NDArray[np.bool_],
    h: int,
) -> tuple[NDArray[np.bool_], NDArray[np.intp], NDArray[np.intp], dict[int, int]]:
    """:func:`~persuasive.margins.planning.determined` with a record: per determined cell, the
    entry that determined it and the round; per such entry, its round."""
    n = x.size
    det = np.zeros(n, dtype=bool)
    parent = np.full(n, -1, dtype=np.intp)
    when = np.full(n, -1, dtype=np.intp)
    entry_round: dict[int, int] = {}
    t = 0
    while True:
        rows = np.flatnonzero(exposed(A, x, sup & ~det, sec & ~det, h))
        coo = A[rows].tocoo()
        keep = sup[coo.col] & ~det[coo.col]
        cells, first = np.unique(coo.col[keep], return_index=True)
        if cells.size == 0:
            return det, parent, when, entry_round
        ents = rows[coo.row[keep][first]]
        parent[cells], when[cells], det[cells] = ents, t, True
        for e in np.unique(ents):
            entry_round.setdefault(int(e), t)
        t += 1


def derivation(
    A: sparse.csr_array,
    parent: NDArray[np.intp],
    when: NDArray[np.intp],
    entry_round: dict[int, int],
    i: int,
) -> NDArray[np.intp]:
    """The cells of the entries through which cell ``i`` was determined."""
    todo, seen = [int(parent[i])], set()
    while todo:
        e = todo.pop()
        if e in seen:
            continue
        seen.add(e)
        cells = A.indices[A.indptr[e] : A.indptr[e + 1]]
        known = cells[(when[cells] >= 0) & (when[cells] < entry_round[e])]
        todo.extend(int(parent[k]) for k in known)
    return np.unique(np.concatenate([A.indices[A.indptr[e] : A.indptr[e + 1]] for e in seen]))


def lp_support(
    A: sparse.csr_array,
    AT: sparse.csr_array,
    x: NDArray[np.int64],
    sec: NDArray[np.bool_],
    h: int,
    K: NDArray[np.intp],
    i: int,
) -> NDArray[np.intp] | None:
    """Cells of the entries carrying an LP proof that cell ``i`` of component ``K`` is
    determined (module docstring, LP cuts), or None when the LP proves nothing.

    Both ends are checked by weak duality with the solver's multipliers ``u``: for every ``u``,
    :math:`\\max y_i \\le u^\top b + \\sum_j \\max_{y_j \\in [\\ell_j, u_j]} (e_i - A_j^\top u)_j
    y_j`, computed here, so the proof does not rest on the solver's tolerance; an integer
    :math:`y_i` is pinned when the two ends are less than 1 from :math:`x_i`."""
    ents = np.unique(AT[K].indices)
    M = sparse.csr_array(A[ents][:, K])
    b = (M @ x[K]).astype(np.float64)
    lo = np.where(sec[K], float(h), 0.0)
    hi = np.where(sec[K], np.inf, float(h - 1))
    k = int(np.searchsorted(K, i))
    used = np.zeros(ents.size, dtype=bool)
    for sign in (1.0, -1.0):  # max y_i, then max -y_i
        c = np.zeros(K.size)
        c[k] = sign
        res = linprog(-c, A_eq=M, b_eq=b, bounds=np.c_[lo, hi], method="highs")
        if res.status != 0:
            return None
        best = math.inf
        for u in (np.asarray(res.eqlin.marginals), -np.asarray(res.eqlin.marginals)):
            red = c - M.T @ u
            with np.errstate(invalid="ignore"):
                terms = np.where(red > 0, red * hi, red * lo)
            terms = np.where(red == 0, 0.0, terms)
            val = float(u @ b + terms.sum())
            if val < best:
                best, supp = val, np.abs(u) > 0
        if not best < sign * x[i] + 1.0:
            return None
        used |= supp
    return np.unique(A[ents[used]].indices)


def components(AT: sparse.csr_array, sup: NDArray[np.bool_]) -> list[NDArray[np.intp]]:
    cells = np.flatnonzero(sup)
    if cells.size == 0:
        return []
    M = AT[cells]
    _, lab = csgraph.connected_components(M @ M.T, directed=False)
    order = np.argsort(lab, kind="stable")
    return list(np.split(cells[order], np.flatnonzero(np.diff(lab[order])) + 1))


class Cuts:
    """The rows of the program, ``lo <= M z`` (deduplicated)."""

    def __init__(self, n_var: int, var_of: NDArray[np.intp]) -> None:
        self.n, self.var_of = n_var, var_of
        self.rows: list[tuple[NDArray[np.intp], NDArray[np.float64], float]] = []
        self.keys: set[bytes] = set()

    def cover(self, cells: NDArray[np.intp]) -> bool:
        """``sum z over cells >= 1`` (flat cells; non-candidates dropped). False if empty."""
        var = np.unique(self.var_of[cells])
        var = var[var >= 0]
        if var.size == 0:
            return False
        self._add(var, np.ones(var.size), 1.0)
        return True

    def component(self, inside: NDArray[np.intp], around: NDArray[np.intp]) -> bool:
        """``sum (1 - z) over inside + sum z over around >= 1``. False if no variable."""
        vin, vout = self.var_of[inside], self.var_of[around]
        vin, vout = vin[vin >= 0], vout[vout >= 0]
        if vin.size + vout.size == 0:
            return False
        var = np.concatenate([vin, vout])
        coef = np.concatenate([-np.ones(vin.size), np.ones(vout.size)])
        self._add(var, coef, 1.0 - vin.size)
        return True

    def _add(self, var: NDArray[np.intp], coef: NDArray[np.float64], lo: float) -> None:
        order = np.argsort(var)
        var, coef = var[order], coef[order]
        key = var.tobytes() + coef.tobytes()
        if key not in self.keys:
            self.keys.add(key)
            self.rows.append((var, coef, lo))

    def constraint(self) -> LinearConstraint:
        var = np.concatenate([r[0] for r in self.rows])
        coef = np.concatenate([r[1] for r in self.rows])
        row = np.repeat(np.arange(len(self.rows)), [r[0].size for r in self.rows])
        M = sparse.csr_array((coef, (row, var)), shape=(len(self.rows), self.n))
        return LinearConstraint(M, np.array([r[2] for r in self.rows]), np.inf)


def cut(
    cuts: Cuts,
    A: sparse.csr_array,
    AT: sparse.csr_array,
    x: NDArray[np.int64],
    sup: NDArray[np.bool_],
    sec: NDArray[np.bool_],
    h: int,
    K: NDArray[np.intp],
    bad: NDArray[np.bool_],
) -> bool:
    """LP cuts for the failing cells of ``K`` the LP pins down, else one component cut."""
    added = False
    for i in K[bad]:
        w = lp_support(A, AT, x, sec, h, K, int(i))
        if w is not None:
            added |= cuts.cover(w[~sup[w]])
    return added or cuts.component(K, around(A, AT, K))


def around(A: sparse.csr_array, AT: sparse.csr_array, K: NDArray[np.intp]) -> NDArray[np.intp]:
    """Cells of the entries touching ``K``, outside ``K``."""
    near = np.unique(A[np.unique(AT[K].indices)].indices)
    return np.setdiff1d(near, K)
