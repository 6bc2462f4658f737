r"""Attacker intervals: the ``attack()`` of sdcTable / the audit of τ-Argus.

For each suppressed cell i the attacker computes

.. math:: \underline y_i = \min\{y_i : A y = b,\ \ell \le y \le u\}, \qquad
          \overline y_i = \max\{y_i : A y = b,\ \ell \le y \le u\},

linear programmes over the LP relaxation of the published table (sdcTable ``attack()``,
Meindl 2023; de Wolf et al., τ-Argus manual). With ``use_threshold=True`` the supports are
those the attacker knows (:math:`[0, h-1]` primary, :math:`\ge h` secondary); with ``False``
only :math:`y \ge 0`. Solved with :func:`scipy.optimize.linprog` (HiGHS), one component at a
time. For two-way tables with row/column margins A is totally unimodular, so the LP bounds are
integers and equal the integer bounds; otherwise they bracket them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linprog

from persuasive.errors import PersuasiveError
from persuasive.margins.constraints import UNBOUNDED, constraint_system
from persuasive.margins.table import MarginTable

#: LP bounds within this distance of an integer are rounded to it (HiGHS feasibility tolerance).
LP_INT_ATOL: float = 1e-6

#: Vertices for random objectives solved first per component: their values settle the bounds of
#: many cells at once (a bound a feasible point attains at the box needs no LP of its own).
N_PROBES: int = 8


@dataclass(frozen=True, eq=False)
class AttackIntervals:
    """Per suppressed cell (flat C-order ``cells``): LP ``lower`` / ``upper`` and the truth."""

    cells: NDArray[np.intp]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    true: NDArray[np.int64]
    use_threshold: bool

    @property
    def exposed(self) -> NDArray[np.bool_]:
        """Cells pinned to one value by the published table (``lower == upper``)."""
        return self.upper - self.lower <= LP_INT_ATOL

    def to_frame(self) -> Any:
        import polars as pl

        return pl.DataFrame(
            {
                "cell": self.cells,
                "true": self.true,
                "lower": self.lower,
                "upper": self.upper,
                "exposed": self.exposed,
            }
        )


def _round(z: NDArray[np.float64]) -> NDArray[np.float64]:
    r = np.round(z)
    with np.errstate(invalid="ignore"):  # inf - inf at unbounded cells
        return np.where(np.abs(z - r) <= LP_INT_ATOL, r, z)


def _solve(c: NDArray[np.float64], A: Any, b: Any, bounds: Any, cell: int) -> Any:
    res = linprog(c, A_eq=A, b_eq=b, bounds=bounds, method="highs")
    if res.status not in (0, 3):  # 3: unbounded
        raise PersuasiveError(f"linprog failed on cell {cell}: {res.message}")
    return res


def _component_bounds(
    A: Any,
    b: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    start: NDArray[np.float64],
    rng: np.random.Generator,
    cells: list[int],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """LP min and max of every cell of one component.

    Every LP solution is a feasible point, so it *witnesses* values: a cell whose smallest
    (largest) witnessed value is already its box bound needs no LP of its own, since the LP
    optimum cannot pass the box. The true table, ``N_PROBES`` vertices for random objectives and
    vertices pushing every unsettled bound at once are witnessed first; then each remaining
    bound is solved, and its solution witnesses others.
    """
    n = lo.size
    bounds = np.column_stack([lo, hi])
    seen_lo, seen_hi = start.copy(), start.copy()
    lower, upper = np.full(n, np.nan), np.full(n, np.nan)

    def witness(x: NDArray[np.float64]) -> None:
        np.minimum(seen_lo, x, out=seen_lo)
        np.maximum(seen_hi, x, out=seen_hi)

    for _ in range(min(N_PROBES, n)):
        res = _solve(rng.standard_normal(n), A, b, bounds, cells[0])
        if res.status == 0:
            witness(res.x)
    for _ in range(N_PROBES):  # push every unsettled bound at once, while that settles some
        before = int(np.count_nonzero(seen_lo <= lo + LP_INT_ATOL)) + int(
            np.count_nonzero(seen_hi >= hi - LP_INT_ATOL)
        )
        c = (seen_lo > lo + LP_INT_ATOL).astype(np.float64) - (seen_hi < hi - LP_INT_ATOL)
        if not c.any():
            break
        res = _solve(c, A, b, bounds, cells[0])
        if res.status != 0:
            break
        witness(res.x)
        after = int(np.count_nonzero(seen_lo <= lo + LP_INT_ATOL)) + int(
            np.count_nonzero(seen_hi >= hi - LP_INT_ATOL)
        )
        if after == before:
            break
    for j in range(n):
        for sign, out, seen, box in ((1.0, lower, seen_lo, lo), (-1.0, upper, seen_hi, hi)):
            if seen[j] * sign <= box[j] * sign + LP_INT_ATOL:
                out[j] = box[j]  # a feasible point attains the box bound: the LP optimum
                continue
            c = np.zeros(n)
            c[j] = sign
            res = _solve(c, A, b, bounds, cells[j])
            if res.status == 3:
                out[j] = -sign * np.inf
            else:
                out[j] = res.x[j]
                witness(res.x)
    return lower, upper


def attacker_intervals(table: MarginTable, *, use_threshold: bool = True) -> AttackIntervals:
    """Min and max of each suppressed cell consistent with the published table (LP, HiGHS).

    Examples
    --------
    >>> from persuasive.margins import MarginTable
    >>> t = MarginTable([[1, 2, 7], [2, 1, 9]], h=3, margins="rows,cols")
    >>> a = attacker_intervals(t)
    >>> a.lower.tolist(), a.upper.tolist()   # rows and columns of the 2x2 block sum to 3
    ([1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0])
    >>> attacker_intervals(t, use_threshold=False).upper.tolist()
    [3.0, 3.0, 3.0, 3.0]
    """
    cs = constraint_system(table)
    n = cs.cells.size
    if use_threshold:
        lo = cs.lo.astype(np.float64)
        hi = np.where(cs.hi == UNBOUNDED, np.inf, cs.hi).astype(np.float64)
    else:
        lo, hi = np.zeros(n), np.full(n, np.inf)
    lower, upper = lo.copy(), hi.copy()
    true = table.counts.ravel()[cs.cells].astype(np.float64)
    rng = np.random.default_rng(0)  # the probing objectives: fixed, so results are reproducible
    for cols in cs.components():
        rows = cs.rows_of(cols)
        if rows.size == 0:
            continue
        lower[cols], upper[cols] = _component_bounds(
            cs.A[rows][:, cols],
            cs.b[rows].astype(np.float64),
            lo[cols],
            hi[cols],
            true[cols],
            rng,
            [int(c) for c in cs.cells[cols]],
        )
    return AttackIntervals(
        cs.cells, _round(lower), _round(upper), table.counts.ravel()[cs.cells], use_threshold
    )
