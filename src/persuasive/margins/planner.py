r"""Secondary suppression checked by the exact audit (issue 5; Bon et al. 2026, beyond Prop 8).

A published table with exact margins lets a Receiver subtract: a cell alone (suppressed) in a
published row is recovered. The planner hides *secondary* cells until every suppressed cell's
relative loss under the small-cell score :math:`L_i^r` meets the target,

.. math:: \Delta_i(S) \le \kappa \quad \text{for every } i \in S, \qquad
          \Delta_i(S) = \infty \ \text{if } i \text{ is disclosed and } x_i < r,

where :math:`S` is the suppression pattern and, otherwise, :math:`\Delta_i` is the exact loss
(:func:`persuasive.margins.losses.cell_losses`) under the given prior, or for a Receiver model
its worst case over the model's audit grid (``worst_case_losses(...).kappa_lower``: exact
posteriors, a *lower* bound on the sup over the model). The proven ``kappa_upper`` of
:func:`~persuasive.margins.losses.worst_case_losses` is :math:`-\log q_i(x_i)` whatever the
pattern, so no suppression can lower it: it is reported, not planned against. The cost of
:math:`S` is the number of secondary cells (``objective="count"``) or their total count
(``objective="total"``).

**Algorithm** (deterministic greedy; no randomness, stable sorts, ties by flat C-order index).

1. *Audit* the primary pattern. While some suppressed cell fails (:math:`\Delta_i > \kappa`):
2. take the worst failing cell ``w`` (largest bound, then smallest index);
3. its *candidates* are the released cells sharing a published margin entry with a cell of
   ``w``'s component, sorted by (cost, most open entries closed, count, index), an *open* entry
   holding exactly one suppressed cell; the ``max_candidates`` first are tried, each by an exact
   audit of the one component adding it creates (a sub-table holding that component: its
   cells' posteriors only depend on it);
4. add the cheapest candidate that brings ``w`` to :math:`\le\kappa` (ties: fewest failing
   cells, then open entries, left in the component); if none does, the one leaving ``w`` with
   the smallest loss (ties: fewest failing cells, open entries, cost);
5. if ``w`` has no candidate left, suppress every cell of every margin entry touching its
   component (the *fallback*); if that adds nothing, refuse with :class:`InfeasiblePlanError`.

The loop adds a cell per step, so it stops within ``n_cells`` steps. The result is certified by
one *full* audit of the final pattern (on the whole table); should it disagree with the local
audits, the loop continues from it. ``certified`` is True only after that audit passes.

**Lower bound.** A suppressed cell alone in a published margin entry is recovered by
subtraction (disclosed, :math:`\Delta_i = \infty`), so every certified pattern holds at least
one more cell of that entry. Entries of one margin are disjoint, so for each margin the number
of such entries (``"count"``), or the sum of their cheapest released cells (``"total"``), bounds the
secondary cost from below; :func:`lower_bound` takes the largest over margins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.margins.constraints import constraint_system, full_incidence
from persuasive.margins.losses import cell_losses, worst_case_losses
from persuasive.margins.posterior import posterior_marginals
from persuasive.margins.table import MarginTable
from persuasive.priors.cells import IndependentCellsPrior
from persuasive.release.receivers import Receiver
from persuasive.results import _json

__all__ = ["InfeasiblePlanError", "SuppressionPlan", "lower_bound", "plan_suppression"]

OBJECTIVES = ("count", "total")


class InfeasiblePlanError(ValidationError):
    """No suppression pattern the planner can reach meets κ (e.g. a zero row total discloses
    every cell of the row whatever is hidden)."""


@dataclass(frozen=True, eq=False)
class SuppressionPlan:
    """A suppression pattern certified (or not) by the exact audit.

    Attributes
    ----------
    table : MarginTable
        The table with the planned pattern (``suppressed``, ``secondary``).
    pattern, secondary : bool ndarray
        All suppressed cells, and the secondary ones (table shape).
    n_primary, n_secondary : int
        Numbers of primary and secondary cells.
    objective : str
        ``"count"`` or ``"total"``; ``objective_value`` is the cost of the secondary cells.
    lower_bound : float
        A proven lower bound on the secondary cost of any certified pattern (:func:`lower_bound`).
    losses : float ndarray
        Certified upper bounds ``kappa_upper`` per cell after planning (0 on released cells).
    kappa : float
        The target.
    certified : bool
        Every suppressed cell has ``losses <= kappa`` by the full exact audit.
    iterations : int
        Greedy steps (cells or fallback blocks added).
    notes : tuple of str
        How the audit was computed (from :func:`~persuasive.margins.worst_case_losses`).
    """

    table: MarginTable
    pattern: NDArray[np.bool_]
    secondary: NDArray[np.bool_]
    n_primary: int
    n_secondary: int
    objective: str
    objective_value: float
    lower_bound: float
    losses: NDArray[np.float64]
    kappa: float
    certified: bool
    iterations: int
    notes: tuple[str, ...] = ()

    @property
    def gap(self) -> float:
        """``objective_value - lower_bound``: how far the plan may be from the optimum."""
        return self.objective_value - self.lower_bound

    def explain(self) -> str:
        """One sentence for a human."""
        what = "cells" if self.objective == "count" else "total count"
        status = "certified" if self.certified else "NOT certified"
        return (
            f"{self.n_secondary} secondary suppressions beside {self.n_primary} primary "
            f"({what} {self.objective_value:g}, proven lower bound {self.lower_bound:g}); every "
            f"suppressed cell's loss <= kappa = {self.kappa:g}: {status} after "
            f"{self.iterations} steps"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (cells as flat C-order indices)."""
        return _json(
            {
                "kappa": self.kappa,
                "objective": self.objective,
                "objective_value": self.objective_value,
                "lower_bound": self.lower_bound,
                "n_primary": self.n_primary,
                "n_secondary": self.n_secondary,
                "secondary_cells": np.flatnonzero(self.secondary.ravel()),
                "max_loss": float(self.losses.max(initial=0.0)),
                "certified": self.certified,
                "iterations": self.iterations,
                "notes": list(self.notes),
            }
        )


