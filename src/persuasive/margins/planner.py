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
the final audit (``mcmc_audit``), never per candidate. Their cells only pass the necessary
structural condition: they are listed in ``uncertified_cells`` and ``certified`` is False, and
the notes give the chain's estimate of their loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.sparse import csgraph

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.margins import dp
from persuasive.margins.classical import (
    Model,
    audit,
    bound_of,
    check_arguments,
    costs,
    cover_rows,
    covering_bound,
    determined,
    disclosure_grid,
    disclosure_loss,
    lower_bound,
)
from persuasive.margins.constraints import constraint_system, full_incidence
from persuasive.margins.posterior import MAX_DP_STATES, MarginPosterior, _best_order, cell_log_grid
from persuasive.margins.table import MarginTable
from persuasive.margins.worst import WorstCaseLosses, _common_prior
from persuasive.priors.cells import IndependentCellsPrior
from persuasive.results import _json

__all__ = ["InfeasiblePlanError", "SuppressionPlan", "lower_bound", "plan_suppression"]

#: The runs: (moves with the classical partners, larger counts first).
STRATEGIES = ((False, True), (False, False), (True, True), (True, False))
#: When a cell is pruned from a large component, parts up to this size are re-tested for the DP.
PRUNE_CHECK = 256


class InfeasiblePlanError(ValidationError):
    """No pattern the planner reaches meets κ (proven when an exposed entry has nothing left to
    hide, e.g. a zero total; otherwise the message says a pattern may still exist)."""


