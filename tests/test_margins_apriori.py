"""A-priori bounds (issue 12): the posterior, κ, the attacker and the switching bound with boxes
the Receiver knows, each checked against brute-force enumeration of the fibre computed here."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from persuasive.classes.receivers import NegativeBinomialReceiver, PoissonReceiver
from persuasive.errors import ValidationError
from persuasive.margins import MarginTable, attacker_intervals, worst_case_losses
from persuasive.margins.known import NO_UPPER
from persuasive.margins.table import margin_sums

H = 3


def _law(receiver, mu):
    if isinstance(receiver, PoissonReceiver):
        return stats.poisson(mu)
    n = receiver.size
    return stats.nbinom(n, n / (n + mu))


def _box_mass(law, a, b):
    """P(a <= X <= b) by the pmf (b finite) or the survival function (b open)."""
    if b == NO_UPPER:
        return float(law.sf(a - 1))
    return float(law.pmf(np.arange(a, b + 1)).sum())


def _fibre(t: MarginTable):
    """Every completion of the suppressed cells: within the suppression support intersected
    with the box, meeting every published margin (brute force)."""
    x = t.counts.ravel()
    cells = t.suppressed_index
    sec = t.secondary.ravel()[cells]
    lw, up = t.lower.ravel()[cells], t.upper.ravel()[cells]
    ranges = []
    for k in range(cells.size):
        cap = int(x.sum())
        if t.counts.ndim == 2:
            r, c = np.unravel_index(cells[k], t.shape)
            cap = int(min(t.counts[r].sum(), t.counts[:, c].sum()))
        lo, hi = (H, cap) if sec[k] else (0, H - 1)
        lo, hi = max(lo, int(lw[k])), min(hi, int(up[k]))
        ranges.append(range(lo, hi + 1))
    out = []
    if math.prod(len(r) for r in ranges) > 50_000:
        return cells, None
    for y in itertools.product(*ranges):
        z = x.copy()
        z[cells] = y
        zz = z.reshape(t.shape)
        if all(np.array_equal(margin_sums(zz, m), t.totals[m]) for m in t.margins):
            out.append(np.array(y))
    return cells, np.array(out)


def _posterior(t, fibre, law_of):
    """Posterior marginals of the suppressed cells under independent laws (law_of(cell))."""
    cells = t.suppressed_index
    logw = np.array(
        [sum(law_of(c).logpmf(v) for c, v in zip(cells, y, strict=True)) for y in fibre]
    )
    w = np.exp(logw - logw.max())
    w /= w.sum()
    return w


def _enumerated_kappa(t, receiver, means):
    """Per suppressed cell: max over the given common means of -log q(x | box) + log Π(x), and
    the publication bound max over v < r with Π(v) > 0 (r = h)."""
    cells, fibre = _fibre(t)
    x = t.counts.ravel()
    lw, up = t.lower.ravel(), t.upper.ravel()
    at, pub = np.full(cells.size, -np.inf), np.full(cells.size, -np.inf)
    for mu in means:
        law = _law(receiver, mu)
        w = _posterior(t, fibre, lambda c, law=law: law)
        for k, c in enumerate(cells):
            mass = _box_mass(law, int(lw[c]), int(up[c]))
            for v in np.unique(fibre[:, k]):
                if v >= H:
                    continue
                pv = w[fibre[:, k] == v].sum()
                loss = -law.logpmf(v) + math.log(mass) + math.log(pv)
                pub[k] = max(pub[k], loss)
                if v == x[c]:
                    at[k] = max(at[k], loss)
    return cells, np.where(x[cells] < H, at, 0.0), np.maximum(pub, 0.0)


TABLE = np.array([[1, 2, 7], [2, 0, 9], [6, 8, 4]])


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        ({(0, 0): 1}, {(1, 1): 1}),
        ({(0, 1): 1, (1, 0): 2}, {}),
        ({}, {(0, 0): 1, (0, 1): 2}),
        ({(2, 2): 3}, {(2, 2): 5, (0, 0): 2}),
    ],
)
def test_kappa_with_boxes_is_the_enumerated_supremum(lower, upper) -> None:
    lo, up = np.zeros((3, 3), np.int64), np.full((3, 3), NO_UPPER, np.int64)
    for c, a in lower.items():
        lo[c] = a
    for c, b in upper.items():
        up[c] = b
    t = MarginTable(TABLE, h=H, margins="rows,cols", lower=lo, upper=up)
    rec = PoissonReceiver(1.0, 6.0)
    w = worst_case_losses(t, rec)
    grid = np.concatenate([[1.0, 6.0], np.linspace(1.0, 6.0, 26)])
    cells, at, _ = _enumerated_kappa(t, rec, grid)
    ends = _enumerated_kappa(t, rec, [1.0, 6.0])
    idx = np.unravel_index(cells, t.shape)
    # the supremum over the mean range is at an end, and worst_case_losses finds it exactly
    np.testing.assert_allclose(at, ends[1], atol=1e-12)
    np.testing.assert_allclose(w.kappa_upper[idx], ends[1], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(w.kappa_lower[idx], w.kappa_upper[idx])
    np.testing.assert_allclose(w.kappa_published[idx], ends[2], rtol=1e-9, atol=1e-9)
    assert np.all(w.kappa_upper[idx] >= at - 1e-12)


def test_a_box_changes_kappa_in_both_directions() -> None:
    """A lower bound on a primary zero's partner lowers its support; an upper bound narrows it:
    κ moves, and the enumeration above agrees (checked there); here the direction."""
    rec = PoissonReceiver(1.0, 6.0)
    base = worst_case_losses(MarginTable(TABLE, h=H, margins="rows,cols"), rec)
    up = np.full((3, 3), NO_UPPER, np.int64)
    up[0, 0] = 1  # the Receiver knows (0, 0) <= 1: its box mass is below 1 at mu = 6
    boxed = worst_case_losses(MarginTable(TABLE, h=H, margins="rows,cols", upper=up), rec)
    assert boxed.kappa_upper[0, 0] != pytest.approx(base.kappa_upper[0, 0])


def test_log_linear_members_give_the_same_posterior_with_boxes() -> None:
    """Sufficiency survives conditioning on a box: random members mu_rc = a_r b_c give one
    posterior of the boxed fibre."""
    lo = np.zeros((3, 3), np.int64)
    lo[0, 1] = 1
    up = np.full((3, 3), NO_UPPER, np.int64)
    up[1, 0] = 2
    t = MarginTable(TABLE, h=H, margins="rows,cols", lower=lo, upper=up)
    _, fibre = _fibre(t)
    ref = _posterior(t, fibre, lambda c: stats.poisson(3.0))
    rng = np.random.default_rng(0)
    for _ in range(5):
        mu = np.outer(rng.uniform(0.5, 2, 3), rng.uniform(0.5, 2, 3)).ravel()
        got = _posterior(t, fibre, lambda c, mu=mu: stats.poisson(mu[c]))
        np.testing.assert_allclose(got, ref, atol=1e-12)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(
    counts=st.lists(st.integers(0, 6), min_size=9, max_size=9),
    boxes=st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 3), st.integers(0, 4)),
        min_size=0,
        max_size=4,
    ),
    size=st.sampled_from([None, 1.0]),
)
def test_hypothesis_3x3_boxes_against_enumeration(counts, boxes, size) -> None:
    x = np.array(counts).reshape(3, 3)
    lo, up = np.zeros(9, np.int64), np.full(9, NO_UPPER, np.int64)
    for cell, below, above in boxes:  # a box around the true count (below/above 4: open)
        lo[cell] = max(0, x.ravel()[cell] - below)
        up[cell] = NO_UPPER if above == 4 else x.ravel()[cell] + above
    t = MarginTable(x, h=H, margins="rows,cols", lower=lo.reshape(3, 3), upper=up.reshape(3, 3))
    if not t.suppressed.any():
        return
    rec = PoissonReceiver(1.0, 5.0) if size is None else NegativeBinomialReceiver(1.0, 5.0, size)
    w = worst_case_losses(t, rec)
    cells, at, pub = _enumerated_kappa(t, rec, [1.0, 5.0])
    idx = np.unravel_index(cells, t.shape)
    np.testing.assert_allclose(w.kappa_upper[idx], at, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(w.kappa_published[idx], pub, rtol=1e-9, atol=1e-9)
    # the attacker's LP (two-way margins: totally unimodular) is the fibre's integer range
    _, fibre = _fibre(t)
    a = attacker_intervals(t)
    np.testing.assert_array_equal(a.lower, fibre.min(axis=0))
    np.testing.assert_array_equal(a.upper, fibre.max(axis=0))


def test_attacker_without_threshold_keeps_the_boxes() -> None:
    lo = np.zeros((3, 3), np.int64)
    lo[0, 0] = 1
    t = MarginTable(TABLE, h=H, margins="rows,cols", lower=lo)
    a = attacker_intervals(t, use_threshold=False)
    k = int(np.flatnonzero(t.suppressed_index == 0)[0])
    assert a.lower[k] >= 1


def test_pinned_box_is_a_known_cell_and_bad_bounds_are_errors() -> None:
    lo, up = np.zeros((3, 3), np.int64), np.full((3, 3), NO_UPPER, np.int64)
    lo[0, 0] = up[0, 0] = 1
    t = MarginTable(TABLE, h=H, margins="rows,cols", lower=lo, upper=up)
    assert t.known[0, 0] and not t.suppressed[0, 0]
    bad = np.zeros((3, 3), np.int64)
    bad[2, 2] = 5  # the count is 4
    with pytest.raises(ValidationError, match=r"apriori: cell \(2, 2\).*count 4.*outside"):
        MarginTable(TABLE, h=H, margins="rows,cols", lower=bad)
    with pytest.raises(ValidationError, match=r"lower.*non-negative integer array"):
        MarginTable(TABLE, h=H, margins="rows,cols", lower=np.zeros((3, 3)))


def _boxed_table(rng, shape, h=5, p_sec=0.3, p_box=0.5):
    c = rng.poisson(rng.uniform(1.0, 12.0), shape)
    lo = np.where(rng.random(shape) < p_box, np.maximum(c - rng.integers(0, 3, shape), 0), 0)
    up = np.where(rng.random(shape) < p_box, c + rng.integers(0, 4, shape), NO_UPPER)
    t = MarginTable(c, h=h, margins="rows,cols", lower=lo, upper=up)
    sec = t.hideable & (rng.random(shape) < p_sec)
    return t.with_suppressed(t.suppressed | sec, sec)


@pytest.mark.parametrize("seed", range(12))
def test_switching_bound_is_above_the_exact_posterior_with_boxes(seed) -> None:
    from persuasive.margins import posterior_marginals
    from persuasive.margins.switching import posterior_upper
    from persuasive.margins.worst import _common_prior

    rng = np.random.default_rng(300 + seed)
    t = _boxed_table(rng, tuple(int(v) for v in rng.integers(2, 5, 2)))
    if not t.suppressed.any():
        return
    rec = [PoissonReceiver(1.0, 10.0), NegativeBinomialReceiver(1.0, 20.0, 0.5)][seed % 2]
    q = _common_prior(rec, t.n_cells)
    post = posterior_marginals(t, q, method="exact")
    sb = posterior_upper(t, q, top=t.h - 1)
    assert np.array_equal(sb.lo, post.lo)  # both start at the box-intersected support
    w = min(sb.log_upper.shape[1], post.log_pmf.shape[1])
    ub, ex = sb.log_upper[:, :w], post.log_pmf[:, :w]
    have = ~np.isnan(ub)
    assert np.all(ub[have] >= ex[have] - 1e-9)
    # kappa with the DP switched off (the switching bound, at worst B) is at least the exact
    exact = worst_case_losses(t, rec)
    bound = worst_case_losses(t, rec, max_states=1, kappa=100.0, method="auto")
    assert np.all(bound.kappa_upper >= exact.kappa_upper - 1e-9)
    assert np.all(bound.kappa_published >= exact.kappa_published - 1e-9)


def test_secondary_cells_with_boxes_against_enumeration() -> None:
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(30):
        c = rng.integers(0, 7, (3, 3))
        lo = np.where(rng.random((3, 3)) < 0.5, np.maximum(c - 1, 0), 0)
        up = np.where(rng.random((3, 3)) < 0.5, c + 2, NO_UPPER)
        t = MarginTable(c, h=H, margins="rows,cols", lower=lo, upper=up)
        sec = t.hideable & (rng.random((3, 3)) < 0.3)
        if not sec.any() or not t.suppressed.any():
            continue
        t = t.with_suppressed(t.suppressed | sec, sec)
        cells, fibre = _fibre(t)
        if fibre is None:
            continue
        rec = PoissonReceiver(1.0, 5.0)
        w = worst_case_losses(t, rec)
        _, at, pub = _enumerated_kappa(t, rec, [1.0, 5.0])
        idx = np.unravel_index(cells, t.shape)
        np.testing.assert_allclose(w.kappa_upper[idx], at, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(w.kappa_published[idx], pub, rtol=1e-9, atol=1e-9)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("seed", [9, 14, 24, 33])
def test_planner_with_boxes_is_certified_by_enumeration(seed) -> None:
    """The planner sees the boxes (its supports and its disclosure losses): a certified plan's
    every suppressed cell meets κ published by brute-force enumeration of the boxed fibre, and
    no pinned cell is hidden."""
    from persuasive.margins import plan_suppression

    rng = np.random.default_rng(40 + seed)
    c = rng.integers(0, 9, (3, 3))
    lo = np.where(rng.random((3, 3)) < 0.4, np.maximum(c - 1, 0), 0)
    up = np.where(rng.random((3, 3)) < 0.4, c + rng.integers(0, 3, (3, 3)), NO_UPPER)
    t = MarginTable(c, h=H, margins="rows,cols", lower=lo, upper=up)
    if not t.suppressed.any():
        return
    rec = PoissonReceiver(1.0, 5.0)
    try:
        plan = plan_suppression(t, rec, kappa=3.5, bound="publication")
    except ValidationError:
        return  # no pattern found: nothing claimed
    assert not np.any(plan.table.suppressed & plan.table.known)
    assert plan.certified and plan.n_secondary > 0  # these seeds need secondary cells
    cells, fibre = _fibre(plan.table)
    assert fibre is not None
    _, _, pub = _enumerated_kappa(plan.table, rec, [1.0, 5.0])
    assert np.all(pub <= 3.5 + 1e-9)
    idx = np.unravel_index(cells, t.shape)
    np.testing.assert_allclose(plan.worst.kappa_published[idx], pub, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_planner_internal_audit_uses_the_boxes(seed) -> None:
    """The search's per-component DP (its own supports) equals the full audit with boxes."""
    from persuasive.margins.search import _State

    rng = np.random.default_rng(70 + seed)
    t = _boxed_table(rng, (3, 4), h=H, p_sec=0.3, p_box=0.6)
    if not t.suppressed.any():
        return
    rec = PoissonReceiver(1.0, 5.0)
    cost = np.ones(t.n_cells)
    st_ = _State(t, rec, (H, 3.0, "publication", cost, (False, False), {}))
    st_.setup(max_states=10**6)
    w = worst_case_losses(t, rec)
    sup = t.suppressed.ravel()
    np.testing.assert_allclose(st_.bound[sup], w.kappa_published.ravel()[sup], atol=1e-9)
    np.testing.assert_allclose(st_.d, _disclosure(t, rec), atol=1e-12)


