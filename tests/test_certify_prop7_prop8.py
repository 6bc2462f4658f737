"""Prop 7 and Prop 8 certificates against closed-form and enumerated losses (docs/math.md §8-9)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import persuasive as pp

# ---------------------------------------------------------------- Prop 7


def _prop7(r1, r2, kappa=10.0, score=None):
    return pp.PersuasivePrivacy(score or pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2), kappa)


@pytest.mark.parametrize(("r1", "r2"), [(1.0, 4.0), (1.0, 2.0), (0.6, 10.0), (2.5, 1.5)])
def test_prop7_value(r1, r2):
    cert = pp.certify(pp.ExactMean(), _prop7(r1, r2))
    assert cert.kappa == pytest.approx(r1 + math.log(r2), abs=1e-14)
    assert cert.exact and cert.basis == "Prop 7 (Bon et al. 2026)"
    assert any("sharp" in n for n in cert.notes)


def test_prop7_holds_and_linear_statistic():
    assert pp.certify(pp.ExactMean(), _prop7(1.0, 4.0, 2.4)).holds
    assert not pp.certify(pp.ExactMean(), _prop7(1.0, 4.0, 2.38)).holds
    mean3 = pp.LinearStatistic(np.full((1, 3), 1 / 3))
    cert = pp.certify(mean3, _prop7(1.0, 4.0, 2.4, pp.MarginalDSS(1)))
    assert cert.kappa == pytest.approx(1 + math.log(4))
    # empty class for n = 2 and r2 < 2: vacuous
    assert pp.certify(pp.LinearStatistic([[0.5, 0.5]]), _prop7(1.0, 1.5)).kappa == 0.0
    with pytest.raises(pp.UnsupportedCombinationError, match="exact mean"):
        pp.certify(pp.LinearStatistic([[1.0, 0.0]]), _prop7(1.0, 4.0))
    with pytest.raises(pp.UnsupportedCombinationError, match="MarginalDSS"):
        pp.certify(
            pp.ExactMean(),
            pp.PersuasivePrivacy(pp.DawidSebastiani(), pp.GaussianMeanClass(1.0, 4.0), 3.0),
        )


def test_prop7_attained_sharp_examples():
    # docs/math.md §8: Sigma = diag(3, 1), x = (2, 0), r = (1, 4) attains 1 + log 4
    q = pp.GaussianPrior([0.0, 0.0], [3.0, 1.0])
    loss = pp.relative_loss(pp.MarginalDSS(), q, pp.ExactMean(), [2.0, 0.0])
    assert loss == pytest.approx(pp.certify(pp.ExactMean(), _prop7(1.0, 4.0)).kappa, abs=1e-9)
    q5 = pp.GaussianPrior(np.zeros(5), [4.0, 1, 1, 1, 1])
    loss5 = pp.relative_loss(pp.MarginalDSS(), q5, pp.ExactMean(), [2 * math.sqrt(2), 0, 0, 0, 0])
    assert loss5 == pytest.approx(1 + math.log(2), abs=1e-9)


def _terms(mu, cov, x):
    """Independent class terms and closed-form sup_z Delta_i = w^2 - log(1 - rho_i^2)."""
    n = len(mu)
    sd = np.sqrt(np.diag(cov))
    phi = cov / np.outer(sd, sd)
    ev = np.linalg.eigvalsh(phi)
    s = cov.sum(axis=1)
    s_tot = cov.sum()
    w2 = (x.mean() - mu.mean()) ** 2 / (s_tot / n**2)
    rho2 = s**2 / (np.diag(cov) * s_tot)
    return w2, ev[-1] / ev[0], 1 - sd.max() ** 2 / (sd**2).sum(), w2 - np.log1p(-rho2)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_prop7_bound_dominates_random_priors(n):
    rng = np.random.default_rng(n)
    for _ in range(200):
        a = rng.normal(size=(n, n))
        sd = rng.uniform(0.3, 3.0, size=n)
        corr = a @ a.T + n * rng.uniform(0.2, 2.0) * np.eye(n)
        d = np.sqrt(np.diag(corr))
        cov = np.diag(sd) @ (corr / np.outer(d, d)) @ np.diag(sd)
        mu = rng.normal(size=n) * 3
        x = mu + rng.normal(size=n) * sd * 2
        w2, c_phi, spread, sup_delta = _terms(mu, cov, x)
        r1, r2 = max(w2, 1e-3) * rng.uniform(1.0, 1.5), c_phi / spread * rng.uniform(1.0, 1.5)
        assert pp.GaussianMeanClass(r1, r2).contains(pp.GaussianPrior(mu, cov), x)
        k = pp.certify(pp.ExactMean(), _prop7(r1, r2)).kappa
        assert sup_delta.max() <= k + 1e-9
        i = int(np.argmax(sup_delta))  # and the actual loss at x never exceeds it
        loss = pp.relative_loss(pp.MarginalDSS(i), pp.GaussianPrior(mu, cov), pp.ExactMean(), x)
        assert loss <= sup_delta[i] + 1e-9


# ---------------------------------------------------------------- Prop 8


def _cell_losses(pmf, h, r, x_max):
    """Per-value Delta = L^r(Q, x) - L^r(Q_T, x) for one cell, by direct enumeration."""
    out = []
    below = float(np.sum(pmf[:h]))
    for x in range(x_max):
        if x >= r or pmf[x] == 0:
            out.append(0.0)
        elif x >= h:  # released: posterior is the point mass at x
            out.append(-math.log(pmf[x]))
        else:  # suppressed: posterior Q(. | X < h)
            out.append(-math.log(pmf[x]) + math.log(pmf[x] / below))
    return out


def _prop8(h_c, alpha, r=None, kappa=2.0):
    r = h_c if r is None else r
    return pp.PersuasivePrivacy(pp.SmallCellLogScore(r=r), pp.SmallCellClass(h_c, alpha), kappa)


@pytest.mark.parametrize(
    ("dist", "h", "expected"),
    [
        (stats.poisson(2), 3, 0.3905620876),
        (stats.poisson(4), 3, 1.4350506425),
        (stats.geom(0.1, loc=-1), 5, 0.8927939560),
        (stats.poisson(6), 5, 1.2550678716),
    ],
)
def test_prop8_against_enumeration(dist, h, expected):
    pmf = dist.pmf(np.arange(200))
    worst = max(_cell_losses(pmf, h, h, h + 6))
    assert worst == pytest.approx(expected, abs=1e-9)
    cert = pp.certify(pp.CellSuppression(h), _prop8(h, 0.2))
    assert cert.kappa == pytest.approx(-math.log(0.2), abs=1e-14)
    assert cert.exact and cert.basis == "Prop 8 (Bon et al. 2026)"
    assert worst <= cert.kappa
    # the same through the library's loss on a multi-cell prior
    q = pp.IndependentCellsPrior([dist, dist])
    lo = max(
        pp.relative_loss(pp.SmallCellLogScore(r=h), q, pp.CellSuppression(h), [k, 7])
        for k in range(h + 6)
    )
    assert lo == pytest.approx(expected, abs=1e-9)


def test_prop8_sharp_boundary_prior():
    pmf = np.array([0.1, 0.1, 0.0, 0.8])  # P(X < 3) = 0.2 = alpha
    assert max(_cell_losses(pmf, 3, 3, 4)) == pytest.approx(-math.log(0.2), abs=1e-12)
    assert pp.certify(pp.CellSuppression(4), _prop8(3, 0.2, r=3)).kappa == pytest.approx(
        -math.log(0.2)
    )


def test_prop8_no_guarantee():
    # h_M < r: a released cell h <= x < r has loss -log q(x) (docs/math.md §9 check)
    pmf = stats.poisson(4).pmf(np.arange(100))
    assert max(_cell_losses(pmf, 3, 5, 8)) == pytest.approx(1.632876, abs=1e-6)
    cert = pp.certify(pp.CellSuppression(3), _prop8(3, 0.2, r=5))
    assert cert.kappa == math.inf and not cert.holds and "h_M = 3 < r = 5" in cert.notes[0]
    cert = pp.certify(pp.CellSuppression(2), _prop8(3, 0.2, r=2))
    assert cert.kappa == math.inf and "h_C" in cert.notes[0]
    assert pp.certify(pp.CellSuppression(3), _prop8(3, 1.0, r=5)).kappa == 0.0
    with pytest.raises(pp.UnsupportedCombinationError, match="SmallCellLogScore"):
        pp.certify(
            pp.CellSuppression(3),
            pp.PersuasivePrivacy(pp.LogScore(), pp.SmallCellClass(3, 0.2), 1.0),
        )


def test_prop8_profile_step():
    prof = pp.profile(pp.CellSuppression(3), _prop8(3, 0.2), deltas=[0.0, 0.5], kappas=[1.0, 1.7])
    assert prof.delta_of_kappa.tolist() == [1.0, 0.0]
