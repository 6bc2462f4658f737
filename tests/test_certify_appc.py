"""App. C (PPE) certificates against quadrature, the q -> 0 limit and docs/math.md §7 values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import persuasive as pp

PPE = pp.PersuasivePrivacyExpectation
H = pp.NeighbourPriors()


def kappa(mech, risk):
    return pp.certify(mech, PPE(pp.LogScore(), H, 1.0, risk)).kappa


def test_math_values():
    lap = pp.LaplaceMechanism(1.0)
    assert kappa(lap, pp.Mean()) == pytest.approx(0.3678794412, abs=1e-10)
    assert kappa(lap, pp.Renyi(2.0)) == pytest.approx(0.6191236300, abs=1e-10)
    assert kappa(lap, pp.Renyi(5.0)) == pytest.approx(0.8530780145, abs=1e-10)
    g1 = pp.GaussianMechanism(1.0)
    assert kappa(g1, pp.FDivergence("chi2")) == pytest.approx(1.7182818285, abs=1e-10)
    assert kappa(g1, pp.FDivergence("tv")) == pytest.approx(0.3829249225, abs=1e-10)
    assert kappa(pp.GaussianMechanism(2.0), pp.Renyi(5.0)) == pytest.approx(0.625, abs=1e-12)


def _logdensities(mech):
    if isinstance(mech, pp.GaussianMechanism):
        return stats.norm(0, mech.sigma).logpdf, stats.norm(1, mech.sigma).logpdf, 30 * mech.sigma
    return stats.laplace(0, mech.scale).logpdf, stats.laplace(1, mech.scale).logpdf, 60 * mech.scale


def _integral(f, lim):
    return integrate.quad(f, -lim, lim, points=[0.0, 0.5, 1.0], limit=400, epsabs=1e-13)[0]


def _quad_divergence(mech, risk):
    lp, lq, lim = _logdensities(mech)
    if isinstance(risk, pp.Mean) or (isinstance(risk, pp.FDivergence) and risk.name == "kl"):
        return _integral(lambda t: math.exp(lp(t)) * (lp(t) - lq(t)), lim)
    if isinstance(risk, pp.Renyi):
        a = risk.alpha
        return math.log(_integral(lambda t: math.exp(a * lp(t) + (1 - a) * lq(t)), lim)) / (a - 1)
    if risk.name == "tv":
        return 0.5 * _integral(lambda t: abs(math.exp(lp(t)) - math.exp(lq(t))), lim)
    return _integral(
        lambda t: math.exp(2 * lp(t) - lq(t)) - 2 * math.exp(lp(t)) + math.exp(lq(t)), lim
    )


RISKS = [
    pp.Mean(),
    pp.Renyi(1.5),
    pp.Renyi(2.0),
    pp.Renyi(5.0),
    pp.FDivergence("kl"),
    pp.FDivergence("tv"),
    pp.FDivergence("chi2"),
]
MECHS = [
    pp.GaussianMechanism(1.0),
    pp.GaussianMechanism(2.0),
    pp.LaplaceMechanism(1.0),
    pp.LaplaceMechanism(0.7),
]


@pytest.mark.parametrize("mech", MECHS)
@pytest.mark.parametrize("risk", RISKS)
def test_closed_forms_against_quadrature(mech, risk):
    assert kappa(mech, risk) == pytest.approx(_quad_divergence(mech, risk), rel=1e-7, abs=1e-10)


def _q_limit(mech, risk, q=1e-7):
    """E_x[phi(Delta_q)], Delta_q = -log(q + (1 - q) e^{-l}), by quadrature (docs/math.md §6-7)."""
    lp, lq, lim = _logdensities(mech)

    def delta_q(t):
        return -np.logaddexp(math.log(q), math.log1p(-q) - (lp(t) - lq(t)))

    if isinstance(risk, pp.Renyi):
        a = risk.alpha
        e = _integral(lambda t: math.exp(lp(t) + (a - 1) * delta_q(t)), lim)
        return math.log(e) / (a - 1)
    if isinstance(risk, pp.Mean):

        def g(d):
            return d
    elif risk.name == "tv":

        def g(d):
            return abs(math.expm1(-d)) / 2
    else:

        def g(d):
            return math.expm1(d) + math.expm1(-d)

    return _integral(lambda t: math.exp(lp(t)) * g(delta_q(t)), lim)


@pytest.mark.parametrize("mech", MECHS[:3])
@pytest.mark.parametrize(
    "risk", [pp.Mean(), pp.Renyi(2.0), pp.FDivergence("tv"), pp.FDivergence("chi2")]
)
def test_q_to_zero_limit(mech, risk):
    assert _q_limit(mech, risk) == pytest.approx(kappa(mech, risk), rel=1e-5)
    # and the value at a larger q stays below (the sup is the limit q -> 0)
    assert _q_limit(mech, risk, q=0.1) <= kappa(mech, risk)


def _ref_finite(m, pairs, risk):
    worst = 0.0
    for i, j in pairs:
        tot = 0.0
        for t in range(m.shape[1]):
            p, q = m[i, t], m[j, t]
            if p == 0:
                continue
            if isinstance(risk, pp.Renyi):
                tot += math.inf if q == 0 else p**risk.alpha * q ** (1 - risk.alpha)
            elif isinstance(risk, pp.Mean):
                tot += math.inf if q == 0 else p * math.log(p / q)
            elif risk.name == "tv":
                tot += p / 2 if q == 0 else abs(p - q) / 2
            else:
                tot += math.inf if q == 0 else (p - q) ** 2 / q
        if isinstance(risk, pp.Renyi):
            tot = math.log(tot) / (risk.alpha - 1)
        worst = max(worst, tot)
    return worst


@pytest.mark.parametrize(
    "risk", [pp.Mean(), pp.Renyi(3.0), pp.FDivergence("tv"), pp.FDivergence("chi2")]
)
def test_finite_kernels(risk):
    rr = pp.RandomizedResponse(1.2, 3)
    assert kappa(rr, risk) == pytest.approx(
        _ref_finite(rr.matrix, [(0, 1), (1, 0), (1, 2), (2, 1)], risk), rel=1e-12
    )
    m = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])
    ref = _ref_finite(m, [(0, 1), (1, 0)], risk)
    got = kappa(pp.FiniteKernel(m), risk)
    assert got == ref or got == pytest.approx(ref, rel=1e-12)


def test_geometric_by_enumeration():
    b = 0.8
    a = math.exp(-1 / b)
    ks = np.arange(-300, 301)
    p = (1 - a) / (1 + a) * a ** np.abs(ks)
    q = (1 - a) / (1 + a) * a ** np.abs(ks - 1)
    assert kappa(pp.GeometricMechanism(b), pp.Mean()) == pytest.approx(
        float(np.sum(p * np.log(p / q))), rel=1e-10
    )
    assert kappa(pp.GeometricMechanism(b), pp.Renyi(2.0)) == pytest.approx(
        float(np.log(np.sum(p**2 / q))), rel=1e-10
    )


def test_certificate_fields():
    d = pp.renyi_dp(2.0, 0.5)
    cert = pp.certify(pp.GaussianMechanism(2.0), d)
    assert cert.kappa == 0.25 and cert.holds and cert.delta == 0.0 and cert.exact
    assert "RECON" in cert.basis
    assert any("expectation" in n for n in cert.notes)
    assert not pp.certify(pp.GaussianMechanism(1.0), d).holds


def test_unsupported():
    d = PPE(pp.MarginalDSS(), H, 1.0)
    with pytest.raises(pp.UnsupportedCombinationError, match="LogScore"):
        pp.certify(pp.GaussianMechanism(1.0), d)
    with pytest.raises(pp.UnsupportedCombinationError, match="CellSuppression"):
        pp.certify(pp.CellSuppression(2), PPE(pp.LogScore(), H, 1.0))
