"""Linear statistics under Gaussian Receivers (issue 4), against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

import persuasive as pp
from persuasive.errors import ValidationError
from persuasive.linear import LinearGaussianClass, StructuredCovariance, analyse, variance_spread


def ar1(n: int, r: float) -> np.ndarray:
    i = np.arange(n)
    return r ** np.abs(i[:, None] - i[None, :])


def test_prop7_numbers_as_mean():
    # docs/math.md §12: tight cases (sup over x) and the two fixed-x losses
    an = analyse([0.0, 0.0], np.diag([3.0, 1.0]), [[0.5, 0.5]])
    assert an.kappa(1.0).max() == pytest.approx(1 + math.log(4), abs=1e-10)
    assert an.marginal_loss([2.0, 0.0]).max() == pytest.approx(2.3862943611, abs=1e-9)
    an = analyse(np.zeros(5), np.diag([4.0, 1, 1, 1, 1]), np.full((1, 5), 0.2))
    assert an.kappa(1.0).max() == pytest.approx(1 + math.log(2), abs=1e-10)
    sd = np.array([1, 1.5, 2, 1, 0.5])
    cov = ar1(5, 0.3) * np.outer(sd, sd)
    an = analyse([1, -2, 0.5, 3, 0], cov, np.full((1, 5), 0.2))
    assert an.marginal_loss([1.5, -1, 0, 2, 0.5]).max() == pytest.approx(0.6816898533, abs=1e-9)
    sd = np.array([1, 2, 1.5])
    cov = (np.full((3, 3), 0.5) + 0.5 * np.eye(3)) * np.outer(sd, sd)
    an = analyse([10, 12, 9], cov, np.full((1, 3), 1 / 3))
    assert an.marginal_loss([11, 13, 9.8]).max() == pytest.approx(1.5988464769, abs=1e-9)


def random_instance(seed: int, n: int = 5, k: int = 2):
    rng = np.random.default_rng(seed)
    low = rng.standard_normal((n, n))
    cov = low @ low.T + 0.5 * np.eye(n)
    return rng.standard_normal(n), cov, rng.standard_normal((k, n)), rng


@pytest.mark.parametrize("seed", range(4))
def test_posterior_is_schur_complement_and_noisy_limit(seed):
    mu, cov, a, rng = random_instance(seed)
    x = rng.standard_normal(mu.shape[0])
    t = a @ x
    g = a @ cov @ a.T  # full rank: plain Schur complement, an independent formula
    m = mu + cov @ a.T @ np.linalg.solve(g, t - a @ mu)
    v = cov - cov @ a.T @ np.linalg.solve(g, a @ cov)
    an = analyse(mu, cov, a)
    np.testing.assert_allclose(an.posterior_mean(t), m, atol=1e-10)
    np.testing.assert_allclose(an.post_var, np.diag(v), atol=1e-10)
    near = analyse(mu, cov, a, 1e-9)
    np.testing.assert_allclose(near.posterior_mean(t), m, atol=1e-6)
    np.testing.assert_allclose(near.post_var, np.diag(v), atol=1e-6)


def test_posterior_against_monte_carlo_conditioning():
    mu, cov, a, rng = random_instance(7, n=4, k=2)
    r = np.array([[0.5, 0.1], [0.1, 0.3]])
    xs = rng.multivariate_normal(mu, cov, 200_000)
    ts = xs @ a.T + rng.multivariate_normal(np.zeros(2), r, xs.shape[0])
    design = np.column_stack([np.ones(len(ts)), ts])
    coef, *_ = np.linalg.lstsq(design, xs, rcond=None)  # E[x | T] is linear in T
    resid = xs - design @ coef
    an = analyse(mu, cov, a, r)
    t0 = np.array([0.3, -0.7])
    np.testing.assert_allclose(an.posterior_mean(t0), np.r_[1.0, t0] @ coef, atol=0.03)
    np.testing.assert_allclose(an.post_var, resid.var(axis=0), rtol=0.02)
    # the same posterior through pp.posterior (bayes.py, general R)
    post = pp.posterior(pp.GaussianPrior(mu, cov), pp.LinearGaussian(a, r), t0)
    np.testing.assert_allclose(post.mean(), an.posterior_mean(t0), atol=1e-10)
    np.testing.assert_allclose(post.marginal_var(), an.post_var, atol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_closed_form_sup_against_brute_force(seed):
    mu, cov, a, rng = random_instance(10 + seed, n=4, k=2)
    r1 = 1.3
    an = analyse(mu, cov, a)
    prior, mech = pp.GaussianPrior(mu, cov), pp.LinearStatistic(a)
    w, q = np.linalg.eigh(a @ cov @ a.T)
    whiten = (q / np.sqrt(w)).T

    def on_sphere(d):  # scale d so that ‖(AΣAᵀ)^{-1/2} A d‖² = r1
        u = whiten @ (a @ d)
        return mu + d * math.sqrt(r1) / np.linalg.norm(u)

    for i in range(4):

        def neg(d, i=i):
            return -pp.relative_loss(pp.MarginalDSS(i), prior, mech, on_sphere(d))

        best = max(
            -optimize.minimize(
                neg,
                rng.standard_normal(4),
                method="Nelder-Mead",
                options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000},
            ).fun
            for _ in range(6)
        )
        assert best <= an.kappa(r1)[i] + 1e-8
        assert best == pytest.approx(an.kappa(r1)[i], abs=1e-4)


def test_differencing_attack_exposes_exactly_one():
    n = 6
    a = np.vstack([np.full(n, 1 / n), np.r_[np.full(n - 1, 1 / (n - 1)), 0.0]])
    an = analyse(np.zeros(n), np.eye(n), a)
    assert an.exposed.tolist() == [False] * (n - 1) + [True]
    (exp,) = an.exposures()
    assert exp.i == n - 1 and exp.residual < 1e-12
    np.testing.assert_allclose(exp.combination, [n, -(n - 1)], atol=1e-9)
    assert np.isinf(an.kappa(1.0)[-1]) and np.isfinite(an.kappa(1.0)[:-1]).all()
    x = np.arange(n, dtype=float)
    assert exp.combination @ (a @ x) == pytest.approx(x[-1])
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), LinearGaussianClass(1.0, 10.0), 5.0)
    with pytest.raises(pp.UnsupportedCombinationError, match="exposes individual"):
        pp.certify(pp.LinearGaussian(a), d)


def test_redundant_statistics_change_nothing():
    mu, cov, a, _ = random_instance(3, n=5, k=2)
    a3 = np.vstack([a, 2 * a[0] - a[1]])
    one, two = analyse(mu, cov, a), analyse(mu, cov, a3)
    np.testing.assert_allclose(two.post_var, one.post_var, atol=1e-10)
    np.testing.assert_allclose(two.kappa(1.0), one.kappa(1.0), atol=1e-9)
    t = a3 @ np.ones(5)
    np.testing.assert_allclose(two.posterior_mean(t), one.posterior_mean(t[:2]), atol=1e-9)


def test_structured_equals_dense():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 4, 40)
    s = StructuredCovariance.block_equicorrelated(
        groups, rng.uniform(0.5, 2, 40), [0.1, 0.5, 0.3, 0.8]
    )
    a = np.vstack(
        [(groups == g) / max((groups == g).sum(), 1) for g in range(4)] + [np.ones(40) / 40]
    )
    mu = rng.standard_normal(40)
    st, de = analyse(mu, s, a, 0.01), analyse(mu, s.to_dense(), a, 0.01)
    np.testing.assert_allclose(st.post_var, de.post_var, rtol=1e-10)
    np.testing.assert_allclose(st.kappa(1.0, 0.05), de.kappa(1.0, 0.05), rtol=1e-10)
    t = a @ rng.standard_normal(40)
    np.testing.assert_allclose(st.posterior_mean(t), de.posterior_mean(t), atol=1e-10)


def test_noisy_kappa_is_the_ncx2_quantile_and_bounds_monte_carlo():
    mu, cov, a, rng = random_instance(21, n=4, k=2)
    r = np.diag([0.4, 0.9])
    r1, delta = 1.0, 0.1
    an = analyse(mu, cov, a, r)
    g = an.gamma
    expect = -np.log1p(-an.rho2) + (1 - g) * stats.ncx2.ppf(1 - delta, 1, r1 * g / (1 - g))
    np.testing.assert_allclose(an.kappa(r1, delta), expect, rtol=1e-7)
    # Monte Carlo at the audit witness (u = sqrt(r1) b̂_i, worst ξ): P[Δ_i > κ_i] <= δ
    from persuasive.linear.audit import fixed_quantile

    an0 = analyse(mu, cov, a)
    i = int(np.argmax(an.rho2))
    b = an0._B[i]
    col = (cov[:, i] - an0._B @ b) / math.sqrt(an0.post_var[i])
    prior, mech = pp.GaussianPrior(mu, cov), pp.LinearGaussian(a, r)
    for xi in (-1.0, 0.5, 2.0):
        x = mu + an0._B @ (math.sqrt(r1) * b / np.linalg.norm(b)) + xi * col
        ts = mech.sample(x, 3000, rng)
        losses = np.array([pp.relative_loss(pp.MarginalDSS(i), prior, mech, x, t) for t in ts])
        assert np.mean(losses > an.kappa(r1, delta)[i]) <= delta + 0.02
        q = fixed_quantile(an, x, i, delta)  # exact quantile for this fixed (x, Q)
        assert np.mean(losses > q) == pytest.approx(delta, abs=0.02)
        assert q <= an.kappa(r1, delta)[i] + 1e-9


def test_other_scores_match_relative_loss():
    mu, cov, a, rng = random_instance(5, n=4, k=2)
    r = np.array([[0.5, 0.1], [0.1, 0.3]])
    prior, mech = pp.GaussianPrior(mu, cov), pp.LinearGaussian(a, r)
    x = rng.standard_normal(4)
    t = mech.sample(x, 1, rng)[0]
    an = analyse(mu, cov, a, r)
    assert an.log_loss(x, t) == pytest.approx(pp.relative_loss(pp.LogScore(), prior, mech, x, t))
    assert an.dss_loss(x, t) == pytest.approx(
        pp.relative_loss(pp.DawidSebastiani(), prior, mech, x, t)
    )
    np.testing.assert_allclose(
        an.marginal_loss(x, t).max(), pp.relative_loss(pp.MarginalDSS(), prior, mech, x, t)
    )
    exact = analyse(mu, cov, a)
    assert exact.log_loss(x, a @ x) == math.inf
    # on the support: prior and posterior restricted to ker(A) (independent basis via SVD)
    nb = np.linalg.svd(a)[2][2:].T
    sp, post = nb.T @ cov @ nb, pp.posterior(prior, pp.LinearStatistic(a), a @ x)
    vp = nb.T @ post.cov() @ nb
    dss = (
        np.linalg.slogdet(sp)[1]
        + (nb.T @ (x - mu)) @ np.linalg.solve(sp, nb.T @ (x - mu))
        - np.linalg.slogdet(vp)[1]
        - (nb.T @ (x - post.mean())) @ np.linalg.solve(vp, nb.T @ (x - post.mean()))
    )
    assert exact.dss_loss(x) == pytest.approx(dss, abs=1e-8)


def test_class_is_prop7_for_the_mean_and_sharp():
    sd = np.array([3**0.5, 1.0])
    np.testing.assert_allclose(variance_spread([[1.0, 1.0]], sd), 1 - sd**2 / (sd**2).sum())
    g = LinearGaussianClass(1.0, 4.0)
    q = pp.GaussianPrior([0.0, 0.0], [3.0, 1.0])
    assert g.contains(q, [2.0, 0.0], A=[[0.5, 0.5]])
    assert not g.contains(q, [4.0, 0.0], A=[[0.5, 0.5]])
    # sharp for a general A: Φ = I, rescale σ_0 until min_i D_i/σ_i² = 1/r2
    a = np.array([[1.0, 1, 1, 0], [0, 1, -1, 1]])
    r2 = 6.0
    f = lambda s0: variance_spread(a, [s0, 1, 1, 1]).min() - 1 / r2  # noqa: E731
    s0 = optimize.brentq(f, 1.0, 1e3, xtol=1e-14)
    an = analyse(np.zeros(4), np.diag([s0**2, 1, 1, 1]), a)
    assert an.kappa(0.7).max() == pytest.approx(0.7 + math.log(r2), abs=1e-9)


def test_certificates():
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), LinearGaussianClass(1.0, 4.0), 2.4)
    c = pp.certify(pp.LinearStatistic(np.full((1, 3), 1 / 3)), d)
    assert c.kappa == pytest.approx(1 + math.log(4)) and c.exact
    # noisy, k = 1: agrees with the Prop 7 noise extension (λ_max(AΣAᵀ) = Σ̄)
    d = pp.PersuasivePrivacy(
        pp.MarginalDSS(), LinearGaussianClass(4.0, 4.0, max_stat_sd=0.1), 4.5, 0.05
    )
    c = pp.certify(pp.LinearGaussian(np.full((1, 3), 1 / 3), 1.0), d)
    ref = pp.certify(
        pp.Chain(pp.ExactMean(), pp.GaussianMechanism(1.0)),
        pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(4.0, 4.0, 0.1), 4.5, 0.05),
    )
    assert c.kappa == pytest.approx(ref.kappa) and not c.exact


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: analyse(np.zeros(3), np.eye(3), np.ones((1, 4))), "mean must have n = 4"),
        (lambda: analyse(np.zeros(2), np.eye(2), [[1.0, np.nan]]), "A must contain only finite"),
        (lambda: pp.LinearGaussian([[1.0, 1.0]], [[-1.0]]), "R must be positive semi-definite"),
        (lambda: pp.LinearGaussian([[1.0, 1.0], [1, 0]], [[1.0, 2.0], [2.0, 1.0]]), "R must be"),
        (lambda: analyse([0.0], [[1.0]], [[1.0]]), "n >= 2"),
        # the shared domains: r1 > 0, r2 > 1, 0 <= delta < 1, as for GaussianMeanClass
        (
            lambda: analyse(np.zeros(2), np.eye(2), [[0.5, 0.5]]).kappa(0.0),
            r"r1 must be in \(0, inf\)",
        ),
        (
            lambda: analyse(np.zeros(2), np.eye(2), [[0.5, 0.5]]).kappa(1.0, 1.0),
            r"delta must be in \[0, 1\); got 1.0",
        ),
        (lambda: LinearGaussianClass(1.0, 1.0), r"r2 must be in \(1, inf\); got 1.0"),
        (lambda: LinearGaussianClass(1.0, 2.0, max_stat_sd=0.0), r"max_stat_sd must be in \(0,"),
        (lambda: LinearGaussianClass(1.0, 2.0).class_kappa([[0.5, 0.5]], 1.0, 1.5), "delta must"),
        (
            lambda: LinearGaussianClass(1.0, 4.0).contains(
                pp.GaussianPrior([0, 0], np.eye(2)), [0, 0], A=np.ones((1, 3))
            ),
            "A must have n = 2",
        ),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValidationError, match=match):
        call()
