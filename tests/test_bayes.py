"""Posteriors (eq. 1, Bon et al. 2026) against independent computations."""

from __future__ import annotations

import math
import re
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

import persuasive as pp


def _random_cov(rng: np.random.Generator, n: int) -> np.ndarray:
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n) * 0.1


def test_exact_mean_posterior_matches_closed_form_of_math_md() -> None:
    # docs/math.md §8: m = μ + n s (x̄ − μ̄)/S_tot, V = Σ − s sᵀ / S_tot, computed independently.
    rng = np.random.default_rng(1)
    n = 5
    mu, cov = rng.normal(size=n), _random_cov(rng, n)
    xbar = 0.7
    post = pp.posterior(pp.GaussianPrior(mu, cov), pp.ExactMean(), xbar)
    s = cov.sum(axis=1)
    s_tot = cov.sum()
    np.testing.assert_allclose(post.mean(), mu + n * s * (xbar - mu.mean()) / s_tot, atol=1e-12)
    np.testing.assert_allclose(post.cov(), cov - np.outer(s, s) / s_tot, atol=1e-12)
    assert np.linalg.matrix_rank(post.cov(), tol=1e-9) == n - 1
    assert post.mean().mean() == pytest.approx(xbar, abs=1e-12)


def test_degenerate_conditioning_is_limit_of_noisy_update() -> None:
    # docs/math.md §8: the exact-release posterior is the R -> 0 limit of the Gaussian-noise update.
    rng = np.random.default_rng(2)
    n = 4
    mu, cov = rng.normal(size=n), _random_cov(rng, n)
    A = rng.normal(size=(2, n))
    t = np.array([0.3, -1.2])
    exact = pp.posterior(pp.GaussianPrior(mu, cov), pp.LinearStatistic(A), t)
    noisy = pp.posterior(
        pp.GaussianPrior(mu, cov), pp.Chain(pp.LinearStatistic(A), pp.GaussianMechanism(1e-5)), t
    )
    np.testing.assert_allclose(exact.mean(), noisy.mean(), atol=1e-7)
    np.testing.assert_allclose(exact.cov(), noisy.cov(), atol=1e-7)


def test_rank_deficient_statistics_are_handled() -> None:
    # Repeating a statistic adds no information: same posterior as releasing it once.
    mu, cov = np.zeros(3), np.diag([1.0, 2.0, 3.0])
    a = np.array([[1.0, 1.0, 0.0]])
    once = pp.posterior(pp.GaussianPrior(mu, cov), pp.LinearStatistic(a), [2.0])
    twice = pp.posterior(
        pp.GaussianPrior(mu, cov), pp.LinearStatistic(np.vstack([a, 2 * a])), [2.0, 4.0]
    )
    np.testing.assert_allclose(once.mean(), twice.mean(), atol=1e-12)
    np.testing.assert_allclose(once.cov(), twice.cov(), atol=1e-12)


def test_gaussian_noise_posterior_matches_quadrature() -> None:
    # 1-d: posterior mean and variance by numerical integration of prior x likelihood.
    mu, var, sigma, t = 1.0, 4.0, 1.5, 3.2
    post = pp.posterior(pp.GaussianPrior([mu], [[var]]), pp.GaussianMechanism(sigma), [t])

    def dens(z: float) -> float:
        return stats.norm.pdf(z, mu, np.sqrt(var)) * stats.norm.pdf(t, z, sigma)

    z0 = integrate.quad(dens, -50, 50)[0]
    m1 = integrate.quad(lambda z: z * dens(z), -50, 50)[0] / z0
    m2 = integrate.quad(lambda z: z * z * dens(z), -50, 50)[0] / z0
    assert post.mean()[0] == pytest.approx(m1, rel=1e-8)
    assert post.cov()[0, 0] == pytest.approx(m2 - m1**2, rel=1e-7)


