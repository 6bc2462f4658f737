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


# ---------------------------------------------------------------- HiGHS re-solves (issue 12)


def random_table(rng, shape, h, margins, p_small, p_secondary):
    """Counts with about ``p_small`` cells below h (primary) and ``p_secondary`` hidden others."""
    counts = rng.integers(h, 4 * h + 6, size=shape)
    small = rng.random(shape) < p_small
    counts[small] = rng.integers(0, h, int(small.sum()))
    sec = ~small & (rng.random(shape) < p_secondary)
    return MarginTable(counts, h=h, margins=margins, suppressed=small | sec, secondary=sec)


def linprog_intervals(t, use_threshold):
    """Oracle, independent of the constraint system: one cold ``linprog`` per bound over *all*
    cells, the released ones fixed at their counts, every published margin entry an equation."""
    from scipy.optimize import linprog

    x = t.counts.ravel().astype(float)
    sup, sec = t.suppressed.ravel(), t.secondary.ravel()
    rows, rhs = [], []
    for m in t.margins:
        keep = np.indices(t.shape).reshape(t.counts.ndim, -1)[list(m)]
        entry = np.ravel_multi_index(keep, [t.shape[a] for a in m]) if m else np.zeros(x.size, int)
        for k in np.unique(entry):
            rows.append((entry == k).astype(float))
            rhs.append(x[entry == k].sum())
    A = np.array(rows).reshape(len(rows), x.size)
    lo = np.where(sup, 0.0, x)
    hi = np.where(sup, np.inf, x)
    if use_threshold:
        lo = np.where(sup & sec, t.h, lo)
        hi = np.where(sup & ~sec, t.h - 1, hi)
    bounds = np.column_stack([lo, hi])
    lower, upper = [], []
    for i in np.flatnonzero(sup):
        got = []
        for sign in (1.0, -1.0):
            c = np.zeros(x.size)
            c[i] = sign
            res = linprog(c, A_eq=A if len(rows) else None, b_eq=rhs or None, bounds=bounds)
            assert res.status in (0, 3), res.message
            got.append(res.x[i] if res.status == 0 else -sign * np.inf)
        lower.append(got[0])
        upper.append(got[1])
    return np.array(lower), np.array(upper)


RANDOM_CASES = [
    # (shape, margins, h, share small, share secondary)
    ((6, 7), "rows,cols", 3, 0.25, 0.08),
    ((9, 5), "rows,cols,total", 4, 0.15, 0.15),
    ((5, 6), "rows", 3, 0.3, 0.1),
    ((4, 3, 3), [[0, 1], [0, 2], [1, 2]], 3, 0.25, 0.1),
    ((3, 4, 3), [[0, 1], [2]], 3, 0.3, 0.1),
    ((3, 3, 2, 2), [[0, 1, 2], [0, 1, 3], [2, 3]], 2, 0.3, 0.1),
]


@pytest.mark.parametrize("use_threshold", [True, False])
@pytest.mark.parametrize("case", range(len(RANDOM_CASES)))
@pytest.mark.parametrize("seed", range(3))
def test_resolves_match_cold_linprog_per_cell(case, seed, use_threshold):
    """One re-solved HiGHS model per component = one cold linprog per bound (2-D to 4-D)."""
    shape, margins, h, p_small, p_sec = RANDOM_CASES[case]
    rng = np.random.default_rng(100 * case + seed)
    t = random_table(rng, shape, h, margins, p_small, p_sec)
    got = attacker_intervals(t, use_threshold=use_threshold)
    lower, upper = linprog_intervals(t, use_threshold)
    np.testing.assert_allclose(got.lower, lower, rtol=0, atol=2e-6)
    np.testing.assert_allclose(got.upper, upper, rtol=0, atol=2e-6)
    assert np.all(got.lower <= got.true) and np.all(got.true <= got.upper)
    np.testing.assert_array_equal(got.exposed, upper - lower <= 1e-6)
    if len(shape) == 2:  # totally unimodular: the LP bounds are integers
        finite = np.isfinite(got.upper)
        assert np.all(got.lower == np.round(got.lower))
        assert np.all(got.upper[finite] == np.round(got.upper[finite]))


