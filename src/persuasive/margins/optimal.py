r"""Optimal secondary patterns: a mixed-integer program with audit cuts (issue 12).

The planner's objective over the secondary cells :math:`T` (released, not known, cells hidden
beside the given pattern :math:`S_0`) is :math:`\min \sum_{j \in T} c_j`, :math:`c_j = 1`
(``"count"``) or :math:`x_j` (``"total"``), subject to every suppressed cell's bound
(``kappa_upper`` or ``kappa_published``) being at most κ. That condition is not linear. The
program below holds only **valid** linear constraints, each one met by *every* pattern the exact
audit certifies, and asks the audit about its optimum:

**Variables.** :math:`z_j \in \{0, 1\}` per candidate cell (released and not known).

**Covering rows** (the start). For every entry :math:`e` exposed under :math:`S_0` that holds a
cell needing protection (:math:`x_i < r`, :math:`D_i > \kappa`): :math:`\sum_{j \in R_e} z_j \ge
1`, :math:`R_e` its candidate cells. These are the rows of the covering LP of
:func:`~persuasive.margins.planning.lower_bound`, so the program's optimum is at least that LP's
value, hence at least the planner's proven lower bound, **by construction**.

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

**Loop.** Solve (HiGHS through :func:`scipy.optimize.milp`, within what is left of
``time_limit``); propagate and add propagation cuts; else audit each component by the planner's
exact DP (cached) and add LP or component cuts; else run the full exact audit
(:func:`~persuasive.margins.planning.audit`) of the whole table, adding component cuts for any
cell it fails. Stop when the full audit certifies the optimum, at the time limit or after
``max_rounds`` solves. The first pattern whose only failures are components too large for the
exact DP is kept: if nothing is certified by the end, the outcome is ``"uncertified"`` with it
(it meets every necessary condition; the audit cannot certify it).

**What "optimal" means.** ``status == "optimal"`` when the last program was solved to proven
optimality (HiGHS' dual bound within less than one cost unit, costs being integers) and the
full exact audit certified its solution. Every constraint and cut is met by every certified
pattern, so the pattern is then optimal **among all secondary patterns the exact audit certifies
at κ** (same ``bound``, ``r`` and ``max_states``), not merely among those meeting the necessary
conditions. The proof rests on HiGHS' optimality certificate (floating point, its default
tolerances); the planner's ``lower_bound`` does not, and stays the covering bound.
``"certified"``: certified, optimality not proven (a time-out with an incumbent).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import csgraph

from persuasive import _validation as v
from persuasive._progress import task
from persuasive.errors import ValidationError
from persuasive.margins.constraints import full_incidence
from persuasive.margins.planner import SuppressionPlan
from persuasive.margins.planning import (
    Model,
    audit,
    bound_of,
    check_arguments,
    costs,
    cover_rows,
    disclosure_loss,
    exposed,
)
from persuasive.margins.posterior import MAX_DP_STATES
from persuasive.margins.search import STRATEGIES, _State
from persuasive.margins.table import MarginTable
from persuasive.margins.worst import WorstCaseLosses

__all__ = [
    "AUTO_MAX_CELLS",
    "TIME_LIMIT",
    "MipOutcome",
    "after_greedy",
    "optimal_pattern",
    "try_mip",
]

#: ``method="auto"`` tries the program first on tables with at most this many cells.
AUTO_MAX_CELLS: int = 2500
#: Default time limit of the whole loop (seconds): every solve gets what is left of it.
TIME_LIMIT: float = 20.0
#: Default cap on the number of solves.
MAX_ROUNDS: int = 200

STATUSES = ("optimal", "certified", "uncertified", "time_limit", "iteration_limit", "infeasible")


@dataclass(frozen=True, eq=False)
class MipOutcome:
    """What the program and its audit loop reached (:func:`optimal_pattern`).

    Attributes
    ----------
    status : str
        ``"optimal"`` (certified, optimality proven: module docstring), ``"certified"``
        (certified, not proven optimal), ``"uncertified"`` (meets every necessary condition,
        but a component is too large for the exact DP), ``"time_limit"``,
        ``"iteration_limit"`` (no pattern certified), ``"infeasible"`` (the program with its
        valid cuts has no solution: no certified pattern exists, by HiGHS' proof).
    table : MarginTable or None
        The table with the pattern (``optimal``, ``certified``, ``uncertified``).
    worst : WorstCaseLosses or None
        The full exact audit of that pattern (``optimal`` and ``certified``).
    objective_value : float
        Cost of the secondary cells (given ones included; nan without a pattern).
    mip_bound : float
        HiGHS' dual bound of the last solve, plus the given secondaries' cost: a lower bound on
        every certified pattern's cost, by the solver's tolerances (-inf when unknown).
    rounds, cuts : int
        Solves, and cuts added (propagation and component cuts).
    seconds : float
        Wall clock of the whole loop.
    message : str
        Why it stopped, in words.
    """

    status: str
    table: MarginTable | None = field(repr=False)
    worst: WorstCaseLosses | None = field(repr=False)
    objective_value: float
    mip_bound: float
    rounds: int
    cuts: int
    seconds: float
    message: str

    @property
    def certified(self) -> bool:
        return self.status in ("optimal", "certified")

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"


def _propagate(
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


def _derivation(
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


def _lp_support(
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


def _components(AT: sparse.csr_array, sup: NDArray[np.bool_]) -> list[NDArray[np.intp]]:
    cells = np.flatnonzero(sup)
    if cells.size == 0:
        return []
    M = AT[cells]
    _, lab = csgraph.connected_components(M @ M.T, directed=False)
    order = np.argsort(lab, kind="stable")
    return list(np.split(cells[order], np.flatnonzero(np.diff(lab[order])) + 1))


class _Cuts:
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


def optimal_pattern(
    table: MarginTable,
    receiver: Model,
    kappa: float,
    *,
    r: int | None = None,
    objective: str = "count",
    bound: str = "table",
    time_limit: float = TIME_LIMIT,
    max_rounds: int = MAX_ROUNDS,
    max_states: int = MAX_DP_STATES,
    rng: Any = 0,
) -> MipOutcome:
    r"""The cheapest secondary pattern the exact audit certifies, by a MIP with audit cuts.

    The formulation, the loop and what ``status == "optimal"`` proves are in the module
    docstring. Arguments as for :func:`~persuasive.margins.planner.plan_suppression`;
    ``time_limit`` (seconds, > 0) bounds the whole loop (each HiGHS solve gets what is left),
    ``max_rounds`` (>= 1) the number of solves.

    Examples
    --------
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> t = MarginTable([[0, 9, 8], [7, 6, 9], [8, 9, 7]], h=3, margins="rows,cols")
    >>> out = optimal_pattern(t, PoissonReceiver(1, 10), kappa=7.0)
    >>> out.status, out.objective_value
    ('optimal', 3.0)
    """
    start = time.perf_counter()
    kap, obj, bnd, model, r_ = check_arguments(table, receiver, kappa, objective, bound, r)
    limit = v.real("time_limit", time_limit, low=0.0)
    if limit <= 0:
        raise ValidationError(f"time_limit must be > 0 seconds; got {time_limit!r}")
    rounds_cap = v.integer("max_rounds", max_rounds, low=1)
    max_states = v.integer("max_states", max_states, low=1)
    deadline = start + limit
    x = table.counts.ravel()
    cost = costs(table, obj)
    sup0, sec0 = table.suppressed.ravel(), table.secondary.ravel()
    fixed = float(cost[sec0].sum())
    hideable = getattr(table, "hideable", None)  # released and not known to the Receiver
    cand = np.flatnonzero(~sup0 if hideable is None else np.asarray(hideable).ravel())
    var_of = np.full(x.size, -1, dtype=np.intp)
    var_of[cand] = np.arange(cand.size)
    A = full_incidence(table)[0].tocsr()
    AT = sparse.csr_array(A.T)
    needy = (x < r_) & (disclosure_loss(model, x) > kap)
    cuts = _Cuts(cand.size, var_of)
    _, rows = cover_rows(table, needy)

    def done(status: str, msg: str, **kw: Any) -> MipOutcome:
        out: dict[str, Any] = {
            "table": None,
            "worst": None,
            "objective_value": math.nan,
            "mip_bound": math.inf if status == "infeasible" else best_bound,
        }
        if status in ("time_limit", "iteration_limit") and structural is not None:
            status, msg = "uncertified", f"{msg}; {structural[2]}"
            out.update(table=structural[0], objective_value=structural[1])
        out.update(kw)
        return MipOutcome(
            status,
            rounds=n_round,
            cuts=len(cuts.rows),
            seconds=time.perf_counter() - start,
            message=msg,
            **out,
        )

    n_round, best_bound = 0, -math.inf
    #: the first pattern whose only failure is a large component: (table, cost, why)
    structural: tuple[MarginTable, float, str] | None = None
    for e in rows:
        if not cuts.cover(A.indices[A.indptr[e] : A.indptr[e + 1]]):
            return done("infeasible", "an exposed entry holding a needy cell has no cell to hide")
    st = _State(table, model, (r_, kap, bnd, cost, STRATEGIES[0], {}))
    c = cost[cand]
    with task("planner: MIP rounds", total=rounds_cap) as advance:
        while True:
            left = deadline - time.perf_counter()
            if n_round >= rounds_cap:
                return done("iteration_limit", f"{n_round} solves without a certified pattern")
            if left <= 0:
                return done("time_limit", f"time limit {limit:g} s reached after {n_round} solves")
            opts = {"time_limit": left, "presolve": True}
            if cuts.rows:
                res = milp(
                    c,
                    integrality=np.ones(cand.size),
                    bounds=Bounds(0, 1),
                    constraints=cuts.constraint(),
                    options=opts,
                )
            else:  # nothing to cover: hiding nothing is the optimum of the program
                res = _Empty(cand.size)
            n_round += 1
            advance()
            if res.status == 2:
                return done(
                    "infeasible",
                    "the program with its valid cuts is infeasible: no certified pattern exists",
                )
            if res.x is None:
                what = "time_limit" if res.status == 1 else "iteration_limit"
                return done(what, f"HiGHS stopped without a solution: {res.message}")
            z = np.zeros(x.size, dtype=bool)
            z[cand] = np.asarray(res.x) > 0.5
            dual = getattr(res, "mip_dual_bound", None)
            best_bound = fixed + float(dual) if dual is not None else -math.inf
            value = fixed + float(cost[z].sum())
            proven = res.status == 0 and best_bound > value - 1.0 + 1e-6
            sup, sec = sup0 | z, sec0 | z
            # 1. propagation: needy cells the published entries determine
            det, parent, when, entry_round = _propagate(A, x, sup, sec, table.h)
            bad = np.flatnonzero(det & needy)
            if bad.size:
                for i in bad:
                    w = _derivation(A, parent, when, entry_round, int(i))
                    if not cuts.cover(w[~sup[w]]):
                        return done("infeasible", "a needy cell is determined whatever is hidden")
                continue
            # 2. the planner's exact DP per component (cached); on a component too large for
            # it the proven bound is the disclosure loss, above kappa exactly at needy cells
            comps = _components(AT, sup)
            failing, large = [], []
            for K in comps:
                comp = st.evaluate(K, sec, max_states)
                if comp is None:
                    if needy[K].any():
                        large.append(K)
                elif np.any(comp.bounds > kap):
                    failing.append((K, comp))
            if failing:
                for K, comp in failing:
                    if not _cut(cuts, A, AT, x, sup, sec, table.h, K, comp.bounds > kap):
                        return done("infeasible", "a failing component can change no cell")
                continue
            final = table.with_suppressed(sup.reshape(table.shape), sec.reshape(table.shape))
            if large:  # their proven bound D(x_i) exceeds kappa: cut them, remember the first
                if structural is None:
                    structural = (
                        final,
                        value,
                        f"the pattern kept (cost {value:g}, round {n_round}) meets every "
                        f"necessary condition, but {sum(k.size for k in large)} of its "
                        "suppressed cells lie in components too large for the exact DP "
                        f"(max_states = {max_states}) holding cells that need protection",
                    )
                for K in large:
                    if not cuts.component(K, _around(A, AT, K)):
                        return done("infeasible", "a failing component can change no cell")
                continue
            # 3. the full exact audit of the whole table
            worst = audit(final, model, r_, max_states=max_states, rng=rng, kappa=kap, bound=bnd)
            fail = sup & (bound_of(worst, bnd) > kap)
            if fail.any():
                added = False
                for K in comps:
                    if fail[K].any():
                        added |= cuts.component(K, _around(A, AT, K))
                if not added:
                    return done("infeasible", "the full audit fails a component that cannot change")
                continue
            return done(
                "optimal" if proven else "certified",
                "certified by the full exact audit; "
                + ("optimality proven by HiGHS" if proven else "optimality not proven"),
                table=final,
                worst=worst,
                objective_value=value,
                mip_bound=best_bound,
            )


def _cut(
    cuts: _Cuts,
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
        w = _lp_support(A, AT, x, sec, h, K, int(i))
        if w is not None:
            added |= cuts.cover(w[~sup[w]])
    return added or cuts.component(K, _around(A, AT, K))


def _around(A: sparse.csr_array, AT: sparse.csr_array, K: NDArray[np.intp]) -> NDArray[np.intp]:
    """Cells of the entries touching ``K``, outside ``K``."""
    near = np.unique(A[np.unique(AT[K].indices)].indices)
    return np.setdiff1d(near, K)


class _Empty:
    """The solution of a program without rows (hide nothing), as ``milp`` would return it."""

    def __init__(self, n: int) -> None:
        self.status, self.x, self.mip_dual_bound, self.message = 0, np.zeros(n), 0.0, "no rows"


def try_mip(
    table: MarginTable,
    model: Model,
    checked: tuple[float, int, str, str, float],
    method: str,
    time_limit: float | None,
    max_states: int,
    rng: Any,
) -> tuple[SuppressionPlan | None, MipOutcome | None]:
    """The program for :func:`~persuasive.margins.planner.plan_suppression` (arguments already
    checked: ``checked = (kappa, r, objective, bound, lower_bound)``): its plan when the exact
    audit certified it, else None (the planner runs the greedy), and the outcome."""
    kap, r_, obj, bnd, lb = checked
    if method == "auto" and table.n_cells > AUTO_MAX_CELLS:
        return None, None
    limit = TIME_LIMIT if time_limit is None else time_limit
    out = optimal_pattern(
        table,
        model,
        kap,
        r=r_,
        objective=obj,
        bound=bnd,
        time_limit=limit,
        max_states=max_states,
        rng=rng,
    )
    if not out.certified:
        return None, out
    assert out.table is not None and out.worst is not None
    final, worst = out.table, out.worst
    vals = bound_of(worst, bnd)
    sup = final.suppressed.ravel()
    what = "kappa_published" if bnd == "publication" else "kappa_upper"
    return (
        SuppressionPlan(
            table=final,
            pattern=final.suppressed.copy(),
            secondary=final.secondary.copy(),
            n_primary=int((table.suppressed & ~table.secondary).sum()),
            n_secondary=int(final.secondary.sum()),
            objective=obj,
            objective_value=out.objective_value,
            lower_bound=lb,
            worst=worst,
            losses=vals.reshape(table.shape),
            kappa=kap,
            bound=bnd,
            certified=True,
            uncertified_cells=np.flatnonzero(sup & ~worst.certified.ravel()),
            iterations=out.rounds,
            notes=(f"planned against {what}", _note(out), *worst.notes),
            optimal=True if out.optimal or out.objective_value <= lb else None,
        ),
        out,
    )


def after_greedy(plan: SuppressionPlan, out: MipOutcome | None) -> SuppressionPlan:
    """The greedy's plan after the program failed to certify one: its note, and ``optimal``
    when the program's bound (valid for every certified pattern) reaches the greedy's cost."""
    if out is None:
        return plan
    bound = out.mip_bound  # costs are integers: a bound within 1e-6 of one is that integer
    reached = plan.certified and math.isfinite(bound) and plan.objective_value <= bound + 1e-6
    return replace(
        plan,
        notes=(*plan.notes, _note(out) + "; the pattern is the greedy's"),
        optimal=True if reached else plan.optimal,
    )


def _note(out: MipOutcome) -> str:
    bound = "" if math.isinf(out.mip_bound) else f", bound {out.mip_bound:.6g}"
    return (
        f"MIP with audit cuts (persuasive.margins.optimal): {out.status} after {out.rounds} "
        f"solves and {out.cuts} cuts in {out.seconds:.3g} s{bound}: {out.message}"
    )
