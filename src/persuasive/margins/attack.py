r"""Attacker intervals: the ``attack()`` of sdcTable / the audit of τ-Argus.

For each suppressed cell i the attacker computes

.. math:: \underline y_i = \min\{y_i : A y = b,\ \ell \le y \le u\}, \qquad
          \overline y_i = \max\{y_i : A y = b,\ \ell \le y \le u\},

linear programmes over the LP relaxation of the published table (sdcTable ``attack()``,
Meindl 2023; de Wolf et al., τ-Argus manual). With ``use_threshold=True`` the supports are
those the attacker knows (:math:`[0, h-1]` primary, :math:`\ge h` secondary); with ``False``
only :math:`y \ge 0`. Either way they are intersected with the a-priori bounds
(``table.lower``, ``table.upper``; :mod:`persuasive.margins.apriori`), which are public.
For two-way tables with row/column margins A is totally unimodular, so
the LP bounds are integers and equal the integer bounds; otherwise they bracket them.

Solved with HiGHS (:mod:`highspy`): one model per component, built once, re-solved for each
bound with only the objective changed (:math:`\pm y_i`), so each solve starts from the last
optimal vertex (primal simplex; it stays primal feasible under a cost change). A bound that a
feasible point already attains at the box needs no solve (the true table, a few objectives
pushing every open bound at once, and every solution witness values).

Rounding and tolerance. The interval is never *narrower* than the LP's beyond ``LP_INT_ATOL``:
a solved lower bound is the smaller of HiGHS's primal value and a Lagrangian bound computed
here from its row duals (valid for any duals), an upper bound the larger, each clipped to the
box (which the LP optimum cannot pass); the two must agree to ``LP_INT_ATOL`` (relative above
1), else :class:`~persuasive.errors.PersuasiveError`, so it is not wider either. Last, a value
within ``LP_INT_ATOL`` of an integer is snapped to it: the one step that may move a bound
inward, by at most ``LP_INT_ATOL``, and onto the exact optimum whenever that is an integer
(always in two-way tables; the vertices of these 0/1 systems have small denominators).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from persuasive.errors import PersuasiveError
from persuasive.margins.constraints import UNBOUNDED, constraint_system
from persuasive.margins.parallel import map_tasks
from persuasive.margins.table import MarginTable

#: LP bounds within this distance of an integer are rounded to it (HiGHS feasibility tolerance).
LP_INT_ATOL: float = 1e-6

#: The solver class: highspy's core class where it has one, since ``highspy.Highs()`` prints a
#: banner on stdout when the first one is made (it would land in the CLI's output); the option
#: ``output_flag`` silences the solver itself.
#: Objectives pushing every unsettled bound at once (+1 on unsettled lower bounds, -1 on upper
#: ones), solved per component before the per-cell solves: each vertex settles the bounds it
#: attains at the box. At most this many, and only while each settles at least ``PUSH_GAIN``
#: of the open bounds (measured: below that, the per-cell solves witness them as cheaply).
N_PUSH: int = 8
PUSH_GAIN: float = 0.25

_HIGHS: Any = getattr(highspy, "_Highs", highspy.Highs)


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


def _implied_cap(
    A: Any, b: NDArray[np.float64], lo: NDArray[np.float64], hi: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Upper bounds that every feasible point meets, finite for a cell in a row with no
    negative entry: such a row k gives ``A_kj (y_j - lo_j) <= b_k - (A lo)_k`` (as y >= lo)."""
    coo = sparse.coo_array(A)
    row_min = np.zeros(A.shape[0])
    np.minimum.at(row_min, coo.row, coo.data)
    use = (coo.data > 0) & (row_min[coo.row] >= 0)
    slack = b - A @ lo
    cap = hi.copy()
    r, c = coo.row[use], coo.col[use]
    np.minimum.at(cap, c, lo[c] + slack[r] / coo.data[use])
    return cap


