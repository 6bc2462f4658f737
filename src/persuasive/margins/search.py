r"""The greedy search of :func:`persuasive.margins.planner.plan_suppression` (one run per
strategy): flat masks, component labels, exact per-component bounds, candidate moves and
pruning. The algorithm and its guarantee are stated in :mod:`persuasive.margins.planner`.

A component is split into its parts independent a posteriori before the DP: those linked by
the published margins that no finer published margin implies (:mod:`persuasive.margins.implied`;
a grand total or a hierarchy's coarse subtotals link everything, yet add no constraint). Each
part is computed (and cached) alone, as :func:`~persuasive.margins.posterior_marginals` does:
its posterior is the same, and a move only recomputes the part it changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.sparse import csgraph

from persuasive._progress import task
from persuasive.errors import ValidationError
from persuasive.margins import dp
from persuasive.margins.constraints import constraint_system, full_incidence, independent_rows
from persuasive.margins.implied import implied_free_rows, independent_parts
from persuasive.margins.planning import (
    InfeasiblePlanError,
    Model,
    bound_of,
    determined,
    disclosure_grid,
    disclosure_loss,
)
from persuasive.margins.posterior import MarginPosterior, _best_order, cell_log_grid
from persuasive.margins.table import MarginTable
from persuasive.margins.worst import WorstCaseLosses, _common_prior
from persuasive.priors.cells import IndependentCellsPrior

#: The runs: (moves with the classical partners, larger counts first).
STRATEGIES = ((False, True), (False, False), (True, True), (True, False))
#: When a cell is pruned from a large component, parts up to this size are re-tested for the DP.
PRUNE_CHECK = 256


@dataclass(eq=False)
class _Component:
    cells: NDArray[np.intp]
    log_pmf: NDArray[np.float64]
    bounds: NDArray[np.float64]


def _join(cells: NDArray[np.intp], parts: list[Any]) -> _Component:
    """The component of ``cells`` from those of its independent parts (their union)."""
    width = max(p.log_pmf.shape[1] for p in parts)
    log_pmf = np.full((cells.size, width), -np.inf)
    bounds = np.empty(cells.size)
    for p in parts:
        at = np.searchsorted(cells, p.cells)
        log_pmf[at, : p.log_pmf.shape[1]] = p.log_pmf
        bounds[at] = p.bounds
    return _Component(cells, log_pmf, bounds)


class _State:
    """One run: flat masks, component labels, exact bounds (nan on large components).

    Every array is over the cells that are not structural zeros (``active``, C order: a
    structural zero is never suppressed, a candidate nor a partner, and adds 0 to every total),
    so nothing scales with the combinations a hierarchy does not nest; ``dense`` and
    ``compact`` convert to and from the table's flat indices."""

    def __init__(self, table: MarginTable, model: Model, args: tuple[Any, ...]) -> None:
        self.r, self.kappa, self.bnd, cost, strategy, self.cache = args
        self.table, self.model, self.h = table, model, table.h
        self.active = act = np.flatnonzero(~table.structural.ravel())
        self.x, self.cost = table.counts.ravel()[act], np.asarray(cost)[act]
        A, _ = full_incidence(table)
        self.A = sparse.csr_array(A.tocsr()[:, act])
        self.AT = sparse.csr_array(self.A.T)
        sizes = [math.prod(table.shape[a] for a in m) for m in table.margins]
        self.AsT = sparse.csr_array(self.A[implied_free_rows(self.A, sizes)].T)
        self.sup, self.sec = table.suppressed.ravel()[act], table.secondary.ravel()[act]
        self.known = table.known.ravel()[act]  # never a candidate nor a partner
        self.lower, self.upper = table.lower.ravel()[act], table.upper.ravel()[act]
        self.box = table.box  # flat (lower, upper) over the table, or None: computed once
        #: the same over the active cells (what determined() reads beside self.A and self.x)
        self.active_box = None if self.box is None else (self.box[0][act], self.box[1][act])
        # conditioned on a-priori boxes (a fixed prior is over every cell of the table; the
        # model's loss is cell by cell, so it is computed over the active cells only)
        if isinstance(model, IndependentCellsPrior):
            self.d = disclosure_loss(model, table.counts.ravel(), self.box)[act]
        else:
            self.d = disclosure_loss(model, self.x, self.active_box)
        self.needy = (self.x < self.r) & (self.d > self.kappa)
        self.law = None if isinstance(model, IndependentCellsPrior) else _common_prior(model, 1)
        self.moves, protective = strategy
        self.rank_cost = np.zeros_like(self.cost) if protective else self.cost
        self.rank_count = -self.x if protective else self.x
        cs = constraint_system(table)
        self.label = np.full(self.x.size, -1, dtype=np.intp)
        self.label[self.compact(cs.cells)] = cs.labels
        self.next, self.iterations, self.met_exact = cs.n_components, 0, False
        self.large: set[int] = set()
        self.comps: dict[int, _Component] = {}
        self.bound = np.zeros(self.x.size)
        self.added: list[int] = []
        #: needy cells the LP attacker pinned at the last final check (cleared by every step)
        self.lp_det = np.zeros(self.x.size, dtype=bool)

    def dense(self, mask: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """A mask over the active cells as a mask of the table's shape."""
        out = np.zeros(self.table.n_cells, dtype=bool)
        out[self.active] = mask
        return out.reshape(self.table.shape)

    def compact(self, flat: Any) -> NDArray[np.intp]:
        """Positions among the active cells of cells given by the table's flat indices."""
        return np.searchsorted(self.active, np.asarray(flat, dtype=np.intp)).astype(np.intp)

    def setup(self, max_states: int) -> None:
        order = np.argsort(self.label, kind="stable")
        ends = np.searchsorted(self.label[order], np.arange(self.next + 1))
        for lab in range(self.next):
            cells = np.sort(order[ends[lab] : ends[lab + 1]])
            self._set(lab, cells, self._evaluate(cells, self.sec, max_states))

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
        """:meth:`_evaluate` of cells given by the table's flat indices (sorted), ``sec`` a
        mask of the table (the component's ``cells`` are then positions among the active)."""
        sec_a = np.asarray(sec).ravel()[self.active]
        return self._evaluate(self.compact(cells), sec_a, max_states)

    def _evaluate(self, cells: NDArray[np.intp], sec: Any, max_states: int) -> _Component | None:
        """Exact bounds of one component by the DP, None if its frontier is too large. Cached
        by cell set (a suppressed cell's support never changes), across the runs."""
        key = cells.tobytes()
        if key in self.cache:
            return self.cache[key]
        parts = independent_parts(self.AsT, cells) if cells.size > 1 else [cells]
        if len(parts) > 1:  # independent a posteriori (margins.implied): each part alone,
            # cached; the union is joined again when asked (caching it would keep a copy of
            # every part's posterior per union tried, gigabytes on a large hierarchy)
            comps = [self._evaluate(p, sec, max_states) for p in parts]
            return None if any(c is None for c in comps) else _join(cells, comps)
        A = sparse.csr_array(self.A[self.entries(cells)][:, cells])
        b = (A @ self.x[cells]).astype(np.int64)
        lo = np.maximum(np.where(sec[cells], self.h, 0), self.lower[cells])
        cap = np.full(cells.size, np.iinfo(np.int64).max)
        coo = A.tocoo()
        np.minimum.at(cap, coo.col, b[coo.row])
        rows = independent_rows(A, b)  # dependent totals change nothing but the DP's frontier
        A, b = sparse.csr_array(A[rows]), b[rows]
        hi = np.where(sec[cells], cap, np.minimum(cap, self.h - 1))
        width = np.minimum(hi, self.upper[cells]) - lo + 1  # a-priori boxes
        flat = self.active[cells]  # the table's cells, for their coordinates and the prior
        coords = np.array(np.unravel_index(flat, self.table.shape)).reshape(-1, cells.size)
        order, size = _best_order(A, b - A @ lo, coords)
        comp = None
        if size <= max_states:
            grid = np.arange(int(width.max()))[None, :]
            if self.law is None:
                assert isinstance(self.model, IndependentCellsPrior)
                logw = cell_log_grid(self.model, flat, lo, grid.size)
            else:
                logw = self.law.cells[0].logpmf(lo[:, None] + grid)
            logw[grid >= width[:, None]] = -np.inf
            lp, lz = dp.component_marginals(A, b, lo, logw, order)
            if not np.isfinite(lz):
                raise ValidationError(
                    "receiver: the prior puts zero mass on every completion of the published "
                    f"table (cells {cells[:8].tolist()}); widen its support"
                )
            s = disclosure_grid(self.model, flat, lo, grid.size, self.box)
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
        det, used = determined(self.A, self.x, self.sup, self.sec, self.h, self.active_box)
        exact = self.sup & ~np.isnan(self.bound)
        with np.errstate(invalid="ignore"):
            fail = (exact & (self.bound > self.kappa)) | (
                self.sup & self.needy & (det | self.lp_det)
            )
        return fail, np.where(exact, self.bound, self.d), used

    def reconcile(self, worst: WorstCaseLosses) -> None:
        """Take which components are exact, and their bounds, from a full audit. A component
        is exact only where the audit computed it exactly: cells a target certified by a proven
        bound (``worst.certified`` with ``kappa``) stay on a large component, which the search
        tests structurally only (its bound, e.g. ``kappa_published`` above κ while
        ``kappa_upper`` meets it, is never taken for an exact one)."""
        vals = bound_of(worst, self.bnd)[self.active]
        cert = worst.computed_exactly.ravel()[self.active]
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
        lo = np.maximum(np.where(self.sec[cells], self.h, 0), self.lower[cells])
        nan = np.full(labs.size, np.nan)
        return MarginPosterior(self.active[cells], lo, log_pmf, comp, methods, err, nan)

    def closure(self, w: int, c: int, sup: Any, sec: Any) -> list[int]:
        """``c`` and the partners the classical rule then adds around ``w`` and the new cells
        (each of their entries holding one suppressed cell gets its first released cell)."""
        move, queue = [c], [w, c]
        sup[c] = sec[c] = True
        while queue:
            for e in self._row(self.AT, queue.pop()):
                free = self._row(self.A, int(e))
                if np.count_nonzero(sup[free]) == 1 and np.any(~sup[free] & ~self.known[free]):
                    free = free[~sup[free] & ~self.known[free]]
                    p = int(
                        free[np.lexsort((free, self.rank_count[free], self.rank_cost[free]))[0]]
                    )
                    sup[p] = sec[p] = True
                    move.append(p)
                    queue.append(p)
        return move

    def on_large(self, labels: NDArray[np.intp]) -> bool:
        """Some of ``labels`` (component labels, -1 for none) is a large component."""
        if not self.large:
            return False
        return bool(np.isin(labels, np.fromiter(self.large, np.intp, len(self.large))).any())

    def merged(self, move: list[int]) -> NDArray[np.intp]:
        """The component the cells of ``move`` would form with their neighbours'."""
        near = self.label[self.A[self.entries(move)].indices]
        return np.union1d(np.flatnonzero(np.isin(self.label, near[near >= 0])), move)

    def try_cell(self, c: int, w: int, max_states: int | None) -> tuple[Any, ...]:
        """Hide ``c`` tentatively: (key or None if the DP is needed and ``max_states`` is
        None, move, merged component, its exact bounds, evaluated); smaller keys win."""
        sup, sec = self.sup.copy(), self.sec.copy()
        on_large = self.on_large(self.label[self.A[self._row(self.AT, c)].indices])
        self.met_exact |= not on_large
        if self.moves and not on_large:
            move = self.closure(w, c, sup, sec)
        else:
            move = [c]
            sup[c] = sec[c] = True
        det, _ = determined(self.A, self.x, sup, sec, self.h, self.active_box)
        n_det, w_det = int((det & self.needy).sum()), bool(det[w])
        near = self.label[self.A[self.entries(move)].indices]
        cost = float(self.cost[move].sum())
        if self.on_large(near):  # the structural test only
            key = (3, cost, n_det) if not w_det else (4, n_det, cost)
            return key, move, None, None, True
        merged = self.merged(move)
        if w_det:  # w stays determined: its bound is D(x_w) whatever else; no DP yet
            return (2, float(self.d[w]), n_det, merged.size, cost), move, merged, None, False
        if max_states is None:
            return None, move, merged, (cost, merged.size), False
        comp = self._evaluate(merged, sec, max_states)
        if comp is None:
            return (3, cost, n_det), move, merged, None, True
        lw = float(comp.bounds[np.searchsorted(merged, w)])
        n_bad = int(np.count_nonzero(comp.bounds > self.kappa))
        if lw <= self.kappa:
            return (0, cost, n_bad, merged.size, n_det), move, merged, comp, True
        return (2, lw, cost, n_bad, merged.size), move, merged, comp, True

    def step(self, w: int, open_e: Any, n_try: int, max_states: int) -> None:
        """Add the best move for the failing cell ``w`` (module docstring, steps 2-3)."""
        self.lp_det[:] = False  # re-checked by the LP attacker at the next final audit
        comp_w = np.flatnonzero(self.label == self.label[w])
        ents_w, ents_c = self._row(self.AT, w), self.entries(comp_w)
        # the entries determining w, else its component's, else all its component's entries
        for focus in (ents_w[open_e[ents_w]], ents_c[open_e[ents_c]], ents_c):
            cand = np.unique(self.A[focus].indices)
            cand = cand[~self.sup[cand] & ~self.known[cand]]
            if cand.size:
                break
        if cand.size == 0:
            where = tuple(int(i) for i in np.unravel_index(self.active[w], self.table.shape))
            dims = ", ".join(self.table.dims)
            raise InfeasiblePlanError(  # no count: messages get pasted where data must not go
                f"the cell at index {where} of ({dims}) keeps a loss above kappa = "
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
            comp = self._evaluate(merged, self.sec, max_states)
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
            if np.any(
                determined(self.A, self.x, sup, sec, self.h, self.active_box)[0] & self.needy
            ):
                continue
            rest = np.flatnonzero(self.label == lab)
            rest = rest[rest != c]
            lab_r = np.zeros(0, np.intp)
            if rest.size:
                _, lab_r = csgraph.connected_components(self.AT[rest] @ self.AT[rest].T)
            parts = [rest[lab_r == k] for k in np.unique(lab_r)]
            comps = [
                None if was_large and p.size > PRUNE_CHECK else self._evaluate(p, sec, max_states)
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
    """Greedy steps until no cell fails (progress: the failing cells left)."""
    fail, pri, open_e = st.failing()
    if not fail.any():
        return
    left = int(fail.sum())
    with task("planner: cells above the target", total=left) as advance:
        while True:
            if st.iterations >= cap:
                raise InfeasiblePlanError(
                    f"max_iter = {cap} steps reached with {int(fail.sum())} cells above kappa = "
                    f"{st.kappa:g}; raise max_iter or kappa"
                )
            st.step(int(np.argmax(np.where(fail, pri, -np.inf))), open_e, n_try, max_states)
            st.iterations += 1
            fail, pri, open_e = st.failing()
            now = int(fail.sum())
            if now < left:
                advance(left - now)
                left = now
            if not fail.any():
                return
