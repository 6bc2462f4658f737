"""Attacker intervals (sdcTable attack()) against brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from persuasive.margins import MarginTable, attacker_intervals, parse_margins


def _sums(x, margin):
    return x.sum(axis=tuple(a for a in range(x.ndim) if a not in margin))


def integer_intervals(counts, h, margins, cap):
    """Oracle: min / max of each suppressed cell over integer completions in [0, cap]."""
    counts = np.asarray(counts)
    idx = np.flatnonzero((counts < h).ravel())
    target = [_sums(counts, m) for m in margins]
    lo, hi = np.full(idx.size, np.inf), np.full(idx.size, -np.inf)
    for vals in itertools.product(range(cap + 1), repeat=idx.size):
        x = counts.ravel().copy()
        x[idx] = vals
        x = x.reshape(counts.shape)
        if all(np.array_equal(_sums(x, m), t) for m, t in zip(margins, target, strict=True)):
            lo, hi = np.minimum(lo, vals), np.maximum(hi, vals)
    return lo, hi


TWO_WAY = [
    ([[1, 2, 7], [2, 1, 9]], 3, "rows,cols"),
    ([[0, 2, 5], [1, 1, 2], [2, 6, 0]], 3, "rows,cols"),
    ([[0, 3, 5], [1, 1, 2], [2, 6, 1]], 4, "rows,cols,total"),
    ([[1, 2, 7], [2, 1, 9]], 3, "rows"),
]


@pytest.mark.parametrize(("counts", "h", "margins"), TWO_WAY)
def test_two_way_lp_equals_integer_bounds(counts, h, margins):
    t = MarginTable(counts, h=h, margins=margins)
    ms = parse_margins(margins, t.dims)
    a = attacker_intervals(t)
    lo, hi = integer_intervals(counts, h, ms, h - 1)
    np.testing.assert_array_equal(a.lower, lo)
    np.testing.assert_array_equal(a.upper, hi)
    assert np.all((a.lower <= a.true) & (a.true <= a.upper))


def test_weak_attack_without_threshold():
    counts = [[1, 2, 7], [2, 1, 9]]
    t = MarginTable(counts, h=3, margins="rows,cols")
    weak = attacker_intervals(t, use_threshold=False)
    lo_w, hi_w = integer_intervals(counts, 3, ((0,), (1,)), 10)  # every cell <= its row total
    np.testing.assert_array_equal(weak.lower, lo_w)
    np.testing.assert_array_equal(weak.upper, hi_w)


def test_three_way_lp_brackets_integer_bounds():
    counts = np.array([[[0, 1], [2, 5]], [[1, 6], [0, 2]]])
    ms = parse_margins([[0, 1], [0, 2], [1, 2]], ["a", "b", "c"])
    t = MarginTable(counts, h=3, margins=ms, dims=("a", "b", "c"))
    a = attacker_intervals(t)
    lo, hi = integer_intervals(counts, 3, ms, 2)
    assert np.all(a.lower <= lo + 1e-9) and np.all(a.upper >= hi - 1e-9)


def test_exposed_cell_and_unpublished_cell():
    t = MarginTable([[1, 5, 7], [2, 8, 9]], h=3, margins="rows")
    a = attacker_intervals(t)
    assert a.exposed.tolist() == [True, True]
    t2 = MarginTable([[1, 5, 7], [2, 8, 9]], h=3)  # no margins: the threshold only
    a2 = attacker_intervals(t2)
    assert a2.lower.tolist() == [0.0, 0.0] and a2.upper.tolist() == [2.0, 2.0]
    assert np.isinf(attacker_intervals(t2, use_threshold=False).upper).all()
    assert a.to_frame().height == 2


@pytest.mark.parametrize("seed", range(4))
def test_witness_shortcut_matches_one_lp_per_bound(seed):
    """Bounds settled by witnessed feasible points equal the plain per-cell LP optimum."""
    from scipy.optimize import linprog

    from persuasive.margins.constraints import UNBOUNDED, constraint_system

    rng = np.random.default_rng(seed)
    counts = rng.integers(3, 20, size=(8, 9))
    small = rng.random((8, 9)) < 0.3
    counts[small] = rng.integers(0, 3, small.sum())
    t = MarginTable(counts, h=3, margins="rows,cols")
    got = attacker_intervals(t)
    cs = constraint_system(t)
    hi = np.where(cs.hi == UNBOUNDED, np.inf, cs.hi).astype(float)
    bounds = np.column_stack([cs.lo.astype(float), hi])
    for j in range(cs.cells.size):
        for sign, out in ((1.0, got.lower), (-1.0, got.upper)):
            c = np.zeros(cs.cells.size)
            c[j] = sign
            res = linprog(c, A_eq=cs.A, b_eq=cs.b, bounds=bounds, method="highs")
            assert out[j] == pytest.approx(res.x[j], abs=1e-6)
