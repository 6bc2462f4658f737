r"""Exact posterior marginals of one component by a frontier dynamic programme.

Within a component with cells :math:`y_1..y_n` (in a band-reducing order), constraints
:math:`\sum_{i \in C_k} y_i = b_k` and weights :math:`w_i(v) = \log q_i(v)` on
:math:`[\ell_i, u_i]`, shift :math:`z_i = y_i - \ell_i` so that every partial sum of a constraint
lies in :math:`\{0, \dots, b'_k\}`, :math:`b'_k = b_k - \sum_{i\in C_k} \ell_i`. The forward
message after cells :math:`1..t` is a log-weight array over the partial sums of the *open*
constraints (those with cells on both sides of t):

.. math:: F_{t}(s) = \log \sum_{z_{1..t}:\ \text{closed constraints met},\ \text{partial sums}=s}
          \ \prod_{i \le t} q_i(\ell_i + z_i),

and the backward message :math:`B_t(s)` the log weight of completing the remaining cells so that
every constraint reaches :math:`b'_k`. Then

.. math:: \log \Pi(y_t = \ell_t + v) = \operatorname{logsumexp}_s
          \big[F'_{t}(s) + w_t(\ell_t+v) + B'_{t+1}(s + v e_{K_t})\big] - \log Z,

with :math:`K_t` the constraints of cell t (forward–backward on the sum lattice). The cost is the
largest frontier :math:`\prod_{k\ \text{open}} (b'_k + 1)` times the number of cells and values.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.sparse import csgraph
from scipy.special import logsumexp


def order_cells(A: sparse.csr_array) -> NDArray[np.intp]:
    """A band-reducing order of the component's cells (reverse Cuthill–McKee on A^T A)."""
    n = A.shape[1]
    if n <= 2 or A.shape[0] == 0:
        return np.arange(n)
    adj = sparse.csr_matrix((A.T @ A).astype(np.int64))
    return np.asarray(csgraph.reverse_cuthill_mckee(adj, symmetric_mode=True), dtype=np.intp)


def _plan(
    A: sparse.csr_array, order: NDArray[np.intp]
) -> tuple[list[NDArray[np.intp]], NDArray[np.intp], NDArray[np.intp]]:
    """Per step the constraints of the cell; first and last step touching each constraint."""
    Ao = sparse.csc_array(A[:, order])
    ks = [np.sort(Ao.indices[Ao.indptr[t] : Ao.indptr[t + 1]]) for t in range(order.size)]
    coo = Ao.tocoo()
    first = np.full(A.shape[0], order.size, dtype=np.intp)
    last = np.full(A.shape[0], -1, dtype=np.intp)
    np.minimum.at(first, coo.row, coo.col)
    np.maximum.at(last, coo.row, coo.col)
    return ks, first, last


def frontier_size(A: sparse.csr_array, b: NDArray[np.int64], order: NDArray[np.intp]) -> float:
    """The largest message size of the DP in this order (a float, may be huge)."""
    _, first, last = _plan(A, order)
    logsize = np.log(b.astype(np.float64) + 1.0)
    steps = np.arange(order.size)[:, None]
    active = (first[None, :] <= steps) & (last[None, :] >= steps)
    with np.errstate(over="ignore"):  # inf: far beyond any budget
        return float(np.exp((active * logsize[None, :]).sum(axis=1).max(initial=0.0)))


def _shift(arr: NDArray[np.float64], pos: list[int], v: int, back: bool) -> NDArray[np.float64]:
    """out[s + v e] = arr[s] (forward) or out[s] = arr[s + v e] (back), -inf elsewhere."""
    if v == 0:
        return arr
    out = np.full(arr.shape, -np.inf)
    src: list[slice] = [slice(None)] * arr.ndim
    dst: list[slice] = [slice(None)] * arr.ndim
    for p in pos:
        size = arr.shape[p]
        if v >= size:
            return out
        src[p], dst[p] = (slice(0, size - v), slice(v, size))
        if back:
            src[p], dst[p] = dst[p], src[p]
    out[tuple(dst)] = arr[tuple(src)]
    return out


