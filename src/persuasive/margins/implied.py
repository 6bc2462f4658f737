r"""Published margins implied by finer ones: which rows of the incidence can be left out.

A margin :math:`M` is *implied* by a published margin :math:`M'` when every entry of
:math:`M` is a union of entries of :math:`M'`: then its total is the sum of theirs, and the
constraint it puts on the suppressed cells follows from those of :math:`M'` (the published totals
are sums of one table). Without a hierarchy this is :math:`M \subset M'` (the grand total and
the row totals under the table); with one, a coarser level's subtotals under a finer level's
(the ``district`` totals under the ``municipality`` totals, ``region + var`` under
``district + var``; ``docs/margins_release.md``, "Hierarchies").

The test is read from the incidence, not from the declared hierarchy: :math:`M'` implies
:math:`M` when the map from a cell's entry of :math:`M'` to its entry of :math:`M` is a
function over the cells (structural zeros, which lie in no entry, aside). So it holds for any
:class:`~persuasive.margins.MarginTable` with structural zeros, declared or not.

Dropping implied rows leaves :math:`\{y : Ay = b\}` unchanged, so the posterior of the
suppressed cells factorises over the connected components of the rows kept
(:func:`implied_free_rows`), which are finer than those of every row when a coarse total (the
grand total, a ``var`` total) links cells a finer margin keeps apart. The planner's search uses
them to compute only the part of a component a move changes (:mod:`persuasive.margins.search`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.sparse import csgraph

__all__ = ["implied_free_rows", "independent_parts"]


def implied_free_rows(A: sparse.csr_array, sizes: Sequence[int]) -> NDArray[np.bool_]:
    """Rows of the margins kept when every margin implied by another kept one is left out.

    Parameters
    ----------
    A : sparse array
        The incidence (margin entries × cells, :func:`persuasive.margins.constraints
        .full_incidence`): the rows of margin ``j`` follow those of margin ``j - 1``, and each
        cell with a nonzero lies in exactly one entry of every margin.
    sizes : sequence of int
        The number of entries (rows) of each margin, in row order.

    Returns
    -------
    bool ndarray
        One flag per row: True for the rows of the margins kept. Margins are taken finest
        first (most non-empty entries, then row order); one is left out when a margin already
        kept implies it, so of two margins that split the cells alike the first is kept.

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.margins import MarginTable
    >>> from persuasive.margins.constraints import full_incidence
    >>> t = MarginTable(np.ones((2, 3)), h=1, margins="rows,cols,total")
    >>> A, _ = full_incidence(t)   # rows: total (1), row totals (2), column totals (3)
    >>> implied_free_rows(A, [1, 2, 3]).astype(int).tolist()   # the total is implied
    [0, 1, 1, 1, 1, 1]
    """
    n_m = len(sizes)
    keep = np.ones(A.shape[0], dtype=bool)
    if n_m <= 1:
        return keep
    T = sparse.csr_array(A.T)
    per_cell = np.diff(T.indptr)
    cells = np.flatnonzero(per_cell == n_m)
    if cells.size == 0:
        return keep
    take = (T.indptr[cells][:, None] + np.arange(n_m)[None, :]).ravel()
    entry = np.sort(T.indices[take].reshape(cells.size, n_m), axis=1)  # margin j in column j
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    entry = entry - offsets[None, :]
    n_used = np.array([np.unique(entry[:, j]).size for j in range(n_m)])
    kept: list[int] = []
    for j in np.lexsort((np.arange(n_m), -n_used)):
        if any(_implies(entry[:, k], entry[:, j], int(sizes[j])) for k in kept):
            keep[offsets[j] : offsets[j] + sizes[j]] = False
        else:
            kept.append(int(j))
    return keep


def _implies(finer: NDArray[np.int64], coarser: NDArray[np.int64], n_coarser: int) -> bool:
    """Each entry of ``finer`` lies in one entry of ``coarser`` (over the cells given)."""
    pairs = np.unique(finer * n_coarser + coarser).size
    return bool(pairs == np.unique(finer).size)


def independent_parts(AT: sparse.csr_array, cells: NDArray[np.intp]) -> list[NDArray[np.intp]]:
    """The ``cells`` split into the connected components of the rows of ``AT`` (cells × rows,
    the transposed incidence of the rows kept), each in the order of ``cells``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import sparse
    >>> AT = sparse.csr_array(np.array([[1, 0], [1, 0], [0, 1]]))
    >>> [p.tolist() for p in independent_parts(AT, np.array([0, 1, 2]))]
    [[0, 1], [2]]
    """
    sub = AT[cells]
    n, lab = csgraph.connected_components(sub @ sub.T, directed=False)
    if n <= 1:
        return [cells]
    order = np.argsort(lab, kind="stable")
    splits = np.flatnonzero(np.diff(lab[order])) + 1
    return [cells[p] for p in np.split(order, splits)]
