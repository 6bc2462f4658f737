r"""Structure of a suppression pattern: exposed entries, the classical rule, the lower bound.

A published margin entry :math:`e` (cells :math:`C_e`) tells the Receiver
:math:`\sum_{i \in C_e \cap S} y_i = b_e`, with :math:`S` the suppressed cells. Every cell of the
entry is then *determined* (disclosed whatever the prior) when the entry is **exposed**:

.. math:: |C_e \cap S| = 1, \qquad b_e = \sum_{i \in C_e\cap S} \ell_i, \qquad\text{or}\qquad
          C_e \cap S \text{ primary and } b_e = (h-1)\,|C_e \cap S|,

with :math:`\ell_i = 0` (primary) or h (secondary): the residual sits at an end of the box
:math:`\prod_i [\ell_i, u_i]` (:math:`u_i \le h-1` for a primary cell). The three conditions only
involve the entry itself, so an exposed entry stays exposed until one of its released cells is
suppressed (the basis of :func:`lower_bound`). Determined cells are known, so subtracting them
may expose further entries: :func:`determined` propagates this to a fixed point (every cell it
finds is also pinned down by the LP attacker). A disclosed cell below r loses :math:`D_i` (the
log-loss of its prior at :math:`x_i`, :math:`B(x_i)` over a Receiver model); it *needs
protection* when :math:`D_i > \kappa`.

**Classical rule** (Hundepool et al., *Statistical Disclosure Control*, Wiley 2012, secondary
cell suppression; the partner rule of τ-Argus and sdcTable): no published entry may hold
exactly one suppressed cell.
:func:`classical_pattern` applies it to every published margin: while some entry (first in
margin order, then entry index) holds one suppressed cell, hide its released cell with the
smallest count (ties: smallest flat C-order index). :func:`compare` audits that pattern exactly
and sets it beside :func:`~persuasive.margins.planner.plan_suppression`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import linprog

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.margins.constraints import full_incidence
from persuasive.margins.posterior import (
    MAX_DP_STATES,
    MarginPosterior,
    cell_log_grid,
    posterior_marginals,
)
from persuasive.margins.table import MarginTable
from persuasive.margins.worst import WorstCaseLosses, surprise, worst_case_losses
from persuasive.priors.cells import IndependentCellsPrior
from persuasive.release.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    SmallCellReceiver,
)
from persuasive.results import _json

if TYPE_CHECKING:
    from persuasive.margins.planner import SuppressionPlan

__all__ = ["ClassicalPattern", "Comparison", "classical_pattern", "compare", "lower_bound"]

OBJECTIVES = ("count", "total")
BOUNDS = ("table", "publication")

#: A Receiver model of the log-linear class, or one fixed prior over the cells.
Model = PoissonReceiver | NegativeBinomialReceiver | SmallCellReceiver | IndependentCellsPrior


def check_table(table: Any) -> MarginTable:
    if not isinstance(table, MarginTable):
        raise ValidationError(
            f"table must be a persuasive.margins.MarginTable; got {type(table).__name__} "
            "(build one with MarginTable(counts, h=..., margins='rows,cols'))"
        )
    return table


def check_arguments(
    table: Any, receiver: Any, kappa: Any, objective: Any, bound: Any, r: Any
) -> tuple[float, str, str, Model, int]:
    """Validate the planner's / comparison's arguments (each message names the argument)."""
    check_table(table)
    if isinstance(receiver, SmallCellReceiver) and table.margins:
        raise ValidationError(
            f"receiver = {receiver!r} is refused: under its class C^(h,alpha) every suppressed "
            "cell below r has kappa = inf once a margin is published (point-mass priors of its "
            "partners are in the class and disclose it; see persuasive.margins.worst), so no "
            "pattern meets a finite kappa. Use PoissonReceiver or NegativeBinomialReceiver"
        )
    if isinstance(receiver, IndependentCellsPrior):
        if receiver.n != table.n_cells:
            raise ValidationError(
                f"receiver: an IndependentCellsPrior needs one cell per table cell "
                f"({table.n_cells}, C order); got {receiver.n}"
            )
    elif not isinstance(receiver, (PoissonReceiver, NegativeBinomialReceiver, SmallCellReceiver)):
        raise ValidationError(
            "receiver must be a PoissonReceiver, a NegativeBinomialReceiver or an "
            f"IndependentCellsPrior over the cells; got {type(receiver).__name__}"
        )
    kap = v.real("kappa", kappa, low=0.0)
    obj = v.choice("objective", objective, OBJECTIVES)
    bnd = v.choice("bound", bound, BOUNDS)
    r_ = table.h if r is None else v.integer("r", r, low=1, high=table.h)
    return kap, obj, bnd, receiver, r_


def disclosure_loss(model: Model, values: Any) -> NDArray[np.float64]:
    r"""Loss of a disclosed cell at its value (flat): :math:`B(x_i)` or :math:`-\log q_i(x_i)`."""
    vals = np.asarray(values)
    if isinstance(model, IndependentCellsPrior):
        return -model.logpmf_cells(vals.astype(np.float64))
    return surprise(model, vals)[0]


def disclosure_grid(
    model: Model, cells: NDArray[np.intp], lo: NDArray[np.int64], width: int
) -> NDArray[np.float64]:
    """``out[k, j]``: the disclosure loss of cell ``cells[k]`` at value ``lo[k] + j``."""
    if isinstance(model, IndependentCellsPrior):
        return -cell_log_grid(model, cells, lo, width)
    return surprise(model, lo[:, None] + np.arange(width)[None, :])[0]


def audit(
    table: MarginTable,
    model: Model,
    r: int,
    *,
    max_states: int = MAX_DP_STATES,
    rng: Any = 0,
    posterior: MarginPosterior | None = None,
) -> WorstCaseLosses:
    """The exact audit of a pattern: :func:`~persuasive.margins.worst_case_losses` for a
    Receiver model; for one prior, the same fields with the sup over the class {Q}."""
    if not isinstance(model, IndependentCellsPrior) and posterior is None:
        return worst_case_losses(table, model, r=r, max_states=max_states, rng=rng)
    if posterior is None and table.suppressed.any():
        assert isinstance(model, IndependentCellsPrior)
        posterior = posterior_marginals(table, model, max_states=max_states, rng=rng)
    n, x, sup = table.n_cells, table.counts.ravel(), table.suppressed.ravel()
    d = disclosure_loss(model, x)
    upper, lower, pub, est = (np.zeros(n) for _ in range(4))
    log_up = np.where(sup, 0.0, d)
    disclosed, certified = np.zeros(n, bool), np.ones(n, bool)
    witness = np.full(n, math.nan)
    notes = ["exact audit under the one given prior (kappa_lower = kappa_upper = its loss)"]
    if isinstance(model, IndependentCellsPrior):
        model_d: dict[str, Any] = {"model": "independent cells prior", "n_cells": n}
    else:
        model_d = model.describe()
        notes = [
            "class log-linear in the margins: one posterior (sufficiency), planner's exact DP "
            "per component (the final full audit was not run)"
        ]
    if posterior is not None and posterior.cells.size:
        c, lp = posterior.cells, posterior.log_pmf
        ex = np.array([m == "exact-dp" for m in posterior.methods], bool)[posterior.component]
        grid = posterior.lo[:, None] + np.arange(lp.shape[1])[None, :]
        s_grid = disclosure_grid(model, c, posterior.lo, lp.shape[1])
        lp_true, s_true = posterior.log_prob_of(x[c]), d[c]
        with np.errstate(invalid="ignore"):
            val_log = np.where(np.isinf(s_true) & np.isneginf(lp_true), 0.0, lp_true + s_true)
            pub_x = np.max(np.where(np.isfinite(lp) & (grid < r), lp + s_grid, -np.inf), axis=1)
        val = np.where(x[c] < r, val_log, 0.0)
        small = x[c] < r
        fall = np.where(x[c] < table.h, np.max(s_grid[:, :r], axis=1), 0.0)
        upper[c] = np.where(ex, val, np.where(small, s_true, 0.0))
        lower[c] = np.where(ex, val, 0.0)
        est[c] = np.where(np.isfinite(lp).any(axis=1), val, math.nan)  # nan: not computed
        pub[c] = np.where(ex, np.maximum(pub_x, 0.0), fall)
        log_up[c] = np.where(ex, val_log, s_true)
        disclosed[c], certified[c] = posterior.disclosed, ex
        if not isinstance(model, IndependentCellsPrior):
            witness[c] = np.where(small, surprise(model, x[c])[1], math.nan)
        if not ex.all():
            notes.append(
                f"{int((~ex).sum())} suppressed cells lie in components too large for the exact "
                "DP: not certified; kappa_upper there is the proven disclosure loss D(x_i)"
            )
    s = table.shape
    return WorstCaseLosses(
        kappa_lower=lower.reshape(s),
        kappa_upper=np.maximum(upper, lower).reshape(s),
        kappa_published=np.maximum(pub, upper).reshape(s),
        estimate=est.reshape(s),
        log_upper=log_up.reshape(s),
        disclosed=disclosed.reshape(s),
        certified=certified.reshape(s),
        witness_mean=witness.reshape(s),
        posterior=posterior,
        model=model_d,
        score="small_cell",
        notes=tuple(notes),
    )


def bound_of(worst: WorstCaseLosses, bound: str) -> NDArray[np.float64]:
    """The planned-against per-cell bound (flat)."""
    return (worst.kappa_published if bound == "publication" else worst.kappa_upper).ravel()


def costs(table: MarginTable, objective: str) -> NDArray[np.float64]:
    """Cost of hiding each cell (flat): 1 (``"count"``) or its count (``"total"``)."""
    c = table.counts.ravel().astype(np.float64)
    return np.ones_like(c) if objective == "count" else c


def exposed(
    A: sparse.csr_array,
    x: NDArray[np.int64],
    sup: NDArray[np.bool_],
    sec: NDArray[np.bool_],
    h: int,
) -> NDArray[np.bool_]:
    """Exposed entries (rows of the entry x cell incidence ``A``): see the module docstring."""
    n_sup = A @ sup.astype(np.int64)
    res = A @ np.where(sup, x, 0)
    n_sec = A @ sec.astype(np.int64)
    tight = (res == h * n_sec) | ((n_sec == 0) & (res == (h - 1) * n_sup))
    return (n_sup >= 1) & ((n_sup == 1) | tight)


def determined(
    A: sparse.csr_array,
    x: NDArray[np.int64],
    sup: NDArray[np.bool_],
    sec: NDArray[np.bool_],
    h: int,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Cells determined by propagation, and the entries that determined them: an exposed entry
    determines its cells, which are then known and subtracted from their other entries, which
    may become exposed in turn (a lone cell's partner alone in its column, ...)."""
    det = np.zeros(x.size, dtype=bool)
    used = np.zeros(A.shape[0], dtype=bool)
    while True:
        ex = exposed(A, x, sup & ~det, sec & ~det, h)
        new = sup & ~det & (np.asarray(A.T @ ex.astype(np.int64)) > 0)
        used |= ex
        if not new.any():
            return det, used
        det |= new