# ---------------------------------------------------------------------- validation


def _check(table: Any, receiver: Any, kappa: Any, objective: Any) -> tuple[float, str]:
    if not isinstance(table, MarginTable):
        raise ValidationError(
            f"table must be a persuasive.margins.MarginTable; got {type(table).__name__}"
        )
    if isinstance(receiver, IndependentCellsPrior):
        if receiver.dim != table.n_cells:
            raise ValidationError(
                f"receiver prior must have one cell per table cell ({table.n_cells}, C order); "
                f"got {receiver.dim}"
            )
    elif not isinstance(receiver, Receiver):
        raise ValidationError(
            "receiver must be a Receiver model (SmallCellReceiver, PoissonReceiver or "
            "NegativeBinomialReceiver) or an IndependentCellsPrior over the cells; got "
            f"{type(receiver).__name__}"
        )
    k = v.real("kappa", kappa, low=0.0)
    obj = v.choice("objective", objective, OBJECTIVES)
    return k, obj


def _costs(table: MarginTable, objective: str) -> NDArray[np.float64]:
    c = table.counts.ravel().astype(np.float64)
    return np.ones_like(c) if objective == "count" else c


# ---------------------------------------------------------------------- audits


Model = Receiver | IndependentCellsPrior


def _audit(
    table: MarginTable, model: Model, r: int | None, grid: int
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """The planner's per-cell loss (flat, C order; 0 on released cells): ∞ on a disclosed cell
    below r, else the exact loss (one prior) or its worst case over the model's audit grid."""
    r_ = table.h if r is None else r
    if not table.suppressed.any():
        return np.zeros(table.n_cells), ("nothing suppressed: nothing to audit",)
    small = table.suppressed.ravel() & (table.counts.ravel() < r_)
    if isinstance(model, IndependentCellsPrior):
        post = posterior_marginals(table, model, rng=0)  # seeded if a component needs MCMC
        c = cell_losses(table, model, r=r_, posterior=post)
        loss, disc = c.small_cell.ravel(), c.disclosed.ravel()
        notes: tuple[str, ...] = (
            f"exact losses under the given prior ({'exact' if c.exact else 'MCMC'} posterior)",
        )
    else:
        w = worst_case_losses(table, model, r=r_, grid=grid)
        loss, disc = w.kappa_lower.ravel(), w.disclosed.ravel()
        notes = (
            "loss: worst exact loss over the model's audit grid (worst_case_losses.kappa_lower);"
            " the proven bound kappa_upper is -log q_i(x_i) whatever the pattern",
            *w.notes,
        )
    out = np.where(small & disc, math.inf, np.where(table.suppressed.ravel(), loss, 0.0))
    return np.where(np.isnan(out), math.inf, out), notes


def _restrict(model: Model, flat: NDArray[np.intp]) -> Model:
    if isinstance(model, IndependentCellsPrior):
        return IndependentCellsPrior([model.cells[i] for i in flat])
    return model


def _component_cells(table: MarginTable, cell: int) -> NDArray[np.intp]:
    """Flat indices of the suppressed cells in the constraint component of ``cell``."""
    cs = constraint_system(table)
    pos = int(np.searchsorted(cs.cells, cell))
    return np.asarray(cs.cells[cs.labels == cs.labels[pos]], dtype=np.intp)


def _local_audit(
    table: MarginTable, cell: int, receiver: Model, r: int | None, grid: int
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Exact bounds of the component of ``cell``, audited on the sub-box holding it.

    Every margin entry touching the component keeps, inside the box, all of its suppressed
    cells (they are in the component), so the residuals, supports and hence the posterior of the
    component are those of the full table.
    """
    comp = _component_cells(table, cell)
    coords = np.unravel_index(comp, table.shape)
    box = np.ix_(*(np.unique(c) for c in coords))
    if all(len(ax.ravel()) == n for ax, n in zip(box, table.shape, strict=True)):
        up, _ = _audit(table, receiver, r, grid)
        return comp, up[comp]
    sub = MarginTable(
        table.counts[box],
        h=table.h,
        margins=table.margins,
        dims=table.dims,
        suppressed=table.suppressed[box],
        secondary=table.secondary[box],
    )
    box_flat = np.ravel_multi_index(
        np.meshgrid(*(np.unique(c) for c in coords), indexing="ij"), table.shape
    ).ravel()
    up_sub, _ = _audit(sub, _restrict(receiver, box_flat), r, grid)
    local = [np.searchsorted(np.unique(c), c) for c in coords]
    return comp, up_sub[np.ravel_multi_index(tuple(local), sub.shape)]


# ---------------------------------------------------------------------- structure


def _entries(table: MarginTable) -> Any:
    """The published-entry × cell incidence (CSR) and its transpose (CSC views)."""
    A, _ = full_incidence(table)
    return A.tocsr(), A.T.tocsr()


def _touching(cells: NDArray[np.intp], A: Any, AT: Any) -> tuple[Any, Any]:
    """The published entries touching ``cells`` and the cells of those entries (sorted)."""
    parts = [AT.indices[AT.indptr[i] : AT.indptr[i + 1]] for i in cells]
    ents = np.unique(np.concatenate([*parts, np.zeros(0, np.intp)]))
    parts = [A.indices[A.indptr[e] : A.indptr[e + 1]] for e in ents]
    return ents, np.unique(np.concatenate([*parts, np.zeros(0, np.intp)]))


def _open(sup: NDArray[np.bool_], A: Any) -> NDArray[np.bool_]:
    """Entries holding exactly one suppressed cell (recovered by subtraction)."""
    return np.asarray(A @ sup.astype(np.int64)) == 1


def _candidates(
    comp: NDArray[np.intp],
    sup: NDArray[np.bool_],
    A: Any,
    AT: Any,
    cost: NDArray[np.float64],
    key: NDArray[np.int64],
) -> NDArray[np.intp]:
    """Released cells sharing a published entry with the component ``comp``: cheapest first,
    then those closing most open entries (classical partners), then by (count, index)."""
    _, cells = _touching(comp, A, AT)
    cells = cells[~sup[cells]]
    if cells.size == 0:
        return cells
    n_open = np.asarray(AT[cells] @ _open(sup, A).astype(np.int64)).ravel()
    return cells[np.lexsort((key[cells], -n_open, cost[cells]))]


def lower_bound(table: MarginTable, objective: str = "count", r: int | None = None) -> float:
    """Covering lower bound on the secondary cost of any pattern the planner could certify.

    A suppressed cell below r alone in a published margin entry is recovered by subtraction
    (disclosed: loss ∞), so every certified pattern holds one more cell of that entry. Entries
    of one margin are disjoint and each needs its own new cell.

    Parameters
    ----------
    table : MarginTable
        The table with its primary pattern.
    objective : {"count", "total"}
        Cost of a cell: 1, or its count.
    r : int, optional
        Score threshold (default h).

    Returns
    -------
    float
        :math:`\\max_m \\sum_{e} \\min_{j \\in e \\setminus S} c_j` over the published
        margins m, the sum over the entries e of m whose only suppressed cell is below r.

    Examples
    --------
    >>> t = MarginTable([[1, 5, 7], [6, 8, 9]], h=3, margins="rows,cols")
    >>> lower_bound(t), lower_bound(t, "total")
    (1.0, 6.0)
    """
    obj = v.choice("objective", objective, OBJECTIVES)
    r_ = table.h if r is None else v.integer("r", r, low=1)
    cost = _costs(table, obj)
    sup = table.suppressed.ravel()
    fails = table.counts.ravel() < r_
    coords = np.indices(table.shape).reshape(table.counts.ndim, -1)
    best = 0.0
    for m in table.margins:
        sub_shape = tuple(table.shape[a] for a in m)
        n_e = int(np.prod(sub_shape, dtype=np.int64))
        e = np.asarray(
            np.ravel_multi_index(coords[list(m)], sub_shape) if m else np.zeros(sup.size, np.intp)
        )
        n_sup = np.bincount(e, weights=sup, minlength=n_e)
        n_fail = np.bincount(e, weights=sup & fails, minlength=n_e)
        cheapest = np.full(n_e, np.inf)
        np.minimum.at(cheapest, e[~sup], cost[~sup])
        need = (n_sup == 1) & (n_fail == 1)
        best = max(best, float(cheapest[need].sum()))
    return best


# ---------------------------------------------------------------------- planner


def _choose(
    table: MarginTable,
    w: int,
    cands: NDArray[np.intp],
    kappa: float,
    cost: NDArray[np.float64],
    receiver: Model,
    r: int | None,
    grid: int,
    A: Any,
    AT: Any,
) -> tuple[int, NDArray[np.intp], NDArray[np.float64]]:
    """Try the candidates in order; return (chosen cell, its component, component bounds)."""
    best: tuple[Any, ...] | None = None
    for rank, c in enumerate(cands):
        sup = table.suppressed.copy()
        sup.flat[c] = True
        sec = table.secondary.copy()
        sec.flat[c] = table.counts.flat[c] >= table.h
        comp, up = _local_audit(table.with_suppressed(sup, sec), int(w), receiver, r, grid)
        lw = float(up[np.searchsorted(comp, w)])
        n_bad = int(np.count_nonzero(up > kappa))
        ents, _ = _touching(comp, A, AT)
        n_open = int(np.count_nonzero(_open(sup.ravel(), A)[ents]))
        # fixers of w: cheapest, then fewest failing cells / open entries left;
        # else: smallest bound on w, fewest failing cells, fewest open entries, cheapest
        if lw <= kappa:
            key: tuple[Any, ...] = (0, 0.0, cost[c], n_bad, n_open, rank)
        else:
            key = (1, lw, n_bad, n_open, cost[c], rank)
        if best is None or key < best[0]:
            best = (key, int(c), comp, up)
        if lw <= kappa and n_bad == 0:
            break  # the cheapest candidate fixing the whole component: nothing cheaper later
    assert best is not None
    return best[1], best[2], best[3]


def plan_suppression(
    table: MarginTable,
    receiver: Model,
    kappa: float,
    *,
    r: int | None = None,
    objective: str = "count",
    max_candidates: int = 8,
    grid: int = 3,
    max_iter: int | None = None,
) -> SuppressionPlan:
    r"""Choose secondary suppressions so that every suppressed cell's certified loss is <= κ.

    See the module docstring for the algorithm and its guarantee: the returned pattern is
    certified by the full exact audit whenever ``certified`` is True; otherwise
    :class:`InfeasiblePlanError` is raised (the result is never silently uncertified).

    Parameters
    ----------
    table : MarginTable
        The table, its published margins and its primary pattern (usually ``counts < h``).
    receiver : Receiver
        The Receiver model (prior class) of :mod:`persuasive.release.receivers`.
    kappa : float
        Target bound on every suppressed cell's relative loss, ``kappa >= 0``.
    r : int, optional
        Score threshold of :math:`L^r` (default h).
    objective : {"count", "total"}
        Minimise the number of secondary cells, or their total count.
    max_candidates : int
        How many of the cheapest candidates are audited per step (>= 1).
    grid : int
        Passed to :func:`~persuasive.margins.worst_case_losses`.
    max_iter : int, optional
        Cap on greedy steps (default: the number of cells).

    Returns
    -------
    SuppressionPlan

    Raises
    ------
    ValidationError
        Bad arguments (naming the argument, its value and what is allowed).
    InfeasiblePlanError
        No pattern reachable by the planner (up to hiding whole margin entries) meets κ.

    Examples
    --------
    >>> from persuasive.release.receivers import PoissonReceiver
    >>> t = MarginTable([[1, 9, 8], [7, 6, 9], [8, 9, 7]], h=3, margins="rows,cols")
    >>> plan = plan_suppression(t, PoissonReceiver(1, 5), kappa=5.0)
    >>> plan.certified, plan.n_secondary >= plan.lower_bound
    (True, True)
    """
    kap, obj = _check(table, receiver, kappa, objective)
    m_c = v.integer("max_candidates", max_candidates, low=1)
    cap = table.n_cells if max_iter is None else v.integer("max_iter", max_iter, low=0)
    cost = _costs(table, obj)
    order = np.lexsort((np.arange(table.n_cells), table.counts.ravel(), cost))
    key = np.empty(table.n_cells, dtype=np.int64)
    key[order] = np.arange(table.n_cells)
    A, AT = _entries(table)
    primary = table.suppressed.copy()

    up, notes = _audit(table, receiver, r, grid)
    lb = lower_bound(table, obj, r)
    cur, it, fresh = table, 0, True
    while True:
        bad = cur.suppressed.ravel() & (up > kap)
        if not bad.any():
            if fresh:
                break
            up, notes = _audit(cur, receiver, r, grid)  # certify on the whole table
            fresh = True
            continue
        if it >= cap:
            raise InfeasiblePlanError(
                f"max_iter = {cap} steps reached with {int(bad.sum())} cells above kappa = "
                f"{kap:g}; raise max_iter or kappa"
            )
        w = int(np.argmax(np.where(bad, up, -np.inf)))  # worst; first index on ties
        comp_w = _component_cells(cur, w)
        cands = _candidates(comp_w, cur.suppressed.ravel(), A, AT, cost, key)[:m_c]
        it += 1
        fresh = False
        if cands.size:
            c, comp, comp_up = _choose(cur, w, cands, kap, cost, receiver, r, grid, A, AT)
            sup, sec = cur.suppressed.copy(), cur.secondary.copy()
            sup.flat[c] = True
            sec.flat[c] = cur.counts.flat[c] >= cur.h
            cur = cur.with_suppressed(sup, sec)
            up = up.copy()
            up[comp] = comp_up
            continue
        # fallback: hide every cell of every published entry touching w's component
        _, block = _touching(comp_w, A, AT)
        new = np.zeros(table.n_cells, bool)
        new[block] = True
        new &= ~cur.suppressed.ravel()
        if not new.any():
            worst = np.flatnonzero(bad)[:5]
            raise InfeasiblePlanError(
                f"no suppression pattern meets kappa = {kap:g}: cells "
                f"{[tuple(int(a) for a in np.unravel_index(i, table.shape)) for i in worst]} "
                f"keep losses "
                f"{up[worst].tolist()} even with their whole margin entries hidden (e.g. a zero "
                "total discloses its cells); raise kappa, publish fewer margins or widen the "
                "Receiver model"
            )
        sup = cur.suppressed | new.reshape(table.shape)
        cur = cur.with_suppressed(sup, sup & ~primary & (cur.counts >= cur.h))
        up, notes = _audit(cur, receiver, r, grid)
        fresh = True
    sec = cur.secondary | (cur.suppressed & ~primary)
    return SuppressionPlan(
        table=cur,
        pattern=cur.suppressed.copy(),
        secondary=sec,
        n_primary=int(primary.sum()),
        n_secondary=int(sec.sum()),
        objective=obj,
        objective_value=float(cost[sec.ravel()].sum()),
        lower_bound=lb,
        losses=up.reshape(table.shape),
        kappa=kap,
        certified=True,
        iterations=it,
        notes=notes,
    )