@dataclass(frozen=True, eq=False)
class SuppressionPlan:
    """A suppression pattern and its audit (:func:`plan_suppression`).

    Attributes
    ----------
    table : MarginTable
        The table with the final pattern; ``pattern`` / ``secondary`` (bool, table shape).
    n_primary, n_secondary : int
    objective, objective_value : str, float
        ``"count"`` or ``"total"``, and the cost of the secondary cells.
    lower_bound : float
        Proven lower bound on that cost for any pattern meeting κ; ``gap`` = value - bound.
    worst : WorstCaseLosses
        The final audit of the whole table.
    losses : float ndarray
        The planned-against bound per cell (``kappa_upper`` or ``kappa_published``).
    kappa, bound : float, str
    certified : bool
        Every component exact and every suppressed cell's bound <= κ.
    uncertified_cells : int ndarray
        Flat indices of suppressed cells in components too large for the exact DP.
    iterations, notes : int, tuple of str
        Greedy steps of the kept run; what is exact and what is structural only.
    """

    table: MarginTable
    pattern: NDArray[np.bool_]
    secondary: NDArray[np.bool_]
    n_primary: int
    n_secondary: int
    objective: str
    objective_value: float
    lower_bound: float
    worst: WorstCaseLosses
    losses: NDArray[np.float64]
    kappa: float
    bound: str
    certified: bool
    uncertified_cells: NDArray[np.intp]
    iterations: int
    notes: tuple[str, ...] = ()

    @property
    def gap(self) -> float:
        """``objective_value - lower_bound``: how far the plan may be from the optimum."""
        return self.objective_value - self.lower_bound

    def explain(self) -> str:
        """One sentence for a human."""
        what = "cells" if self.objective == "count" else "total count"
        n_unc = self.uncertified_cells.size
        status = "certified by the exact audit" if self.certified else "NOT certified"
        status += f" ({n_unc} cells in components too large for the exact DP)" if n_unc else ""
        return (
            f"{self.n_secondary} secondary suppressions beside {self.n_primary} primary "
            f"({what} {self.objective_value:g}, proven lower bound {self.lower_bound:g}); every "
            f"suppressed cell's {self.bound} bound <= kappa = {self.kappa:g}: {status}"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (cells as flat C-order indices)."""
        keys = ("kappa", "bound", "objective", "objective_value", "lower_bound", "n_primary")
        out = {k: getattr(self, k) for k in (*keys, "n_secondary", "certified", "iterations")}
        out.update(
            secondary_cells=np.flatnonzero(self.secondary.ravel()),
            max_loss=float(self.losses[self.pattern].max(initial=0.0)),
            uncertified_cells=self.uncertified_cells,
            notes=list(self.notes),
        )
        return _json(out)


@dataclass(eq=False)
class _Component:
    cells: NDArray[np.intp]
    log_pmf: NDArray[np.float64]
    bounds: NDArray[np.float64]


class _State:
    """One run: flat masks, component labels, exact bounds (nan on large components)."""

    def __init__(self, table: MarginTable, model: Model, args: tuple[Any, ...]) -> None:
        self.r, self.kappa, self.bnd, self.cost, strategy, self.cache = args
        self.table, self.model, self.x, self.h = table, model, table.counts.ravel(), table.h
        A, _ = full_incidence(table)
        self.A, self.AT = A.tocsr(), sparse.csr_array(A.T)
        self.sup, self.sec = table.suppressed.ravel().copy(), table.secondary.ravel().copy()
        self.d = disclosure_loss(model, self.x)
        self.needy = (self.x < self.r) & (self.d > self.kappa)
        self.law = None if isinstance(model, IndependentCellsPrior) else _common_prior(model, 1)
        self.moves, protective = strategy
        self.rank_cost = np.zeros_like(self.cost) if protective else self.cost
        self.rank_count = -self.x if protective else self.x
        cs = constraint_system(table)
        self.label = np.full(self.x.size, -1, dtype=np.intp)
        self.label[cs.cells] = cs.labels
        self.next, self.iterations, self.met_exact = cs.n_components, 0, False
        self.large: set[int] = set()
        self.comps: dict[int, _Component] = {}
        self.bound = np.zeros(self.x.size)
        self.added: list[int] = []

    def setup(self, max_states: int) -> None:
        for lab in range(self.next):
            cells = np.flatnonzero(self.label == lab)
            self._set(lab, cells, self.evaluate(cells, self.sec, max_states))

    def _set(self, lab: int, cells: NDArray[np.intp], comp: _Component | None) -> None:
        self.label[cells] = lab
        if comp is None:
            self.large.add(lab)
            self.bound[cells] = math.nan
        else:
            self.comps[lab] = comp
            self.bound[cells] = comp.bounds

    def _row(self, M: Any, i: int) -> NDArray[np.intp]:
        return np.asarray(M.indices[M.indptr[i] : M.indptr[i + 1]])

    def entries(self, cells: Any) -> NDArray[np.intp]:
        return np.unique(self.AT[cells].indices)

    def evaluate(self, cells: NDArray[np.intp], sec: Any, max_states: int) -> _Component | None:
        """Exact bounds of one component by the DP, None if its frontier is too large. Cached
        by cell set (a suppressed cell's support never changes), across the runs."""
        key = cells.tobytes()
        if key in self.cache:
            return self.cache[key]
        A = sparse.csr_array(self.A[self.entries(cells)][:, cells])
        b = (A @ self.x[cells]).astype(np.int64)
        lo = np.where(sec[cells], self.h, 0).astype(np.int64)
        cap = np.full(cells.size, np.iinfo(np.int64).max)
        coo = A.tocoo()
        np.minimum.at(cap, coo.col, b[coo.row])
        width = np.where(sec[cells], cap, np.minimum(cap, self.h - 1)) - lo + 1
        coords = np.array(np.unravel_index(cells, self.table.shape)).reshape(-1, cells.size)
        order, size = _best_order(A, b - A @ lo, coords)
        comp = None
        if size <= max_states:
            grid = np.arange(int(width.max()))[None, :]
            if self.law is None:
                assert isinstance(self.model, IndependentCellsPrior)
                logw = cell_log_grid(self.model, cells, lo, grid.size)
            else:
                logw = self.law.cells[0].logpmf(lo[:, None] + grid)
            logw[grid >= width[:, None]] = -np.inf
            lp, lz = dp.component_marginals(A, b, lo, logw, order)
            if not np.isfinite(lz):
                raise ValidationError(
                    "receiver: the prior puts zero mass on every completion of the published "
                    f"table (cells {cells[:8].tolist()}); widen its support"
                )
            s = disclosure_grid(self.model, cells, lo, grid.size)
            j = (np.arange(cells.size), self.x[cells] - lo)
            with np.errstate(invalid="ignore"):  # inf - inf = 0: a value of prior mass 0
                val = np.where(np.isneginf(lp[j]) & np.isinf(s[j]), 0.0, lp[j] + s[j])
                val = np.where(self.x[cells] < self.r, val, 0.0)
                ok = np.isfinite(lp) & (lo[:, None] + grid < self.r)
                pub = np.max(np.where(ok, lp + s, -np.inf), axis=1)
            if self.bnd == "publication":
                val = np.maximum(val, np.maximum(pub, 0.0))
            comp = _Component(cells, lp, val)
        self.cache[key] = comp
        return comp

    def failing(self) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.bool_]]:
        """Failing cells, their priority, and the entries that determine cells."""
        det, used = determined(self.A, self.x, self.sup, self.sec, self.h)
        exact = self.sup & ~np.isnan(self.bound)
        with np.errstate(invalid="ignore"):
            fail = (exact & (self.bound > self.kappa)) | (self.sup & self.needy & det)
        return fail, np.where(exact, self.bound, self.d), used

    def reconcile(self, worst: WorstCaseLosses) -> None:
        """Take which components are exact, and their bounds, from a full audit."""
        vals, cert = bound_of(worst, self.bnd), worst.certified.ravel()
        bad = np.unique(self.label[self.sup & ~cert])
        self.large = {int(b) for b in bad}
        self.bound = np.where(self.sup & np.isin(self.label, bad), math.nan, vals)

    def posterior(self) -> MarginPosterior:
        """The exact components' posteriors as one MarginPosterior (large ones "skipped")."""
        cells = np.flatnonzero(self.sup)
        labs, comp = np.unique(self.label[cells], return_inverse=True)
        width = max([c.log_pmf.shape[1] for c in self.comps.values()] + [self.h])
        log_pmf = np.full((cells.size, width), -np.inf)
        for c in (self.comps[int(lab)] for lab in labs if int(lab) in self.comps):
            log_pmf[np.searchsorted(cells, c.cells), : c.log_pmf.shape[1]] = c.log_pmf
        methods = tuple("skipped" if int(lab) in self.large else "exact-dp" for lab in labs)
        err = np.where(np.isin(self.label[cells], list(self.large)), math.nan, 0.0)
        lo = np.where(self.sec[cells], self.h, 0).astype(np.int64)
        return MarginPosterior(cells, lo, log_pmf, comp, methods, err, np.full(labs.size, np.nan))

    def closure(self, w: int, c: int, sup: Any, sec: Any) -> list[int]:
        """``c`` and the partners the classical rule then adds around ``w`` and the new cells
        (each of their entries holding one suppressed cell gets its first released cell)."""
        move, queue = [c], [w, c]
        sup[c] = sec[c] = True
        while queue:
            for e in self._row(self.AT, queue.pop()):
                free = self._row(self.A, int(e))
                if np.count_nonzero(sup[free]) == 1 and not sup[free].all():
                    free = free[~sup[free]]
                    p = int(
                        free[np.lexsort((free, self.rank_count[free], self.rank_cost[free]))[0]]
                    )
                    sup[p] = sec[p] = True
                    move.append(p)
                    queue.append(p)
        return move

    def merged(self, move: list[int]) -> NDArray[np.intp]:
        """The component the cells of ``move`` would form with their neighbours'."""
        near = self.label[self.A[self.entries(move)].indices]
        return np.union1d(np.flatnonzero(np.isin(self.label, near[near >= 0])), move)

    def try_cell(self, c: int, w: int, max_states: int | None) -> tuple[Any, ...]:
        """Hide ``c`` tentatively: (key or None if the DP is needed and ``max_states`` is
        None, move, merged component, its exact bounds, evaluated); smaller keys win."""
        sup, sec = self.sup.copy(), self.sec.copy()
        labs = self.label[self.A[self._row(self.AT, c)].indices]
        on_large = any(int(t) in self.large for t in labs)
        self.met_exact |= not on_large
        if self.moves and not on_large:
            move = self.closure(w, c, sup, sec)
        else:
            move = [c]
            sup[c] = sec[c] = True
        det, _ = determined(self.A, self.x, sup, sec, self.h)
        n_det, w_det = int((det & self.needy).sum()), bool(det[w])
        near = self.label[self.A[self.entries(move)].indices]
        cost = float(self.cost[move].sum())
        if any(int(t) in self.large for t in near[near >= 0]):  # the structural test only
            key = (3, cost, n_det) if not w_det else (4, n_det, cost)
            return key, move, None, None, True
        merged = self.merged(move)
        if w_det:  # w stays determined: its bound is D(x_w) whatever else; no DP yet
            return (2, float(self.d[w]), n_det, merged.size, cost), move, merged, None, False
        if max_states is None:
            return None, move, merged, (cost, merged.size), False
        comp = self.evaluate(merged, sec, max_states)
        if comp is None:
            return (3, cost, n_det), move, merged, None, True
        lw = float(comp.bounds[np.searchsorted(merged, w)])
        n_bad = int(np.count_nonzero(comp.bounds > self.kappa))
        if lw <= self.kappa:
            return (0, cost, n_bad, merged.size, n_det), move, merged, comp, True
        return (2, lw, cost, n_bad, merged.size), move, merged, comp, True

    def step(self, w: int, open_e: Any, n_try: int, max_states: int) -> None:
        """Add the best move for the failing cell ``w`` (module docstring, steps 2-3)."""
        comp_w = np.flatnonzero(self.label == self.label[w])
        ents_w, ents_c = self._row(self.AT, w), self.entries(comp_w)
        # the entries determining w, else its component's, else all its component's entries
        for focus in (ents_w[open_e[ents_w]], ents_c[open_e[ents_c]], ents_c):
            cand = np.unique(self.A[focus].indices)
            cand = cand[~self.sup[cand]]
            if cand.size:
                break
        if cand.size == 0:
            where = tuple(int(i) for i in np.unravel_index(w, self.table.shape))
            raise InfeasiblePlanError(
                f"cell {where} (count {int(self.x[w])}) keeps a loss above kappa = "
                f"{self.kappa:g} with every cell of the entries that could protect it hidden"
            )
        n_open = np.asarray(self.AT[cand] @ open_e.astype(np.int64))
        anchor = np.asarray(self.AT[cand] @ (self.A @ self.sup.astype(np.int64) > 0))
        keys = (cand, self.rank_count[cand], -anchor, -n_open, self.rank_cost[cand])
        cand = cand[np.lexsort(keys)]
        best: tuple[Any, ...] | None = None
        pending = []
        for rank, c in enumerate(cand[:n_try]):  # keys without a DP first
            key, *rest = self.try_cell(int(c), w, None)
            if key is None:
                pending.append((rest[2], rank, int(c)))
            elif best is None or (*key, rank) < best[0]:
                best = ((*key, rank), *rest)
        for _, rank, c in sorted(pending):  # then the DP, cheapest and smallest first
            key, *rest = self.try_cell(c, w, max_states)
            if best is None or (*key, rank) < best[0]:
                best = ((*key, rank), *rest)
            if key[0] == 0:
                break  # the cheapest move bringing w within kappa
        assert best is not None
        _, move, merged, comp, evaluated = best
        merged = self.merged(move) if merged is None else merged
        self.sup[move] = self.sec[move] = True
        if not evaluated:
            comp = self.evaluate(merged, self.sec, max_states)
        for t in np.unique(self.label[merged]):
            self.large.discard(int(t))
            self.comps.pop(int(t), None)
        self._set(self.next, merged, comp)
        self.next += 1
        self.added.extend(move)

    def prune(self, max_states: int) -> None:
        """Reverse delete: drop added cells (dearest, then latest first) whose removal keeps
        every exact component within κ and no needy cell determined."""
        for c in sorted(reversed(self.added), key=lambda j: -self.cost[j]):
            lab, was_large = int(self.label[c]), int(self.label[c]) in self.large
            sup, sec = self.sup.copy(), self.sec.copy()
            sup[c] = sec[c] = False
            if np.any(determined(self.A, self.x, sup, sec, self.h)[0] & self.needy):
                continue
            rest = np.flatnonzero(self.label == lab)
            rest = rest[rest != c]
            lab_r = np.zeros(0, np.intp)
            if rest.size:
                _, lab_r = csgraph.connected_components(self.AT[rest] @ self.AT[rest].T)
            parts = [rest[lab_r == k] for k in np.unique(lab_r)]
            comps = [
                None if was_large and p.size > PRUNE_CHECK else self.evaluate(p, sec, max_states)
                for p in parts
            ]
            if any(
                (q is None and not was_large) or (q is not None and np.any(q.bounds > self.kappa))
                for q in comps
            ):
                continue
            self.sup, self.sec = sup, sec
            self.label[c], self.bound[c] = -1, 0.0
            self.comps.pop(lab, None)
            self.large.discard(lab)
            for p, q in zip(parts, comps, strict=True):
                self._set(self.next, p, q)
                self.next += 1


