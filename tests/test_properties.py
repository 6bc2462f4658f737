"""Axioms of the framework as property tests (docs/architecture.md, rule 9).

A larger prior class never lowers the worst case; nested classes give nested guarantees;
𝓗 and 𝓗_x give the same guarantee (Prop 6).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
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


def _member(n: int, seed: int, r1: float, r2: float, use: float):
    """A prior and dataset inside G^r_x by construction, using a fraction ``use`` of each
    constraint (docs/math.md §8): Phi equicorrelated, sds with max share <= 1 - 1/r2 (n >= 3,
    r2 >= 3 always allow it), the mean error set so that w^2 = use * r1."""
    rng = np.random.default_rng(seed)
    var = rng.uniform(1.0, 2.0, n)  # max share <= 2/(n+1) <= 1/2 <= 1 - 1/r2 for r2 >= 2
    spread = 1.0 - var.max() / var.sum()
    c_max = use * r2 * spread  # allowed condition number of Phi (>= 1 by the choice of use)
    rho = max(0.0, (c_max - 1.0) / (c_max + n - 1.0)) * 0.999  # c_Phi = (1+(n-1)rho)/(1-rho)
    phi = (1.0 - rho) * np.eye(n) + rho * np.ones((n, n))
    sd = np.sqrt(var)
    cov = phi * np.outer(sd, sd)
    sbar = cov.sum() / n**2
    mu = rng.normal(size=n)
    x = rng.normal(size=n)
    x += mu.mean() - x.mean() + np.sqrt(use * r1 * sbar)  # (xbar - mubar)^2 / Sbar = use r1
    eig = np.linalg.eigvalsh(phi)
    own = bool((x.mean() - mu.mean()) ** 2 / sbar <= r1 and eig[-1] / eig[0] <= r2 * spread)
    return pp.GaussianPrior(mu, cov), x, own


@given(
    st.integers(3, 6),
    st.integers(0, 2**32 - 1),
    st.floats(0.5, 0.99),
    st.floats(0.0, 3.0),
    st.floats(0.0, 5.0),
)
def test_gaussian_mean_class_membership_is_nested(
    n: int, seed: int, use: float, d1: float, d2: float
) -> None:
    # every example is a member of the small class (checked by its own arithmetic, then by the
    # class), so the nesting small ⊂ big is tested each time; and a prior outside the big class
    # (the mean error pushed past its r1) is outside the small one
    r1, r2 = 1.0, 3.0
    q, x, own = _member(n, seed, r1, r2, use)
    small = pp.GaussianMeanClass(r1, r2)
    big = pp.GaussianMeanClass(r1 + d1, r2 + d2)
    assert own and small.contains(q, x)
    assert big.contains(q, x)
    sbar = q.cov().sum() / n**2
    far = x + np.sqrt((r1 + d1) * sbar) * 1.5  # w^2 = (sqrt(use r1) + 1.5 sqrt(r1 + d1))^2
    assert not big.contains(q, far) and not small.contains(q, far)


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


def _worst_over(cls: pp.NeighbourPriors, kernel: pp.FiniteKernel, delta: float, qs) -> float:
    """sup over datasets x and the members of ``cls`` (enumerated: every two-point prior on a
    pair of datasets and every point mass, kept when ``cls.contains(Q, x)``) of the exact upper
    (1 - delta)-quantile of the loss, each loss through persuasive.relative_loss."""
    k = kernel.n_inputs
    priors = [pp.DiscretePrior([float(a)], [1.0]) for a in range(k)]
    priors += [
        pp.TwoPointPrior([float(a)], [float(b)], q)
        for a in range(k)
        for b in range(k)
        if a != b
        for q in qs
    ]
    best = 0.0
    for x in range(k):
        outs, probs = kernel.output_distribution([float(x)])
        for prior in priors:
            if not cls.contains(prior, [float(x)]):
                continue
            losses = np.array(
                [pp.relative_loss(pp.LogScore(), prior, kernel, [float(x)], t) for t in outs]
            )
            order = np.argsort(-losses)
            hit = np.flatnonzero(np.cumsum(probs[order]) > delta + 1e-12)
            best = max(best, float(losses[order][hit[0]]))
    return best


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 4), st.integers(0, 2**32 - 1), st.floats(0.0, 0.6))
def test_anchored_and_unanchored_neighbours_agree(k: int, seed: int, delta: float) -> None:
    # Prop 6: (L, 𝓗, ε, δ)-PP ⟺ (L, 𝓗_x, ε, δ)-PP. Computed independently for the two classes
    # by enumerating their members (𝓗 also holds priors on pairs without x, and point masses,
    # whose loss is 0 by the ∞ - ∞ = 0 convention), the worst cases agree, and both approach
    # the certificate's exact κ as q -> 0 from below.
    rng = np.random.default_rng(seed)
    kernel = pp.FiniteKernel(rng.dirichlet(np.ones(3), size=k))
    qs = (0.5, 1e-3, 1e-7)
    h = _worst_over(pp.NeighbourPriors(), kernel, delta, qs)
    hx = _worst_over(pp.NeighbourPriors(anchored=True), kernel, delta, qs)
    assert h == pytest.approx(hx, abs=1e-12)
    cert = pp.certify(kernel, pp.probabilistic_dp(1.0, delta)).kappa
    assert h <= cert + tol.LOSS_ATOL
    assert h >= cert - 1e-5 * max(1.0, np.exp(cert))  # q = 1e-7 is within q e^κ of the limit


@given(st.floats(0.2, 4.0), st.floats(0.001, 0.5), st.floats(0.001, 0.5))
def test_certified_kappa_is_monotone_in_delta(sigma: float, d1: float, d2: float) -> None:
    lo, hi = sorted((d1, d2))
    for m in (pp.GaussianMechanism(sigma), pp.LaplaceMechanism(sigma)):
        k_lo = pp.certify(m, pp.probabilistic_dp(1.0, lo)).kappa
        k_hi = pp.certify(m, pp.probabilistic_dp(1.0, hi)).kappa
        assert k_hi <= k_lo