def test_exact_mean_posterior_against_monte_carlo_conditioning() -> None:
    rng = np.random.default_rng(3)
    mu, cov = (
        np.array([0.0, 1.0, -1.0]),
        np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 1.5]]),
    )
    t = 0.4
    draws = rng.multivariate_normal(mu, cov, size=2_000_000)
    near = draws[np.abs(draws.mean(axis=1) - t) < 0.01]
    post = pp.posterior(pp.GaussianPrior(mu, cov), pp.ExactMean(), t)
    se = near.std(axis=0) / np.sqrt(near.shape[0])
    assert np.all(np.abs(near.mean(axis=0) - post.mean()) < 5 * se + 0.01)
    np.testing.assert_allclose(near.var(axis=0), post.marginal_var(), rtol=0.05)


@given(st.integers(2, 6), st.integers(0, 2**32 - 1), st.floats(0.1, 3.0))
def test_discrete_posterior_sums_to_one_and_is_bayes(k: int, seed: int, eps: float) -> None:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k))
    prior = pp.DiscretePrior(np.arange(k), probs)
    rr = pp.RandomizedResponse(eps, k)
    t = int(rng.integers(k))
    post = pp.posterior(prior, rr, t)
    assert post.probs.sum() == pytest.approx(1.0, abs=1e-12)
    brute = probs * rr.matrix[:, t]
    np.testing.assert_allclose(post.probs, brute / brute.sum(), atol=1e-12)


def test_discrete_posterior_of_deterministic_release_conditions_on_the_statistic() -> None:
    support = np.array([[0, 0], [1, 1], [2, 0], [0, 2], [3, 3]], dtype=float)
    probs = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    post = pp.posterior(pp.DiscretePrior(support, probs), pp.ExactMean(), 1.0)
    expected = {(1.0, 1.0): 0.2 / 0.65, (2.0, 0.0): 0.3 / 0.65, (0.0, 2.0): 0.15 / 0.65}
    got = {tuple(r): p for r, p in zip(post.support.tolist(), post.probs, strict=True)}
    assert got.keys() == expected.keys()
    for key, val in expected.items():
        assert got[key] == pytest.approx(val)


def test_cell_suppression_posterior_is_truncated_prior_and_point_mass() -> None:
    prior = pp.IndependentCellsPrior([stats.poisson(4), stats.poisson(2)])
    post = pp.posterior(prior, pp.CellSuppression(3), [-1, 7])
    trunc = stats.poisson(4).pmf(np.arange(3)) / stats.poisson(4).cdf(2)
    np.testing.assert_allclose(np.exp(post.cell_logpmf(0, np.arange(3))), trunc, atol=1e-14)
    assert post.cell_cdf_below(0, 3) == pytest.approx(1.0)
    assert np.exp(post.cell_logpmf(1, 7)) == pytest.approx(1.0)
    assert post.cell_cdf_below(1, 7) == 0.0


def test_log_evidence_discrete_matches_direct_sum() -> None:
    prior = pp.DiscretePrior([0, 1, 2], [0.2, 0.5, 0.3])
    rr = pp.RandomizedResponse(1.0, 3)
    assert np.exp(pp.log_evidence(prior, rr, 2)) == pytest.approx(
        float(prior.probs @ rr.matrix[:, 2])
    )


def test_joint_posterior_ignores_post_processing() -> None:
    prior = pp.DiscretePrior([0, 1], [0.3, 0.7])
    m = pp.RandomizedResponse(1.0, 2)
    k = pp.FiniteKernel([[0.9, 0.1], [0.2, 0.8]])
    a = pp.posterior(prior, pp.Joint(m, k), (1, 0))
    b = pp.posterior(prior, m, 1)
    np.testing.assert_allclose(a.probs, b.probs)


def test_unsupported_combination_is_refused_clearly() -> None:
    prior = pp.GaussianPrior([0.0], [[1.0]])
    with pytest.raises(pp.UnsupportedCombinationError, match="GaussianPrior x LaplaceMechanism"):
        pp.posterior(prior, pp.LaplaceMechanism(1.0), [0.0])
    with pytest.raises(pp.UnsupportedCombinationError):
        pp.posterior(pp.IndependentCellsPrior([[0.5, 0.5]]), pp.ExactMean(), 0.5)


def test_impossible_output_is_a_validation_error() -> None:
    prior = pp.DiscretePrior([0, 1], [0.5, 0.5])
    with pytest.raises(pp.ValidationError, match="probability zero"):
        pp.posterior(prior, pp.ExactMean(), 5.0)