def _disclosure(t, rec):
    """B(x_i | box_i) by the pmf summed over the box, at both ends of the mean range."""
    out = []
    for x, a, b in zip(t.counts.ravel(), t.lower.ravel(), t.upper.ravel(), strict=True):
        vals = []
        for mu in (rec.mean_min, rec.mean_max):
            law = _law(rec, mu)
            vals.append(-law.logpmf(x) + math.log(_box_mass(law, int(a), int(b))))
        out.append(max(vals))
    return np.array(out)


@pytest.mark.parametrize(
    "law", [stats.poisson(3.0), stats.poisson(500.0), stats.nbinom(0.5, 0.5 / 40.5)]
)
def test_log_box_mass_against_a_direct_sum(law) -> None:
    from scipy.special import logsumexp

    from persuasive.margins.apriori import log_box_mass

    boxes = [(0, 2), (2, 9), (480, 520), (0, 6000), (3, 7000), (450, NO_UPPER), (0, NO_UPPER)]
    lo = np.array([a for a, _ in boxes])
    up = np.array([b for _, b in boxes])
    got = log_box_mass(
        lambda v, _r: law.logpmf(v),
        lambda v, _r: law.logcdf(v),
        lambda v, _r: law.logsf(v),
        lo,
        up,
    )
    for k, (a, b) in enumerate(boxes):
        top = 200_000 if b == NO_UPPER else b
        want = min(0.0, float(logsumexp(law.logpmf(np.arange(a, top + 1)))))
        assert got[k] >= want - 1e-9, (a, b)  # never below: B and kappa err upwards
        if want > -700.0:  # exact away from the underflow of the tail functions
            assert got[k] == pytest.approx(want, abs=1e-9), (a, b)


