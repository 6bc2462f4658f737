"""The windowed frontier DP of ``persuasive.margins.dp`` against brute-force enumeration and the
unwindowed dense DP it replaced (wide secondary supports, holes in the supports, random orders)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import sparse
from scipy.special import logsumexp

from persuasive.margins import dp


def _system(rng, shape, n_sec, h, wide):
    """A random table with suppressed cells; rows and columns touching them are constraints."""
    counts = rng.integers(0, 3 * h, size=shape)
    flat = counts.ravel()
    cells = rng.choice(flat.size, size=min(flat.size, rng.integers(2, 6)), replace=False)
    sec = np.zeros(cells.size, dtype=bool)
    sec[: min(n_sec, cells.size)] = True
    for j, c in enumerate(cells):  # primary below h, secondary in [h, h + wide)
        flat[c] = rng.integers(h, h + wide) if sec[j] else rng.integers(0, h)
    r, c = np.unravel_index(cells, shape)
    rows = [np.flatnonzero(r == i) for i in np.unique(r)]
    cols = [np.flatnonzero(c == j) for j in np.unique(c)]
    groups = [g for g in rows + cols if g.size]
    A = sparse.lil_array((len(groups), cells.size), dtype=np.int64)
    for k, g in enumerate(groups):
        A[k, g] = 1
    A = sparse.csr_array(A)
    x = flat[cells].astype(np.int64)
    b = (A @ x).astype(np.int64)
    lo = np.where(sec, h, 0).astype(np.int64)
    width = int(np.where(sec, wide, h).max())
    logw = rng.normal(size=(cells.size, width)) * 2.0
    widths = np.where(sec, wide, h)
    logw[np.arange(width)[None, :] >= widths[:, None]] = -np.inf
    holes = rng.random(logw.shape) < 0.15
    holes[np.arange(cells.size), x - lo] = False  # the true table keeps prior mass
    logw[holes] = -np.inf
    return A, b, lo, logw


def brute(A, b, lo, logw):
    """Oracle: enumerate every completion within the supports."""
    n, width = logw.shape
    Ad = A.toarray()
    supp = [np.flatnonzero(np.isfinite(logw[i])) for i in range(n)]
    acc: list[list[float]] = [[] for _ in range(n * width)]
    tot: list[float] = []
    for js in itertools.product(*supp):
        js = np.array(js)
        if np.array_equal(Ad @ (lo + js), b):
            w = float(logw[np.arange(n), js].sum())
            tot.append(w)
            for i, j in enumerate(js):
                acc[i * width + j].append(w)
    log_z = logsumexp(tot) if tot else -np.inf
    out = np.array([logsumexp(a) if a else -np.inf for a in acc]).reshape(n, width)
    return out - log_z, log_z


def dense_reference(A, b, lo, logw, order):
    """The previous, unwindowed DP: messages over every partial sum 0..b'_k of open constraints."""
    n, width = logw.shape
    bp = (b - A @ lo).astype(np.int64)
    ks, first, last = dp._plan(A, order)

    def shift(arr, pos, v, back):
        if v == 0:
            return arr
        out = np.full(arr.shape, -np.inf)
        src = [slice(None)] * arr.ndim
        dst = [slice(None)] * arr.ndim
        for p in pos:
            if v >= arr.shape[p]:
                return out
            src[p], dst[p] = slice(0, arr.shape[p] - v), slice(v, arr.shape[p])
            if back:
                src[p], dst[p] = dst[p], src[p]
        out[tuple(dst)] = arr[tuple(src)]
        return out

    def insert(arr, axes, k, size, index):
        p = int(np.searchsorted(axes, k))
        shape = list(arr.shape)
        shape.insert(p, size)
        out = np.full(shape, -np.inf)
        sl = [slice(None)] * len(shape)
        sl[p] = index
        out[tuple(sl)] = arr
        return out, [*axes[:p], k, *axes[p:]]

    def take(arr, axes, k, index):
        p = axes.index(k)
        return np.take(arr, index, axis=p), [*axes[:p], *axes[p + 1 :]]

    F, axes, fwd = np.zeros(()), [], []
    for t, cell in enumerate(order):
        for k in ks[t]:
            if first[k] == t:
                F, axes = insert(F, axes, int(k), int(bp[k]) + 1, 0)
        fwd.append((F, axes))
        pos = [axes.index(int(k)) for k in ks[t]]
        terms = [shift(F, pos, v, False) + logw[cell, v] for v in range(width)]
        F = logsumexp(np.stack(terms), axis=0)
        for k in ks[t]:
            if last[k] == t:
                F, axes = take(F, axes, int(k), int(bp[k]))
    log_z = float(F)
    out = np.full((n, width), -np.inf)
    B, baxes = np.zeros(()), []
    for t in range(n - 1, -1, -1):
        cell = order[t]
        for k in ks[t]:
            if last[k] == t:
                B, baxes = insert(B, baxes, int(k), int(bp[k]) + 1, int(bp[k]))
        Ft, _ = fwd[t]
        pos = [baxes.index(int(k)) for k in ks[t]]
        back = np.stack([shift(B, pos, v, True) + logw[cell, v] for v in range(width)])
        with np.errstate(invalid="ignore"):
            out[cell] = logsumexp((back + Ft[None]).reshape(width, -1), axis=1) - log_z
        B = logsumexp(back, axis=0)
        for k in ks[t]:
            if first[k] == t:
                B, baxes = take(B, baxes, int(k), 0)
    return out, log_z