def test_mixed_cell_groups_match_scipy_cell_by_cell() -> None:
    # Arrays, Poisson and negative-binomial cells mixed: the grouped, vectorised evaluation
    # against scipy called one cell at a time.
    laws = [stats.poisson(2.0), stats.nbinom(3, 0.4), stats.poisson(7.5), stats.nbinom(1, 0.2)]
    table = [np.array([0.1, 0.2, 0.7]), np.array([0.5, 0.0, 0.25, 0.25])]
    pmfs = [laws[0], table[0], laws[1], laws[2], table[1], laws[3]]
    prior = pp.IndependentCellsPrior(pmfs)
    x = np.array([3, 2, 0, 9, 1, 4])
    expected = [
        laws[0].logpmf(3),
        np.log(0.7),
        laws[1].logpmf(0),
        laws[2].logpmf(9),
        -np.inf,
        laws[3].logpmf(4),
    ]
    np.testing.assert_allclose(prior.logpmf_cells(x), expected)
    assert prior.logpdf(x) == -np.inf
    below = [laws[0].cdf(1), 0.3, laws[1].cdf(1), laws[2].cdf(1), 0.5, laws[3].cdf(1)]
    np.testing.assert_allclose(prior.cdf_below(2), below)
    np.testing.assert_allclose(prior.cdf_below(3)[[1, 4]], [1.0, 0.75])
    means = [2.0, 1.6, laws[1].mean(), 7.5, 1.25, laws[3].mean()]
    np.testing.assert_allclose(prior.mean(), means)


def test_suppression_posterior_on_many_cells_is_cellwise_truncation() -> None:
    # 3,000 Poisson cells with different means: the vectorised posterior against scipy
    # truncation on a sample of cells, and the log evidence against a per-cell sum.
    rng = np.random.default_rng(5)
    lam = rng.uniform(0.5, 12.0, size=3_000)
    prior = pp.IndependentCellsPrior([stats.poisson(m) for m in lam])
    x = rng.poisson(lam).astype(float)
    mech = pp.CellSuppression(4)
    t = mech.apply(x)
    post = pp.posterior(prior, mech, t)
    for i in rng.choice(lam.size, size=25, replace=False):
        law = stats.poisson(lam[i])
        if t[i] == -1:
            vals = np.arange(4)
            np.testing.assert_allclose(
                np.exp(post.cell_logpmf(i, vals)), law.pmf(vals) / law.cdf(3), rtol=1e-12
            )
        else:
            assert post.cell_logpmf(i, t[i]) == 0.0
            assert post.cell_logpmf(i, t[i] + 1) == -np.inf
    supp = t == -1
    expected = np.sum(stats.poisson.logcdf(3, lam[supp])) + np.sum(
        stats.poisson.logpmf(t[~supp], lam[~supp])
    )
    assert pp.log_evidence(prior, mech, t) == pytest.approx(expected, rel=1e-12)
    # The log-score loss is −log m_Q(t): −log Q_i(X_i < h) for each suppressed cell plus
    # −log q_i(x_i) for each released one (the Receiver learns those exactly).
    loss = pp.relative_loss(pp.LogScore(), prior, mech, x)
    assert loss == pytest.approx(-expected, rel=1e-12)
    # The small-cell family: worst cell is the suppressed one with the least mass below h.
    worst = pp.relative_loss(pp.SmallCellLogScore(r=4), prior, mech, x)
    assert worst == pytest.approx(-np.min(stats.poisson.logcdf(3, lam[supp])), rel=1e-12)


def test_cell_prior_sampling_matches_its_pmfs() -> None:
    prior = pp.IndependentCellsPrior([[0.2, 0.3, 0.5], stats.poisson(3.0)])
    draws = prior.sample(100_000, np.random.default_rng(0))
    freq = np.bincount(draws[:, 0].astype(int), minlength=3) / draws.shape[0]
    np.testing.assert_allclose(freq, [0.2, 0.3, 0.5], atol=0.01)
    assert abs(draws[:, 1].mean() - 3.0) < 0.03


# ---------------------------------------------------------------- the output t is validated