def test_prop8_with_boxes_is_the_conditioned_mass_at_the_top_of_the_range() -> None:
    """No margin: a primary cell's loss is -log P(X < h | box) under its own prior, largest at
    mu_max (checked on a grid of means)."""
    x = np.array([[0, 1, 5], [2, 7, 1]])
    lo = np.array([[0, 1, 0], [1, 0, 0]])
    up = np.array([[4, NO_UPPER, NO_UPPER], [2, NO_UPPER, 1]])
    t = MarginTable(x, h=H, margins=(), lower=lo, upper=up)
    rec = PoissonReceiver(1.0, 6.0)
    w = worst_case_losses(t, rec)
    for cell in zip(*np.nonzero(t.suppressed), strict=True):
        a, b = int(lo[cell]), int(up[cell])
        vals = []
        for mu in np.linspace(1.0, 6.0, 51):
            law = stats.poisson(mu)
            vals.append(-math.log(_box_mass(law, a, min(b, H - 1)) / _box_mass(law, a, b)))
        assert max(vals) == pytest.approx(vals[-1], abs=1e-12)
        assert w.kappa_upper[cell] == pytest.approx(vals[-1], rel=1e-9, abs=1e-12)
        assert w.kappa_published[cell] == pytest.approx(vals[-1], rel=1e-9, abs=1e-12)


