r"""The result of the secondary-suppression planner: a pattern and its audit.

:class:`SuppressionPlan` is what :func:`persuasive.margins.planner.plan_suppression` (and the
MIP of :mod:`persuasive.margins.optimal`) return; the planner's algorithm and what its
certificate means are in :mod:`persuasive.margins.planner` and ``docs/margins_release.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.margins.table import MarginTable
from persuasive.margins.worst import WorstCaseLosses
from persuasive.results import _json

__all__ = ["SuppressionPlan"]


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
        Every suppressed cell's bound <= κ, proven: exact on a component the DP computes, else
        the proven switching bound (``docs/margins_bounds.md``) or, where it gives nothing
        better, the full-disclosure bound (the posterior is at most 1). ``worst`` is the audit
        with the target: its ``certified`` cells are those proven within κ (``computed_exactly``
        or by the bound), ``by_bound`` those of them not computed exactly.
    uncertified_cells : int ndarray
        Flat indices of suppressed cells not certified: in components too large for the exact
        DP, with a proven bound above κ (empty exactly when ``certified``).
    iterations, notes : int, tuple of str
        Greedy steps of the kept run; what is exact and what is structural only.
    optimal : bool or None
        Proven optimal (True: the cost is at the lower bound, or an exact method proved it),
        proven not (False), or not known (None: the greedy's usual answer; ``gap`` says how far
        it may be). The hook of an exact pattern search (a MIP) that may close the gap.
    method : str
        What produced the pattern: ``"mip"`` (:mod:`persuasive.margins.optimal`) or
        ``"greedy"``.
    mip : str or None
        The program's outcome (``MipOutcome.status``: ``"optimal"``, ``"certified"``,
        ``"uncertified"``, ``"time_limit"``, ``"iteration_limit"``, ``"infeasible"``),
        ``"too_large"`` when ``method="auto"`` skipped it (more than ``optimal.AUTO_MAX_CELLS``
        cells), None when it was not asked for (``method="greedy"``).
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
    optimal: bool | None = None
    method: str = "greedy"
    mip: str | None = None

    @property
    def gap(self) -> float:
        """``objective_value - lower_bound``: how far the plan may be from the optimum."""
        return self.objective_value - self.lower_bound

    def explain(self) -> str:
        """One sentence for a human."""
        what = "cells" if self.objective == "count" else "total count"
        n_unc = self.uncertified_cells.size
        where = {
            "publication": "against what the published files show",
            "table": "at the true table",
        }.get(self.bound, self.bound)
        opt = {True: "optimal", False: "not optimal", None: "optimal not known"}[self.optimal]
        head = (
            f"{self.n_secondary} secondary suppressions beside {self.n_primary} primary "
            f"({what} {self.objective_value:g}, proven lower bound {self.lower_bound:g}, gap "
            f"{self.gap:g}: {opt}); "
        )
        if self.certified:
            n_b = int((self.pattern & self.worst.by_bound).sum())
            sw = self.worst.switching
            n_sw = 0 if sw is None else int((self.pattern & sw & self.worst.by_bound).sum())
            how = (
                f"proven by the exact audit, and for the {n_b} cells in parts too large for "
                f"it by a proven bound (the switching bound for {n_sw} of them, else the "
                "full-disclosure bound)"
                if n_b
                else "certified by the exact audit"
            )
            return head + f"every suppressed cell has κ <= {self.kappa:g} {where}, {how}"
        why = (
            f" ({n_unc} cells in parts too large for the exact posterior, their proven bound "
            "above the target)"
            if n_unc
            else ""
        )
        return (
            head + f"NOT certified: not every suppressed cell is shown to have κ <= "
            f"{self.kappa:g} {where}{why}"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (cells as flat C-order indices)."""
        keys = ("kappa", "bound", "objective", "objective_value", "lower_bound", "n_primary")
        more = ("n_secondary", "certified", "optimal", "iterations", "method", "mip")
        out = {k: getattr(self, k) for k in (*keys, *more)}
        out["gap"] = self.gap
        out.update(
            secondary_cells=np.flatnonzero(self.secondary.ravel()),
            max_loss=float(self.losses[self.pattern].max(initial=0.0)),
            uncertified_cells=self.uncertified_cells,
            notes=list(self.notes),
        )
        return _json(out)