def brute_force_intervals(t, use_threshold):
    """Oracle: min / max of each suppressed cell over all integer completions (depth-first,
    each margin entry checked when its last hidden cell is set)."""
    x = t.counts.ravel()
    sup = np.flatnonzero(t.suppressed.ravel())
    sec = t.secondary.ravel()[sup]
    entries = []
    for m in t.margins:
        keep = np.indices(t.shape).reshape(t.counts.ndim, -1)[list(m)]
        entry = np.ravel_multi_index(keep, [t.shape[a] for a in m]) if m else np.zeros(x.size, int)
        entries += [np.flatnonzero(entry == k) for k in np.unique(entry)]
    pos = {int(c): j for j, c in enumerate(sup)}
    checks = [[] for _ in sup]  # entries to check once hidden cell j is set
    for cells in entries:
        hidden = [pos[int(c)] for c in cells if int(c) in pos]
        if hidden:
            checks[max(hidden)].append((hidden, int(x[cells[np.isin(cells, sup)]].sum())))
    top = int(x.sum())  # no cell exceeds the table total
    if use_threshold:  # primary [0, h-1], secondary [h, top]
        ranges = [range(t.h, top + 1) if s else range(t.h) for s in sec]
    else:
        ranges = [range(top + 1)] * sup.size
    lo, hi = np.full(sup.size, np.inf), np.full(sup.size, -np.inf)
    y = np.zeros(sup.size, dtype=np.int64)

    def fill(j):
        nonlocal lo, hi
        if j == sup.size:
            lo, hi = np.minimum(lo, y), np.maximum(hi, y)
            return
        for v in ranges[j]:
            y[j] = v
            if all(y[hidden].sum() == b for hidden, b in checks[j]):
                fill(j + 1)

    fill(0)
    return lo, hi


TINY = [((3, 3), "rows,cols"), ((2, 4), "rows,cols"), ((3, 3), "rows,cols,total"), ((2, 3), "rows")]


@pytest.mark.parametrize("use_threshold", [True, False])
@pytest.mark.parametrize("case", range(len(TINY)))
@pytest.mark.parametrize("seed", range(4))
def test_two_way_bounds_equal_integer_enumeration(case, seed, use_threshold):
    """Tiny 2-D tables (A totally unimodular): the LP bounds are the integer bounds."""
    shape, margins = TINY[case]
    rng = np.random.default_rng(1000 + 10 * case + seed)
    counts = rng.integers(0, 6, size=shape)
    small = counts < 2
    sec = ~small & (rng.random(shape) < 0.25)
    t = MarginTable(counts, h=2, margins=margins, suppressed=small | sec, secondary=sec)
    if t.suppressed.sum() > 6:
        pytest.skip("too many hidden cells to enumerate")
    got = attacker_intervals(t, use_threshold=use_threshold)
    lo, hi = brute_force_intervals(t, use_threshold)
    np.testing.assert_array_equal(got.lower, lo)
    np.testing.assert_array_equal(got.upper, hi)
    np.testing.assert_array_equal(got.exposed, lo == hi)


