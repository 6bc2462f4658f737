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
    for cols in cs.components():
        rows = cs.rows_of(cols)
        if rows.size == 0:
            continue
        A = cs.A[rows][:, cols]
        b = cs.b[rows].astype(np.float64)
        bounds = np.column_stack([lo[cols], hi[cols]])
        for j in range(cols.size):
            for sign, out in ((1.0, lower), (-1.0, upper)):
                c = np.zeros(cols.size)
                c[j] = sign
                res = linprog(c, A_eq=A, b_eq=b, bounds=bounds, method="highs")
                if res.status == 3:  # unbounded above
                    out[cols[j]] = np.inf
                elif res.status != 0:
                    raise PersuasiveError(
                        f"linprog failed on cell {cs.cells[cols[j]]}: {res.message}"
                    )
                else:
                    out[cols[j]] = res.x[j]
    return AttackIntervals(
        cs.cells, _round(lower), _round(upper), table.counts.ravel()[cs.cells], use_threshold
    )