def test_one_fixed_prior_audit_with_boxes_against_enumeration() -> None:
    """planning.audit with one IndependentCellsPrior: -log q_i(x_i | box) + log Pi(x_i)."""
    from persuasive.margins.planning import audit
    from persuasive.priors.cells import IndependentCellsPrior

    lo, up = np.zeros((3, 3), np.int64), np.full((3, 3), NO_UPPER, np.int64)
    lo[0, 1], up[0, 0], up[1, 0] = 1, 1, 2
    t = MarginTable(TABLE, h=H, margins="rows,cols", lower=lo, upper=up)
    mus = np.linspace(0.8, 4.0, 9)
    prior = IndependentCellsPrior([stats.poisson(m) for m in mus])
    w = audit(t, prior, H)
    cells, fibre = _fibre(t)
    post = _posterior(t, fibre, lambda c: stats.poisson(mus[c]))
    x = t.counts.ravel()
    for k, c in enumerate(cells):
        if x[c] >= H:
            continue
        law = stats.poisson(mus[c])
        pv = post[fibre[:, k] == x[c]].sum()
        want = -law.logpmf(x[c]) + math.log(_box_mass(law, int(lo.ravel()[c]), int(up.ravel()[c])))
        want += math.log(pv)
        assert w.kappa_upper.ravel()[c] == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_full_disclosure_fallback_ranges_over_the_boxed_support_only() -> None:
    """With the DP switched off, kappa_published is at most the largest B over the values below
    r that the box leaves (Pi <= 1), and at least the exact value."""
    lo = np.zeros((3, 3), np.int64)
    lo[0, 1] = 2  # (0, 1) = 2 is known to be >= 2: its support is the one value 2
    lo[1, 0] = 1
    t = MarginTable(TABLE, h=H, margins="rows,cols", lower=lo)
    rec = PoissonReceiver(1.0, 6.0)
    exact = worst_case_losses(t, rec)
    off = worst_case_losses(t, rec, max_states=1)
    x = t.counts.ravel()
    for c in t.suppressed_index:
        cell = np.unravel_index(c, t.shape)
        a = int(t.lower.ravel()[c])
        top = max(_disclosure_at(rec, v, a) for v in range(a, H)) if x[c] < H else 0.0
        assert off.kappa_published[cell] <= top + 1e-12
        assert off.kappa_published[cell] >= exact.kappa_published[cell] - 1e-9


