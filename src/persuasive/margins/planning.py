r"""Shared primitives of secondary suppression (issue 5; Bon et al. 2026): argument checks, the
exact audit of a pattern, structural disclosure (cells the published margins pin down) and the
proven lower bounds on the cost of any protecting pattern. Used by
:mod:`persuasive.margins.classical` and :mod:`persuasive.margins.planner`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import linprog

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    SmallCellReceiver,
)
from persuasive.errors import ValidationError
from persuasive.margins.apriori import box_surprise, prior_box_mass
from persuasive.margins.constraints import full_incidence
from persuasive.margins.posterior import (
    MAX_DP_STATES,
    MarginPosterior,
    cell_log_grid,
    posterior_marginals,
)
from persuasive.margins.table import MarginTable
from persuasive.margins.worst import (
    WorstCaseLosses,
    _common_prior,
    by_switching,
    posterior_fields,
    surprise,
    switching_grid,
    worst_case_losses,
)
from persuasive.priors.cells import IndependentCellsPrior


class InfeasiblePlanError(ValidationError):
    """No pattern the planner reaches meets κ (proven when an exposed entry has nothing left to
    hide, e.g. a zero total; otherwise the message says a pattern may still exist)."""


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
    r_ = table.h if r is None else v.integer("r", r, low=dm.R_MIN, high=table.h)
    return kap, obj, bnd, receiver, r_


def disclosure_loss(model: Model, values: Any, box: Any = None) -> NDArray[np.float64]:
    r"""Loss of a disclosed cell at its value (flat, every cell): :math:`B(x_i)` or
    :math:`-\log q_i(x_i)`, conditioned on the a-priori box of the cell (``box``: the table's
    flat ``(lower, upper)``, :attr:`~persuasive.margins.MarginTable.box`; None: no box)."""
    vals = np.asarray(values)
    if isinstance(model, IndependentCellsPrior):
        out = -model.logpmf_cells(vals.astype(np.float64))
        return out if box is None else out + prior_box_mass(model, *box)
    return (surprise(model, vals) if box is None else box_surprise(model, vals, *box))[0]


def disclosure_grid(
    model: Model, cells: NDArray[np.intp], lo: NDArray[np.int64], width: int, box: Any = None
) -> NDArray[np.float64]:
    """``out[k, j]``: the disclosure loss of cell ``cells[k]`` at value ``lo[k] + j``
    (``box`` as in :func:`disclosure_loss`, over every cell of the table)."""
    if isinstance(model, IndependentCellsPrior):
        out = -cell_log_grid(model, cells, lo, width)
        return out if box is None else out + prior_box_mass(model, *box)[cells][:, None]
    grid = lo[:, None] + np.arange(width)[None, :]
    if box is None:
        return surprise(model, grid)[0]
    return box_surprise(model, grid, box[0][cells][:, None], box[1][cells][:, None])[0]


def audit(
    table: MarginTable,
    model: Model,
    r: int,
    *,
    max_states: int = MAX_DP_STATES,
    rng: Any = 0,
    posterior: MarginPosterior | None = None,
    kappa: float | None = None,
    bound: str = "table",
) -> WorstCaseLosses:
    """The exact audit of a pattern: :func:`~persuasive.margins.worst_case_losses` for a
    Receiver model; for one prior, the same fields with the sup over the class {Q}.

    With a target ``kappa`` (a Receiver model), cells of components not computed exactly get
    the proven switching bound and are ``certified`` when their ``bound`` meets it, as in
    :func:`~persuasive.margins.worst_case_losses`, also with a partial ``posterior`` (the
    planner's: large components "skipped", no Markov chain)."""
    if not isinstance(model, IndependentCellsPrior) and posterior is None:
        return worst_case_losses(
            table, model, r=r, max_states=max_states, rng=rng, kappa=kappa, bound=bound
        )
    if posterior is None and table.suppressed.any():
        assert isinstance(model, IndependentCellsPrior)
        posterior = posterior_marginals(table, model, max_states=max_states, rng=rng)
    n, x, sup = table.n_cells, table.counts.ravel(), table.suppressed.ravel()
    d = disclosure_loss(model, x, table.box)
    upper, lower, pub, est = (np.zeros(n) for _ in range(4))
    log_up = np.where(sup, 0.0, d)
    disclosed, certified = np.zeros(n, bool), np.ones(n, bool)
    switched = np.zeros(n, bool)
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
        s_grid = disclosure_grid(model, c, posterior.lo, lp.shape[1], table.box)
        bnd = None
        if kappa is not None and not isinstance(model, IndependentCellsPrior):
            if not posterior.exact:
                bnd = switching_grid(table, _common_prior(model, n), posterior, r)
        ex, val, upper[c], lower[c], pub[c], log_up[c] = posterior_fields(
            posterior, x, r, table.h, d[c], s_grid, bound=bnd
        )
        small = x[c] < r
        est[c] = np.where(np.isfinite(lp).any(axis=1), val, math.nan)  # nan: not computed
        disclosed[c], certified[c] = posterior.disclosed, ex
        if bnd is not None:
            sw, ok, shown = by_switching(
                bnd, posterior, x, (r, table.h, kappa, bound), d[c], s_grid, ex, upper, pub
            )
            switched[c], certified[c] = sw, ex | ok
            disclosed[c] &= ~shown
        if not isinstance(model, IndependentCellsPrior):
            box = None if table.box is None else (table.box[0][c], table.box[1][c])
            mean = (surprise(model, x[c]) if box is None else box_surprise(model, x[c], *box))[1]
            witness[c] = np.where(small, mean, math.nan)
        if not ex.all():
            notes.append(
                f"{int((~ex).sum())} suppressed cells lie in components too large for the exact "
                "DP: "
                + (
                    "not certified; kappa_upper there is the proven disclosure loss D(x_i)"
                    if bnd is None
                    else f"kappa_upper there is a proven bound (the switching bound for "
                    f"{int(switched[c].sum())} of them, else D(x_i)); "
                    f"{int((certified[c] & ~ex).sum())} certified by it at kappa = {kappa:g}"
                )
            )
        exact_cells = certified.copy()
        exact_cells[c] = ex
    else:
        exact_cells = certified.copy()
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
        exact_cells=exact_cells.reshape(s),
        switching=switched.reshape(s),
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
    box: Any = None,
) -> NDArray[np.bool_]:
    """Exposed entries (rows of the entry x cell incidence ``A``): see the module docstring.

    With ``box`` (the table's flat a-priori bounds, :attr:`MarginTable.box`) an entry is also
    exposed when its hidden cells sit at the lower (or all at the upper) ends of their supports
    intersected with their boxes; without it, of ``[0, h-1]`` and ``[h, inf)``."""
    n_sup = A @ sup.astype(np.int64)
    res = A @ np.where(sup, x, 0)
    if box is None:
        n_sec = A @ sec.astype(np.int64)
        tight = (res == h * n_sec) | ((n_sec == 0) & (res == (h - 1) * n_sup))
    else:
        lw, up = box
        lo = np.where(sec, np.maximum(lw, h), lw)
        hi = np.where(sec, up, np.minimum(up, h - 1))
        open_ = sup & (hi == np.iinfo(np.int64).max)
        top = np.minimum(hi, np.int64(1) << 40)  # larger ends never meet a residual
        tight = (res == A @ np.where(sup, lo, 0)) | (
            (A @ open_.astype(np.int64) == 0) & (res == A @ np.where(sup & ~open_, top, 0))
        )
    return (n_sup >= 1) & ((n_sup == 1) | tight)