def cover_rows(table: MarginTable, needy: NDArray[np.bool_]) -> tuple[Any, NDArray[np.intp]]:
    """Incidence, and the exposed entries of the current pattern holding a needy cell."""
    A, _ = full_incidence(table)
    A = A.tocsr()
    sup = table.suppressed.ravel()
    ex = exposed(A, table.counts.ravel(), sup, table.secondary.ravel(), table.h)
    return A, np.flatnonzero(ex & (A @ (needy & sup).astype(np.int64) > 0))


def covering_bound(
    table: MarginTable, cost: NDArray[np.float64], needy: NDArray[np.bool_]
) -> float:
    """The lower bound of :func:`lower_bound` for given costs and needy cells (flat)."""
    A, rows = cover_rows(table, needy)
    free = ~table.suppressed.ravel()
    M = A[rows][:, np.flatnonzero(free)].tocsr()
    if rows.size == 0:
        return 0.0
    if np.any(np.diff(M.indptr) == 0):
        return math.inf  # an exposed entry with nothing left to hide: no pattern protects it
    c = cost[free]
    # entries of one margin are disjoint: each needs its own cell, at least its cheapest
    cheapest = np.minimum.reduceat(c[M.indices], M.indptr[:-1])
    sizes = [int(np.prod([table.shape[a] for a in m])) for m in table.margins]
    margin = np.searchsorted(np.cumsum(sizes), rows, side="right")
    per_margin = float(np.bincount(margin, weights=cheapest).max())
    used = np.unique(M.indices)
    Mu, cu = M[:, used], c[used]
    res = linprog(cu, A_ub=-Mu, b_ub=-np.ones(rows.size), bounds=(0, None), method="highs")
    lp = 0.0
    if res.status == 0:  # weak duality: a feasible dual point bounds the LP (and every pattern)
        y = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0)
        load = np.asarray(Mu.T @ y) / cu
        lp = float(y.sum() / max(1.0, float(load.max(initial=0.0))))
    return float(math.ceil(max(per_margin, lp) - 1e-9))  # costs are integers