def _disclosure_at(rec, v, a):
    return max(
        -_law(rec, mu).logpmf(v) + math.log(_box_mass(_law(rec, mu), a, NO_UPPER))
        for mu in (rec.mean_min, rec.mean_max)
    )


def test_publication_lower_bound_is_valid_with_boxes() -> None:
    """(0, 0) = 1 is alone in its row and column, so it is disclosed. Under Poisson(1, 5) that
    costs D(1) = 5 - log 5 > 2. A Receiver who knows it lies in [1, 2] loses only
    log(1 + 5/2) = 1.25 < 2. So the primary pattern is certified at κ = 2, no secondary cell is
    needed, and the publication's lower bound must be 0."""
    from persuasive.margins.public_bound import publication_lower_bound

    x = np.array([[1, 5, 7], [6, 8, 9], [7, 9, 8]])
    rec = PoissonReceiver(1.0, 5.0)
    plain = MarginTable(x, h=H, margins="rows,cols")
    assert publication_lower_bound(plain, rec, 2.0, H) >= 1.0
    lo, up = np.zeros((3, 3), np.int64), np.full((3, 3), NO_UPPER, np.int64)
    lo[0, 0], up[0, 0] = 1, 2
    boxed = MarginTable(x, h=H, margins="rows,cols", lower=lo, upper=up)
    w = worst_case_losses(boxed, rec)
    assert w.kappa_published[0, 0] == pytest.approx(math.log(3.5), rel=1e-12)
    assert publication_lower_bound(boxed, rec, 2.0, H) == 0.0


