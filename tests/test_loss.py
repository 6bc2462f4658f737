"""Relative loss Δ_S(Q, T, x) = S(Q, x) − S(Q_T, x) against independent formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import persuasive as pp


def _marginal_closed_form(mu: np.ndarray, cov: np.ndarray, x: np.ndarray) -> np.ndarray:
    """docs/math.md §8: Δ_i = −log(1−ρ_i²) + z_i² − (z_i − ρ_i w)²/(1−ρ_i²)."""
    n = mu.size
    sd = np.sqrt(np.diag(cov))
    s = cov.sum(axis=1)
    s_tot = cov.sum()
    rho = s / (sd * np.sqrt(s_tot))
    z = (x - mu) / sd
    w = (x.mean() - mu.mean()) / np.sqrt(s_tot / n**2)
    return -np.log(1 - rho**2) + z**2 - (z - rho * w) ** 2 / (1 - rho**2)


@pytest.mark.parametrize(
    ("cov", "x", "expected"),
    [
        (np.diag([3.0, 1.0]), np.array([2.0, 0.0]), 1 + math.log(4)),
        (np.diag([4.0, 1, 1, 1, 1]), np.array([2 * math.sqrt(2), 0, 0, 0, 0]), 1 + math.log(2)),
    ],
)
def test_prop7_sharp_witnesses(cov: np.ndarray, x: np.ndarray, expected: float) -> None:
    q = pp.GaussianPrior(np.zeros(x.size), cov)
    assert pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), x) == pytest.approx(
        expected, abs=1e-12
    )


def test_prop7_reference_values_of_math_md() -> None:
    # AR(1)(0.3), n = 5 (docs/math.md §12): 0.6816898533.
    sds = np.array([1, 1.5, 2, 1, 0.5])
    phi = 0.3 ** np.abs(np.subtract.outer(np.arange(5), np.arange(5)))
    q = pp.GaussianPrior([1, -2, 0.5, 3, 0], np.outer(sds, sds) * phi)
    val = pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), [1.5, -1, 0, 2, 0.5])
    assert val == pytest.approx(0.6816898533, abs=1e-9)
    # Equicorrelated 0.5, n = 3: 1.5988464769.
    sds = np.array([1, 2, 1.5])
    phi = np.full((3, 3), 0.5) + 0.5 * np.eye(3)
    q = pp.GaussianPrior([10, 12, 9], np.outer(sds, sds) * phi)
    val = pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), [11, 13, 9.8])
    assert val == pytest.approx(1.5988464769, abs=1e-9)


@given(st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_marginal_dss_loss_matches_closed_form(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n))
    cov = a @ a.T + 0.5 * np.eye(n)
    mu, x = rng.normal(size=n), rng.normal(size=n) * 2
    q = pp.GaussianPrior(mu, cov)
    expected = _marginal_closed_form(mu, cov, x)
    got = [pp.relative_loss(pp.MarginalDSS(i), q, pp.ExactMean(), x) for i in range(n)]
    np.testing.assert_allclose(got, expected, atol=1e-8)
    assert pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), x) == pytest.approx(
        expected.max(), abs=1e-8
    )


@given(st.floats(1e-6, 1 - 1e-6), st.floats(0.1, 5.0), st.integers(0, 1), st.floats(-3, 3))
def test_two_point_log_loss_formula(q: float, sigma: float, xp_side: int, t: float) -> None:
    # docs/math.md §6: Δ_q = −log(q + (1−q) e^{−ℓ}), ℓ = log m(x,t) − log m(x',t).
    x, xp = 0.0, (1.0 if xp_side else -1.0)
    prior = pp.TwoPointPrior(x, xp, q)
    m = pp.GaussianMechanism(sigma)
    ell = stats.norm.logpdf(t, x, sigma) - stats.norm.logpdf(t, xp, sigma)
    expected = -np.logaddexp(math.log(q), math.log1p(-q) - ell)
    assert pp.relative_loss(pp.LogScore(), prior, m, [x], t=[t]) == pytest.approx(
        expected, rel=1e-9, abs=1e-12
    )


def test_log_loss_equals_score_difference_for_discrete_priors() -> None:
    prior = pp.DiscretePrior([0, 1, 2], [0.2, 0.5, 0.3])
    rr = pp.RandomizedResponse(1.3, 3)
    post = pp.posterior(prior, rr, 1)
    for x in range(3):
        direct = pp.LogScore()(prior, x) - pp.LogScore()(post, x)
        assert pp.relative_loss(pp.LogScore(), prior, rr, [x], t=1) == pytest.approx(direct)


def test_infinity_minus_infinity_is_zero() -> None:
    # x outside the support of Q: both log scores are +∞, Δ = 0 (App. E.5).
    prior = pp.DiscretePrior([1, 2], [0.5, 0.5])
    assert pp.relative_loss(pp.LogScore(), prior, pp.RandomizedResponse(1.0, 3), [0], t=0) == 0.0
    assert (
        pp.relative_loss(
            pp.LogScore(), pp.TwoPointPrior(0, 1, 1.0), pp.RandomizedResponse(1.0, 2), [0], t=0
        )
        == 0.0
    )


def test_log_score_of_exact_release_of_a_gaussian_prior_is_infinite() -> None:
    q = pp.GaussianPrior([0.0, 0.0], [1.0, 1.0])
    assert pp.relative_loss(pp.LogScore(), q, pp.ExactMean(), [1.0, 0.0]) == math.inf


def test_cell_suppression_log_loss_is_minus_log_mass_below_h() -> None:
    # Log score on a product prior: suppressed cells contribute −log Q(X_i < h) (docs/math.md §9).
    prior = pp.IndependentCellsPrior([stats.poisson(4), stats.poisson(4)])
    got = pp.relative_loss(pp.LogScore(), prior, pp.CellSuppression(3), [1, 2])
    assert got == pytest.approx(-2 * math.log(stats.poisson(4).cdf(2)))


@given(st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_receiver_post_processing_leaves_loss_unchanged(k: int, seed: int) -> None:
    # Prop 4: M ⊗ K with K independent of x gives Q_{T,U} = Q_T.
    rng = np.random.default_rng(seed)
    prior = pp.DiscretePrior(np.arange(k), rng.dirichlet(np.ones(k)))
    m = pp.FiniteKernel(rng.dirichlet(np.ones(k), size=k))
    post = pp.FiniteKernel(rng.dirichlet(np.ones(3), size=k))
    x, t, u = int(rng.integers(k)), int(rng.integers(k)), int(rng.integers(3))
    for score in (pp.LogScore(), pp.DawidSebastiani()):
        a = pp.relative_loss(score, prior, m, [x], t=t)
        b = pp.relative_loss(score, prior, pp.Joint(m, post), [x], t=(t, u))
        assert a == pytest.approx(b, abs=1e-10)


def test_dawid_sebastiani_against_direct_formula() -> None:
    q = pp.GaussianPrior([0.0, 1.0], [[2.0, 0.3], [0.3, 1.0]])
    m = pp.GaussianMechanism(0.5)
    t = np.array([0.4, 1.5])
    x = np.array([0.2, 1.1])
    post = pp.posterior(q, m, t)

    def dss(mu: np.ndarray, cov: np.ndarray) -> float:
        d = x - mu
        return float(np.log(np.linalg.det(cov)) + d @ np.linalg.inv(cov) @ d)

    expected = dss(q.mean(), q.cov()) - dss(post.mean(), post.cov())
    assert pp.relative_loss(pp.DawidSebastiani(), q, m, x, t=t) == pytest.approx(expected)


def test_bad_arguments_are_named() -> None:
    q = pp.GaussianPrior([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(pp.ValidationError, match="x must have n = 2"):
        pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), [1.0, 2.0, 3.0])
    with pytest.raises(pp.ValidationError, match="t is required"):
        pp.relative_loss(pp.LogScore(), pp.TwoPointPrior(0, 1, 0.5), pp.LaplaceMechanism(1), [0])
    with pytest.raises(pp.ValidationError, match="score must be a Score"):
        pp.relative_loss("log", q, pp.ExactMean(), [1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(pp.ValidationError, match="finite"):
        pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), [np.nan, 2.0])


def test_family_loss_equals_worst_member_with_infinite_scores() -> None:
    # Vectorised family evaluation keeps the ∞ − ∞ = 0 convention member by member.
    from persuasive.loss import score_differences

    got = score_differences([np.inf, 1.0, -np.inf, np.inf], [np.inf, 0.5, -np.inf, 2.0])
    assert got.tolist() == [0.0, 0.5, 0.0, np.inf]
    prior = pp.DiscretePrior([[0, 0], [1, 1], [2, 0]], [0.2, 0.5, 0.3])
    # Exact mean 1: the Receiver learns x = (1, 1) or (2, 0); member by member vs the family.
    each = [pp.relative_loss(pp.MarginalDSS(i), prior, pp.ExactMean(), [2, 0]) for i in (0, 1)]
    assert pp.relative_loss(pp.MarginalDSS(), prior, pp.ExactMean(), [2, 0]) == max(each)


# ---------------------------------------------------------------- huge, tiny, near-singular


def test_exact_mean_of_a_huge_prior_loses_log_2() -> None:
    # The case of the issue: N(0, diag(1e308, 1e308)), exact mean of x = (1, 3). Closed form
    # (docs/math.md §8 with Σ = s I): the posterior of x_i is N(x̄, s/2), so
    # D_i(Q) − D_i(Q_T) = log 2 + x_i²/s − 2(x_i − x̄)²/s, i.e. log 2 up to 1e-307.
    # Before: the covariance overflowed while being symmetrised and the loss was 0.0.
    s, x = 1e308, np.array([1.0, 3.0])
    q = pp.GaussianPrior([0.0, 0.0], np.diag([s, s]))
    expected = max(math.log(2) + xi**2 / s - 2 * (xi - x.mean()) ** 2 / s for xi in x)
    assert expected == math.log(2)
    assert pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), x) == pytest.approx(
        math.log(2), rel=1e-15
    )
    for i in (0, 1):
        got = pp.relative_loss(pp.MarginalDSS(i), q, pp.ExactMean(), x)
        assert got == pytest.approx(math.log(2), rel=1e-15)
    # the log score: an exact release of a continuous prior is infinitely informative
    assert pp.relative_loss(pp.LogScore(), q, pp.ExactMean(), x) == math.inf
    # the same data through the sum x1 + x2 (whose variance 2e308 is not a float)
    assert pp.relative_loss(
        pp.MarginalDSS(), q, pp.LinearStatistic([[1.0, 1.0]]), x
    ) == pytest.approx(math.log(2), rel=1e-15)


def test_noisy_release_of_a_huge_prior_against_closed_forms() -> None:
    # T = x + N(0, I) under N(0, s I), t = x: the log-score loss is
    # log N(t; x, I) − log N(t; 0, (s + 1) I) = log(s + 1) + |t|²/(2(s + 1)) (n = 2); the
    # marginal DSS loss, with posterior N(t s/(s+1), s/(s+1)), is
    # log(s + 1) + x_i²/s − (x_i/(s + 1))² (s + 1)/s.
    s, x = 1e308, np.array([1.0, 3.0])
    q = pp.GaussianPrior([0.0, 0.0], [s, s])
    log_s1 = math.log(s)  # log(s + 1) in double precision
    m = pp.GaussianMechanism(1.0)
    assert pp.relative_loss(pp.LogScore(), q, m, x, t=x) == pytest.approx(log_s1, rel=1e-15)
    assert pp.relative_loss(pp.MarginalDSS(), q, m, x, t=x) == pytest.approx(log_s1, rel=1e-15)
    # (before: the posterior variance 1 was "rounding level" next to 1e308 and zeroed: -inf)
    chain = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(1.0))
    # T = x̄ + N(0, 1): log N(2; 2, 1) − log N(2; 0, s/2 + 1) = ½ log(s/2) + 2²/(s + 2)
    assert pp.relative_loss(pp.LogScore(), q, chain, x, t=2.0) == pytest.approx(
        0.5 * math.log(s / 2), rel=1e-15
    )
    dss = pp.relative_loss(pp.DawidSebastiani(), q, m, x, t=x)
    # log det Σ + |x|²/s − log det V − |x − m|²/v, V = v I, v = s/(s+1), m = x v
    assert dss == pytest.approx(2 * log_s1, rel=1e-15)


@pytest.mark.parametrize("c", [1e-300, 1e-200, 1e200, 1e300])
def test_marginal_dss_loss_is_scale_invariant(c: float) -> None:
    # Δ(c Σ, √c x, √c t) = Δ(Σ, x, t) exactly for the marginal DSS (a change of units), checked
    # where c Σ is near the under- or overflow of a float.
    rng = np.random.default_rng(7)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 0.5 * np.eye(3)
    mu, x = rng.normal(size=3), rng.normal(size=3)
    r = math.sqrt(c)
    for mech, t in [
        (pp.ExactMean(), None),
        (pp.LinearStatistic([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]), None),
        (pp.Chain(pp.ExactMean(), pp.GaussianMechanism(0.5)), 0.4),
    ]:
        sigma = 0.5 * r if t is not None else None
        base = pp.relative_loss(pp.MarginalDSS(), pp.GaussianPrior(mu, cov), mech, x, t=t)
        scaled_mech = (
            mech if sigma is None else pp.Chain(pp.ExactMean(), pp.GaussianMechanism(sigma))
        )
        scaled = pp.relative_loss(
            pp.MarginalDSS(),
            pp.GaussianPrior(r * mu, c * cov),
            scaled_mech,
            r * x,
            t=None if t is None else r * t,
        )
        assert scaled == pytest.approx(base, rel=1e-11, abs=1e-11)


def test_near_singular_prior_against_exact_rational_arithmetic() -> None:
    # corr = 1 − 2**-30 (exactly representable): the posterior variance of x_i given x̄ is
    # (1 − ρ)/2 = 2**-31, a 1e-10 fraction of the prior's. Exact answer by fractions.
    from fractions import Fraction

    rho = 1 - 2.0**-30
    q = pp.GaussianPrior([0.0, 0.0], [[1.0, rho], [rho, 1.0]])
    x = [1.0, 3.0]
    r = Fraction(rho)
    var_t = (1 - r) / 2
    expected = max(math.log(1 / var_t) + xi**2 - float((Fraction(xi) - 2) ** 2 / var_t) for xi in x)
    got = pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), x)
    # conditioning limits the accuracy to about eps / (1 − ρ) ≈ 2e-7 relative
    assert got == pytest.approx(expected, rel=1e-8)


def test_huge_data_overflow_to_the_right_infinity() -> None:
    # x = (1e200, 3e200) under N(0, I): D_1(Q, x) − D_1(Q_T, x) = log 2 + 9e400 − 2e400, not a
    # float: +inf, never the ∞ − ∞ = 0 of two overflowed squares (before: 0.0).
    q = pp.GaussianPrior([0.0, 0.0], [1.0, 1.0])
    assert pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), [1e200, 3e200]) == math.inf
    # standardised first: 1e150 sd away overflows nothing
    assert pp.relative_loss(
        pp.MarginalDSS(0),
        pp.GaussianPrior([0.0, 0.0], [1e300, 1e300]),
        pp.ExactMean(),
        [1e150, 1e150],
    ) == pytest.approx(math.log(2) + 1e300 / 1e300, rel=1e-14)
