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
smallest count (ties: smallest flat C-order index); a cell known to the Receiver
(``MarginTable.known``, e.g. a structural zero) is never a partner, since hiding it hides
nothing. :func:`compare` audits that pattern exactly
and sets it beside :func:`~persuasive.margins.planner.plan_suppression`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from persuasive.margins.constraints import full_incidence
from persuasive.margins.planning import (
    audit,
    bound_of,
    check_arguments,
    check_table,
    costs,
    lower_bound,
)
from persuasive.margins.table import MarginTable
from persuasive.margins.worst import WorstCaseLosses
from persuasive.results import _json

if TYPE_CHECKING:
    from persuasive.margins.planner import SuppressionPlan

__all__ = ["ClassicalPattern", "Comparison", "classical_pattern", "compare", "lower_bound"]


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
    known = table.known.ravel()
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
            free = cells[~sup[cells] & ~known[cells]]
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
    >>> from persuasive.classes.receivers import PoissonReceiver
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