def lower_bound(table: MarginTable, objective: str = "count", r: int | None = None) -> float:
    r"""Proven lower bound on the secondary cost of any pattern leaving no cell below r disclosed.

    Every exposed entry :math:`e \in E` (module docstring) holding a suppressed cell below r
    stays exposed, and discloses that cell, unless one of its released cells :math:`R_e` is
    hidden. So the indicator :math:`z` of the secondary cells of any such pattern is feasible for
    the covering LP

    .. math:: \min_z \sum_j c_j z_j \quad\text{s.t.}\quad \sum_{j \in R_e} z_j \ge 1
              \ (e \in E), \qquad 0 \le z \le 1,

    and its cost is at least the LP's value, which is at least :math:`\sum_e y_e` for any dual
    point :math:`y \ge 0` with :math:`\sum_{e \ni j} y_e \le c_j` (weak duality; the solver's dual
    is scaled back into that set, so the bound does not rely on its tolerance). The entries of
    one margin are disjoint, so :math:`\max_m \sum_{e \in E_m} \min_{j\in R_e} c_j` is a bound
    too (Bon et al. 2026, issue 5); the larger is returned, rounded up (costs are integers). An
    exposed entry with no released cell gives ∞: no pattern exists.

    Parameters
    ----------
    table : MarginTable
        The table with its (primary) pattern.
    objective : {"count", "total"}
        Cost of a cell: 1, or its count.
    r : int, optional
        Score threshold, ``1 <= r <= h`` (default h).

    Examples
    --------
    >>> t = MarginTable([[1, 5, 7], [6, 8, 9]], h=3, margins="rows,cols")
    >>> lower_bound(t), lower_bound(t, "total")   # the 1 needs a partner in its row AND column
    (2.0, 11.0)
    """
    check_table(table)
    obj = v.choice("objective", objective, OBJECTIVES)
    r_ = table.h if r is None else v.integer("r", r, low=1, high=table.h)
    needy = table.counts.ravel() < r_
    sec = costs(table, obj)[table.secondary.ravel()].sum()
    return float(sec) + covering_bound(table, costs(table, obj), needy)