def _search(st: _State, cap: int, n_try: int, max_states: int) -> None:
    """Greedy steps until no cell fails."""
    while True:
        fail, pri, open_e = st.failing()
        if not fail.any():
            return
        if st.iterations >= cap:
            raise InfeasiblePlanError(
                f"max_iter = {cap} steps reached with {int(fail.sum())} cells above kappa = "
                f"{st.kappa:g}; raise max_iter or kappa"
            )
        st.step(int(np.argmax(np.where(fail, pri, -np.inf))), open_e, n_try, max_states)
        st.iterations += 1


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

    Raises
    ------
    ValidationError
        Bad arguments (naming the argument, echoing the value, saying what is allowed).
    InfeasiblePlanError
        No run reached a pattern meeting κ (the message says whether that is proven).

    Examples
    --------
    >>> from persuasive.release.receivers import PoissonReceiver
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
    needy = (table.counts.ravel() < r_) & (disclosure_loss(model, table.counts.ravel()) > kap)
    lb = float(cost[table.secondary.ravel()].sum()) + covering_bound(table, cost, needy)
    if lb == math.inf:
        A, rows = cover_rows(table, needy)
        full = rows[np.asarray(A[rows] @ (~table.suppressed.ravel()).astype(np.int64)) == 0]
        cells = np.unique(A[full].indices)
        cells = cells[needy[cells] & table.suppressed.ravel()[cells]][:5]
        raise InfeasiblePlanError(
            f"no suppression pattern can meet kappa = {kap:g} (proven): cells "
            f"{[tuple(int(i) for i in np.unravel_index(c, table.shape)) for c in cells]} are "
            "determined by published entries with nothing left to hide (e.g. a zero total); "
            "raise kappa, publish fewer margins or widen the Receiver model"
        )
    cache: dict[bytes, _Component | None] = {}
    if not table.margins:  # nothing to plan: Prop 8
        st = _State(table, model, (r_, kap, bnd, cost, STRATEGIES[0], cache))
        prop8 = audit(table, model, r_, max_states=max_states, rng=rng)
        if np.any(bound_of(prop8, bnd)[st.sup] > kap):
            raise InfeasiblePlanError(
                f"no margin is published: hiding more cells cannot lower Prop 8's bound "
                f"{prop8.max_upper:.4g} > kappa = {kap:g}; raise kappa or h"
            )
        return _result(st, prop8, lb, obj, max_states, mcmc_audit)
    runs: list[tuple[int, float, int, _State]] = []
    errors: list[InfeasiblePlanError] = []
    met_exact: dict[int, bool] = {}
    for k, strategy in enumerate(STRATEGIES):
        if strategy[0] and not met_exact.get(k - 2, True):
            continue  # run k - 2 met no exact component: the partners would change nothing
        st = _State(table, model, (r_, kap, bnd, cost, strategy, cache))
        try:
            st.setup(max_states)
            _search(st, cap, n_try, max_states)
        except InfeasiblePlanError as exc:
            errors.append(exc)
            continue
        finally:
            met_exact[k] = st.met_exact
        st.prune(max_states)
        runs.append((int(np.isnan(st.bound[st.sup]).sum()), float(cost[st.sec].sum()), k, st))
        if runs[-1][:2] <= (0, lb):
            break  # every cell exact and the cost at the lower bound: optimal
    worst: WorstCaseLosses | None = None
    for *_, st in sorted(runs, key=lambda run: run[:3]):  # fewest uncertified, cheapest
        try:
            worst = _verify(st, cap, n_try, max_states, rng, mcmc_audit)
            break
        except InfeasiblePlanError as exc:
            errors.append(exc)
    if worst is None:
        raise InfeasiblePlanError(
            f"the planner found no pattern meeting kappa in {len(errors)} runs (a heuristic: "
            f"a pattern may still exist); {errors[0]}; raise kappa, publish fewer margins or "
            "widen the Receiver model"
        )
    return _result(st, worst, lb, obj, max_states, mcmc_audit)


