"""Axioms of the framework as property tests (docs/architecture.md, rule 9).

A larger prior class never lowers the worst case; nested classes give nested guarantees;
𝓗 and 𝓗_x give the same guarantee (Prop 6).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import persuasive as pp
from persuasive import _tolerances as tol

alphas = st.floats(0.01, 1.0)


@given(alphas, alphas, st.integers(2, 8))
def test_small_cell_class_larger_class_never_lowers_kappa(a1: float, a2: float, h: int) -> None:
    lo, hi = sorted((a1, a2))  # C^{h, hi} ⊂ C^{h, lo}
    score = pp.SmallCellLogScore(r=h)
    big = pp.certify(
        pp.CellSuppression(h), pp.PersuasivePrivacy(score, pp.SmallCellClass(h, lo), 5)
    )
    small = pp.certify(
        pp.CellSuppression(h), pp.PersuasivePrivacy(score, pp.SmallCellClass(h, hi), 5)
    )
    assert big.kappa >= small.kappa


@given(st.floats(0.1, 3.0), st.floats(0.0, 2.0), st.floats(1.5, 10.0), st.floats(0.0, 5.0))
def test_gaussian_mean_class_larger_class_never_lowers_kappa(
    r1: float, d1: float, r2: float, d2: float
) -> None:
    small = pp.GaussianMeanClass(r1, r2)
    big = pp.GaussianMeanClass(r1 + d1, r2 + d2)
    d_small = pp.PersuasivePrivacy(pp.MarginalDSS(), small, 100.0)
    d_big = pp.PersuasivePrivacy(pp.MarginalDSS(), big, 100.0)
    assert pp.certify(pp.ExactMean(), d_big).kappa >= pp.certify(pp.ExactMean(), d_small).kappa


@given(st.integers(2, 5), st.integers(0, 2**32 - 1), st.floats(0.0, 3.0), st.floats(0.0, 5.0))
def test_gaussian_mean_class_membership_is_nested(n: int, seed: int, d1: float, d2: float) -> None:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n))
    q = pp.GaussianPrior(rng.normal(size=n), a @ a.T + 0.5 * np.eye(n))
    x = rng.normal(size=n) * 2
    small = pp.GaussianMeanClass(1.0, 3.0)
    big = pp.GaussianMeanClass(1.0 + d1, 3.0 + d2)
    if small.contains(q, x):
        assert big.contains(q, x)


@given(st.integers(2, 4), st.integers(0, 2**32 - 1), st.floats(0.0, 0.6))
def test_finite_class_superset_audit_never_lower(k: int, seed: int, delta: float) -> None:
    # Exact enumeration: adding priors to a finite class can only raise the audited κ.
    rng = np.random.default_rng(seed)
    kernel = pp.FiniteKernel(rng.dirichlet(np.ones(k), size=k))
    priors = [pp.DiscretePrior(np.arange(k), rng.dirichlet(np.ones(k))) for _ in range(4)]
    score = pp.LogScore()
    small = pp.PersuasivePrivacy(score, pp.FiniteClass(priors[:2]), 10.0, delta)
    big = pp.PersuasivePrivacy(score, pp.FiniteClass(priors), 10.0, delta)
    xs = np.arange(k)
    a_small = pp.audit(kernel, small, x=xs)
    a_big = pp.audit(kernel, big, x=xs)
    assert a_big.kappa >= a_small.kappa - tol.LOSS_ATOL


@given(st.floats(0.2, 4.0), st.floats(0.0, 2.0), st.floats(0.0, 0.9))
def test_anchored_and_unanchored_neighbours_agree(sigma: float, eps: float, delta: float) -> None:
    # Prop 6: (L, 𝓗, ε, δ)-PP ⟺ (L, 𝓗_x, ε, δ)-PP, for every mechanism it covers.
    for m in (
        pp.GaussianMechanism(sigma),
        pp.LaplaceMechanism(sigma),
        pp.RandomizedResponse(1.0 / sigma, 3),
    ):
        h = pp.certify(m, pp.PersuasivePrivacy(pp.LogScore(), pp.NeighbourPriors(), eps, delta))
        hx = pp.certify(
            m, pp.PersuasivePrivacy(pp.LogScore(), pp.NeighbourPriors(anchored=True), eps, delta)
        )
        assert h.kappa == hx.kappa and h.holds == hx.holds


@given(st.floats(0.2, 4.0), st.floats(0.001, 0.5), st.floats(0.001, 0.5))
def test_certified_kappa_is_monotone_in_delta(sigma: float, d1: float, d2: float) -> None:
    lo, hi = sorted((d1, d2))
    for m in (pp.GaussianMechanism(sigma), pp.LaplaceMechanism(sigma)):
        k_lo = pp.certify(m, pp.probabilistic_dp(1.0, lo)).kappa
        k_hi = pp.certify(m, pp.probabilistic_dp(1.0, hi)).kappa
        assert k_hi <= k_lo
