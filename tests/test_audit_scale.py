"""The Prop 7 search audit at scale (issue 14): the structured path against the dense one.

The structured candidates Σ = diag(σ) Φ_λ diag(σ) are evaluated from s = Σ1 and closed-form
eigenvalues, never forming Σ; here they are checked against the dense matrices (row sums,
diagonal, eigvalsh, ``batch_marginal_loss``, ``relative_loss``, ``GaussianMeanClass.contains``)
on n = 20..200, and the witnesses found at n = 2000 and n = 10^4 are checked in the class
independently (dense at 1000; row blocks of Φ at 10^4).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import persuasive as pp
from persuasive import _tolerances as tol
from persuasive.audit import gaussian_families as gf
from persuasive.audit import gaussian_search as gs
from persuasive.classes.gaussian_mean import class_terms

FAMILIES = ("diagonal", "equicorrelated", "ar1")


def _thetas(rng: np.random.Generator, n: int, extra: int, size: int = 6) -> np.ndarray:
    th = rng.normal(0.0, 1.5, size=(size, n + extra))
    th[0, n:] = 0.0  # Φ = I (AR(1)) / a = (1 + low) / 2 (equicorrelated)
    th[1, n:] = 4.0  # strong correlation: the projection is active
    th[2, n:] = -3.0  # negative correlation (AR(1) alternating, equicorrelated near -1/(n-1))
    return th


@pytest.mark.parametrize("n", [20, 57, 200])
@pytest.mark.parametrize("name", FAMILIES)
def test_structured_moments_and_class_terms_equal_dense(n: int, name: str) -> None:
    rng = np.random.default_rng(n)
    r2 = 4.0
    fam = gs._families(n)[name]
    th = _thetas(rng, n, fam.extra)
    b = gs._structured(th, n, fam, r2)
    covs = gs._covs(th, n, fam, r2)
    np.testing.assert_allclose(b.s, covs.sum(axis=-1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(b.var, np.diagonal(covs, axis1=1, axis2=2), rtol=1e-14)
    np.testing.assert_allclose(b.rho2(), gs.batch_rho2(covs), rtol=1e-10, atol=1e-14)
    x = rng.normal(size=n)
    means = x + rng.normal(size=(th.shape[0], n))
    cls = pp.GaussianMeanClass(2.0, r2)
    for k in range(th.shape[0]):
        q = gs.StructuredGaussianPrior(means[k], b.var[k], name, b.p[k], float(b.lam[k]))
        np.testing.assert_allclose(q.cov(), covs[k], rtol=1e-13, atol=1e-16)
        w2, c_phi, spread, sbar = q.class_terms(x)
        dw2, dc, dspread = class_terms(means[k], covs[k], x)
        assert w2 == pytest.approx(dw2, rel=1e-10)
        assert c_phi == pytest.approx(dc, rel=1e-8)
        assert spread == pytest.approx(dspread, rel=1e-12)
        assert sbar == pytest.approx(covs[k].sum() / n**2, rel=1e-12)
        # every projected candidate is in the class (c_Φ on the boundary or inside it) ...
        assert c_phi <= r2 * spread * (1 + tol.CLASS_RTOL)
        dense = pp.GaussianPrior(means[k], covs[k])
        assert cls.contains(q, x) == cls.contains(dense, x)
        fast = q.marginal_loss(x)
        np.testing.assert_allclose(
            fast, gs.batch_marginal_loss(means[k][None], covs[k][None], x)[0], rtol=1e-9, atol=1e-9
        )
    # ... and the loss equals the exact Gaussian posterior's (one prior per case: O(n^3))
    q = gs.StructuredGaussianPrior(means[1], b.var[1], name, b.p[1], float(b.lam[1]))
    slow = pp.relative_loss(pp.MarginalDSS(), q.to_gaussian(), pp.ExactMean(), x)
    assert float(q.marginal_loss(x).max()) == pytest.approx(slow, rel=1e-8, abs=1e-9)


def test_structured_membership_refuses_outside_the_class() -> None:
    n, x = 50, np.zeros(50)
    cls = pp.GaussianMeanClass(1.0, 4.0)
    var = np.ones(n)
    var[0] = 0.8 / 0.2 * (n - 1)  # share 0.8 > 1 - 1/r2 = 0.75: outside (Φ = I)
    q = gs.StructuredGaussianPrior(np.zeros(n), var, "diagonal")
    assert not cls.contains(q, x)
    assert not cls.contains(q.to_gaussian(), x)
    mean = np.full(n, -2.0)  # w^2 = 4 / Σ̄ > r1
    q2 = gs.StructuredGaussianPrior(mean, np.ones(n), "equicorrelated", [0.2])
    assert not cls.contains(q2, x) and not cls.contains(q2.to_gaussian(), x)
    with pytest.raises(pp.ValidationError):
        gs.StructuredGaussianPrior(np.zeros(3), [1.0, -1.0, 1.0], "diagonal")
    with pytest.raises(pp.ValidationError):
        gs.StructuredGaussianPrior(np.zeros(3), np.ones(3), "ar1")  # AR(1) needs t
    with pytest.raises(pp.ValidationError, match="not positive definite"):
        gs.StructuredGaussianPrior(np.zeros(3), np.ones(3), "equicorrelated", [-0.6])
    with pytest.raises(pp.ValidationError, match="not positive definite"):
        gs.StructuredGaussianPrior(np.zeros(3), np.ones(3), "ar1", [1.0])
    assert gs.StructuredGaussianPrior(np.zeros(3), np.ones(3), "ar1", [1.0], 0.5).dim == 3


def test_ar1_symbol_bounds_err_towards_a_larger_condition_number() -> None:
    n = gs.AR1_EXACT_MAX_N + 100
    idx = np.arange(n)
    for t, gap in ((0.3, 1e-3), (-0.8, 1e-2), (0.97, 0.1)):  # the gap is O(1/(n(1-|t|))^2)
        lo, hi = gf._ar1_eig(np.array([[t]]), n)
        eig = np.linalg.eigvalsh(t ** np.abs(idx[:, None] - idx[None, :]).astype(float))
        assert lo[0] <= eig[0] and hi[0] >= eig[-1]
        assert hi[0] / lo[0] == pytest.approx(eig[-1] / eig[0], rel=gap)


def test_screen_in_small_batches_equals_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 40
    rng = np.random.default_rng(1)
    rows = np.arange(n)
    for fam in gs._families(n).values():
        cand = rng.normal(0.0, 1.5, size=(37, n + fam.extra))
        whole = gs._screen(cand, n, fam, 4.0, rows)
        monkeypatch.setattr(gs, "BATCH_BYTES", 8 * gs._FLOATS_PER_COORD * n * 5)
        np.testing.assert_array_equal(gs._screen(cand, n, fam, 4.0, rows), whole)
        monkeypatch.undo()


def test_subspace_search_reaches_the_bound_with_a_dense_witness() -> None:
    n = 150  # above FULL_SEARCH_MAX_N, at most DENSE_WITNESS_MAX_N: dense relative_loss
    assert gs.FULL_SEARCH_MAX_N < n <= gs.DENSE_WITNESS_MAX_N
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 10.0)
    x = np.random.default_rng(0).normal(size=n)
    a = pp.audit(pp.ExactMean(), d, x=x, rng=0, n_starts=1)
    assert isinstance(a.witness.prior, pp.GaussianPrior)
    assert a.kappa <= 1 + math.log(4.0) + tol.LOSS_ATOL
    assert a.kappa == pytest.approx(1 + math.log(4.0), abs=1e-6)


def test_witness_at_n_1000_checked_dense() -> None:
    n, r1, r2 = 1000, 1.5, 3.0
    d = pp.PersuasivePrivacy(pp.MarginalDSS(7), pp.GaussianMeanClass(r1, r2), 10.0)
    x = np.random.default_rng(2).normal(size=n)
    a = pp.audit(pp.ExactMean(), d, x=x, rng=0, n_starts=1)
    q = a.witness.prior
    assert isinstance(q, gs.StructuredGaussianPrior)
    assert a.kappa <= r1 + math.log(r2) + tol.LOSS_ATOL
    assert a.kappa == pytest.approx(r1 + math.log(r2), abs=1e-6)
    dense = q.to_gaussian()  # 1000 x 1000, eigvalsh in the class test
    assert d.priors.contains(dense, x)
    w2, c_phi, spread = class_terms(dense.mean_, dense.cov_, x)
    assert w2 <= r1 * (1 + tol.CLASS_RTOL) and c_phi <= r2 * spread * (1 + tol.CLASS_RTOL)
    assert pp.relative_loss(pp.MarginalDSS(7), dense, pp.ExactMean(), x) == pytest.approx(
        a.kappa, abs=1e-9
    )


def _phi_rows(q: gs.StructuredGaussianPrior, lo: int, hi: int) -> np.ndarray:
    """Rows lo:hi of Φ_λ built entry by entry (independent of the O(n) products)."""
    n = q.dim
    i, j = np.arange(lo, hi)[:, None], np.arange(n)[None, :]
    if q.family == "diagonal":
        phi = (i == j).astype(float)
    elif q.family == "equicorrelated":
        phi = np.where(i == j, 1.0, q.param[0, 0])
    else:
        phi = q.param[0, 0] ** np.abs(i - j).astype(float)
    return np.asarray((1 - q.lam) * phi + q.lam * (i == j))


def test_witness_at_n_10000_in_the_class_and_sharp() -> None:
    n, r1, r2 = 10_000, 1.0, 4.0
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2), 10.0)
    x = np.random.default_rng(3).normal(size=n)
    a = pp.audit(pp.ExactMean(), d, x=x, rng=0, n_starts=1)
    q = a.witness.prior
    assert isinstance(q, gs.StructuredGaussianPrior) and q.dim == n
    assert a.kappa <= r1 + math.log(r2) + tol.LOSS_ATOL
    assert a.kappa == pytest.approx(r1 + math.log(r2), abs=1e-6)
    assert d.priors.contains(q, x)
    # independent check: Σ1 from row blocks of Φ_λ, then the class terms and the Prop 7 loss
    sd = np.sqrt(q.var_)
    s = np.concatenate(
        [sd[lo : lo + 1000] * (_phi_rows(q, lo, lo + 1000) @ sd) for lo in range(0, n, 1000)]
    )
    np.testing.assert_allclose(q.cov_dot(np.ones(n)), s, rtol=1e-10)
    tot = s.sum()
    w2 = (x.mean() - q.mean_.mean()) ** 2 / (tot / n**2)
    assert w2 <= r1 * (1 + tol.CLASS_RTOL)
    lo, hi = q.phi_eig_range()
    assert hi / lo <= r2 * (1 - q.var_.max() / q.var_.sum()) * (1 + tol.CLASS_RTOL)
    rho2 = s**2 / (q.var_ * tot)
    z = (x - q.mean_) / sd
    w = math.sqrt(w2) * np.sign(x.mean() - q.mean_.mean())
    delta = -np.log1p(-rho2) + z**2 - (z - np.sqrt(rho2) * np.sign(s) * w) ** 2 / (1 - rho2)
    assert float(delta.max()) == pytest.approx(a.kappa, abs=1e-9)
    assert len(repr(q)) < 200  # the witness prints in O(1), not as an n x n list


def test_linear_audit_skips_a_start_whose_covariance_fails_the_pd_check() -> None:
    """At n = 200 a random start's sds spread so far that GaussianPrior rejects the (valid,
    c_Φ ≤ r2) covariance in floating point; the audit used to stop with that error."""
    from persuasive.linear import LinearGaussianClass, audit_linear

    n = 200
    A = np.vstack([np.full(n, 1.0 / n), np.r_[np.full(n // 2, 2.0 / n), np.zeros(n - n // 2)]])
    cls = LinearGaussianClass(1.0, 4.0)
    res = audit_linear(A, cls, starts=2, rng=0)
    assert res.kappa <= cls.class_kappa(A) + 1e-9
    assert any("skipped" in note for note in res.notes)


@pytest.mark.parametrize(
    ("R", "delta", "V"), [(None, 0.0, None), (None, 0.0, 0.05), (0.5, 0.05, None)]
)
def test_linear_audit_structured_path_checked_dense(
    R: float | None, delta: float, V: float | None
) -> None:
    """Above STRUCTURED_MIN_N audit_linear forms no n x n matrix; its witness, densified, is in
    the class (LinearGaussianClass.contains, dense eigvalsh) and its loss is relative_loss's."""
    from persuasive.linear import LinearGaussianClass, audit_linear
    from persuasive.linear import audit as la
    from persuasive.mechanisms.linear import LinearGaussian

    n = la.STRUCTURED_MIN_N + 100
    assert n <= 800  # keep the dense checks cheap
    A = np.vstack([np.full(n, 1.0 / n), np.r_[np.full(n // 2, 2.0 / n), np.zeros(n - n // 2)]])
    cls = LinearGaussianClass(1.0, 4.0, max_stat_sd=V)
    res = audit_linear(A, cls, R=R, delta=delta, starts=3, rng=4)
    assert res.kappa <= cls.class_kappa(A, R, delta) + 1e-9
    assert any("structured covariances only" in note for note in res.notes)
    w = res.witness
    assert isinstance(w.prior, gs.StructuredGaussianPrior)
    dense = w.prior.to_gaussian()
    assert cls.contains(dense, w.x, A)
    if R is None:
        assert res.kappa == pytest.approx(cls.class_kappa(A), abs=1e-6)  # sharp (Φ = I)
        got = pp.relative_loss(w.score, dense, LinearGaussian(A), w.x)
        assert got == pytest.approx(res.kappa, rel=1e-9, abs=1e-9)