_G2 = pp.GaussianPrior([0.0, 0.0], [1.0, 2.0])
_G1 = pp.GaussianPrior([0.0], [1.0])
_D = pp.DiscretePrior([0, 1, 2], [0.2, 0.5, 0.3])
_CELLS = pp.IndependentCellsPrior([stats.poisson(2.0), stats.poisson(3.0)])
_RR = pp.RandomizedResponse(1.0, 3)

#: (prior, mechanism, a non-finite output, the part of t it is in): every supported combination
NON_FINITE = [
    (_G2, pp.ExactMean(), np.nan, "t"),
    (_G2, pp.LinearStatistic([[1.0, 1.0], [1.0, -1.0]]), [1.0, np.inf], "t"),
    (_G2, pp.GaussianMechanism(1.0), [np.nan, 0.0], "t"),
    (_G2, pp.Chain(pp.ExactMean(), pp.GaussianMechanism(1.0)), -np.inf, "t"),
    (_G2, pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(1.0)), np.nan, "t"),
    (_G2, pp.LinearGaussian([[1.0, 0.0]], R=1.0), [np.nan], "t"),
    (_D, _RR, np.nan, "t"),
    (_D, pp.LaplaceMechanism(1.0), [np.nan], "t"),
    (_D, pp.ExactMean(), np.inf, "t"),
    (_CELLS, pp.CellSuppression(3), [np.nan, 3.0], "t"),
    (_D, pp.Joint(_RR, _RR), (np.nan, 0), "t[0]"),
    (_D, pp.Joint(_RR, _RR), (0, np.nan), "t[1]"),
    (
        _G1,
        pp.Composition(pp.GaussianMechanism(1.0), pp.GaussianMechanism(2.0)),
        ([0.0], [np.nan]),
        "t[1]",
    ),
]


@pytest.mark.parametrize(("prior", "mech", "t", "part"), NON_FINITE)
def test_non_finite_output_is_refused_naming_t(prior, mech, t, part) -> None:  # type: ignore[no-untyped-def]
    # Before: a NaN mean (Gaussian), a "probability zero" message or a NaN loss.
    with pytest.raises(pp.ValidationError) as err:
        pp.posterior(prior, mech, t)
    assert str(err.value).startswith(f"{part} must contain only finite numbers; got ")
    x = prior.sample(1, rng=0)[0]
    with pytest.raises(pp.ValidationError, match=rf"^{re.escape(part)} must contain only finite"):
        pp.relative_loss(pp.LogScore(), prior, mech, x, t=t)
    with pytest.raises(pp.ValidationError, match=rf"^{re.escape(part)} must contain only finite"):
        pp.log_evidence(prior, mech, t)


@pytest.mark.parametrize(
    ("prior", "mech", "t", "message"),
    [
        (
            _G2,
            pp.LinearStatistic([[1.0, 1.0], [1.0, -1.0]]),
            [1.0, 2.0, 3.0],  # before: numpy's matmul shape error
            "t must have shape (2,) for LinearStatistic on datasets of n = 2; got shape (3,)",
        ),
        (
            _G2,
            pp.ExactMean(),
            [1.0, 2.0],
            "t must have a single number (or shape (1,)) for ExactMean on datasets of n = 2; "
            "got shape (2,)",
        ),
        (
            _G2,
            pp.GaussianMechanism(1.0),
            [[0.0, 1.0]],
            "t must have shape (2,) for GaussianMechanism on datasets of n = 2; got shape (1, 2)",
        ),
        (
            _G2,
            pp.Chain(pp.LinearStatistic([[1.0, 0.0], [0.0, 1.0]]), pp.GaussianMechanism(1.0)),
            0.5,
            "t must have shape (2,) for Chain on datasets of n = 2; got shape ()",
        ),
        (
            _CELLS,
            pp.CellSuppression(3),
            [5.0],
            "t must have shape (2,) for CellSuppression on datasets of n = 2; got shape (1,)",
        ),
        (_D, _RR, [0, 1], "t must have a single number (or shape (1,)) for RandomizedResponse"),
        (_D, pp.Joint(_RR, _RR), 1, "t must be a pair (t1, t2) for Joint; got 1"),
        (_G1, pp.Composition(pp.ExactMean(), pp.ExactMean()), [1.0], "t must be a pair (t1, t2)"),
        (_G2, pp.ExactMean(), "1.5", "t must be numeric (an output of the mechanism); got '1.5'"),
        (_G2, pp.GaussianMechanism(1.0), [[1.0], [1.0, 2.0]], "t must be numeric"),
    ],
)
def test_wrong_output_shape_is_refused_naming_t(prior, mech, t, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pp.ValidationError) as err:
        pp.posterior(prior, mech, t)
    assert str(err.value).startswith(message)