@pytest.mark.parametrize("margins", ["rows,cols", "0+1,2"])
def test_posterior_marginals_with_boxes_are_the_enumerated_fibre(margins) -> None:
    """posterior_marginals (exact DP) on the box-intersected supports against the marginals of
    the enumerated boxed fibre, for one independent prior with cell-specific means."""
    from persuasive.margins import posterior_marginals
    from persuasive.priors.cells import IndependentCellsPrior

    rng = np.random.default_rng(11)
    shape = (3, 3) if margins == "rows,cols" else (2, 3, 2)
    checked = 0
    for _ in range(12):
        x = rng.integers(0, 6, shape)
        lo = np.where(rng.random(shape) < 0.4, np.maximum(x - 1, 0), 0)
        up = np.where(rng.random(shape) < 0.4, x + rng.integers(0, 2, shape), NO_UPPER)
        t = MarginTable(x, h=H, margins=margins, lower=lo, upper=up)
        sec = t.hideable & (rng.random(shape) < 0.2)
        t = t.with_suppressed(t.suppressed | sec, sec)
        if not t.suppressed.any():
            continue
        cells, fibre = _fibre(t)
        if fibre is None:
            continue
        mus = rng.uniform(0.5, 6.0, t.n_cells)
        prior = IndependentCellsPrior([stats.poisson(m) for m in mus])
        post = posterior_marginals(t, prior, method="exact")
        w = _posterior(t, fibre, lambda c, mus=mus: stats.poisson(mus[c]))
        for k in range(cells.size):
            vals, probs = post.pmf(k)
            want = np.array([w[fibre[:, k] == v].sum() for v in vals])
            np.testing.assert_allclose(probs, want, atol=1e-12)
            assert set(np.unique(fibre[:, k])) <= set(vals.tolist())
        checked += 1
    assert checked >= 4


