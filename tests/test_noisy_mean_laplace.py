"""The mean plus Laplace noise: exact posterior, loss formula, and the no-finite-κ theorem.

Independent computations: posterior moments by scipy quadrature, the loss by the library's
relative_loss against the closed form, and the theorem's witness by Monte Carlo.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import persuasive as pp
from persuasive.audit.noisy_mean import witness_prior
from persuasive.certify.noisy_mean_laplace import OVERSHOOT, NoisyMeanLaplace, witness_bound
from persuasive.errors import UnsupportedCombinationError
from persuasive.priors.laplace_posterior import LaplaceMeanPosterior, laplace_moments
from persuasive.release.means import calibrate_mean, release_mean


def _quad_moments(y: float, lam: float) -> tuple[float, float, float]:
    """(Z, mean, 1 - var) of u ~ N(0,1) given y = u + Lap(lam), by quadrature."""

    def f(u: float, k: int) -> float:
        return u**k * stats.norm.pdf(u) * math.exp(-abs(y - u) / lam)

    mom = [
        integrate.quad(f, -40, y, args=(k,), epsabs=1e-13)[0]
        + integrate.quad(f, y, 40, args=(k,), epsabs=1e-13)[0]
        for k in range(3)
    ]
    mean = mom[1] / mom[0]
    return mom[0], mean, 1.0 - (mom[2] / mom[0] - mean**2)


@pytest.mark.parametrize("lam", [0.05, 0.3, 1.0, 2.5, 8.0])
@pytest.mark.parametrize("y", [-3.0, -0.4, 0.0, 1.1, 4.0])
def test_moments_match_quadrature(lam, y):
    _, mean, g = _quad_moments(y, lam)
    m_lib, g_lib = laplace_moments(y, lam)
    assert float(m_lib) == pytest.approx(mean, abs=1e-9)
    assert float(g_lib) == pytest.approx(g, abs=1e-8)
    assert 0.0 <= float(g_lib) <= 1.0  # Brascamp-Lieb: Var(u | y) <= 1


def test_posterior_mean_cov_evidence_and_samples():
    q = pp.GaussianPrior([0.0, 1.0, 2.0], [[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.5]])
    b, t = 0.7, 1.9
    mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(b))
    post = pp.posterior(q, mech, t)
    assert isinstance(post, LaplaceMeanPosterior)
    # evidence by quadrature over the mean s ~ N(mean(mu), 1'Sigma 1 / 9)
    sm, ss = q.mean().mean(), math.sqrt(q.cov().sum() / 9.0)
    ev = integrate.quad(
        lambda s: stats.norm.pdf(s, sm, ss) * stats.laplace.pdf(t, s, b), -30, 30, points=[t]
    )[0]
    assert pp.log_evidence(q, mech, t) == pytest.approx(math.log(ev), abs=1e-9)
    # the log density integrates the likelihood ratio: check at a point against Bayes' rule
    x = np.array([0.3, 1.2, 1.7])
    bayes = q.logpdf(x) + stats.laplace.logpdf(t, x.mean(), b) - math.log(ev)
    assert post.logpdf(x) == pytest.approx(bayes, abs=1e-8)
    draws = post.sample(200_000, np.random.default_rng(0))
    np.testing.assert_allclose(draws.mean(axis=0), post.mean(), atol=0.02)
    np.testing.assert_allclose(np.cov(draws.T), post.cov(), atol=0.03)


def test_flat_likelihood_when_prior_fixes_the_mean():
    q = pp.GaussianPrior([1.0, -1.0], [[1.0, -1.0], [-1.0, 1.0]], allow_singular=True)
    mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(1.0))
    assert pp.posterior(q, mech, 3.0) is q
    assert pp.log_evidence(q, mech, 3.0) == pytest.approx(stats.laplace.logpdf(3.0, 0.0, 1.0))


@pytest.mark.parametrize("seed", range(6))
def test_loss_formula_matches_relative_loss(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    a = rng.normal(size=(n, n))
    cov = a @ a.T + 0.3 * np.eye(n)
    mu, x = rng.normal(size=n), rng.normal(size=n) * 2.0
    b, t = float(rng.uniform(0.1, 3.0)), float(rng.normal() * 2.0)
    mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(b))
    prior = pp.GaussianPrior(mu, cov)
    sbar = cov.sum() / n**2
    m, g = laplace_moments((t - mu.mean()) / math.sqrt(sbar), b / math.sqrt(sbar))
    for i in range(n):
        rho = cov[i].sum() / n / math.sqrt(cov[i, i] * sbar)
        z = (x[i] - mu[i]) / math.sqrt(cov[i, i])
        bb = 1.0 - rho**2 * g
        closed = -math.log(bb) + z**2 - (z - rho * m) ** 2 / bb
        lib = pp.relative_loss(pp.MarginalDSS(i), prior, mech, x, t)
        assert lib == pytest.approx(closed, abs=1e-9)
        # the sup over z_i used by the proof: -log(1 - rho^2 g) + m^2 / g
        assert closed <= -math.log(bb) + m**2 / g + 1e-9


def _definition(r1=1.0, r2=4.0, v=None, delta=0.05, kappa=9.0):
    return pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2, v), kappa, delta)


@pytest.mark.parametrize("b", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("v", [None, 0.1, 2.0])
@pytest.mark.parametrize("delta", [0.0, 0.01, 0.2, 0.6])
def test_certificate_is_infinite_and_exact_below_one_half(b, v, delta):
    mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(b))
    cert = pp.certify(mech, _definition(v=v, delta=delta))
    assert cert.kappa == math.inf and not cert.holds
    assert cert.exact == (delta < 0.5)
    assert "no finite kappa" in cert.basis
    # the Gaussian theorem still certifies Gaussian noise
    gauss = pp.certify(pp.Chain(pp.ExactMean(), pp.GaussianMechanism(b)), _definition(v=v))
    assert gauss.basis.startswith("Prop 7 with noise")


@pytest.mark.parametrize("delta", [0.01, 0.05, 0.2])
def test_witness_bound_grows_without_limit(delta):
    lams = np.array([2.0, 4.0, 8.0, 16.0])
    bound, _ = witness_bound(lams, delta)
    ok = ~np.isnan(bound)  # nan where y0 < alpha + 1; inf once it overflows
    assert ok[-2:].all() and np.all(bound[ok][1:] >= bound[ok][:-1])
    assert bound[-1] > 1e6


@pytest.mark.parametrize(("lam", "delta", "n"), [(2.0, 0.05, 2), (1.6, 0.1, 3), (2.5, 0.02, 4)])
def test_witness_event_has_mass_above_delta(lam, delta, n):
    """The proof: on {y > y0} (probability OVERSHOOT * delta) the loss is >= L(lambda).
    Checked with relative_loss on the exact posterior, by Monte Carlo."""
    b, r1, r2 = 1.0, 1.0, 4.0
    bound, rho_z = witness_bound(lam, delta)
    gam = 1.0 / (1.0 + lam**2)
    prior, x = witness_prior(r1, r2, b, gam, 0.0, math.sqrt(gam) * float(rho_z), 0, n)
    assert pp.GaussianMeanClass(r1, r2, b / lam * (1 + 1e-6)).contains(prior, x)
    mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(b))
    t = np.random.default_rng(1).laplace(0.0, b, size=4000)
    losses = np.array([pp.relative_loss(pp.MarginalDSS(0), prior, mech, x, tj) for tj in t])
    frac = float(np.mean(losses >= float(bound)))
    se = math.sqrt(OVERSHOOT * delta / t.size)
    assert frac > delta and frac >= OVERSHOOT * delta - 4 * se


@pytest.mark.parametrize(
    ("r1", "r2", "v", "b", "delta"),
    [(1.0, 4.0, None, 1.0, 0.05), (4.0, 4.0, 0.1, 1.0, 0.05), (2.0, 1.5, 1.0, 0.3, 0.1)],
)
def test_audit_below_certificate_and_far_above_gaussian(r1, r2, v, b, delta):
    mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(b))
    d = _definition(r1, r2, v, delta, kappa=50.0)
    a = pp.audit(mech, d, rng=0, n_samples=20_000)
    assert a.kappa <= pp.certify(mech, d).kappa
    assert d.priors.contains(a.witness.prior, a.witness.x)
    gauss = pp.certify(pp.Chain(pp.ExactMean(), pp.GaussianMechanism(b)), d)
    assert a.kappa > max(gauss.kappa, 100.0) and not a.holds


def test_audit_rejects_other_scores():
    mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(1.0))
    d = pp.PersuasivePrivacy(pp.LogScore(), pp.GaussianMeanClass(1.0, 4.0), 5.0, 0.05)
    with pytest.raises(UnsupportedCombinationError):
        pp.audit(mech, d, rng=0, n_samples=1000)


def test_release_and_calibration_refuse_with_the_proved_reason():
    with pytest.raises(UnsupportedCombinationError, match="no finite kappa"):
        release_mean([1.0, 2.0, 4.0], r1=1.0, r2=4.0, noise=("laplace", 1.0), delta=0.05)
    with pytest.raises(UnsupportedCombinationError, match="no finite kappa"):
        calibrate_mean(5.0, r2=4.0, r1=1.0, noise="laplace", max_mean_sd=1.0, delta=0.05)


def test_theorem_refuses_other_shapes():
    th = NoisyMeanLaplace()
    assert th.supports(pp.LaplaceMechanism(1.0), _definition()) is not None
    d = pp.PersuasivePrivacy(pp.LogScore(), pp.GaussianMeanClass(1.0, 4.0), 5.0, 0.05)
    assert th.supports(pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(1.0)), d) is not None
    m3 = pp.Chain(pp.LinearStatistic(np.full(3, 1.0 / 3.0)), pp.LaplaceMechanism(1.0))
    assert th.kappa_at(m3, _definition(r2=1.2), 0.05)[0] == 0.0  # class empty for n = 3
