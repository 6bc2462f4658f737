r"""Moves of the Markov chains on a margins fibre (see :mod:`persuasive.margins.mcmc`).

Integer vectors :math:`m` with :math:`A m = 0`: alternating cycles of the margin-entry graph when
every cell lies in at most two constraint rows, else a reduced integer basis of :math:`\ker A`.
The construction and its lattice-generation argument are in the docstring of
:mod:`persuasive.margins.mcmc`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from persuasive.margins.cycles import (
    CYCLE_LENGTHS,
    MAX_CYCLE,
    MAX_LOAD,
    WALKS_PER_CELL,
    _capped,
    _cycle_moves,
    _Graph,
    _graph_rows,
    _normalise,
)
from persuasive.margins.kernel import _pair_moves, _reduce, integer_kernel

__all__ = ["CYCLE_LENGTHS", "MAX_CYCLE", "MAX_LOAD", "WALKS_PER_CELL", "MoveSet", "markov_moves"]


@dataclass(frozen=True)
class MoveSet:
    """The moves of one component (see the module docstring).

    Attributes
    ----------
    moves : sparse.csr_array, shape (k, n)
        One integer move per row, ``A @ moves.T == 0``; sign-normalised and deduplicated.
    basis : str
        ``"cycles"`` (alternating cycles of the constraint graph, containing a weakly
        fundamental cycle basis: they generate the lattice ker A ∩ Z^n), ``"kernel"`` (the
        integer basis from the echelon form, reduced, and short combinations) or ``"none"``
        (ker A = 0).
    """

    moves: sparse.csr_array
    basis: str


def markov_moves(A: sparse.csr_array | sparse.csr_matrix) -> MoveSet:
    """Short integer moves spanning ker A (see the module docstring).

    Deterministic: the random cycles use a fixed seed.

    Parameters
    ----------
    A : sparse matrix, shape (m, n)
        0/1 constraint matrix of one component.

    Returns
    -------
    MoveSet

    Examples
    --------
    >>> from scipy import sparse
    >>> A = sparse.csr_array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]])
    >>> ms = markov_moves(A)
    >>> ms.basis, ms.moves.toarray().tolist()
    ('cycles', [[1, -1, -1, 1]])
    """
    A = sparse.csr_array(A)
    m, n = A.shape
    Ac = sparse.csc_array(A)
    parts: list[sparse.csr_array] = []
    basis = "kernel"
    if m == 0 or (np.all(Ac.data == 1) and Ac.nnz):
        rows = _graph_rows(Ac)
        sub = sparse.csc_array(A[rows])
        deg = np.diff(sub.indptr)
        ground = rows.size
        at = np.minimum(sub.indptr[:-1], max(sub.nnz - 1, 0))
        first = sub.indices[at] if sub.nnz else np.zeros(n, np.intp)
        second = sub.indices[np.minimum(at + 1, max(sub.nnz - 1, 0))] if sub.nnz else first
        ends = np.stack([np.where(deg >= 1, first, ground), np.where(deg >= 2, second, ground)])
        moves, spans = _cycle_moves(A, _Graph.build(ends.astype(np.intp), ground + 1, ground))
        parts = [moves]
        basis = "cycles" if spans else "kernel"
    if basis == "kernel":
        K = integer_kernel(A)
        if K.shape[0]:
            K = _reduce(K)
            P = _normalise(sparse.csr_array(_pair_moves(K)))
            load = np.count_nonzero(K, axis=0).astype(np.int64)
            parts += [sparse.csr_array(K), P[_capped(P, load, MAX_LOAD)]]
    moves = _normalise(sparse.vstack(parts)) if parts else sparse.csr_array((0, n))
    return MoveSet(sparse.csr_array(moves, dtype=np.int64), basis if moves.shape[0] else "none")
