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

**Propagation, LP and component cuts**: :mod:`persuasive.margins.optimal_cuts`.

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
from scipy import sparse
from scipy.optimize import Bounds, milp

from persuasive import _validation as v
from persuasive._progress import task
from persuasive.errors import ValidationError
from persuasive.margins.constraints import full_incidence
from persuasive.margins.optimal_cuts import Cuts, around, components, cut, derivation, propagate
from persuasive.margins.planner import SuppressionPlan
from persuasive.margins.planning import (
    Model,
    audit,
    bound_of,
    check_arguments,
    costs,
    cover_rows,
    disclosure_loss,
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
    needy = (x < r_) & (disclosure_loss(model, x, table.box) > kap)
    cuts = Cuts(cand.size, var_of)
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
            det, parent, when, entry_round = propagate(A, x, sup, sec, table.h)
            bad = np.flatnonzero(det & needy)
            if bad.size:
                for i in bad:
                    w = derivation(A, parent, when, entry_round, int(i))
                    if not cuts.cover(w[~sup[w]]):
                        return done("infeasible", "a needy cell is determined whatever is hidden")
                continue
            # 2. the planner's exact DP per component (cached); on a component too large for
            # it the proven bound is the disclosure loss, above kappa exactly at needy cells
            comps = components(AT, sup)
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
                    if not cut(cuts, A, AT, x, sup, sec, table.h, K, comp.bounds > kap):
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
                    if not cuts.component(K, around(A, AT, K)):
                        return done("infeasible", "a failing component can change no cell")
                continue
            # 3. the full exact audit of the whole table
            worst = audit(final, model, r_, max_states=max_states, rng=rng, kappa=kap, bound=bnd)
            fail = sup & (bound_of(worst, bnd) > kap)
            if fail.any():
                added = False
                for K in comps:
                    if fail[K].any():
                        added |= cuts.component(K, around(A, AT, K))
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
            method="mip",
            mip=out.status,
        ),
        out,
    )


def after_greedy(plan: SuppressionPlan, out: MipOutcome | None) -> SuppressionPlan:
    """The greedy's plan after the program (``out``; None: ``auto`` skipped it, too large):
    its note, ``mip``, and ``optimal`` when the program's bound reaches the greedy's cost."""
    if out is None:
        note = (
            f"MIP not run: the table has {plan.table.n_cells} cells, more than "
            f"AUTO_MAX_CELLS = {AUTO_MAX_CELLS} (method auto); the pattern is the greedy's"
        )
        return replace(plan, notes=(*plan.notes, note), mip="too_large")
    bound = out.mip_bound  # costs are integers: a bound within 1e-6 of one is that integer
    reached = plan.certified and math.isfinite(bound) and plan.objective_value <= bound + 1e-6
    return replace(
        plan,
        notes=(*plan.notes, _note(out) + "; the pattern is the greedy's"),
        optimal=True if reached else plan.optimal,
        mip=out.status,
    )


def _note(out: MipOutcome) -> str:
    bound = "" if math.isinf(out.mip_bound) else f", bound {out.mip_bound:.6g}"
    return (
        f"MIP with audit cuts (persuasive.margins.optimal): {out.status} after {out.rounds} "
        f"solves and {out.cuts} cuts in {out.seconds:.3g} s{bound}: {out.message}"
    )