def _insert(
    arr: NDArray[np.float64], axes: list[int], k: int, size: int, index: int
) -> tuple[NDArray[np.float64], list[int]]:
    """Add an axis for constraint k (kept sorted) holding arr at ``index``, -inf elsewhere."""
    p = int(np.searchsorted(axes, k))
    shape = list(arr.shape)
    shape.insert(p, size)
    out = np.full(shape, -np.inf)
    sl: list[int | slice] = [slice(None)] * len(shape)
    sl[p] = index
    out[tuple(sl)] = arr
    return out, [*axes[:p], k, *axes[p:]]


def _take(
    arr: NDArray[np.float64], axes: list[int], k: int, index: int
) -> tuple[NDArray[np.float64], list[int]]:
    p = axes.index(k)
    return np.take(arr, index, axis=p), [*axes[:p], *axes[p + 1 :]]


def component_marginals(
    A: sparse.csr_array,
    b: NDArray[np.int64],
    lo: NDArray[np.int64],
    logw: NDArray[np.float64],
    order: NDArray[np.intp] | None = None,
) -> tuple[NDArray[np.float64], float]:
    """Exact log posterior marginals of one component.

    Parameters
    ----------
    A, b : the component's constraints (0/1, every row touches a cell; ``b`` integer).
    lo : support start per cell; ``logw[i, j] = log q_i(lo_i + j)`` (-inf beyond the support).

    Returns
    -------
    (log_pmf, log_Z) : ``log_pmf[i, j] = log Π(y_i = lo_i + j)``; log_Z the log prior mass of
        the constraint set within the supports (-inf if empty).
    """
    n, width = logw.shape
    if A.shape[0] == 0:  # independent cells: the truncated prior
        lz = logsumexp(logw, axis=1, keepdims=True)
        return logw - lz, float(lz.sum())
    order = order_cells(A) if order is None else order
    bp = (b - A @ lo).astype(np.int64)
    ks, first, last = _plan(A, order)
    F = np.zeros(())
    axes: list[int] = []
    fwd: list[tuple[NDArray[np.float64], list[int]]] = []
    for t, cell in enumerate(order):
        for k in ks[t]:
            if first[k] == t:
                F, axes = _insert(F, axes, int(k), int(bp[k]) + 1, 0)
        fwd.append((F, axes))
        pos = [axes.index(int(k)) for k in ks[t]]
        terms = [
            _shift(F, pos, v, False) + logw[cell, v]
            for v in range(width)
            if np.isfinite(logw[cell, v])
        ]
        F = logsumexp(np.stack(terms), axis=0) if terms else np.full(F.shape, -np.inf)
        for k in ks[t]:
            if last[k] == t:
                F, axes = _take(F, axes, int(k), int(bp[k]))
    log_z = float(F)
    if not np.isfinite(log_z):  # no completion has prior mass
        return np.full((n, width), -np.inf), log_z
    out = np.full((n, width), -np.inf)
    B = np.zeros(())
    baxes: list[int] = []
    for t in range(order.size - 1, -1, -1):
        cell = order[t]
        for k in ks[t]:
            if last[k] == t:
                B, baxes = _insert(B, baxes, int(k), int(bp[k]) + 1, int(bp[k]))
        Ft, faxes = fwd[t]
        assert faxes == baxes
        pos = [baxes.index(int(k)) for k in ks[t]]
        vals = [v for v in range(width) if np.isfinite(logw[cell, v])]
        back = np.stack([_shift(B, pos, v, True) + logw[cell, v] for v in vals])
        with np.errstate(invalid="ignore"):
            joint = logsumexp((back + Ft[None]).reshape(len(vals), -1), axis=1)
        out[cell, vals] = joint - log_z
        B = logsumexp(back, axis=0)
        for k in ks[t]:
            if first[k] == t:
                B, baxes = _take(B, baxes, int(k), 0)
    return out, log_z