def test_component_lp_statuses():
    """Optimal, unbounded and infeasible component LPs; the dual bound never above the optimum."""
    from persuasive.errors import PersuasiveError
    from persuasive.margins.attack import _component_bounds, _ComponentLP

    # y0 + y1 = 3, y0 <= 2; y2 in no row: unbounded above
    A = np.array([[1.0, 1.0, 0.0]])
    lo, hi = np.zeros(3), np.array([2.0, np.inf, np.inf])
    lower, upper = _component_bounds(
        A, np.array([3.0]), lo, hi, np.array([1.0, 2.0, 5.0]), [7, 8, 9]
    )
    np.testing.assert_array_equal(lower, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(upper, [2.0, 3.0, np.inf])
    lp = _ComponentLP(A, np.array([3.0]), lo, hi, 7)
    value, bound = lp.minimise(1, -1.0)
    assert value == pytest.approx(-3.0) and bound <= value + 1e-12
    assert lp.minimise(2, -1.0) is None
    # y0 + y1 = 2 and y0 + y1 = 3: no solution
    bad = _ComponentLP(np.ones((2, 2)), np.array([2.0, 3.0]), np.zeros(2), np.full(2, np.inf), 4)
    with pytest.raises(PersuasiveError, match="infeasible"):
        bad.minimise(0, 1.0)
    with pytest.raises(PersuasiveError, match="infeasible"):
        _component_bounds(
            np.ones((2, 2)),
            np.array([2.0, 3.0]),
            np.zeros(2),
            np.full(2, 9.0),
            np.array([1.0, 1.0]),
            [4, 5],
        )


def block_table(seed):
    """A 4x4x4 table, all two-way margins, most of a 3x3x3 block hidden: fractional vertices."""
    rng = np.random.default_rng(seed)
    shape, h = (4, 4, 4), 3
    counts = rng.integers(h, 3 * h + 4, size=shape)
    block = np.zeros(shape, bool)
    block[:3, :3, :3] = rng.random((3, 3, 3)) < 0.7
    counts[block] = rng.integers(0, h, int(block.sum()))
    sec = ~block & (rng.random(shape) < 0.1)
    return MarginTable(
        counts, h=h, margins=[[0, 1], [0, 2], [1, 2]], suppressed=block | sec, secondary=sec
    )


@pytest.mark.parametrize("use_threshold", [True, False])
@pytest.mark.parametrize("seed", [33, 0, 1])
def test_three_way_fractional_bounds_match_linprog(seed, use_threshold):
    """Not totally unimodular: fractional LP bounds (2.5 at seed 33), still equal to linprog."""
    t = block_table(seed)
    got = attacker_intervals(t, use_threshold=use_threshold)
    lower, upper = linprog_intervals(t, use_threshold)
    np.testing.assert_allclose(got.lower, lower, rtol=0, atol=2e-6)
    np.testing.assert_allclose(got.upper, upper, rtol=0, atol=2e-6)
    if seed == 33 and not use_threshold:
        assert np.any(got.upper % 1 == 0.5)


def test_dual_bound_brackets_the_optimum():
    """The Lagrangian bound sits at most LP_INT_ATOL below HiGHS's optimum (also at fractional
    vertices), so the reported bound, the outer of the two, is the LP's to the tolerance."""
    from persuasive.margins.attack import LP_INT_ATOL, _ComponentLP
    from persuasive.margins.constraints import constraint_system

    cs = constraint_system(block_table(33))
    n_frac = 0
    for cols in cs.components():
        rows = cs.rows_of(cols)
        if rows.size == 0:
            continue
        lp = _ComponentLP(
            cs.A[rows][:, cols],
            cs.b[rows].astype(float),
            np.zeros(cols.size),
            np.full(cols.size, np.inf),
            0,
        )
        for j in range(cols.size):
            for sign in (1.0, -1.0):
                value, bound = lp.minimise(j, sign)
                assert bound <= value + 1e-9 and value - bound <= LP_INT_ATOL
                n_frac += abs(value - round(value)) > 0.1
    assert n_frac > 0


def test_no_solver_output():
    """HiGHS prints nothing (no banner, no log) on stdout or stderr."""
    import subprocess
    import sys

    code = (
        "from persuasive.margins import MarginTable, attacker_intervals\n"
        "t = MarginTable([[1, 2, 7], [2, 1, 9], [4, 0, 8]], h=3, margins='rows,cols')\n"
        "print(attacker_intervals(t).upper.tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "[2.0, 2.0, 2.0, 2.0, 0.0]\n" and out.stderr == ""


def test_unproven_optimum_is_an_error(monkeypatch):
    """A HiGHS optimum its dual bound does not confirm (also cold) raises, never guesses."""
    from persuasive.errors import PersuasiveError
    from persuasive.margins import attack

    calls = []

    def gappy(self, j, sign, *, cold=False):
        calls.append(cold)
        return 1.0, 1.0 - 1e-3  # primal and a dual bound 1e-3 apart

    monkeypatch.setattr(attack._ComponentLP, "minimise", gappy)
    t = MarginTable([[1, 2, 7], [2, 1, 9]], h=3, margins="rows,cols")
    with pytest.raises(PersuasiveError, match="not proven optimal"):
        attacker_intervals(t)
    assert calls == [False, True]