def test_valid_outputs_of_every_shape_are_accepted() -> None:
    # a single number may be given as a number or as shape (1,)
    a = pp.posterior(_G2, pp.ExactMean(), 1.0)
    b = pp.posterior(_G2, pp.ExactMean(), [1.0])
    np.testing.assert_array_equal(a.mean(), b.mean())
    assert pp.posterior(_D, _RR, np.float64(2.0)).probs.sum() == pytest.approx(1.0)
    assert pp.posterior(_D, pp.Joint(_RR, _RR), [1, 2]).dim == 1  # a list pair is a pair
    with pytest.raises(pp.ValidationError, match="prior must be a Prior"):
        pp.posterior("N(0, 1)", pp.ExactMean(), 0.0)  # type: ignore[arg-type]
    with pytest.raises(pp.ValidationError, match="mechanism must be a Mechanism"):
        pp.posterior(_G2, "mean", 0.0)  # type: ignore[arg-type]


# ---------------------------------------------------------------- huge and tiny scales

HALF = np.array([[0.5, -0.5], [-0.5, 0.5]])


@pytest.mark.parametrize("s", [1e308, 1e300, 1.0, 1e-300, 1e-306])
def test_exact_mean_posterior_at_extreme_scales_against_closed_form(s: float) -> None:
    # N(0, s I_2) given (x1 + x2)/2 = t: mean (t, t), covariance (s/2) [[1, -1], [-1, 1]].
    # Before: diag(1e308, 1e308) overflowed to a NaN posterior (so a loss of 0.0).
    t = 0.75 * math.sqrt(s)
    post = pp.posterior(pp.GaussianPrior([0.0, 0.0], [s, s]), pp.ExactMean(), t)
    np.testing.assert_allclose(post.mean(), [t, t], rtol=1e-14)
    np.testing.assert_allclose(post.cov(), s * HALF, rtol=1e-14, atol=0)


def test_sum_statistic_of_a_huge_prior_does_not_overflow() -> None:
    # T = x1 + x2 has variance 2e308 (not a float); the posterior is finite and exact.
    s = 1e308
    post = pp.posterior(pp.GaussianPrior([0.0, 0.0], [s, s]), pp.LinearStatistic([[1.0, 1.0]]), 3.0)
    np.testing.assert_allclose(post.mean(), [1.5, 1.5], rtol=1e-14)
    np.testing.assert_allclose(post.cov(), s * HALF, rtol=1e-14)


@pytest.mark.parametrize(
    ("s", "sigma"), [(1e308, 1.0), (1.0, 1e-150), (1e-300, 1e-150), (4.0, 1e-9)]
)
def test_noisy_posterior_when_the_data_dominate(s: float, sigma: float) -> None:
    # x ~ N(0, s), T = x + N(0, σ²): mean t s/(s + σ²), variance 1/(1/s + 1/σ²). With
    # σ² ≪ s the variance is a tiny fraction of the prior's; before, it was either the
    # difference of two huge numbers or zeroed as "exactly known" (a loss of -inf).
    t = 0.3 * sigma
    post = pp.posterior(pp.GaussianPrior([0.0], [s]), pp.GaussianMechanism(sigma), [t])
    var = 1.0 / (1.0 / s + 1.0 / sigma**2)
    assert post.cov()[0, 0] == pytest.approx(var, rel=1e-13)
    assert post.mean()[0] == pytest.approx(t * (s / (s + sigma**2)), rel=1e-13)


