"""The Markov chain for large components, against the exact DP and brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import sparse, stats

import persuasive as pp
from persuasive.margins import MarginTable, mcmc, posterior_marginals
from persuasive.margins.constraints import constraint_system

SLACK = 0.02


def _prior(shape, seed, mean=2.0):
    """Independent Poisson cells with cell-specific means (full support, so that the posterior
    depends on the means and is not uniform on the fibre)."""
    mu = np.random.default_rng(seed).uniform(0.5 * mean, 1.5 * mean, int(np.prod(shape)))
    return pp.IndependentCellsPrior([stats.poisson(m) for m in mu])


def _tv(a, b):
    return 0.5 * np.abs(np.exp(a.log_pmf) - np.exp(b.log_pmf)).sum(axis=1)


def _check_against_exact(table, prior, n_sweeps=2000, rng=0):
    exact = posterior_marginals(table, prior, method="exact")
    mc = posterior_marginals(table, prior, method="mcmc", n_sweeps=n_sweeps, rng=rng)
    assert mc.method == "mcmc" and not mc.exact and exact.exact
    assert (~exact.disclosed).sum() >= 8  # a non-trivial fibre
    tv = _tv(mc, exact)
    # the reported error (3 standard errors, summed over values) covers the true TV error
    assert np.all(tv <= mc.mc_error + SLACK), (tv - mc.mc_error).max()
    np.testing.assert_allclose(np.exp(mc.log_pmf).sum(axis=1), 1.0)
    return tv, mc


def _small_table(shape, seed, share, h=3, high=9):
    rng = np.random.default_rng(seed)
    counts = rng.integers(h, high, size=shape)
    small = rng.random(shape) < share
    counts[small] = rng.integers(0, h, small.sum())
    return counts


@pytest.mark.parametrize(
    ("shape", "seed", "share", "margins"),
    [
        ((6, 7), 5, 0.5, "rows,cols"),
        ((5, 8), 2, 0.5, "rows,cols,total"),  # the total is redundant: set aside for cycles
        ((4, 6), 3, 0.6, "rows"),  # one margin entry per cell: cycles through the ground node
        ((3, 5), 4, 1.0, "rows,cols"),  # fully suppressed: 4- and 6-cycles
    ],
)
def test_two_way_marginals_match_the_exact_dp(shape, seed, share, margins):
    counts = _small_table(shape, seed, share)
    t = MarginTable(counts, h=3, margins=margins)
    tv, mc = _check_against_exact(t, _prior(shape, seed))
    assert tv.max() < 0.05 and mc.mc_error.max() < 0.1


def test_secondary_cells_with_wide_supports():
    # two primary cells protected by two secondary ones: supports [0, 2] and [3, residual]
    counts = np.array([[1, 7, 9, 6], [8, 2, 9, 5], [4, 6, 1, 7], [9, 5, 6, 8]])
    sup = counts < 3
    sec = np.zeros_like(sup)
    sec[0, 1] = sec[1, 0] = sec[2, 1] = sec[0, 2] = sec[2, 0] = True
    t = MarginTable(counts, h=3, margins="rows,cols", suppressed=sup | sec, secondary=sec)
    cs = constraint_system(t)
    assert (cs.hi - cs.lo).max() > 5  # wide supports: heat-bath laws computed directly
    _check_against_exact(t, _prior(counts.shape, 5, mean=6.0))


@pytest.mark.parametrize("shape", [(2, 2, 4), (2, 3, 3)])
def test_three_way_tables_with_all_two_way_margins(shape):
    # every cell in three margin entries: the moves come from the integer kernel (reduced, with
    # the short sums of pairs: for 2x2xK the basis alone does not connect the fibre)
    counts = _small_table(shape, 6, 1.0)
    t = MarginTable(counts, h=3, margins="0+1,0+2,1+2")
    cs = constraint_system(t)
    assert cs.n_components == 1
    assert mcmc.markov_moves(cs.A).basis == "kernel"
    _check_against_exact(t, _prior(counts.shape, 6))


def test_three_way_table_with_two_margins_is_a_graph():
    counts = _small_table((2, 3, 4), 7, 0.6)
    t = MarginTable(counts, h=3, margins="0+1,2")
    _check_against_exact(t, _prior(counts.shape, 7))


def test_one_point_fibres_give_point_masses():
    # (a) a lone suppressed cell in its row: ker A = 0; (b) zero margins: bounds fix every cell
    for counts in ([[1, 5], [6, 8]], [[0, 0, 7], [0, 0, 8], [4, 5, 6]]):
        t = MarginTable(counts, h=3, margins="rows,cols")
        post = posterior_marginals(t, _prior(t.shape, 0), method="mcmc", n_sweeps=50, rng=0)
        true = t.counts.ravel()[post.cells]
        np.testing.assert_array_equal(post.log_prob_of(true), 0.0)
        assert np.all(post.disclosed) and np.all(post.mc_error == 0.0)


def test_same_seed_same_result():
    counts = _small_table((6, 6), 8, 0.5)
    t = MarginTable(counts, h=3, margins="rows,cols")
    q = _prior(t.shape, 8)
    a = posterior_marginals(t, q, method="mcmc", n_sweeps=200, rng=11)
    b = posterior_marginals(t, q, method="mcmc", n_sweeps=200, rng=11)
    c = posterior_marginals(t, q, method="mcmc", n_sweeps=200, rng=12)
    np.testing.assert_array_equal(a.log_pmf, b.log_pmf)
    np.testing.assert_array_equal(a.mc_error, b.mc_error)
    assert not np.array_equal(a.log_pmf, c.log_pmf)


def test_large_table_runs_and_is_normalised():
    rng = np.random.default_rng(2026)
    counts = rng.integers(3, 40, size=(60, 60))
    small = rng.random(counts.shape) < 0.05
    counts[small] = rng.integers(0, 3, small.sum())
    t = MarginTable(counts, h=3, margins="rows,cols")
    post = posterior_marginals(t, _prior(t.shape, 9), n_sweeps=300, rng=0)
    assert "mcmc" in post.methods
    p = np.exp(post.log_pmf)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert np.all(np.isfinite(post.mc_error))
    assert np.all((post.mc_error >= 0) & (post.mc_error <= 1))
    # the true value of every cell is in the estimated support (chain 0 starts there)
    assert np.all(np.isfinite(post.log_prob_of(t.counts.ravel()[post.cells])))


def _smith_diagonal(M):
    import sympy  # a test dependency (pyproject [test]): never skipped
    from sympy.matrices.normalforms import smith_normal_form

    D = smith_normal_form(sympy.Matrix(M.tolist()), domain=sympy.ZZ)
    return [int(D[i, i]) for i in range(min(D.shape)) if D[i, i] != 0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_moves_generate_the_integer_kernel(seed):
    counts = _small_table((5, 6), seed, 0.6)
    t = MarginTable(counts, h=3, margins="rows,cols")
    cs = constraint_system(t)
    A = cs.A.toarray()
    M = mcmc.markov_moves(cs.A).moves.toarray()
    assert not np.any(A @ M.T)
    # rank = dim ker A and every invariant factor 1: the moves generate ker A ∩ Z^n
    assert np.linalg.matrix_rank(M) == A.shape[1] - np.linalg.matrix_rank(A)
    assert set(_smith_diagonal(M)) == {1}


def test_integer_kernel_of_a_non_unimodular_matrix():
    A = sparse.csr_array([[1, 1, 1, 0], [0, 1, 1, 1], [1, 0, 1, 1]])
    K = mcmc.integer_kernel(A)
    assert K.shape == (1, 4) and not np.any(A @ K.T)
    assert np.gcd.reduce(np.abs(K[0])) == 1 and sorted(np.abs(K[0])) == [1, 1, 1, 2]


@pytest.mark.parametrize(
    ("counts", "n_points"),
    [
        ([[0, 2, 1, 1], [2, 1, 0, 2], [1, 0, 2, 1]], 100),
        # suppressed cells forming a hexagon: no 2x2 swap, a two-point fibre
        ([[1, 0, 5], [5, 1, 0], [0, 5, 1]], 2),
    ],
)
def test_moves_connect_a_small_fibre(counts, n_points):
    # brute force: every point of the fibre, linked by ±move steps, is one connected set
    t = MarginTable(counts, h=3, margins="rows,cols")
    cs = constraint_system(t)
    M = mcmc.markov_moves(cs.A).moves.toarray()
    # every candidate in [0, 2]^n (itertools.product order), the totals checked in one product
    grid = np.indices((3,) * cs.cells.size).reshape(cs.cells.size, -1).T
    ok = np.all((cs.A @ grid.T) == cs.b[:, None], axis=0)
    pts = [tuple(p) for p in grid[ok].tolist()]
    index = {p: i for i, p in enumerate(pts)}
    seen, stack = {0}, [0]
    while stack:
        p = np.array(pts[stack.pop()])
        for m in M:
            for q in (p + m, p - m):
                j = index.get(tuple(q.tolist()))
                if j is not None and j not in seen:
                    seen.add(j)
                    stack.append(j)
    assert len(pts) >= n_points and len(seen) == len(pts)


def test_the_chain_leaves_pi_invariant_on_a_tiny_fibre():
    # one heat-bath sweep applied to the exact law Π (as a distribution over the fibre's points)
    # returns Π: checked by running many chains for one sweep from draws of Π
    A = sparse.csr_array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]])
    logw = np.log(np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]]))
    pts = [p for p in itertools.product(range(3), repeat=4) if np.array_equal(A @ p, [2, 2, 2, 2])]
    w = np.exp([logw[np.arange(4), p].sum() for p in pts])
    pi = w / w.sum()
    lp, err = mcmc.sample_marginals(
        A,
        np.array([1, 1, 1, 1]),
        np.zeros(4, np.int64),
        logw,
        n_sweeps=6000,
        burn_in=20,
        rng=np.random.default_rng(3),
    )
    exact = np.zeros((4, 3))
    for p, q in zip(pts, pi, strict=True):
        exact[np.arange(4), p] += q
    tv = 0.5 * np.abs(np.exp(lp) - exact).sum(axis=1)
    assert np.all(tv <= err + 0.01) and tv.max() < 0.02
