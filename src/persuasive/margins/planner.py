r"""Secondary suppression certified by the exact audit (issue 5; Bon et al. 2026, beyond Prop 8).

The planner hides *secondary* cells :math:`T` until every suppressed cell :math:`i \in S =
U \cup T` meets :math:`\bar\kappa_i(S) \le \kappa`, where :math:`\bar\kappa_i =
\log\Pi^0_i(x_i) + B(x_i)` (:math:`x_i < r`) is the exact supremum ``kappa_upper`` of
:func:`~persuasive.margins.worst_case_losses` (``bound="table"``) or its bound over every table
consistent with the publication, ``kappa_published`` (``bound="publication"``); for one fixed
``IndependentCellsPrior``, the exact loss :math:`\log\pi_i(x_i) - \log q_i(x_i)`. The cost of
:math:`T` is :math:`|T|` (``"count"``) or :math:`\sum_{j\in T} x_j` (``"total"``).

**Algorithm** (deterministic greedy; stable sorts, ties by flat C-order index). A component is
*exact* when its DP frontier fits ``max_states`` (the test of
:func:`~persuasive.margins.posterior_marginals`, same cell order), else *large*.

1. A suppressed cell *fails* when its component is exact and its bound exceeds κ, or when it
   needs protection (:math:`x_i < r`, disclosure loss :math:`D_i > \kappa`) and the published
   entries determine it (:func:`~persuasive.margins.classical.determined`): the only test on
   a large component, a necessary condition.
2. For the failing cell ``w`` with the largest bound (then smallest index), the candidates are
   the released cells of the entries determining it (else determining cells of its component,
   else touching it), ordered by (cost, such entries hit, entries holding suppressed cells,
   count, index); the first ``max_candidates`` are
   tried. A move hides the candidate (and, in two of the runs, the partners the classical rule
   then adds around it). On an exact component the move is audited by the DP of the one
   component it forms (its posterior depends on nothing else); on a large one by exposure only.
3. The cheapest move bringing ``w`` within κ on an exact component wins, then the one lowering
   its bound most, then a structural fix on a large component. Nothing left to hide:
   :class:`InfeasiblePlanError`.
4. Reverse delete: added cells whose removal keeps every test are dropped.
5. Four runs (single cells or moves with partners; larger or smaller counts first): the one
   with the fewest uncertified cells, then the cheapest, is audited on the whole table; an
   exact cell above κ there (should it disagree) resumes the search.

**Large components** need the Markov chain (seconds per thousand cells): it runs once, in
the final audit (``mcmc_audit``), never per candidate. The search tests their cells by the
necessary structural condition only; the final audit, with the target, bounds them by the proven
switching bound (``docs/margins_bounds.md``, never above the full-disclosure bound). A cell whose
bound meets κ is certified (``worst.by_bound``: not computed exactly); the others are listed in
``uncertified_cells`` and ``certified`` is False, and the notes give the chain's estimate of
their loss.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from persuasive import _validation as v
from persuasive._progress import task
from persuasive.margins import parallel
from persuasive.margins.attack import attacker_intervals
from persuasive.margins.plan_result import SuppressionPlan
from persuasive.margins.planning import (
    InfeasiblePlanError,
    Model,
    audit,
    bound_of,
    check_arguments,
    costs,
    cover_rows,
    covering_bound,
    disclosure_loss,
    lower_bound,
)
from persuasive.margins.posterior import MAX_DP_STATES
from persuasive.margins.search import STRATEGIES, _Component, _search, _State
from persuasive.margins.table import MarginTable
from persuasive.margins.worst import WorstCaseLosses

__all__ = ["InfeasiblePlanError", "SuppressionPlan", "lower_bound", "plan_suppression"]


#: Rounds of the LP attacker check on large components in the final audit.
LP_ROUNDS: int = 20


def plan_suppression(
    table: MarginTable,
    receiver: Model,
    kappa: float,
    *,
    r: int | None = None,
    objective: str = "count",
    bound: str = "table",
    max_candidates: int = 8,
    max_states: int = MAX_DP_STATES,
    max_iter: int | None = None,
    rng: Any = 0,
    mcmc_audit: bool = True,
    method: str = "greedy",
    time_limit: float | None = None,
) -> SuppressionPlan:
    r"""Choose secondary suppressions so that every suppressed cell's bound is <= κ.

    See the module docstring for the algorithm. The plan is certified only by the full audit,
    and says so when it is not (``certified``, ``uncertified_cells``, ``notes``).

    Parameters
    ----------
    table : MarginTable
        The table, its margins and its primary pattern (usually ``counts < h``).
    receiver : PoissonReceiver, NegativeBinomialReceiver or IndependentCellsPrior
        The Receiver model (log-linear in the margins), or one fixed prior over the cells (C
        order). ``SmallCellReceiver`` is refused when a margin is published (κ = ∞ there).
    kappa : float
        Target, ``kappa >= 0``.
    r : int, optional
        Score threshold of :math:`L^r`, ``1 <= r <= h`` (default h).
    objective : {"count", "total"}
        Minimise the number of secondary cells, or their total count.
    bound : {"table", "publication"}
        Plan against ``kappa_upper`` (the true table) or ``kappa_published`` (every table
        consistent with the publication: what ``verify`` can recompute).
    max_candidates, max_states, max_iter : int
        Candidates tried per step (>= 1); largest DP frontier of an exact component; cap on
        greedy steps per run (default: the number of cells).
    rng
        Seed of the final audit's Markov chain on large components (default 0).
    mcmc_audit : bool
        Run that chain (seconds per thousand cells). False skips it: large components keep
        the proven fallback bound :math:`D(x_i)` and no estimate.
    method : {"greedy", "auto", "mip"}
        ``"mip"``: the mixed-integer program with audit cuts of
        :mod:`persuasive.margins.optimal` first (its pattern when the exact audit certifies it,
        ``optimal`` when HiGHS also proved it optimal), the greedy when it does not;
        ``"auto"``: the same on tables of at most ``optimal.AUTO_MAX_CELLS`` cells. A certified
        pattern of the program not proven optimal (a time-out) is set beside the greedy's and
        the cheaper kept (the program's on a tie), so the pattern never costs more than the
        greedy's.
    time_limit : float, optional
        Seconds for the program's whole loop (default ``optimal.TIME_LIMIT``).

    Raises
    ------
    ValidationError
        Bad arguments (naming the argument, echoing the value, saying what is allowed).
    InfeasiblePlanError
        No run reached a pattern meeting κ (the message says whether that is proven).

    Examples
    --------
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> t = MarginTable([[0, 9, 8], [7, 6, 9], [8, 9, 7]], h=3, margins="rows,cols")
    >>> plan = plan_suppression(t, PoissonReceiver(1, 10), kappa=7.0)
    >>> plan.certified, plan.n_secondary, plan.lower_bound
    (True, 3, 2.0)
    >>> plan.pattern.astype(int).tolist()    # the 0 is hidden in a 2 x 2 block
    [[1, 1, 0], [0, 0, 0], [1, 1, 0]]
    """
    kap, obj, bnd, model, r_ = check_arguments(table, receiver, kappa, objective, bound, r)
    n_try = v.integer("max_candidates", max_candidates, low=1)
    max_states = v.integer("max_states", max_states, low=1)
    cap = table.n_cells if max_iter is None else v.integer("max_iter", max_iter, low=0)
    cost = costs(table, obj)
    needy = (table.counts.ravel() < r_) & (
        disclosure_loss(model, table.counts.ravel(), table.box) > kap
    )
    lb = float(cost[table.secondary.ravel()].sum()) + covering_bound(table, cost, needy)
    if lb == math.inf:
        A, rows = cover_rows(table, needy)
        full = rows[np.asarray(A[rows] @ table.hideable.ravel().astype(np.int64)) == 0]
        cells = np.unique(A[full].indices)
        cells = cells[needy[cells] & table.suppressed.ravel()[cells]][:5]
        raise InfeasiblePlanError(
            f"no suppression pattern can meet kappa = {kap:g} (proven): cells "
            f"{[tuple(int(i) for i in np.unravel_index(c, table.shape)) for c in cells]} are "
            "determined by published entries with nothing left to hide (e.g. a zero total); "
            "raise kappa, publish fewer margins or widen the Receiver model"
        )
    meth = v.choice("method", method, ("greedy", "auto", "mip"))
    mip = None
    if meth != "greedy" and table.margins:
        from persuasive.margins import optimal  # imports this module: not at the top

        found, mip = optimal.try_mip(
            table, model, (kap, r_, obj, bnd, lb), meth, time_limit, max_states, rng
        )
        if found is not None and found.optimal:
            return found
        if found is not None:  # certified, optimality not proven: the greedy may be cheaper
            try:
                greedy = plan_suppression(
                    table, receiver, kap, r=r_, objective=obj, bound=bnd, rng=rng,
                    mcmc_audit=mcmc_audit, max_candidates=n_try, max_states=max_states,
                    max_iter=max_iter,
                )  # fmt: skip
            except InfeasiblePlanError:
                return found
            if not greedy.certified or found.objective_value <= greedy.objective_value:
                return found
            return optimal.after_greedy(greedy, mip)
    cache: dict[bytes, _Component | None] = {}
    if not table.margins:  # nothing to plan: Prop 8
        st = _State(table, model, (r_, kap, bnd, cost, STRATEGIES[0], cache))
        prop8 = audit(table, model, r_, max_states=max_states, rng=rng)
        if np.any(bound_of(prop8, bnd)[st.active][st.sup] > kap):
            raise InfeasiblePlanError(
                f"no margin is published: hiding more cells cannot lower Prop 8's bound "
                f"{prop8.max_upper:.4g} > kappa = {kap:g}; raise kappa or h"
            )
        return _result(st, prop8, lb, obj, max_states, mcmc_audit)
    runs: list[tuple[int, float, int, _State]] = []
    errors: list[InfeasiblePlanError] = []
    met_exact: dict[int, bool] = {}
    base = (table, model, (r_, kap, bnd, cost), cap, n_try, max_states)
    # under a mapper (Spark) the four runs are searched at once, each with its own cache, and
    # the loop below keeps what the loop in one process keeps: the cache only saves work
    eager = parallel.active()
    done = parallel.map_tasks(_run, [(*base, s, cache) for s in STRATEGIES]) if eager else None
    with task("planner: search", total=len(STRATEGIES)) as advance:
        for k, strategy in enumerate(STRATEGIES):
            if k:
                advance()  # run k - 1 is done (or skipped)
            if strategy[0] and not met_exact.get(k - 2, True):
                continue  # run k - 2 met no exact component: the partners would change nothing
            met_exact[k], got = done[k] if done is not None else _run((*base, strategy, cache))
            if isinstance(got, InfeasiblePlanError):
                errors.append(got)
                continue
            st = got
            n_large, spent = int(np.isnan(st.bound[st.sup]).sum()), float(st.cost[st.sec].sum())
            runs.append((n_large, spent, k, st))
            if runs[-1][:2] <= (0, lb):
                break  # every cell exact and the cost at the lower bound: optimal
        advance(len(STRATEGIES) - k)  # the last run, and those a break skipped
    worst: WorstCaseLosses | None = None
    with task("planner: final audit", total=1) as advance:
        for *_, st in sorted(runs, key=lambda run: run[:3]):  # fewest uncertified, cheapest
            try:
                worst = _verify(st, cap, n_try, max_states, rng, mcmc_audit)
                break
            except InfeasiblePlanError as exc:
                errors.append(exc)
        advance()
    if worst is None:
        raise InfeasiblePlanError(
            f"the planner found no pattern meeting kappa in {len(errors)} runs (a heuristic: "
            f"a pattern may still exist); {errors[0]}; raise kappa, publish fewer margins or "
            "widen the Receiver model"
        )
    plan = _result(st, worst, lb, obj, max_states, mcmc_audit)
    return plan if meth == "greedy" else optimal.after_greedy(plan, mip)


def _run(args: tuple[Any, ...]) -> tuple[bool, _State | InfeasiblePlanError]:
    """One greedy run: ``(whether it met an exact component, its pruned state)``, or the
    :class:`InfeasiblePlanError` that ended it in place of the state."""
    table, model, (r_, kap, bnd, cost), cap, n_try, max_states, strategy, cache = args
    st = _State(table, model, (r_, kap, bnd, cost, strategy, cache))
    try:
        st.setup(max_states)
        _search(st, cap, n_try, max_states)
    except InfeasiblePlanError as exc:
        return st.met_exact, exc
    st.prune(max_states)
    return st.met_exact, st


def _verify(
    st: _State, cap: int, n_try: int, max_states: int, rng: Any, mcmc_audit: bool
) -> WorstCaseLosses:
    """Audit the whole final table; resume the search on any exact cell above κ, and (up to
    ``LP_ROUNDS`` times) on any needy cell of a large component the LP attacker pins down."""
    t = st.table
    rounds = 0
    while True:
        cur = t.with_suppressed(st.dense(st.sup), st.dense(st.sec))
        # the chain runs once, at the end: the rounds below only need the exact components
        post = st.posterior() if st.large else None
        target = None if st.large else st.kappa  # the switching bound too, at the end only
        opts = {"max_states": max_states, "rng": rng, "bound": st.bnd}
        worst = audit(cur, st.model, st.r, posterior=post, kappa=target, **opts)
        st.reconcile(worst)
        if st.failing()[0].any():
            _search(st, cap, n_try, max_states)
            continue
        if not st.large or rounds >= LP_ROUNDS:
            break
        # large components pass only a structural test: let the LP attacker look for needy
        # cells the published table pins down, and protect them too
        rounds += 1
        att = attacker_intervals(cur)
        pinned = st.compact(att.cells[att.exposed])  # the search's cells
        pinned = pinned[st.needy[pinned] & np.isnan(st.bound[pinned])]
        if pinned.size == 0:
            break
        st.lp_det[pinned] = True
        _search(st, cap, n_try, max_states)
    if st.large:  # the proven switching bound certifies, with the target, what it can
        post = None if mcmc_audit else st.posterior()
        worst = audit(cur, st.model, st.r, posterior=post, kappa=st.kappa, **opts)
    return worst


def _result(
    st: _State, worst: WorstCaseLosses, lb: float, obj: str, max_states: int, mcmc: bool
) -> SuppressionPlan:
    t, kap = st.table, st.kappa
    final = t.with_suppressed(st.dense(st.sup), st.dense(st.sec))
    sup = final.suppressed.ravel()
    vals = bound_of(worst, st.bnd)
    unc = np.flatnonzero(sup & ~worst.certified.ravel())
    big = np.flatnonzero(sup & ~worst.computed_exactly.ravel())
    notes = [f"planned against {'kappa_published' if st.bnd == 'publication' else 'kappa_upper'}"]
    if big.size:
        est = worst.estimate.ravel()[big]
        n_above = int((vals[big] > kap).sum())
        sw = worst.switching
        n_sw = 0 if sw is None else int(sw.ravel()[big].sum())
        notes.append(
            f"{big.size} suppressed cells lie in components too large for the exact DP "
            f"(max_states = {max_states}): planned by the necessary structural condition only "
            "(the published entries determine no cell below r whose disclosure loss exceeds "
            f"kappa); their proven bound is the switching bound (docs/margins_bounds.md) for "
            f"{n_sw} of them, else the full-disclosure loss (the posterior being at most 1); "
            f"{big.size - n_above} of them certified by it, {n_above} above kappa"
            f"{': NOT certified' if n_above else ''}; "
            + (
                f"Markov-chain estimate of their loss: {int((est > kap).sum())} above kappa, "
                f"max {np.nanmax(est):.4g}"
                if mcmc
                else "the Markov-chain audit was skipped (mcmc_audit=False)"
            )
        )
    value = float(st.cost[st.sec].sum())
    # proven bounds: exact, else the switching bound or B(x); unc is empty exactly then
    certified = bool(np.all(vals[sup] <= kap))
    return SuppressionPlan(
        table=final,
        pattern=final.suppressed.copy(),
        secondary=final.secondary.copy(),
        n_primary=int((t.suppressed & ~t.secondary).sum()),
        n_secondary=int(final.secondary.sum()),
        objective=obj,
        objective_value=value,
        lower_bound=lb,
        worst=worst,
        losses=vals.reshape(t.shape),
        kappa=kap,
        bound=st.bnd,
        certified=certified,
        uncertified_cells=unc,
        iterations=st.iterations,
        notes=(*notes, *worst.notes),
        optimal=True if certified and value <= lb else None,
    )