@pytest.mark.parametrize("s", [1e308, 1e-300])
def test_log_evidence_at_extreme_scales_against_closed_form(s: float) -> None:
    # T = x1 + x2 + N(0, 1) under N(0, s I): T ~ N(0, 2s + 1), 2s + 1 computed in logs.
    t = 2.0
    mech = pp.Chain(pp.LinearStatistic([[1.0, 1.0]]), pp.GaussianMechanism(1.0))
    log_var = math.log(2.0) + math.log(s) if s > 1 else math.log1p(2.0 * s)
    expected = -0.5 * (math.log(2 * math.pi) + log_var + t * t / (2.0 * s + 1.0))
    got = pp.log_evidence(pp.GaussianPrior([0.0, 0.0], [s, s]), mech, t)
    assert got == pytest.approx(expected, rel=1e-14)


def _laplace_reference(mu: float, sd: float, b: float, t: float) -> tuple[float, float]:
    """Posterior mean and variance of x ~ N(mu, sd²) given t = x + Lap(b), by mpmath quadrature
    at 50 digits (split at t, where the likelihood has its kink)."""
    mpmath.mp.dps = 50
    mu_, sd_, b_, t_ = (mpmath.mpf(v) for v in (mu, sd, b, t))

    def w(x: Any) -> Any:
        return mpmath.exp(-((x - mu_) ** 2) / (2 * sd_**2) - abs(t_ - x) / b_)

    lo, hi = min(mu_, t_) - 40 * sd_, max(mu_, t_) + 40 * sd_
    pts = sorted({lo, t_ - 60 * b_, t_, t_ + 60 * b_, hi})
    pts = [p for p in pts if lo <= p <= hi]
    z = mpmath.quad(w, pts)
    m1 = mpmath.quad(lambda x: x * w(x), pts) / z
    m2 = mpmath.quad(lambda x: (x - m1) ** 2 * w(x), pts) / z
    return float(m1), float(m2)


@pytest.mark.parametrize(
    ("sd", "b", "t"),
    [(1.0, 1.0, 0.7), (1.0, 1e-3, 0.5), (1.0, 1e-5, -0.2), (1e3, 1.0, 10.0), (1.0, 30.0, 2.0)],
)
def test_laplace_posterior_is_accurate_when_the_noise_is_small(
    sd: float, b: float, t: float
) -> None:
    # Chain(ExactMean, Laplace) on n = 1: posterior moments against 50-digit quadrature. For
    # b/sd = 1e-5 the former formula lost every digit of the variance (≈ 2 b²) to cancellation.
    prior = pp.GaussianPrior([0.0], [sd**2])
    post = pp.posterior(prior, pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(b)), t)
    m, v = _laplace_reference(0.0, sd, b, t)
    assert post.mean()[0] == pytest.approx(m, rel=1e-10, abs=1e-14 * sd)
    assert post.cov()[0, 0] == pytest.approx(v, rel=1e-9)


def test_laplace_posterior_of_a_huge_prior_is_the_flat_prior_limit() -> None:
    # N(0, diag(1e308, 1e308)), T = x̄ + Lap(1): the prior is flat over the noise, so
    # x̄ | T ≈ t + Lap(1) (mean t, variance 2), and Cov(x | x̄) = (s/2)[[1, -1], [-1, 1]].
    s = 1e308
    mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(1.0))
    post = pp.posterior(pp.GaussianPrior([0.0, 0.0], [s, s]), mech, 2.0)
    np.testing.assert_allclose(post.mean(), [2.0, 2.0], rtol=1e-12)
    np.testing.assert_allclose(post.cov(), s * HALF + 2.0, rtol=1e-12)
    ev = pp.log_evidence(pp.GaussianPrior([0.0, 0.0], [s, s]), mech, 2.0)
    assert ev == pytest.approx(-0.5 * (math.log(2 * math.pi) + math.log(s / 2)), rel=1e-12)


def test_posterior_moments_that_overflow_are_refused() -> None:
    prior = pp.GaussianPrior([1e308, -1e308], [1.0, 1.0])
    with pytest.raises(pp.UnsupportedCombinationError, match="overflow double precision"):
        pp.posterior(prior, pp.LinearStatistic([[1.0, -1.0]]), 0.0)