class _ComponentLP:
    """One HiGHS model ``A y = b, lo <= y <= hi`` of a component, re-solved per objective.

    Only the objective changes between solves, so HiGHS keeps its basis and factorisation and
    starts each solve from the previous optimal vertex. Each optimum comes with a Lagrangian
    (dual) bound computed here from HiGHS's row duals, a lower bound on the minimum whatever
    HiGHS's accuracy.
    """

    def __init__(
        self,
        A: Any,
        b: NDArray[np.float64],
        lo: NDArray[np.float64],
        hi: NDArray[np.float64],
        cell: int,
    ) -> None:
        csc = sparse.csc_array(A, dtype=np.float64)
        csc.eliminate_zeros()
        csc.sort_indices()
        m, n = csc.shape
        self.cell = cell
        self.At = csc.T.tocsr()  # for the reduced costs c - A^T pi
        self.b, self.lo = b, lo
        self.cap = _implied_cap(csc, b, lo, hi)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n, m
        lp.col_cost_ = np.zeros(n)
        lp.col_lower_ = lo
        lp.col_upper_ = np.where(np.isinf(hi), highspy.kHighsInf, hi)
        lp.row_lower_ = b
        lp.row_upper_ = b
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
        lp.a_matrix_.start_ = csc.indptr.astype(np.int32)
        lp.a_matrix_.index_ = csc.indices.astype(np.int32)
        lp.a_matrix_.value_ = csc.data
        self.h = _HIGHS()
        self.h.setOptionValue("output_flag", False)
        # Primal simplex: a cost change keeps the last vertex primal feasible, so a re-solve
        # starts there and takes a few pivots; the default dual simplex redoes its phase 1
        # (measured: ~1000 pivots and ~10x the time per bound on a 2000-cell component).
        self.h.setOptionValue("simplex_strategy", 4)
        if self.h.passModel(lp) != highspy.HighsStatus.kOk:
            raise PersuasiveError(f"HiGHS rejected the attacker LP of the component of cell {cell}")
        self.costed = -1  # the column whose cost is nonzero
        self.x = np.zeros(n)  # the last optimal point
        self.n, self.every = n, np.arange(n, dtype=np.int32)

    def _run(self) -> Any:
        self.h.run()
        status = self.h.getModelStatus()
        if status == highspy.HighsModelStatus.kUnboundedOrInfeasible:
            # presolve could not tell which: ask the simplex, without presolve
            self.h.setOptionValue("presolve", "off")
            self.h.clearSolver()
            self.h.run()
            status = self.h.getModelStatus()
        return status

    def _fail(self, status: Any) -> PersuasiveError:
        if status == highspy.HighsModelStatus.kInfeasible:
            return PersuasiveError(
                f"the attacker LP of the component of cell {self.cell} is infeasible: no "
                "completion within the supports meets the published margins"
            )
        return PersuasiveError(
            f"HiGHS failed on the attacker LP of the component of cell {self.cell}: "
            f"{self.h.modelStatusToString(status)}"
        )

    def probe(self, c: NDArray[np.float64]) -> NDArray[np.float64] | None:
        """Minimise ``c @ y``: an optimal point (a feasible point, to witness values), or
        ``None`` when unbounded."""
        self.h.changeColsCost(self.n, self.every, c)
        self.costed = -2  # every column
        # a dense new objective: the dual simplex from the current basis takes ~3x fewer
        # pivots than the primal (measured), and the per-cell solves start at its vertex
        self.h.setOptionValue("simplex_strategy", 1)
        status = self._run()
        self.h.setOptionValue("simplex_strategy", 4)
        if status == highspy.HighsModelStatus.kOptimal:
            return np.asarray(self.h.getSolution().col_value, dtype=np.float64)
        if status == highspy.HighsModelStatus.kUnbounded:
            return None
        raise self._fail(status)

    def minimise(self, j: int, sign: float, *, cold: bool = False) -> tuple[float, float] | None:
        """Minimise ``sign * y_j``: ``(HiGHS's optimal value, Lagrangian bound)`` and the
        witnessed point in ``self.x``; ``None`` when unbounded."""
        if self.costed == -2:
            self.h.changeColsCost(self.n, self.every, np.zeros(self.n))
        elif self.costed >= 0 and self.costed != j:
            self.h.changeColCost(self.costed, 0.0)
        self.h.changeColCost(j, sign)
        self.costed = j
        if cold:
            self.h.clearSolver()
        status = self._run()
        if status == highspy.HighsModelStatus.kOptimal:
            sol = self.h.getSolution()
            self.x = np.asarray(sol.col_value, dtype=np.float64)
            pi = np.asarray(sol.row_dual, dtype=np.float64)
            d = -(self.At @ pi)  # reduced costs c - A^T pi
            d[j] += sign
            # min over the box [lo, cap] of d_j y_j, for each j (0 where d_j = 0, even if cap
            # is infinite: a column in no row, which the implied caps cannot bound)
            terms = np.where(d > 0, d * self.lo, 0.0)
            neg = d < 0
            terms[neg] = d[neg] * self.cap[neg]
            bound = float(pi @ self.b + terms.sum())
            return sign * float(self.x[j]), bound
        if status == highspy.HighsModelStatus.kUnbounded:
            return None
        raise self._fail(status)


