"""Secondary suppression planner and the classical partner rule (issue 5).

Oracles: M's full exact audit (``worst_case_losses`` / ``cell_losses`` on the whole table, never
the planner's local sub-table audits), an independent LP attacker written here (scipy HiGHS) for
disclosure, and hand-derived patterns.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from persuasive.errors import ValidationError
from persuasive.margins import MarginTable
from persuasive.margins.classical import classical_pattern, compare
from persuasive.margins.losses import worst_case_losses
from persuasive.margins.planner import InfeasiblePlanError, lower_bound, plan_suppression
from persuasive.release.receivers import PoissonReceiver

RC = PoissonReceiver(1.0, 5.0)


def _lp_exposed(t: MarginTable) -> np.ndarray:
    """Independent attacker: cells (flat) whose LP min == max over the published margins."""
    sup = np.flatnonzero(t.suppressed.ravel())
    x = t.counts.ravel()
    rows, b = [], []
    coords = np.indices(t.shape).reshape(t.counts.ndim, -1)
    for m in t.margins:
        key = coords[list(m)].T if m else np.zeros((x.size, 0), int)
        for k in {tuple(r) for r in key}:
            inside = np.all(key == np.array(k, dtype=int), axis=1)
            rows.append(inside[sup].astype(float))
            b.append(float(x[inside].sum() - x[inside & ~t.suppressed.ravel()].sum()))
    A = np.array(rows)
    lo = np.where(t.secondary.ravel()[sup], t.h, 0)
    hi = np.where(t.secondary.ravel()[sup], None, t.h - 1)
    bounds = list(zip(lo.tolist(), hi.tolist(), strict=True))
    out = []
    for j in range(sup.size):
        c = np.zeros(sup.size)
        c[j] = 1.0
        a = linprog(c, A_eq=A, b_eq=b, bounds=bounds, method="highs").fun
        z = -linprog(-c, A_eq=A, b_eq=b, bounds=bounds, method="highs").fun
        if abs(z - a) < 1e-7:
            out.append(sup[j])
    return np.array(out, dtype=int)


@st.composite
def tables(draw):
    d1, d2 = draw(st.integers(3, 5)), draw(st.integers(3, 5))
    p = draw(st.floats(0.05, 0.3))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    small = rng.random((d1, d2)) < p
    counts = np.where(small, rng.integers(0, 3, (d1, d2)), rng.integers(3, 15, (d1, d2)))
    return MarginTable(counts, h=3, margins="rows,cols")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_plan_is_certified_by_full_exact_audit(t):
    kappa = 2.5
    try:
        plan = plan_suppression(t, RC, kappa, grid=2, max_candidates=4)
    except InfeasiblePlanError:
        return  # refused loudly: allowed (e.g. a row whose suppressed cells sum to 0 ...)
    small = plan.table.suppressed & (t.counts < t.h)
    assert plan.certified
    if not small.any():
        assert plan.n_secondary == 0
        return
    full = worst_case_losses(plan.table, RC, grid=2)
    assert not np.any(full.disclosed & small)
    assert np.all(full.kappa_lower[plan.table.suppressed] <= kappa)
    assert set(_lp_exposed(plan.table)).isdisjoint(np.flatnonzero(small.ravel()))
    assert np.array_equal(plan.pattern & (t.counts < t.h), t.counts < t.h)  # primary kept
    assert plan.n_secondary >= plan.lower_bound


def test_deterministic():
    rng = np.random.default_rng(5)
    counts = np.where(rng.random((5, 5)) < 0.2, rng.integers(0, 3, (5, 5)), 9)
    t = MarginTable(counts, h=3, margins="rows,cols")
    a = plan_suppression(t, RC, 2.5, grid=2, max_candidates=4)
    b = plan_suppression(
        MarginTable(counts.copy(), h=3, margins="rows,cols"), RC, 2.5, grid=2, max_candidates=4
    )
    assert np.array_equal(a.pattern, b.pattern) and a.iterations == b.iterations
    assert np.array_equal(a.losses, b.losses)


def test_classical_leaves_a_zero_row_disclosed_ours_does_not():
    # row 0 hides two zeros: partners of each other, so the classical rule is satisfied in
    # that row, but the row's suppressed cells sum to 0 and both are recovered as 0.
    t = MarginTable([[0, 0, 9], [7, 8, 6], [9, 7, 8]], h=3, margins="rows,cols")
    cl = classical_pattern(t)
    assert cl.table.suppressed.astype(int).tolist() == [[1, 1, 0], [1, 0, 1], [0, 1, 1]]
    assert {0, 1} <= set(_lp_exposed(cl.table).tolist())
    c = compare(t, RC, kappa=3.0)
    assert c.classical_above == ((0, 0), (0, 1))
    assert c.ours is not None and c.ours.certified
    assert bool(c.ours.pattern[0, 2])  # the big cell of row 0 is hidden
    full = worst_case_losses(c.ours.table, RC, grid=3)
    assert not full.disclosed[0, 0] and full.kappa_lower[0, 0] <= 3.0
    assert "planner" in c.explain() and c.to_dict()["classical"]["above_kappa"] == [[0, 0], [0, 1]]


def test_objective_total_vs_count():
    counts = [[1, 50, 4], [50, 1, 4], [4, 4, 30]]
    t = MarginTable(counts, h=3, margins="rows,cols")
    pc = plan_suppression(t, RC, 3.0, objective="count")
    pt = plan_suppression(t, RC, 3.0, objective="total")
    for p in (pc, pt):
        assert p.certified
        sec_counts = np.asarray(counts)[p.secondary]
        assert p.objective_value == (p.n_secondary if p is pc else sec_counts.sum())
    assert pt.objective_value <= np.asarray(counts)[pc.secondary].sum()
    assert lower_bound(t, "count") == 2.0 and lower_bound(t, "total") == 8.0


def test_infeasible_zero_row_refused():
    t = MarginTable([[0, 0, 0], [7, 8, 6], [9, 7, 8]], h=3, margins="rows,cols")
    with pytest.raises(InfeasiblePlanError, match="kappa"):
        plan_suppression(t, RC, 3.0)


def test_no_margins_nothing_to_add():
    t = MarginTable([[1, 9], [8, 7]], h=3)
    plan = plan_suppression(t, RC, 10.0)
    assert plan.n_secondary == 0 and plan.certified and plan.lower_bound == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kappa": -1.0}, "kappa"),
        ({"kappa": float("nan")}, "kappa"),
        ({"kappa": 1.0, "objective": "sum"}, "objective"),
        ({"kappa": 1.0, "max_candidates": 0}, "max_candidates"),
    ],
)
def test_bad_arguments(kwargs, match):
    t = MarginTable([[1, 9], [8, 7]], h=3, margins="rows")
    with pytest.raises(ValidationError, match=match):
        plan_suppression(t, RC, **kwargs)


def test_bad_table_and_receiver():
    with pytest.raises(ValidationError, match="MarginTable"):
        plan_suppression(np.ones((2, 2)), RC, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="receiver"):
        plan_suppression(MarginTable([[1, 9]], h=3), "poisson", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="MarginTable"):
        classical_pattern([[1, 2]])  # type: ignore[arg-type]
