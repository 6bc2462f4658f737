r"""Steps 1 and 2 of the switching bound (``docs/margins_bounds.md``): ranges and moves.

Interval propagation of the equations :math:`A y = b` (:func:`propagate`), and the integer moves
:math:`m` with :math:`Am = 0` through a cell (:func:`moves_through`: alternating 4-cycles and
the Markov moves of :mod:`persuasive.margins.moves`). Split from
:mod:`persuasive.margins.switching`, which re-exports :func:`propagate`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from persuasive.margins.moves import markov_moves

__all__ = ["four_cycles", "moves_through", "propagate"]


def propagate(
    A: sparse.csr_array,
    b: NDArray[np.int64],
    L: NDArray[np.int64],
    U: NDArray[np.int64],
    rounds: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Interval propagation of ``A y = b`` (0/1 ``A``), batched over the rows of ``L``, ``U``.

    For every row e and cell j of it, ``y_j = b_e - sum_{k != j} y_k`` lies in
    ``[b_e - sum U_k, b_e - sum L_k]``; the ranges are intersected, ``rounds`` times (or until
    nothing changes). Integer arithmetic: exact. Returns the new ``(L, U)`` (an empty range,
    ``L > U``, proves that no integer point of the box meets the equations).
    """
    L, U = np.atleast_2d(L).astype(np.int64), np.atleast_2d(U).astype(np.int64)
    coo = sparse.coo_array(A)
    order = np.argsort(coo.col, kind="stable")
    row, col = coo.row[order], coo.col[order]
    starts = np.flatnonzero(np.r_[True, np.diff(col) > 0])
    cells = col[starts]
    At = sparse.csr_array(A)
    for _ in range(rounds):
        SL = (At @ L.T).T  # batch x rows
        SU = (At @ U.T).T
        lo_c = b[row][None, :] - (SU[:, row] - U[:, col])
        hi_c = b[row][None, :] - (SL[:, row] - L[:, col])
        newL, newU = L.copy(), U.copy()
        newL[:, cells] = np.maximum(L[:, cells], np.maximum.reduceat(lo_c, starts, axis=1))
        newU[:, cells] = np.minimum(U[:, cells], np.minimum.reduceat(hi_c, starts, axis=1))
        done = np.array_equal(newL, L) and np.array_equal(newU, U)
        L, U = newL, newU
        if done or np.any(L > U):
            break
    return L, U


def four_cycles(A: sparse.csr_array) -> list[tuple[int, int, int, int]]:
    """Alternating 4-cycles (i, j, k, l): +i -j +k -l, i and j share a row, j and k, k and l,
    l and i, each of the four cells in exactly the two rows it shares along the cycle (so the
    cycle is a move of those rows; the caller checks it against every row)."""
    Ac = sparse.csc_array(A)
    deg = np.diff(Ac.indptr)
    rows_of = [Ac.indices[Ac.indptr[j] : Ac.indptr[j + 1]] for j in range(A.shape[1])]
    Ar = sparse.csr_array(A)
    cells_of = [Ar.indices[Ar.indptr[e] : Ar.indptr[e + 1]] for e in range(A.shape[0])]
    out: list[tuple[int, int, int, int]] = []
    for i in range(A.shape[1]):
        if deg[i] < 2:
            continue
        for a_ in range(len(rows_of[i])):
            for b_ in range(len(rows_of[i])):
                if a_ == b_:
                    continue
                e1, e2 = int(rows_of[i][a_]), int(rows_of[i][b_])
                for j in cells_of[e1]:
                    if j == i:
                        continue
                    for f in rows_of[j]:
                        if f == e1:
                            continue
                        fc = set(cells_of[int(f)].tolist())
                        for ll in cells_of[e2]:
                            if ll == i or ll == j:
                                continue
                            for g in rows_of[ll]:
                                if g == e2 or g == f:
                                    continue
                                for k in cells_of[int(g)]:
                                    if int(k) in fc and k not in (i, j, ll):
                                        out.append((i, int(j), int(k), int(ll)))
    return out


def moves_through(A: sparse.csr_array) -> list[list[tuple[NDArray[np.intp], NDArray[np.int64]]]]:
    """Per cell i: candidate moves (cells, signs) with ``A m = 0`` and ``m_i = +1``."""
    n = A.shape[1]
    rows: list[NDArray[np.intp]] = []
    vals: list[NDArray[np.int64]] = []
    if n <= 20000:
        for i, j, k, ll in four_cycles(A):
            rows.append(np.array([i, j, k, ll], dtype=np.intp))
            vals.append(np.array([1, -1, 1, -1], dtype=np.int64))
    M = markov_moves(A).moves
    for r in range(M.shape[0]):
        rows.append(M.indices[M.indptr[r] : M.indptr[r + 1]].astype(np.intp))
        vals.append(M.data[M.indptr[r] : M.indptr[r + 1]].astype(np.int64))
    per: list[list[tuple[NDArray[np.intp], NDArray[np.int64]]]] = [[] for _ in range(n)]
    seen: list[set[bytes]] = [set() for _ in range(n)]
    if not rows:
        return per
    Ac = sparse.csr_array(A)
    for c, s in zip(rows, vals, strict=True):
        m = np.zeros(n, dtype=np.int64)
        np.add.at(m, c, s)
        if np.any(Ac @ m != 0):  # not a move of every row (e.g. a row outside the graph)
            continue
        nz = np.flatnonzero(m)
        for i in nz[np.abs(m[nz]) == 1]:
            sg = m[nz] * m[i]  # normalised: +1 at i
            key = nz.tobytes() + sg.tobytes()
            if key not in seen[i]:
                seen[i].add(key)
                per[i].append((nz.astype(np.intp), sg))
    return per
