r"""The classical secondary-suppression rule, audited by the exact posterior (issue 5).

The simplest rule of τ-Argus / sdcTable ("every suppressed cell has a partner in its row and in
its column"): no published margin entry may hold exactly one suppressed cell, since that cell is
then recovered by subtraction. Here it is applied to every published margin of the table (rows
and columns in 2-D; any kept-dimension margin in k-D):

    while some published entry holds exactly one suppressed cell (first such entry in margin
    order, then entry index), hide the released cell of that entry with the smallest count
    (ties: smallest flat C-order index).

The rule has no stated meaning: :func:`compare` audits its pattern with the exact posterior
(:func:`persuasive.margins.worst_case_losses`) and lists the cells it leaves above κ, beside the
pattern of :func:`persuasive.margins.planner.plan_suppression`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.errors import ValidationError
from persuasive.margins.constraints import full_incidence
from persuasive.margins.planner import (
    InfeasiblePlanError,
    SuppressionPlan,
    _audit,
    _check,
    _costs,
    plan_suppression,
)
from persuasive.margins.table import MarginTable
from persuasive.release.receivers import Receiver
from persuasive.results import _json

__all__ = ["ClassicalPattern", "Comparison", "classical_pattern", "compare"]


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
        Flat indices of suppressed cells alone in an entry without any released cell to add
        (the rule cannot give them a partner).
    """

    table: MarginTable
    secondary: NDArray[np.bool_]
    n_secondary: int
    unprotectable: tuple[int, ...] = ()


def classical_pattern(table: MarginTable) -> ClassicalPattern:
    """Apply the classical partner rule (smallest count first, ties by index).

    Parameters
    ----------
    table : MarginTable
        The table, its published margins and its primary pattern.

    Returns
    -------
    ClassicalPattern

    Examples
    --------
    >>> t = MarginTable([[1, 5, 7], [6, 8, 9]], h=3, margins="rows,cols")
    >>> classical_pattern(t).table.suppressed.astype(int).tolist()
    [[1, 1, 0], [1, 1, 0]]
    """
    if not isinstance(table, MarginTable):
        raise ValidationError(
            f"table must be a persuasive.margins.MarginTable; got {type(table).__name__}"
        )
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
            inside = cells[sup[cells]]
            if inside.size != 1:
                continue  # fixed meanwhile by a partner added for another entry
            free = cells[~sup[cells]]
            if free.size == 0:
                stuck.add(e)
                continue
            pick = free[np.lexsort((free, counts[free]))[0]]
            sup[pick] = True
    unprot = sorted(
        {int(c) for e in stuck for c in A.indices[A.indptr[e] : A.indptr[e + 1]] if sup[c]}
    )
    mask = sup.reshape(table.shape)
    added = mask & ~table.suppressed
    new = table.with_suppressed(mask, table.secondary | (added & (table.counts >= table.h)))
    return ClassicalPattern(new, added, int(added.sum()), tuple(unprot))


@dataclass(frozen=True, eq=False)
class Comparison:
    """The classical pattern and the planner's, both audited exactly at the same κ.

    Attributes
    ----------
    kappa : float
        The target.
    objective : str
        ``"count"`` or ``"total"`` (cost of a secondary cell: 1 or its count).
    classical : ClassicalPattern
        The partner-rule pattern.
    classical_losses : float ndarray
        Its certified per-cell bounds (0 on released cells).
    classical_above : tuple of tuple of int
        Cells (table indices) the classical pattern leaves above κ, sorted.
    classical_cost : float
        Its secondary cost under ``objective``.
    ours : SuppressionPlan or None
        The planner's certified pattern (None if it refused: see ``ours_error``).
    ours_error : str
        The planner's refusal message, if any.
    """

    kappa: float
    objective: str
    classical: ClassicalPattern
    classical_losses: NDArray[np.float64]
    classical_above: tuple[tuple[int, ...], ...]
    classical_cost: float
    ours: SuppressionPlan | None
    ours_error: str = ""

    def explain(self) -> str:
        """One paragraph for a human."""
        first = (
            f"Classical partner rule: {self.classical.n_secondary} secondary cells (cost "
            f"{self.classical_cost:g}), {len(self.classical_above)} cells above kappa = "
            f"{self.kappa:g}"
        )
        if self.ours is None:
            return f"{first}; planner refused: {self.ours_error}"
        return (
            f"{first}; planner: {self.ours.n_secondary} secondary cells (cost "
            f"{self.ours.objective_value:g}, lower bound {self.ours.lower_bound:g}), "
            f"certified = {self.ours.certified}"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return _json(
            {
                "kappa": self.kappa,
                "objective": self.objective,
                "classical": {
                    "n_secondary": self.classical.n_secondary,
                    "cost": self.classical_cost,
                    "above_kappa": [list(c) for c in self.classical_above],
                    "max_loss": float(self.classical_losses.max(initial=0.0)),
                },
                "ours": None if self.ours is None else self.ours.to_dict(),
                "ours_error": self.ours_error,
            }
        )


def compare(
    table: MarginTable,
    receiver: Receiver,
    kappa: float,
    *,
    r: int | None = None,
    objective: str = "count",
    grid: int = 3,
    **planner: Any,
) -> Comparison:
    """Audit the classical pattern exactly and set it beside the planner's.

    Parameters
    ----------
    table : MarginTable
        Table with published margins and primary pattern.
    receiver : Receiver
        The Receiver model (prior class).
    kappa : float
        Target bound on each suppressed cell's relative loss.
    r : int, optional
        Score threshold (default h).
    objective : {"count", "total"}
        Cost of a secondary cell.
    grid : int
        Passed to :func:`~persuasive.margins.worst_case_losses`.
    **planner
        Further options of :func:`~persuasive.margins.planner.plan_suppression`.

    Returns
    -------
    Comparison

    Examples
    --------
    >>> from persuasive.release.receivers import PoissonReceiver
    >>> t = MarginTable([[1, 9, 8], [7, 6, 9], [8, 9, 7]], h=3, margins="rows,cols")
    >>> c = compare(t, PoissonReceiver(1, 5), kappa=5.0)
    >>> c.classical.n_secondary, c.ours.n_secondary, c.classical_above
    (6, 3, ())
    """
    kap, obj = _check(table, receiver, kappa, objective)
    cl = classical_pattern(table)
    up, _ = _audit(cl.table, receiver, r, grid)
    losses = up.reshape(table.shape)
    above = np.flatnonzero(cl.table.suppressed.ravel() & (up > kap))
    cells = tuple(tuple(int(i) for i in np.unravel_index(c, table.shape)) for c in above)
    cost = float(_costs(table, obj)[cl.secondary.ravel()].sum())
    try:
        ours: SuppressionPlan | None = plan_suppression(
            table, receiver, kap, r=r, objective=obj, grid=grid, **planner
        )
        err = ""
    except InfeasiblePlanError as exc:
        ours, err = None, str(exc)
    return Comparison(kap, obj, cl, losses, cells, cost, ours, err)
