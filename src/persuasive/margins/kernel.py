r"""Integer basis of :math:`\ker A` for the chain moves (:mod:`persuasive.margins.moves`).

From the reduced row echelon form of A: a lattice basis when the echelon form has no fractions
(as for totally unimodular A), shortened by unimodular pairwise reduction.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

#: Largest denominator tried when scaling a rational kernel vector to integers.
MAX_DENOMINATOR: int = 1000

# ----------------------------------------------------------------------------- kernel basis


def integer_kernel(A: sparse.csr_array | sparse.csr_matrix) -> NDArray[np.int64]:
    """Integer basis vectors of ker A (rows), from the reduced row echelon form of A.

    Parameters
    ----------
    A : sparse matrix, shape (m, n)
        Integer constraint matrix.

    Returns
    -------
    ndarray of int64, shape (k, n)
        One vector per free column of the echelon form, scaled to the smallest integer multiple
        (denominators up to ``MAX_DENOMINATOR``) and divided by the gcd of its entries. Exact
        for totally unimodular A (two-way margins: entries in {0, ±1}); vectors failing
        ``A m = 0`` after rounding are dropped.

    Notes
    -----
    Dense floating-point Gauss–Jordan elimination with partial pivoting; each pivot updates only
    the rows with a nonzero in the pivot column and the columns right of it.

    Examples
    --------
    >>> from scipy import sparse
    >>> A = sparse.csr_array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]])
    >>> integer_kernel(A).tolist()
    [[1, -1, -1, 1]]
    """
    A = sparse.csr_array(A)
    M = A.toarray().astype(np.float64)
    m, n = M.shape
    pivots: list[int] = []
    r = 0
    for c in range(n):
        if r == m:
            break
        p = r + int(np.argmax(np.abs(M[r:, c])))
        if abs(M[p, c]) < 1e-9:
            continue
        if p != r:
            M[[r, p], c:] = M[[p, r], c:]
        M[r, c:] /= M[r, c]
        nz = np.flatnonzero(M[:, c])
        nz = nz[nz != r]
        if nz.size:
            M[np.ix_(nz, np.arange(c, n))] -= np.outer(M[nz, c], M[r, c:])
        pivots.append(c)
        r += 1
    is_pivot = np.zeros(n, dtype=bool)
    is_pivot[pivots] = True
    free = np.flatnonzero(~is_pivot)
    if free.size == 0:
        return np.zeros((0, n), dtype=np.int64)
    K = np.zeros((free.size, n))
    K[np.arange(free.size), free] = 1.0
    K[:, pivots] = -M[: len(pivots)][:, free].T
    scale = np.zeros(free.size)
    todo = np.arange(free.size)
    for d in range(1, MAX_DENOMINATOR + 1):
        X = K[todo] * d
        ok = np.abs(X - np.rint(X)).max(axis=1) < 1e-6
        scale[todo[ok]] = d
        todo = todo[~ok]
        if todo.size == 0:
            break
    keep = scale > 0
    ints = np.rint(K[keep] * scale[keep, None]).astype(np.int64)
    g = np.gcd.reduce(np.abs(ints), axis=1)
    ints //= np.maximum(g, 1)[:, None]
    ok = ~np.any((A @ ints.T) != 0, axis=0) if ints.size else np.zeros(0, dtype=bool)
    return ints[ok].reshape(-1, n)


def _reduce(V: NDArray[np.int64], passes: int = 3) -> NDArray[np.int64]:
    """Shorten lattice vectors by replacing ``v_i`` with ``v_i ± v_j`` when that has a smaller
    support (a unimodular change: the lattice spanned is unchanged)."""
    V = V.copy()
    for _ in range(passes):
        changed = False
        S = sparse.csr_array((V != 0).astype(np.int64))
        overlap = (S @ S.T).tocsr()
        for i in range(V.shape[0]):
            js = overlap.indices[overlap.indptr[i] : overlap.indptr[i + 1]]
            js = js[js != i]
            if js.size == 0:
                continue
            best = int(np.count_nonzero(V[i]))
            cand = np.concatenate([V[i] - V[js], V[i] + V[js]])
            size = np.count_nonzero(cand, axis=1)
            k = int(np.argmin(size))
            if size[k] < best:
                V[i] = cand[k]
                changed = True
        if not changed:
            break
    return V


def _pair_moves(V: NDArray[np.int64]) -> NDArray[np.int64]:
    """The sums and differences ``v_i ± v_j`` of overlapping vectors that are no longer (in
    support size and largest entry) than the longer of the two: further short moves."""
    S = sparse.csr_array((V != 0).astype(np.int64))
    overlap = sparse.triu(S @ S.T, k=1).tocoo()
    i, j = overlap.row, overlap.col
    if i.size == 0:
        return np.zeros((0, V.shape[1]), dtype=np.int64)
    size = np.count_nonzero(V, axis=1)
    top = np.abs(V).max(axis=1)
    out = []
    for sign in (1, -1):
        W = V[i] + sign * V[j]
        ok = (np.count_nonzero(W, axis=1) <= np.maximum(size[i], size[j])) & (
            np.abs(W).max(axis=1) <= np.maximum(top[i], top[j])
        )
        out.append(W[ok & np.any(W != 0, axis=1)])
    return np.concatenate(out)
