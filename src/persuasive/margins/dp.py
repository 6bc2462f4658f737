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

with :math:`K_t` the constraints of cell t (forward–backward on the sum lattice). Each message axis
only covers the *window* of partial sums that are both reachable from the processed cells and
completable by the remaining ones (:func:`_windows`; every other state has zero posterior weight),
stored with an offset, and a cell only visits the values that map the window into the next one.
The cost is the largest windowed frontier (:func:`frontier_size`) times the number of cells and
values; all arithmetic stays in the log domain.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.sparse import csgraph


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


def _windows(
    A: sparse.csr_array,
    bp: NDArray[np.int64],
    order: NDArray[np.intp],
    zlo: NDArray[np.int64],
    zhi: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Feasible partial sums per boundary: ``lo[t, k] <= s_k <= hi[t, k]`` after cells ``< t``.

    A partial sum ``s_k`` over the processed cells (each ``z_i`` in ``[zlo_i, zhi_i]``) is
    reachable iff it lies in [Σ_P zlo, Σ_P zhi], and completable iff ``b'_k - s_k`` lies in
    [Σ_R zlo, Σ_R zhi] over the remaining cells R. Every state outside both has zero weight
    in the forward or the backward message, hence zero posterior weight.
    """
    Ao = sparse.csr_array(A[:, order]).astype(np.int64)
    n = order.size
    pre_lo = np.zeros((n + 1, A.shape[0]), dtype=np.int64)
    pre_hi = np.zeros((n + 1, A.shape[0]), dtype=np.int64)
    dense = Ao.toarray().T  # (n, m)
    pre_lo[1:] = np.cumsum(dense * zlo[order][:, None], axis=0)
    pre_hi[1:] = np.cumsum(dense * zhi[order][:, None], axis=0)
    lo = np.maximum(pre_lo, bp[None, :] - (pre_hi[-1] - pre_hi))
    hi = np.minimum(pre_hi, bp[None, :] - (pre_lo[-1] - pre_lo))
    return lo, hi


def _support(logw: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """First and last finite column per row (0, -1 for a row without any)."""
    fin = np.isfinite(logw)
    w = logw.shape[1]
    any_ = fin.any(axis=1)
    zlo = np.where(any_, np.argmax(fin, axis=1), 0).astype(np.int64)
    zhi = np.where(any_, w - 1 - np.argmax(fin[:, ::-1], axis=1), -1).astype(np.int64)
    return zlo, zhi


def frontier_size(
    A: sparse.csr_array,
    b: NDArray[np.int64],
    order: NDArray[np.intp],
    widths: NDArray[np.int64] | None = None,
) -> float:
    """The largest message size of the windowed DP in this order (a float, may be huge).

    ``b`` is the shifted right-hand side b'. Without ``widths`` every cell is taken to range
    over ``0..min_k b'_k`` (the most its constraints allow), an upper bound on the size of
    :func:`component_marginals` for any supports; with ``widths`` cell i ranges over
    ``0..widths_i - 1`` (capped likewise).
    """
    n = order.size
    if n == 0 or A.shape[0] == 0:
        return 1.0
    bp = np.asarray(b, dtype=np.int64)
    cap = np.full(A.shape[1], np.iinfo(np.int64).max // 4, dtype=np.int64)
    coo = sparse.coo_array(A)
    np.minimum.at(cap, coo.col, np.maximum(bp[coo.row], 0))
    if widths is not None:
        cap = np.minimum(cap, np.asarray(widths, dtype=np.int64) - 1)
    zhi = np.maximum(cap, 0)
    _, first, last = _plan(A, order)
    lo, hi = _windows(A, bp, order, np.zeros(A.shape[1], dtype=np.int64), zhi)
    size = np.maximum(hi - lo + 1, 0)[:n].astype(np.float64)
    steps = np.arange(n)[:, None]
    active = (first[None, :] <= steps) & (last[None, :] >= steps)
    with np.errstate(over="ignore", divide="ignore"):  # inf: far beyond any budget
        logsize = np.where(active, np.log(np.maximum(size, 1.0)), 0.0)
        return float(np.exp(logsize.sum(axis=1).max(initial=0.0)))


def _lse(x: NDArray[np.float64], axis: int | None = None) -> NDArray[np.float64] | float:
    """log Σ exp along ``axis`` (max-shifted; an all -inf slice gives -inf)."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        s = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if axis is None:
        return float(s.reshape(()))
    return np.squeeze(s, axis=axis)


class _Msg:
    """A log-weight array over partial sums ``off[p] <= s_p < off[p] + arr.shape[p]`` of the
    constraints ``axes`` (sorted)."""

    __slots__ = ("arr", "axes", "off")

    def __init__(self, arr: NDArray[np.float64], axes: list[int], off: list[int]) -> None:
        self.arr, self.axes, self.off = arr, axes, off

    def insert(self, k: int, off: int, size: int, index: int) -> _Msg:
        """Add an axis for constraint k holding arr at ``index`` (0-based in the window)."""
        p = int(np.searchsorted(self.axes, k))
        shape = list(self.arr.shape)
        shape.insert(p, size)
        out = np.full(shape, -np.inf)
        sl: list[int | slice] = [slice(None)] * len(shape)
        sl[p] = index
        out[tuple(sl)] = self.arr
        return _Msg(out, [*self.axes[:p], k, *self.axes[p:]], [*self.off[:p], off, *self.off[p:]])

    def take(self, k: int, index: int) -> _Msg:
        p = self.axes.index(k)
        return _Msg(
            np.take(self.arr, index, axis=p),
            [*self.axes[:p], *self.axes[p + 1 :]],
            [*self.off[:p], *self.off[p + 1 :]],
        )


def _pairs(
    src_off: list[int],
    src_shape: tuple[int, ...],
    dst_off: list[int],
    dst_shape: tuple[int, ...],
    pos: list[int],
    v: int,
) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """Slices with ``dst[s + v e_pos] <- src[s]`` over the overlap of both windows (None: empty).
    Axes outside ``pos`` must share their window."""
    src: list[slice] = [slice(None)] * len(src_shape)
    dst: list[slice] = [slice(None)] * len(src_shape)
    for p in pos:
        a = max(src_off[p] + v, dst_off[p])
        e = min(src_off[p] + src_shape[p] + v, dst_off[p] + dst_shape[p])
        if a >= e:
            return None
        src[p] = slice(a - v - src_off[p], e - v - src_off[p])
        dst[p] = slice(a - dst_off[p], e - dst_off[p])
    return tuple(src), tuple(dst)


def _vals(
    vals: NDArray[np.intp],
    src_off: list[int],
    src_shape: tuple[int, ...],
    dst_off: list[int],
    dst_shape: tuple[int, ...],
    pos: list[int],
) -> NDArray[np.intp]:
    """The values v for which some ``s`` in the source window has ``s + v e_pos`` in the
    destination window."""
    lo, hi = -np.inf, np.inf
    for p in pos:
        lo = max(lo, dst_off[p] - (src_off[p] + src_shape[p] - 1))
        hi = min(hi, dst_off[p] + dst_shape[p] - 1 - src_off[p])
    return vals[(vals >= lo) & (vals <= hi)]


def _diag(
    off: list[int], pos: list[int], target: list[int], vals: NDArray[np.intp]
) -> tuple[NDArray[np.intp], ...]:
    """Indices on the ``pos`` axes of ``s = target - v`` (one array per axis; all in the window
    by :func:`_vals`)."""
    return tuple(target[j] - vals - off[p] for j, p in enumerate(pos))


def _push(
    F: NDArray[np.float64],
    src_off: list[int],
    out_off: list[int],
    out_shape: tuple[int, ...],
    pos: list[int],
    logw: NDArray[np.float64],
    vals: NDArray[np.intp],
) -> NDArray[np.float64]:
    """``out[s'] = log Σ_v exp(F[s' - v e_pos] + logw[v])`` on the output window (exact)."""
    vals = _vals(vals, src_off, F.shape, out_off, out_shape, pos)
    if vals.size == 0:
        return np.full(out_shape, -np.inf)
    if pos and all(out_shape[p] == 1 for p in pos):  # closes its axes: one diagonal gather
        G = np.moveaxis(F, pos, range(len(pos)))
        G = G[_diag(src_off, pos, [out_off[p] for p in pos], vals)]  # (n_vals, rest)
        res = np.asarray(_lse(G + logw[vals].reshape((-1,) + (1,) * (G.ndim - 1)), axis=0))
        return np.expand_dims(res, tuple(pos)).reshape(out_shape)
    slices = []
    for v in vals:
        pr = _pairs(src_off, F.shape, out_off, out_shape, pos, int(v))
        if pr is not None:
            slices.append((pr[0], pr[1], float(logw[v])))
    m = np.full(out_shape, -np.inf)
    for src, dst, w in slices:
        np.maximum(m[dst], F[src] + w, out=m[dst])
    m = np.where(np.isfinite(m), m, 0.0)
    acc = np.zeros(out_shape)
    for src, dst, w in slices:
        acc[dst] += np.exp(F[src] + (w - m[dst]))
    with np.errstate(divide="ignore"):
        return np.log(acc) + m


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
    logw = np.asarray(logw, dtype=np.float64)
    if A.shape[0] == 0:  # independent cells: the truncated prior
        lz = np.asarray(_lse(logw, axis=1))[:, None]
        with np.errstate(invalid="ignore"):
            return logw - lz, float(lz.sum())
    order = order_cells(A) if order is None else np.asarray(order, dtype=np.intp)
    bp = (b - A @ lo).astype(np.int64)
    ks, first, last = _plan(A, order)
    zlo, zhi = _support(logw)
    empty = (np.full((n, width), -np.inf), -np.inf)
    if (zhi < zlo).any():
        return empty
    wlo, whi = _windows(A, bp, order, zlo, zhi)
    if (whi < wlo).any():  # some constraint cannot be met within the supports
        return empty
    vals_of = [np.flatnonzero(np.isfinite(logw[c])) for c in range(n)]

    def window(t: int, axes: list[int]) -> tuple[list[int], tuple[int, ...]]:
        return [int(wlo[t, k]) for k in axes], tuple(int(whi[t, k] - wlo[t, k] + 1) for k in axes)

    M = _Msg(np.zeros(()), [], [])
    fwd: list[_Msg] = []
    for t, cell in enumerate(order):
        for k in ks[t]:
            if first[k] == t:
                M = M.insert(int(k), 0, 1, 0)  # window at t of a fresh constraint is {0}
        fwd.append(M)
        pos = [M.axes.index(int(k)) for k in ks[t]]
        out_off, out_shape = window(t + 1, M.axes)
        F = _push(M.arr, M.off, out_off, out_shape, pos, logw[cell], vals_of[cell])
        M = _Msg(F, M.axes, out_off)
        for k in ks[t]:
            if last[k] == t:  # window at t + 1 of a closed constraint is {b'_k}
                M = M.take(int(k), 0)
    log_z = float(M.arr)
    if not np.isfinite(log_z):  # no completion has prior mass
        return np.full((n, width), -np.inf), log_z
    out = np.full((n, width), -np.inf)
    B = _Msg(np.zeros(()), [], [])
    for t in range(order.size - 1, -1, -1):
        cell = order[t]
        for k in ks[t]:
            if last[k] == t:
                B = B.insert(int(k), int(bp[k]), 1, 0)
        Ft = fwd[t]
        assert Ft.axes == B.axes
        pos = [B.axes.index(int(k)) for k in ks[t]]
        w = logw[cell]
        vals = _vals(vals_of[cell], Ft.off, Ft.arr.shape, B.off, B.arr.shape, pos)
        if vals.size == 0:
            B = _Msg(np.full(Ft.arr.shape, -np.inf), B.axes, Ft.off)
        elif pos and all(B.arr.shape[p] == 1 for p in pos):  # closing cell: the diagonal
            Bs = np.squeeze(B.arr, axis=tuple(pos))
            idx = _diag(Ft.off, pos, [B.off[p] for p in pos], vals)
            G = np.moveaxis(Ft.arr, pos, range(len(pos)))[idx]  # (n_vals, rest)
            part = Bs[None] + w[vals].reshape((-1,) + (1,) * Bs.ndim)
            with np.errstate(invalid="ignore"):
                out[cell, vals] = np.asarray(_lse((G + part).reshape(vals.size, -1), axis=1))
            out[cell, vals] -= log_z
            Bt = np.full(np.moveaxis(Ft.arr, pos, range(len(pos))).shape, -np.inf)
            Bt[idx] = part
            B = _Msg(np.moveaxis(Bt, range(len(pos)), pos), B.axes, Ft.off)
        else:
            prs = []
            for v in vals:
                pr = _pairs(Ft.off, Ft.arr.shape, B.off, B.arr.shape, pos, int(v))
                if pr is not None:
                    prs.append((int(v), pr[0], pr[1]))
            m = np.full(Ft.arr.shape, -np.inf)
            for v, src, dst in prs:
                np.maximum(m[src], B.arr[dst] + w[v], out=m[src])
            m = np.where(np.isfinite(m), m, 0.0)
            acc = np.zeros(Ft.arr.shape)
            for v, src, dst in prs:
                part = B.arr[dst] + w[v]
                acc[src] += np.exp(part - m[src])
                with np.errstate(invalid="ignore"):
                    out[cell, v] = _lse(Ft.arr[src] + part) - log_z
            with np.errstate(divide="ignore"):
                B = _Msg(np.log(acc) + m, B.axes, Ft.off)
        for k in ks[t]:
            if first[k] == t:
                B = B.take(int(k), 0)
    return out, log_z