def determined(
    A: sparse.csr_array,
    x: NDArray[np.int64],
    sup: NDArray[np.bool_],
    sec: NDArray[np.bool_],
    h: int,
    box: Any = None,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Cells determined by propagation, and the entries that determined them: an exposed entry
    determines its cells, which are then known and subtracted from their other entries, which
    may become exposed in turn (a lone cell's partner alone in its column, ...). ``box``: the
    a-priori bounds, as in :func:`exposed`."""
    det = np.zeros(x.size, dtype=bool)
    used = np.zeros(A.shape[0], dtype=bool)
    while True:
        ex = exposed(A, x, sup & ~det, sec & ~det, h, box)
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
    ex = exposed(A, table.counts.ravel(), sup, table.secondary.ravel(), table.h, table.box)
    return A, np.flatnonzero(ex & (A @ (needy & sup).astype(np.int64) > 0))


def covering_bound(
    table: MarginTable, cost: NDArray[np.float64], needy: NDArray[np.bool_]
) -> float:
    """The lower bound of :func:`lower_bound` for given costs and needy cells (flat)."""
    A, rows = cover_rows(table, needy)
    free = table.hideable.ravel()  # released and not known to the Receiver
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
    r_ = table.h if r is None else v.integer("r", r, low=dm.R_MIN, high=table.h)
    needy = table.counts.ravel() < r_
    sec = costs(table, obj)[table.secondary.ravel()].sum()
    return float(sec) + covering_bound(table, costs(table, obj), needy)
