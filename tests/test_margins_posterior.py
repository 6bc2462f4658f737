"""Posterior of suppressed cells given published margins, against brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.margins import (
    MarginTable,
    cell_losses,
    parse_margins,
    posterior_marginals,
)


def _sums(x, margin):
    drop = tuple(a for a in range(x.ndim) if a not in margin)
    return x.sum(axis=drop)


def brute_force(counts, h, margins, laws, secondary=None):
    """Oracle: enumerate every completion, check the margins on the full table directly."""
    counts = np.asarray(counts)
    sup = counts < h if secondary is None else (counts < h) | secondary
    sec = np.zeros_like(sup) if secondary is None else secondary
    idx = np.flatnonzero(sup.ravel())
    ranges = [range(h, int(counts.sum()) + 1) if sec.ravel()[i] else range(h) for i in idx]
    target = [_sums(counts, m) for m in margins]
    width = max(len(r) + r.start for r in ranges)
    marg = np.zeros((idx.size, width))
    for vals in itertools.product(*ranges):
        x = counts.ravel().copy()
        x[idx] = vals
        x = x.reshape(counts.shape)
        if all(np.array_equal(_sums(x, m), t) for m, t in zip(margins, target, strict=True)):
            w = np.prod([laws[i].pmf(v) for i, v in zip(idx, vals, strict=True)])
            marg[np.arange(idx.size), list(vals)] += w
    return marg / marg.sum(axis=1, keepdims=True)


def _laws(n, seed):
    rng = np.random.default_rng(seed)
    return [stats.poisson(m) for m in rng.uniform(0.5, 5.0, n)]


def _dense(post, width):
    out = np.zeros((post.cells.size, width))
    p = np.exp(post.log_pmf)
    for j in range(post.cells.size):
        vals = post.lo[j] + np.arange(p.shape[1])
        keep = vals < width
        out[j, vals[keep]] = p[j, keep]
    return out


CASES = [
    ([[1, 2, 7], [2, 1, 9]], 3, "rows,cols"),
    ([[1, 2, 7], [2, 1, 9]], 3, "rows"),
    ([[1, 2, 7], [2, 1, 9]], 3, "cols,total"),
    ([[0, 2, 5], [1, 1, 2], [2, 6, 0]], 3, "rows,cols"),
    ([[0, 2, 5], [1, 1, 2], [2, 6, 0]], 3, "total"),
    ([[0, 3, 5], [1, 1, 2], [2, 6, 1]], 4, "rows,cols,total"),
    ([[[0, 1], [2, 5]], [[1, 6], [0, 2]]], 3, [[0, 1], [2]]),
    ([[[0, 1], [2, 5]], [[1, 6], [0, 2]]], 3, [[0, 1], [0, 2], [1, 2]]),
    ([[[0, 1], [2, 5]], [[1, 6], [0, 2]]], 3, [[0], [1], [2]]),
]


@pytest.mark.parametrize(("counts", "h", "margins"), CASES)
def test_posterior_matches_enumeration(counts, h, margins):
    t = MarginTable(counts, h=h, margins=margins)
    laws = _laws(t.n_cells, 1)
    post = posterior_marginals(t, pp.IndependentCellsPrior(laws))
    assert post.exact and post.method == "exact-dp"
    dims = t.dims
    ref = brute_force(np.array(counts), h, parse_margins(margins, dims), laws)
    np.testing.assert_allclose(_dense(post, ref.shape[1]), ref, atol=1e-12)
    np.testing.assert_allclose(np.exp(post.log_pmf).sum(axis=1), 1.0, atol=1e-12)


def test_secondary_cells_against_enumeration():
    counts = np.array([[1, 4, 7], [5, 2, 9]])
    sec = np.zeros((2, 3), dtype=bool)
    sec[0, 1] = sec[1, 0] = True
    t = MarginTable(counts, h=3, margins="rows,cols", suppressed=(counts < 3) | sec, secondary=sec)
    laws = _laws(6, 2)
    post = posterior_marginals(t, pp.IndependentCellsPrior(laws))
    ref = brute_force(counts, 3, ((0,), (1,)), laws, secondary=sec)
    np.testing.assert_allclose(_dense(post, ref.shape[1]), ref, atol=1e-12)


def test_single_suppressed_cell_in_a_row_is_disclosed():
    t = MarginTable([[1, 5, 7], [6, 8, 9]], h=3, margins="rows")
    q = pp.IndependentCellsPrior(_laws(6, 3))
    post = posterior_marginals(t, q)
    assert post.disclosed.tolist() == [True]
    loss = cell_losses(t, q)
    assert loss.disclosed[0, 0] and not loss.disclosed[0, 1]
    # disclosed: the loss is the whole -log q(x)
    assert loss.log[0, 0] == pytest.approx(-q.cell_logpmf(0, 1))


def test_no_margins_recovers_prop8():
    t = MarginTable([[1, 5], [2, 8]], h=3)
    laws = _laws(4, 4)
    loss = cell_losses(t, pp.IndependentCellsPrior(laws))
    for i in (0, 2):
        assert loss.small_cell.ravel()[i] == pytest.approx(-np.log(laws[i].cdf(2)))


def test_losses_against_direct_computation():
    counts = np.array([[1, 2, 7], [2, 1, 9]])
    t = MarginTable(counts, h=3, margins="rows,cols")
    laws = _laws(6, 5)
    ref = brute_force(counts, 3, ((0,), (1,)), laws)
    out = cell_losses(t, pp.IndependentCellsPrior(laws), r=2)
    for j, i in enumerate([0, 1, 3, 4]):
        x = counts.ravel()[i]
        log = -np.log(laws[i].pmf(x)) + np.log(ref[j, x])
        assert out.log.ravel()[i] == pytest.approx(log, rel=1e-10)
        assert out.small_cell.ravel()[i] == pytest.approx(log if x < 2 else 0.0, rel=1e-10)
    assert out.small_cell.ravel()[[2, 5]].tolist() == [0.0, 0.0]


def test_infinity_minus_infinity_is_zero():
    # the prior puts no mass on the true value 0 of cell 0: loss 0 by convention
    t = MarginTable([[0, 5], [6, 8]], h=3)
    q = pp.IndependentCellsPrior(
        [[0, 0.5, 0.5], [0.0] * 5 + [1.0], [0.0] * 6 + [1.0], [0.0] * 8 + [1.0]]
    )
    assert cell_losses(t, q).log[0, 0] == 0.0


def test_mcmc_close_to_exact_on_a_medium_component():
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 3, size=(2, 5))
    t = MarginTable(counts, h=3, margins="rows,cols")
    q = pp.IndependentCellsPrior(_laws(10, 8))
    exact = posterior_marginals(t, q, method="exact")
    mc = posterior_marginals(t, q, method="mcmc", n_sweeps=1500, rng=1)
    assert not mc.exact and mc.method == "mcmc"
    tv = 0.5 * np.abs(np.exp(exact.log_pmf) - np.exp(mc.log_pmf)).sum(axis=1)
    assert tv.max() < 0.1
    assert np.all(tv <= mc.mc_error)  # the stated (3 s.e.) error covers the true error


def test_exact_refuses_large_components():
    t = MarginTable(np.ones((4, 5), dtype=int), h=3, margins="rows,cols")
    q = pp.IndependentCellsPrior(_laws(20, 9))
    with pytest.raises(UnsupportedCombinationError, match="max_states"):
        posterior_marginals(t, q, method="exact", max_states=10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"counts": [[1, 2], [3, -1]]}, "non-negative"),
        ({"counts": [[1.5, 2], [3, 4]]}, "integers"),
        ({"margins": "rows,depth"}, "missing dimension 'depth'"),
        ({"margins": [[5]]}, "missing dimension 5"),
        ({"totals": {"rows": [3, 7]}}, "do not add up"),
        ({"totals": {"rows": [-3, 13]}}, "negative totals"),
        ({"h": 0}, "h must be"),
        ({"suppressed": np.ones((2, 2), dtype=bool)}, "primary suppressed cell"),
    ],
)
def test_bad_input(kwargs, match):
    args = {"counts": [[1, 5], [6, 8]], "h": 3, "margins": "rows,cols"}
    args.update(kwargs)
    with pytest.raises(ValidationError, match=match):
        MarginTable(**args)


def test_bad_prior():
    t = MarginTable([[1, 5], [6, 8]], h=3, margins="rows")
    with pytest.raises(ValidationError, match="prior"):
        posterior_marginals(t, pp.IndependentCellsPrior([[1.0]]))