def test_markov_chain_stays_in_the_boxes() -> None:
    """The chain's moves and heat bath keep the box-intersected supports (no mass outside the
    exact posterior's support) and it agrees with the exact DP within its error statement."""
    from persuasive.margins import posterior_marginals
    from persuasive.priors.cells import IndependentCellsPrior

    rng = np.random.default_rng(3)
    x = rng.integers(0, 6, (4, 4))
    lo = np.where(rng.random((4, 4)) < 0.5, np.maximum(x - 1, 0), 0)
    up = np.where(rng.random((4, 4)) < 0.5, x + 1, NO_UPPER)
    t = MarginTable(x, h=4, margins="rows,cols", lower=lo, upper=up)
    q = IndependentCellsPrior([stats.poisson(3.0)] * 16)
    exact = posterior_marginals(t, q, method="exact")
    chain = posterior_marginals(t, q, method="mcmc", rng=1)
    assert not np.any(np.isfinite(chain.log_pmf) & ~np.isfinite(exact.log_pmf))
    tv = 0.5 * np.abs(np.exp(exact.log_pmf) - np.exp(chain.log_pmf)).sum(axis=1)
    assert np.all(tv <= chain.mc_error + 0.02)


def test_covering_lower_bound_with_boxes_is_below_every_certified_pattern() -> None:
    """The planner's lower bound with box-aware exposure (an entry whose hidden cells sit at
    the ends of their boxed supports) against the cheapest certified secondary pattern, found
    by enumerating every pattern; and boxes do make it tighter somewhere."""
    from persuasive.margins.planning import covering_bound, disclosure_loss

    rec = PoissonReceiver(1.0, 5.0)
    kappa = 3.0
    rng = np.random.default_rng(8)
    checked = tighter = 0
    for _ in range(20):
        x = rng.integers(0, 9, (3, 3))
        lo = np.where(rng.random((3, 3)) < 0.5, x - rng.integers(0, 2, (3, 3)), 0).clip(0)
        up = np.where(rng.random((3, 3)) < 0.5, x + rng.integers(0, 2, (3, 3)), NO_UPPER)
        t = MarginTable(x, h=H, margins="rows,cols", lower=lo, upper=up)
        if not t.suppressed.any():
            continue
        needy = (x.ravel() < H) & (disclosure_loss(rec, x.ravel(), t.box) > kappa)
        cost = np.ones(9)
        lb = covering_bound(t, cost, needy)
        plain_lb = covering_bound(MarginTable(x, h=H, margins="rows,cols"), cost, needy)
        free = np.flatnonzero(t.hideable.ravel())
        best = math.inf
        for k in range(free.size + 1):
            for pick in itertools.combinations(free, k):
                if k >= best:
                    break
                sec = np.zeros(9, bool)
                sec[list(pick)] = True
                s = sec.reshape(3, 3)
                p = t.with_suppressed(t.suppressed | s, s)
                if worst_case_losses(p, rec).kappa_published.max() <= kappa:
                    best = k
                    break
        assert lb <= best, (x.tolist(), lo.tolist(), up.tolist(), lb, best)
        checked += 1
        tighter += lb > plain_lb
    assert checked >= 10
    assert tighter >= 1


def test_propagation_finds_cells_a_box_determines() -> None:
    """A 2 x 2 block of ones (each row and column sums to 2: three completions). With (0, 0)
    and (0, 1) known to be at most 1, row 0 pins both at their upper ends, and then the columns
    pin the rest, as the attacker's LP does; without the boxes no cell is determined."""
    from persuasive.margins.constraints import full_incidence
    from persuasive.margins.planning import determined

    x = np.array([[1, 1, 9], [1, 1, 7], [8, 9, 4]])
    up = np.full((3, 3), NO_UPPER, np.int64)
    up[0, 0] = up[0, 1] = 1
    t = MarginTable(x, h=H, margins="rows,cols", upper=up)
    A = full_incidence(t)[0].tocsr()
    args = (A, x.ravel(), t.suppressed.ravel(), t.secondary.ravel(), H)
    assert not determined(*args)[0].any()
    det = determined(*args, t.box)[0]
    assert det.tolist() == t.suppressed.ravel().tolist()
    a = attacker_intervals(t)
    np.testing.assert_array_equal(a.lower, a.upper)