@dataclass(frozen=True, eq=False)
class ClassicalPattern:
    """The classical partner-rule pattern.

    Attributes
    ----------
    table : MarginTable
        The table with the classical pattern.
    secondary : bool ndarray
        Cells hidden by the rule (table shape).
    n_secondary : int
        Their number.
    unprotectable : tuple of int
        Flat indices of suppressed cells alone in an entry with no released cell to add.
    """

    table: MarginTable
    secondary: NDArray[np.bool_]
    n_secondary: int
    unprotectable: tuple[int, ...] = ()


def classical_pattern(table: MarginTable) -> ClassicalPattern:
    """Apply the classical partner rule (smallest count first, ties by flat index).

    Examples
    --------
    >>> t = MarginTable([[1, 5, 7], [6, 8, 9]], h=3, margins="rows,cols")
    >>> classical_pattern(t).table.suppressed.astype(int).tolist()
    [[1, 1, 0], [1, 1, 0]]
    """
    check_table(table)
    A, _ = full_incidence(table)
    A = A.tocsr()
    counts = table.counts.ravel()
    sup = table.suppressed.ravel().copy()
    stuck: set[int] = set()
    while True:
        n_sup = A @ sup.astype(np.int64)
        singles = [int(e) for e in np.flatnonzero(n_sup == 1) if int(e) not in stuck]
        if not singles:
            break
        for e in singles:
            cells = A.indices[A.indptr[e] : A.indptr[e + 1]]
            if np.count_nonzero(sup[cells]) != 1:
                continue  # fixed meanwhile by a partner added for another entry
            free = cells[~sup[cells]]
            if free.size == 0:
                stuck.add(e)
                continue
            sup[free[np.lexsort((free, counts[free]))[0]]] = True
    unprot = sorted(
        {int(c) for e in stuck for c in A.indices[A.indptr[e] : A.indptr[e + 1]] if sup[c]}
    )
    mask = sup.reshape(table.shape)
    added = mask & ~table.suppressed
    new = table.with_suppressed(mask, table.secondary | added)
    return ClassicalPattern(new, added, int(added.sum()), tuple(unprot))