def _verify(
    st: _State, cap: int, n_try: int, max_states: int, rng: Any, mcmc_audit: bool
) -> WorstCaseLosses:
    """Audit the whole final table; resume the search on any exact cell above κ."""
    t = st.table
    while True:
        cur = t.with_suppressed(st.sup.reshape(t.shape), st.sec.reshape(t.shape))
        post = st.posterior() if st.large and not mcmc_audit else None
        worst = audit(cur, st.model, st.r, max_states=max_states, rng=rng, posterior=post)
        st.reconcile(worst)
        if not st.failing()[0].any():
            return worst
        _search(st, cap, n_try, max_states)


def _result(
    st: _State, worst: WorstCaseLosses, lb: float, obj: str, max_states: int, mcmc: bool
) -> SuppressionPlan:
    t, sup, kap = st.table, st.sup, st.kappa
    final = t.with_suppressed(sup.reshape(t.shape), st.sec.reshape(t.shape))
    vals = bound_of(worst, st.bnd)
    unc = np.flatnonzero(sup & ~worst.certified.ravel())
    notes = [f"planned against {'kappa_published' if st.bnd == 'publication' else 'kappa_upper'}"]
    if unc.size:
        est = worst.estimate.ravel()[unc]
        notes.append(
            f"{unc.size} suppressed cells lie in components too large for the exact DP "
            f"(max_states = {max_states}): planned by the necessary structural condition only "
            "(the published entries determine no cell below r whose disclosure loss exceeds "
            "kappa); NOT certified; "
            + (
                f"Markov-chain estimate of their loss: {int((est > kap).sum())} above kappa, "
                f"max {np.nanmax(est):.4g}"
                if mcmc
                else "the Markov-chain audit was skipped (mcmc_audit=False)"
            )
        )
    return SuppressionPlan(
        table=final,
        pattern=final.suppressed.copy(),
        secondary=final.secondary.copy(),
        n_primary=int((t.suppressed & ~t.secondary).sum()),
        n_secondary=int(final.secondary.sum()),
        objective=obj,
        objective_value=float(st.cost[final.secondary.ravel()].sum()),
        lower_bound=lb,
        worst=worst,
        losses=vals.reshape(t.shape),
        kappa=kap,
        bound=st.bnd,
        certified=bool(worst.all_certified and np.all(vals[sup] <= kap)),
        uncertified_cells=unc,
        iterations=st.iterations,
        notes=(*notes, *worst.notes),
    )