def _close(got, want):
    fin = np.isfinite(want)
    assert np.array_equal(fin, np.isfinite(got))
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_matches_enumeration_with_wide_secondary_supports(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(rng.integers(2, 4, size=2))
    A, b, lo, logw = _system(rng, shape, n_sec=int(rng.integers(1, 3)), h=3, wide=40)
    orders = [None, rng.permutation(logw.shape[0]).astype(np.intp)]
    want, wz = brute(A, b, lo, logw)
    for order in orders:
        got, gz = dp.component_marginals(A, b, lo, logw, order)
        assert np.isclose(gz, wz, rtol=1e-10)
        _close(got, want)


@pytest.mark.parametrize("seed", range(20))
def test_matches_the_dense_dp(seed):
    rng = np.random.default_rng(100 + seed)
    shape = tuple(rng.integers(2, 5, size=2))
    A, b, lo, logw = _system(rng, shape, n_sec=int(rng.integers(1, 4)), h=4, wide=30)
    order = dp.order_cells(A)
    got, gz = dp.component_marginals(A, b, lo, logw, order)
    want, wz = dense_reference(A, b, lo, logw, order)
    assert np.isclose(gz, wz, rtol=1e-10)
    _close(got, want)


def test_three_way_table_against_enumeration():
    """Cells in three constraints each (a 2×2×2 table with all its line sums published)."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 4, size=(2, 2, 2))
    cells = np.arange(8)
    idx = np.array(np.unravel_index(cells, x.shape))
    groups = []
    for a in range(3):
        others = [d for d in range(3) if d != a]
        for key in itertools.product(range(2), range(2)):
            groups.append(np.flatnonzero((idx[others[0]] == key[0]) & (idx[others[1]] == key[1])))
    A = sparse.lil_array((len(groups), 8), dtype=np.int64)
    for k, g in enumerate(groups):
        A[k, g] = 1
    A = sparse.csr_array(A)
    b = (A @ x.ravel()).astype(np.int64)
    lo = np.zeros(8, dtype=np.int64)
    logw = rng.normal(size=(8, 4))
    want, wz = brute(A, b, lo, logw)
    got, gz = dp.component_marginals(A, b, lo, logw)
    assert np.isclose(gz, wz)
    _close(got, want)


def test_empty_constraint_set_gives_minus_infinity():
    A = sparse.csr_array(np.array([[1, 1]]))
    logw = np.full((2, 5), -np.inf)
    logw[:, :2] = 0.0  # values 0..1 cannot reach 7
    out, lz = dp.component_marginals(A, np.array([7]), np.zeros(2, np.int64), logw)
    assert lz == -np.inf and np.isneginf(out).all()
    logw[:, 4] = 0.0  # 3 + 4 = 7 is not reachable either: supports {0,1,4}
    out, lz = dp.component_marginals(A, np.array([7]), np.zeros(2, np.int64), logw)
    assert lz == -np.inf and np.isneginf(out).all()


def test_large_secondary_cells_match_the_dense_dp():
    """Rows of ~1000 split over wide secondary cells (one constraint per cell: the dense DP still
    fits in memory, the windowed one is tiny)."""
    rng = np.random.default_rng(3)
    x = np.array([2, 600, 400, 1, 3, 500])
    A = sparse.csr_array(np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]]))
    b = (A @ x).astype(np.int64)
    lo = np.array([0, 5, 5, 0, 0, 5], dtype=np.int64)
    logw = rng.normal(size=(6, 1100))
    logw[[0, 3, 4], 5:] = -np.inf
    logw[1, 700:] = -np.inf
    order = dp.order_cells(A)
    got, gz = dp.component_marginals(A, b, lo, logw, order)
    want, wz = dense_reference(A, b, lo, logw, order)
    assert np.isclose(gz, wz, rtol=1e-12)
    _close(got, want)
    bp = b - A @ lo
    assert dp.frontier_size(A, bp, order) <= np.prod(bp + 1.0)


def test_frontier_size_is_at_most_the_dense_frontier():
    rng = np.random.default_rng(11)
    for _ in range(20):
        A, b, lo, logw = _system(rng, (3, 4), n_sec=2, h=3, wide=25)
        bp = (b - A @ lo).astype(np.int64)
        order = dp.order_cells(A)
        _, first, last = dp._plan(A, order)
        steps = np.arange(order.size)[:, None]
        active = (first[None, :] <= steps) & (last[None, :] >= steps)
        dense = float(np.where(active, bp[None, :] + 1.0, 1.0).prod(axis=1).max())
        size = dp.frontier_size(A, bp, order)
        assert 1.0 <= size <= dense
        widths = np.full(logw.shape[0], 5)
        assert dp.frontier_size(A, bp, order, widths) <= size


def test_lean_logsumexp_matches_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 7)) * 50
    x[1] = -np.inf
    x[2, ::2] = -np.inf
    np.testing.assert_allclose(dp._lse(x, axis=1), logsumexp(x, axis=1))
    np.testing.assert_allclose(dp._lse(x.T, axis=0), logsumexp(x, axis=1))
    assert dp._lse(x) == pytest.approx(logsumexp(x))
    assert dp._lse(np.full(3, -np.inf)) == -np.inf
