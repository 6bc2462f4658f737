r"""The linear constraints a published table puts on its suppressed cells.

Write :math:`U` for the suppressed cells and :math:`y = x_U`. Every published margin entry
:math:`k` (a set :math:`C_k` of cells with total :math:`t_k`) gives

.. math:: \sum_{i \in C_k \cap U} y_i = b_k := t_k - \sum_{i \in C_k \setminus U} x_i ,

so :math:`A y = b` with :math:`A` the 0/1 incidence matrix of margin entries and suppressed
cells. Each :math:`y_i` also has a known support :math:`[\ell_i, u_i]`: :math:`[0, h-1]` for a
primary suppressed cell, :math:`[h, \min_{k \ni i} b_k]` for a secondary one. Cells linked by a
shared constraint form the connected components of the bipartite graph (cells, constraints).
A-priori bounds :math:`[a_i, \bar a_i]` (``table.lower``, ``table.upper``) intersect the supports:
:math:`[\max(\ell_i, a_i), \min(u_i, \bar a_i)]` (:mod:`persuasive.margins.apriori`).

**Redundant rows.** Published margins are often linearly dependent: the grand total is the sum
of the row totals, and in a hierarchy the totals by ``region`` are sums of those by
``region + sex``. A dependent row adds nothing to :math:`\{y : Ay = b\}` (the published totals
are sums of one table, so it is met whenever the others are), but every open row multiplies the
exact DP's frontier by its residual + 1. :func:`independent_rows` keeps a basis of the row space
of each component, preferring rows with small residuals, so the posterior is unchanged and the
DP stays small; the supports :math:`u_i` are still taken over every row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.sparse import csgraph

from persuasive.errors import ValidationError
from persuasive.margins.table import MarginTable

#: Upper support bound used for a secondary cell that is in no published margin (unbounded).
UNBOUNDED: int = np.iinfo(np.int64).max
#: Components with more rows x cells than this keep every row (the reduction is dense).
MAX_REDUCE: int = 4_000_000


def independent_rows(
    A: sparse.csr_array | NDArray[np.int64], b: NDArray[np.int64]
) -> NDArray[np.intp]:
    """Indices (sorted) of a basis of the row space of ``A``: rows taken greedily by increasing
    residual ``b`` (then fewer cells, then index), each kept when it is not in the span of the
    rows kept before it (Gram-Schmidt, twice, relative tolerance 1e-9 on 0/1 rows). A matrix
    larger than :data:`MAX_REDUCE` entries is returned whole.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]])
    >>> independent_rows(A, np.array([3, 4, 2, 5, 7])).tolist()   # the total is a sum of rows
    [0, 1, 2]
    """
    m = A.shape[0]
    dense = np.asarray(A.toarray() if sparse.issparse(A) else A)  # type: ignore[union-attr]
    if m * dense.shape[1] > MAX_REDUCE or m <= 1:
        return np.arange(m, dtype=np.intp)
    dense = dense.astype(np.float64)
    nnz = np.count_nonzero(dense, axis=1)
    basis: list[NDArray[np.float64]] = []
    keep: list[int] = []
    for i in np.lexsort((np.arange(m), nnz, np.asarray(b))):
        v = dense[i].copy()
        for _ in range(2):
            if basis:
                Q = np.array(basis)
                v -= Q.T @ (Q @ v)
        norm = float(np.linalg.norm(v))
        if norm > 1e-9 * max(1.0, float(np.sqrt(nnz[i]))):
            basis.append(v / norm)
            keep.append(int(i))
    return np.sort(np.array(keep, dtype=np.intp))


@dataclass(frozen=True, eq=False)
class ConstraintSystem:
    """``A y = b``, ``lo <= y <= hi`` on the suppressed cells, and its components."""

    A: sparse.csr_array
    b: NDArray[np.int64]
    lo: NDArray[np.int64]
    hi: NDArray[np.int64]
    cells: NDArray[np.intp]
    labels: NDArray[np.intp]
    n_components: int

    def components(self) -> list[NDArray[np.intp]]:
        """Column indices (into ``cells``) of each component, in label order."""
        order = np.argsort(self.labels, kind="stable")
        splits = np.flatnonzero(np.diff(self.labels[order])) + 1
        return list(np.split(order, splits))

    def rows_of(self, cols: NDArray[np.intp]) -> NDArray[np.intp]:
        """The constraint rows touching any of the given columns."""
        sub = self.A[:, cols]
        return np.flatnonzero(np.asarray(sub.sum(axis=1)).ravel() > 0)


def full_incidence(table: MarginTable) -> tuple[sparse.csr_array, NDArray[np.int64]]:
    """The incidence matrix (margin entries × all cells, C order) and the published totals.

    A structural zero (``table.structural``: a known cell of count 0) has an empty column: it
    adds 0 to every total and is never suppressed, a candidate nor a partner, so leaving it
    out changes no sum, and nothing scales with the combinations a hierarchy does not nest
    (``docs/margins_release.md``, "Hierarchies").
    """
    cols = np.flatnonzero(~table.structural.ravel())
    coords = np.array(np.unravel_index(cols, table.shape)).reshape(table.counts.ndim, -1)
    rows, tot, offset = [], [], 0
    for m in table.margins:
        sub_shape = tuple(table.shape[a] for a in m)
        entry = (
            np.ravel_multi_index(tuple(coords[list(m)]), sub_shape)
            if m
            else np.zeros(cols.size, dtype=np.intp)
        )
        rows.append(entry + offset)
        tot.append(table.totals[m].ravel())
        offset += int(np.prod(sub_shape, dtype=np.int64))
    if not rows:
        return sparse.csr_array((0, table.n_cells), dtype=np.int64), np.zeros(0, np.int64)
    r = np.concatenate(rows)
    c = np.tile(cols, len(rows))
    A = sparse.csr_array((np.ones(r.size, dtype=np.int64), (r, c)), shape=(offset, table.n_cells))
    return A, np.concatenate(tot).astype(np.int64)


def constraint_system(table: MarginTable) -> ConstraintSystem:
    """Build the constraints on the suppressed cells (residuals, supports, components).

    Raises
    ------
    ValidationError
        If no completion of the suppressed cells within their supports can meet a margin
        (e.g. a residual below the sum of the lower bounds): the published table is
        inconsistent.

    Examples
    --------
    >>> from persuasive.margins import MarginTable
    >>> t = MarginTable([[1, 2, 7], [6, 8, 9]], h=3, margins="rows,cols")
    >>> cs = constraint_system(t)
    >>> cs.A.toarray().tolist(), cs.b.tolist(), cs.n_components   # row 0 = col 0 + col 1
    ([[1, 0], [0, 1]], [1, 2], 2)
    """
    full, totals = full_incidence(table)
    sup = table.suppressed.ravel()
    cells = np.flatnonzero(sup)
    x = table.counts.ravel()
    released = full[:, ~sup] @ x[~sup] if full.shape[0] else np.zeros(0, np.int64)
    A_all = full[:, cells].tocsr()
    touched = np.asarray(A_all.sum(axis=1)).ravel() > 0
    residual = totals - released
    if np.any(residual[~touched] != 0) or np.any(residual < 0):
        k = int(np.flatnonzero((residual != 0) & ~touched | (residual < 0))[0])
        raise ValidationError(
            f"margins do not add up: margin entry {k} is off by {int(residual[k])} after the "
            "released cells (published totals must equal the sum of the cells)"
        )
    A = A_all[touched].tocsr()
    b = residual[touched].astype(np.int64)
    n = cells.size
    secondary = table.secondary.ravel()[cells]
    lo = np.where(secondary, table.h, 0).astype(np.int64)
    cap = np.full(n, UNBOUNDED, dtype=np.int64)
    if A.shape[0]:
        # smallest residual among the constraints of each cell (vectorised over nonzeros)
        coo = A.tocoo()
        np.minimum.at(cap, coo.col, b[coo.row])
    hi = np.where(secondary, cap, np.minimum(cap, table.h - 1)).astype(np.int64)
    lo = np.maximum(lo, table.lower.ravel()[cells])  # a-priori bounds (Receiver's knowledge)
    hi = np.minimum(hi, table.upper.ravel()[cells])
    lo_sum = A @ lo
    hi_sum = A @ np.minimum(hi, b.max(initial=0) + 1)
    bad = (lo_sum > b) | (hi_sum < b) | np.zeros(b.size, bool)
    if np.any(bad) or np.any(lo > hi):
        raise ValidationError(
            "suppressed: the published margins cannot be met by suppressed cells within their "
            f"supports ([0, h-1] primary, >= h secondary; h = {table.h}"
            + ("; intersected with the a-priori bounds" if table.has_apriori else "")
            + "): the table is inconsistent"
        )
    labels = _labels(A, n)
    if A.shape[0]:  # drop dependent rows, component by component, then relabel
        keep = [
            rows[independent_rows(A[rows][:, cols], b[rows])]
            for cols in (np.flatnonzero(labels == k) for k in range(int(labels.max()) + 1))
            for rows in [np.flatnonzero(np.asarray(A[:, cols].sum(axis=1)).ravel() > 0)]
        ]
        kept = np.sort(np.concatenate(keep)) if keep else np.zeros(0, np.intp)
        if kept.size < A.shape[0]:
            A, b = A[kept].tocsr(), b[kept]
            labels = _labels(A, n)
    return ConstraintSystem(
        A, b, lo, hi, cells, labels.astype(np.intp), int(labels.max(initial=-1) + 1)
    )


def _labels(A: sparse.csr_array, n: int) -> NDArray[np.intp]:
    """Component label of each of the ``n`` cells (columns of ``A``), numbered 0, 1, ..."""
    graph = sparse.bmat([[None, A], [A.T, None]]) if A.shape[0] else sparse.csr_array((n, n))
    _, lab = csgraph.connected_components(graph, directed=False)
    lab = lab[A.shape[0] :] if A.shape[0] else lab
    _, labels = np.unique(lab, return_inverse=True)
    return np.asarray(labels, dtype=np.intp)