@dataclass(frozen=True, eq=False)
class Comparison:
    """The classical pattern and the planner's, audited exactly at the same κ.

    Attributes
    ----------
    kappa, objective : float, str
        The target and the cost (``"count"``: 1 per secondary cell, ``"total"``: its count).
    classical : ClassicalPattern
        The partner-rule pattern.
    classical_worst : WorstCaseLosses
        Its exact audit.
    classical_above : tuple of tuple of int
        Suppressed cells (table indices, sorted) of *exact* components whose bound exceeds κ: the
        classical pattern provably leaves them above κ.
    classical_cost : float
        Its secondary cost.
    ours : SuppressionPlan or None
        The planner's pattern (None if it refused: see ``ours_error``).
    ours_error : str
        The planner's refusal, if any.
    bound : str
        ``"table"`` (``kappa_upper``) or ``"publication"`` (``kappa_published``).
    """

    kappa: float
    objective: str
    classical: ClassicalPattern
    classical_worst: WorstCaseLosses
    classical_above: tuple[tuple[int, ...], ...]
    classical_cost: float
    ours: SuppressionPlan | None
    ours_error: str = ""
    bound: str = "table"

    @property
    def classical_losses(self) -> NDArray[np.float64]:
        """The classical pattern's planned-against bound per cell (0 on released cells)."""
        w = self.classical_worst
        return w.kappa_published if self.bound == "publication" else w.kappa_upper

    @property
    def classical_uncertified(self) -> int:
        """Suppressed cells of the classical pattern in components the DP cannot compute."""
        return int((self.classical.table.suppressed & ~self.classical_worst.certified).sum())

    def explain(self) -> str:
        """One paragraph for a human."""
        first = (
            f"Classical partner rule: {self.classical.n_secondary} secondary cells (cost "
            f"{self.classical_cost:g}), {len(self.classical_above)} cells provably above kappa "
            f"= {self.kappa:g}, {self.classical_uncertified} in components too large for the "
            "exact audit"
        )
        if self.ours is None:
            return f"{first}; planner refused: {self.ours_error}"
        return f"{first}; planner: {self.ours.explain()}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return _json(
            {
                "kappa": self.kappa,
                "objective": self.objective,
                "bound": self.bound,
                "classical": {
                    "n_secondary": self.classical.n_secondary,
                    "cost": self.classical_cost,
                    "above_kappa": [list(c) for c in self.classical_above],
                    "uncertified": self.classical_uncertified,
                    "max_loss": float(self.classical_losses.max(initial=0.0)),
                },
                "ours": None if self.ours is None else self.ours.to_dict(),
                "ours_error": self.ours_error,
            }
        )


def compare(
    table: MarginTable,
    receiver: Any,
    kappa: float,
    *,
    r: int | None = None,
    objective: str = "count",
    bound: str = "table",
    **planner: Any,
) -> Comparison:
    """Audit the classical pattern exactly and set it beside the planner's.

    Parameters
    ----------
    table, receiver, kappa, r, objective, bound
        As for :func:`~persuasive.margins.planner.plan_suppression` (validated there).
    **planner
        Further options of the planner (``max_states`` and ``rng`` also drive the classical
        pattern's audit).

    Examples
    --------
    >>> from persuasive.release.receivers import PoissonReceiver
    >>> t = MarginTable([[0, 0, 9], [7, 8, 6], [9, 7, 8]], h=3, margins="rows,cols")
    >>> c = compare(t, PoissonReceiver(1, 10), kappa=7.0)
    >>> c.classical_above                 # partners of each other, but their row sum is 0
    ((0, 0), (0, 1))
    >>> c.classical.n_secondary, c.ours.n_secondary, c.ours.certified
    (4, 5, True)
    """
    # the planner builds on this module: import it here, not at the top (no import cycle)
    from persuasive.margins import planner as pl

    kap, obj, bnd, model, r_ = check_arguments(table, receiver, kappa, objective, bound, r)
    cl = classical_pattern(table)
    audit_opts = {k: planner[k] for k in ("max_states", "rng") if k in planner}
    worst = audit(cl.table, model, r_, **audit_opts)
    losses = bound_of(worst, bnd)
    sup = cl.table.suppressed.ravel()
    above = np.flatnonzero(sup & worst.certified.ravel() & (losses > kap))
    cells = tuple(tuple(int(i) for i in np.unravel_index(c, table.shape)) for c in above)
    cost = float(costs(table, obj)[cl.table.secondary.ravel()].sum())
    try:
        ours = pl.plan_suppression(table, receiver, kap, r=r, objective=obj, bound=bnd, **planner)
        err = ""
    except pl.InfeasiblePlanError as exc:
        ours, err = None, str(exc)
    return Comparison(kap, obj, cl, worst, cells, cost, ours, err, bnd)
