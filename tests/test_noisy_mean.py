"""The noisy-mean theorem (library extension of Prop 7) against independent computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive.certify.noisy_mean import gaussian_noise_kappa, tail_threshold
from persuasive.spec import spec_from_dict


def _formula(mu, cov, x, t, s):
    """Δ_i of docs/release_means.md: through (g, m) only, never a posterior."""
    n = mu.size
    sbar = cov.sum() / n**2
    g = sbar / (sbar + s * s)
    sd = np.sqrt(np.diag(cov))
    rho = cov.sum(axis=1) / n / (sd * math.sqrt(sbar))
    z = (x - mu) / sd
    m = g * (t - mu.mean()) / math.sqrt(sbar)
    one = 1.0 - rho**2 * g
    return -np.log(one) + z**2 - (z - rho * m) ** 2 / one, m**2 / g


@pytest.mark.parametrize("seed", range(8))
def test_loss_formula_matches_relative_loss(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    a = rng.normal(size=(n, n))
    cov = a @ a.T + 0.2 * np.eye(n)
    mu, x = rng.normal(size=n), 2.0 * rng.normal(size=n)
    s = float(rng.uniform(0.1, 3.0))
    t = x.mean() + s * rng.normal()
    mech = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(s))
    prior = pp.GaussianPrior(mu, cov)
    delta_i, sup = _formula(mu, cov, x, t, s)
    for i in range(n):
        assert pp.relative_loss(pp.MarginalDSS(i), prior, mech, x, t) == pytest.approx(
            delta_i[i], rel=1e-9, abs=1e-9
        )
    # the sup over z_i: -log(1 - rho_i^2 g) + m^2/g bounds every coordinate
    sbar = cov.sum() / n**2
    g = sbar / (sbar + s * s)
    rho2 = (cov.sum(axis=1) / n) ** 2 / (np.diag(cov) * sbar)
    assert np.all(delta_i <= -np.log1p(-rho2 * g) + sup + 1e-9)


@pytest.mark.parametrize("gam", [1e-3, 0.1, 0.5, 0.9])
@pytest.mark.parametrize("delta", [0.01, 0.1])
def test_pointwise_tail_matches_noncentral_chi2(gam, delta):
    r1 = 2.0
    k = float(tail_threshold(np.array(math.sqrt(r1)), np.array(gam), np.array(gam), delta))
    ref = (1 - gam) * stats.ncx2.ppf(1 - delta, df=1, nc=r1 * gam / (1 - gam))
    assert k**2 == pytest.approx(ref, rel=1e-7)


def test_kappa_not_monotone_in_gamma_and_bound_covers_grid():
    """κ(δ; γ) rises then falls (r1 = 1, r2 = 4, δ = 0.05): the sup is interior."""
    r1, r2, delta = 1.0, 4.0, 0.05
    gam = np.linspace(1e-4, 0.999, 400)
    vals = -np.log1p(-(1 - 1 / r2) * gam) + (1 - gam) * stats.ncx2.ppf(
        1 - delta, 1, r1 * gam / (1 - gam)
    )
    j = int(np.argmax(vals))
    assert 0 < j < gam.size - 1
    k, _ = gaussian_noise_kappa(r1, r2, 1.0, None, delta)
    assert k >= vals.max() - 1e-12
    assert k <= vals.max() + 0.01  # the cell slack is small


def test_kappa_monte_carlo():
    """The pointwise bound at a fixed γ against a Monte Carlo quantile of v²."""
    rng = np.random.default_rng(3)
    r1, gam, delta = 1.5, 0.4, 0.05
    v = math.sqrt(r1 * gam) + math.sqrt(1 - gam) * rng.normal(size=400_000)
    mc = np.quantile(v**2, 1 - delta)
    k = float(tail_threshold(np.array(math.sqrt(r1)), np.array(gam), np.array(gam), delta))
    assert k**2 == pytest.approx(mc, rel=0.01)


def test_certificate_values_and_monotonicity():
    m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(1.0))
    d0 = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 9.0, 0.0)
    c0 = pp.certify(m, d0)
    assert c0.kappa == math.inf and not c0.holds
    ks = []
    for sigma in [0.2, 0.5, 1.0, 2.0, 5.0, 50.0]:
        d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(4.0, 4.0, 1.0), 9.0, 0.05)
        c = pp.certify(pp.Chain(pp.ExactMean(), pp.GaussianMechanism(sigma)), d)
        assert c.basis.startswith("Prop 7 with noise") and not c.exact
        ks.append(c.kappa)
    assert all(a >= b for a, b in itertools.pairwise(ks))
    # the large-noise limit is the chi-square(1) quantile at 1 - delta
    assert stats.chi2.ppf(0.95, 1) <= ks[-1] <= stats.chi2.ppf(0.95, 1) * 1.005
    # unbounded prior sd of the mean: never below Prop 7
    dn = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 9.0, 0.05)
    assert pp.certify(m, dn).kappa >= 1.0 + math.log(4.0)


def test_exact_mean_unchanged_by_max_mean_sd():
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0, 0.3), 2.4)
    c = pp.certify(pp.ExactMean(), d)
    assert c.basis == "Prop 7 (Bon et al. 2026)"
    assert c.kappa == pytest.approx(1.0 + math.log(4.0))
    g = pp.GaussianMeanClass(1.0, 4.0, 1.0)
    assert g.contains(pp.GaussianPrior([0.0, 0.0], [3.0, 1.0]), x=[1.0, 0.0])
    assert not g.contains(pp.GaussianPrior([0.0, 0.0], [30.0, 10.0]), x=[1.0, 0.0])
    assert pp.GaussianMeanClass(1.0, 4.0).describe() == {
        "class": "GaussianMeanClass",
        "r1": 1.0,
        "r2": 4.0,
    }


def test_laplace_noise_has_no_finite_kappa():
    # Laplace noise on the mean: the proven worst case is infinite for delta < 1/2
    # (docs/release_means.md, section c'), so the certificate says so and does not hold.
    m = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(1.0))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0, 1.0), 9.0, 0.05)
    c = pp.certify(m, d)
    assert c.kappa == math.inf and c.exact and not c.holds
    assert "no finite kappa" in c.basis


@pytest.mark.parametrize(
    ("r1", "r2", "V", "sigma"), [(1.0, 4.0, None, 1.0), (4.0, 4.0, 1.0, 1.0), (2.0, 1.5, 0.3, 1.0)]
)
def test_audit_below_certificate(r1, r2, V, sigma):
    m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(sigma))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2, V), 50.0, 0.05)
    a = pp.audit(m, d, rng=1, n_samples=50_000)
    c = pp.certify(m, d)
    assert a.kappa <= c.kappa + 1e-9
    assert a.witness is not None and d.priors.contains(a.witness.prior, a.witness.x)


def test_audit_shows_noise_can_be_worse_than_exact_mean():
    """A member of G^r reaches above r1 + log r2 at δ = 0.05 when Gaussian noise is added."""
    m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(1.0))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 50.0, 0.05)
    assert pp.audit(m, d, rng=2, n_samples=50_000).kappa > 1.0 + math.log(4.0) + 0.5


def test_spec_accepts_max_mean_sd():
    doc = {
        "mechanism": {
            "type": "chain",
            "first": {"type": "exact_mean"},
            "post": {"type": "gaussian", "sigma": 1.0},
        },
        "definition": {
            "kind": "pp",
            "kappa": 5.0,
            "delta": 0.05,
            "scores": [{"type": "marginal_dss"}],
            "priors": {"class": "gaussian_mean", "r1": 4.0, "r2": 4.0, "max_mean_sd": 0.1},
        },
    }
    spec = spec_from_dict(doc)
    assert spec.definition.priors.max_mean_sd == 0.1
    assert spec.certify().holds
    doc["definition"]["priors"]["max_mean_sd"] = -1.0
    with pytest.raises(pp.ValidationError, match="max_mean_sd"):
        spec_from_dict(doc)


# --- the certificate's slack, checked independently -----------------------------------------

SLACK_CASES = [  # (r1, r2, V, s, delta): finite and unbounded V, several noise levels
    (4.0, 4.0, 0.1, 1.0, 0.05),
    (1.0, 4.0, None, 1.0, 0.05),
    (2.0, 3.0, 1.0, 0.5, 0.01),
    (0.5, 8.0, 2.0, 2.0, 0.2),
]


def _formula_sup(r1, r2, V, s, delta):
    """sup over a dense gamma grid of -log(1 - c gamma) + (1 - gamma) ncx2_{1-delta}(1, r1
    gamma/(1 - gamma)) (docs/release_means.md), with scipy's noncentral chi-square: a lower
    estimate of the supremum the certificate bounds from above."""
    gmax = 1.0 if V is None else V**2 / (V**2 + s**2)
    gam = np.unique(np.concatenate([np.geomspace(1e-8, gmax, 4000), np.linspace(0, gmax, 4000)]))
    gam = gam[(gam > 0) & (gam < 1)]
    c = 1.0 - 1.0 / r2
    vals = -np.log1p(-c * gam) + (1 - gam) * stats.ncx2.ppf(1 - delta, 1, r1 * gam / (1 - gam))
    return float(np.nanmax(vals))


@pytest.mark.parametrize("case", SLACK_CASES)
def test_noisy_mean_slack_against_the_formula(case):
    r1, r2, V, s, delta = case
    m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(s))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2, V), 50.0, delta)
    k = pp.certify(m, d).kappa
    ref = _formula_sup(r1, r2, V, s, delta)
    assert k >= ref - 1e-7  # an upper bound of the supremum (ncx2.ppf to ~1e-8)
    assert k - ref <= 5e-3  # and its interval-arithmetic slack is small


def _member_quantiles(r1, r2, V, s, delta, gam, w, z, eta=1e-9):
    r"""Exact upper (1 - delta)-quantiles of the marginal DSS loss Delta_1 of explicit members
    of G^{r,V}_x (n = 2, Phi = I, rho_1^2 = (1 - 1/r2)(1 - eta), Sbar = s^2 gam/(1 - gam), mean
    error w sqrt(Sbar), x_1 - mu_1 = z sigma_1), by Gaussian conditioning written here:
    K = Sigma a / (a'Sigma a + s^2), m_T = mu + K (T - a'mu), V_T = Sigma - K a'Sigma, and
    Delta_1(T) = D_1(Q, x) - D_1(Q_T, x) = C0 - (d - K_1 u)^2 / V_11, u = T - mubar ~
    N(w sqrt(Sbar), s^2): {Delta >= k} is an interval of u, its mass a difference of normal
    cdfs, and the quantile is found by bisection. Broadcasts over (gam, w, z)."""
    gam, w, z = np.broadcast_arrays(*(np.asarray(u, dtype=float) for u in (gam, w, z)))
    share = (1.0 - 1.0 / r2) * (1.0 - eta)
    sbar = s * s * gam / (1.0 - gam)
    tot = 4.0 * sbar  # sigma_1^2 + sigma_2^2 = n^2 Sbar for a diagonal Sigma
    v1, v2 = share * tot, (1.0 - share) * tot
    # class membership, by its own arithmetic: c_Phi = 1 <= r2 (1 - max share), w^2 <= r1,
    # Sbar <= V^2
    assert np.all(1.0 <= r2 * (1.0 - np.maximum(share, 1.0 - share)))
    assert np.all(w**2 <= r1) and (V is None or np.all(sbar <= V * V * (1 + 1e-12)))
    sa1 = v1 / 2.0  # (Sigma a)_1 with a = (1/2, 1/2)
    k1 = sa1 / (sbar + s * s)
    vt = v1 - k1 * sa1
    d = z * np.sqrt(v1)
    c0 = np.log(v1) + z**2 - np.log(vt)
    mean_u, lo, hi = w * np.sqrt(sbar), -2.0 * np.abs(c0) - 1e3, c0
    for _ in range(200):
        k = 0.5 * (lo + hi)
        h = np.sqrt(np.maximum(vt * (c0 - k), 0.0)) / k1
        mass = stats.norm.cdf((d / k1 + h - mean_u) / s) - stats.norm.cdf((d / k1 - h - mean_u) / s)
        ok = mass > delta
        lo, hi = np.where(ok, k, lo), np.where(ok, hi, k)
    return lo, (v1, v2, sbar)


@pytest.mark.parametrize("case", SLACK_CASES)
def test_noisy_mean_certificate_covers_explicit_members(case):
    r1, r2, V, s, delta = case
    gmax = 1.0 if V is None else V**2 / (V**2 + s**2)
    gam = np.geomspace(1e-4, min(gmax, 0.999) * (1 - 1e-9), 40)[:, None, None]
    w = np.array([-1.0, 0.0, 1.0])[None, :, None] * math.sqrt(r1) * (1 - 1e-9)
    # x_1's deviation z on the scale where it matters: zeta = rho_1 sqrt(gamma) z in [-12, 12]
    zeta = np.linspace(-12.0, 12.0, 241)[None, None, :]
    z = zeta / np.sqrt((1.0 - 1.0 / r2) * gam)
    q, _ = _member_quantiles(r1, r2, V, s, delta, gam, w, z)
    m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(s))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2, V), 50.0, delta)
    k = pp.certify(m, d).kappa
    assert q.max() <= k + 1e-9  # every member's exact quantile is below the certificate
    # the best member, checked by Monte Carlo through persuasive.relative_loss and the class
    g, wi, zi = np.unravel_index(int(np.argmax(q)), q.shape)
    best, (v1, v2, sbar) = _member_quantiles(
        r1, r2, V, s, delta, gam[g, 0, 0], w[0, wi, 0], z[g, 0, zi]
    )
    prior = pp.GaussianPrior([0.0, 0.0], np.diag([float(v1), float(v2)]))
    x1 = float(z[g, 0, zi] * np.sqrt(v1))
    x = np.array([x1, 2.0 * float(w[0, wi, 0] * np.sqrt(sbar)) - x1])
    assert d.priors.contains(prior, x)
    rng = np.random.default_rng(0)
    ts = x.mean() + s * rng.normal(size=4000)
    losses = np.array([pp.relative_loss(pp.MarginalDSS(0), prior, m, x, t) for t in ts])
    ci = stats.binomtest(int(np.sum(losses >= float(best) - 1e-9)), ts.size)
    low, high = ci.proportion_ci(0.9999)
    assert low <= delta <= high  # P[Delta >= best] is delta: the quantile is right
    # how close members come to the certificate: the reference for its slack from below (the
    # bound takes the sup over x_i output by output, so it may sit above every member: 3.38
    # against 3.96 for the first case, within 0.03 for the others)
    assert float(best) >= 0.8 * k


def test_audit_streams_large_n_samples(monkeypatch):
    # a small chunk stands in for a huge n: the audit draws in chunks (bounded memory) and
    # still returns a witness below the certificate, close to the in-memory audit
    from persuasive.audit import stream

    m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(1.0))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0, 1.0), 50.0, 0.05)
    whole = pp.audit(m, d, rng=3, n_samples=100_000)
    monkeypatch.setattr(stream, "CHUNK_VALUES", 2**12)
    streamed = pp.audit(m, d, rng=3, n_samples=100_000)
    c = pp.certify(m, d)
    assert streamed.kappa <= c.kappa + 1e-9
    assert streamed.kappa == pytest.approx(whole.kappa, rel=0.05)
    assert d.priors.contains(streamed.witness.prior, streamed.witness.x)
    again = pp.relative_loss(
        pp.MarginalDSS(0), streamed.witness.prior, m, streamed.witness.x, streamed.witness.t
    )
    assert again == pytest.approx(streamed.kappa, abs=1e-9)