def _component_bounds(
    A: Any,
    b: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    start: NDArray[np.float64],
    cells: list[int],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """LP min and max of every cell of one component (one HiGHS model, re-solved).

    Every LP solution is a feasible point, so it *witnesses* values: a cell whose smallest
    (largest) witnessed value is already its box bound needs no LP of its own, since the LP
    optimum cannot pass the box. The true table ``start`` is witnessed first, then up to
    ``N_PUSH`` vertices pushing every unsettled bound at once; then each remaining bound is
    solved, min then max cell by cell (measured: faster re-solves than all mins, then all
    maxes), and its solution witnesses others. (The random objectives of the cold-start version
    no longer pay: measured slower than the pushes alone.)
    """
    n = lo.size
    lp = _ComponentLP(A, b, lo, hi, cells[0])
    seen_lo, seen_hi = start.copy(), start.copy()
    lower, upper = np.full(n, np.nan), np.full(n, np.nan)

    def n_open() -> int:
        return int(np.count_nonzero(seen_lo > lo + LP_INT_ATOL)) + int(
            np.count_nonzero(seen_hi < hi - LP_INT_ATOL)
        )

    def witness(x: NDArray[np.float64] | None) -> None:
        if x is not None:
            np.minimum(seen_lo, x, out=seen_lo)
            np.maximum(seen_hi, x, out=seen_hi)

    open_now = n_open()
    for _ in range(N_PUSH):  # push every unsettled bound at once, while that settles many
        if open_now == 0:
            break
        c = (seen_lo > lo + LP_INT_ATOL).astype(np.float64) - (seen_hi < hi - LP_INT_ATOL)
        witness(lp.probe(c))
        before, open_now = open_now, n_open()
        if before - open_now < PUSH_GAIN * before:
            break
    for j in range(n):
        for sign, out, seen, box in ((1.0, lower, seen_lo, lo), (-1.0, upper, seen_hi, hi)):
            if seen[j] * sign <= box[j] * sign + LP_INT_ATOL:
                out[j] = box[j]  # a feasible point attains the box bound: the LP optimum
                continue
            got = lp.minimise(j, sign)
            if got is not None and got[0] - got[1] > LP_INT_ATOL * max(1.0, abs(got[0])):
                got = lp.minimise(j, sign, cold=True)  # once more from scratch
            if got is None:
                out[j] = -sign * np.inf
                continue
            value, bound = got
            if value - bound > LP_INT_ATOL * max(1.0, abs(value)):
                raise PersuasiveError(
                    f"HiGHS's {'lower' if sign > 0 else 'upper'} bound of cell {cells[j]} is "
                    f"not proven optimal to {LP_INT_ATOL:g} (primal {sign * value:.10g}, dual "
                    f"{sign * bound:.10g})"
                )
            # the outer of the primal value and the dual bound, inside the box
            out[j] = np.clip(sign * min(value, bound), lo[j], hi[j])
            witness(lp.x)
    return lower, upper


def _bounds_of(piece: tuple[Any, ...]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`_component_bounds` of one component's ``(A, b, lo, hi, true, cells)``."""
    return _component_bounds(*piece)


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
    if use_threshold:
        lo = cs.lo.astype(np.float64)
        hi = np.where(cs.hi == UNBOUNDED, np.inf, cs.hi).astype(np.float64)
    else:  # no threshold, but the a-priori bounds are public (0 and inf where none)
        lo = table.lower.ravel()[cs.cells].astype(np.float64)
        up = table.upper.ravel()[cs.cells]
        hi = np.where(up == UNBOUNDED, np.inf, up).astype(np.float64)
    lower, upper = lo.copy(), hi.copy()
    true = table.counts.ravel()[cs.cells].astype(np.float64)
    pieces = [(cols, cs.rows_of(cols)) for cols in cs.components()]
    pieces = [(cols, rows) for cols, rows in pieces if rows.size]
    work = [
        (
            cs.A[rows][:, cols],
            cs.b[rows].astype(np.float64),
            lo[cols],
            hi[cols],
            true[cols],
            [int(c) for c in cs.cells[cols]],
        )
        for cols, rows in pieces
    ]  # the components' LPs are independent: on Spark's executors under a mapper
    for (cols, _), bounds in zip(pieces, map_tasks(_bounds_of, work), strict=True):
        lower[cols], upper[cols] = bounds
    return AttackIntervals(
        cs.cells, _round(lower), _round(upper), table.counts.ravel()[cs.cells], use_threshold
    )
