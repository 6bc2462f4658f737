"""Linear statistics under Receivers with a bounded error on every person (issue 14,
docs/linear_bounded.md). The certificate is checked against the exact Gaussian posterior
(dense conditioning written out here, and the library's analysis), pointwise against the
loss bounds of the proof, by Monte Carlo over the noise for random members of the class on
small random A, by Monte Carlo and brute force at the least favourable statistics, and it
reduces to the mean's certificate for A = 1ᵀ/n."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

import persuasive as pp
from persuasive.certify.bounded_error import bounded_error_kappa
from persuasive.certify.linear_bounded_error import linear_bounded_error_kappa
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.errors import ValidationError
from persuasive.linear import LinearGaussianClass, analyse
from persuasive.linear.bounded_error import BoundedErrorLinearClass
from persuasive.linear.classes import class_terms


def _member(seed: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random A (k x n), prior (mean, cov) and data x."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(k, n))
    low = rng.normal(size=(n, n))
    cov = low @ low.T / n + np.diag(rng.uniform(0.2, 2.0, n))
    return a, rng.normal(size=n), cov, rng.normal(size=n) * 1.5


def _tight_class(a: np.ndarray, mu: np.ndarray, cov: np.ndarray, x: np.ndarray):
    """The bounded-error class this prior meets with (almost) equality, so it is a member."""
    u2, c_phi, spread, lam = class_terms(pp.GaussianPrior(mu, cov), x, a)
    z = np.abs(x - mu) / np.sqrt(np.diag(cov))
    slack = 1.001
    return BoundedErrorLinearClass(
        u2 * slack,
        max(c_phi / spread, 1.0 + 1e-9) * slack,
        max_stat_sd=math.sqrt(lam) * slack,
        max_person_error=float(z.max()) * slack,
    )


def _exact_losses(mu, cov, a, r, x, t):
    """Every person's marginal DSS loss for each row of t, by dense Gaussian conditioning
    (independent of persuasive.linear): D_i(Q, x) - D_i(Q_t, x)."""
    g = a @ cov @ a.T + r
    gain = cov @ a.T @ np.linalg.pinv(g)  # (n, k)
    post_var = np.diag(cov - gain @ a @ cov)
    post_mean = mu[None, :] + (t - a @ mu) @ gain.T
    sd2 = np.diag(cov)
    return (
        np.log(sd2 / post_var)[None, :]
        + ((x - mu) ** 2 / sd2)[None, :]
        - (x[None, :] - post_mean) ** 2 / post_var[None, :]
    ), post_mean


@pytest.mark.parametrize(("seed", "k"), [(0, 1), (1, 2), (2, 2), (3, 3), (4, 3)])
def test_random_members_stay_under_the_pointwise_bounds_and_the_tail_meets_delta(
    seed: int, k: int
) -> None:
    n, delta, draws = 6, 0.05, 20_000
    a, mu, cov, x = _member(seed, k, n)
    cls = _tight_class(a, mu, cov, x)
    prior = pp.GaussianPrior(mu, cov)
    assert cls.contains(prior, x, A=a)
    c = 1.0 - 1.0 / cls.r2
    r0, v = cls.max_person_error, cls.max_stat_sd
    rng = np.random.default_rng(100 + seed)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs((x - mu) / sd) <= r0)  # the bound the class adds
    for s in (0.3 * v, v, 4.0 * v):
        r = s * s * np.eye(k)
        t = a @ x + rng.normal(size=(draws, k)) * s
        loss, post_mean = _exact_losses(mu, cov, a, r, x, t)
        an = analyse(mu, cov, a, r)  # the library's exact analysis agrees
        for j in range(3):
            assert an.marginal_loss(x, t[j]) == pytest.approx(loss[j], rel=1e-7, abs=1e-9)
        gmax = v * v / (v * v + s * s)
        assert np.all(an.rho2 <= c * an.gamma * (1 + 1e-9) + 1e-12)  # rho~^2 <= c gamma_i
        assert np.all(an.gamma <= gmax * (1 + 1e-9))
        rho = np.sqrt(an.rho2)
        m = (post_mean - mu) / (sd * rho)  # the standardized shift M_i of the proof
        tail = -np.log(1 - c * gmax) + 2 * r0 * math.sqrt(c * gmax) * np.abs(m) / (1 - c * gmax)
        assert np.all(loss <= tail + 1e-9)
        assert np.all(loss <= -math.log(1 - c * gmax) + r0 * r0 + 1e-9)  # pointwise, δ = 0
        kappa = linear_bounded_error_kappa(
            a, cls.r1, cls.r2, max_person_error=r0, max_stat_sd=v, noise_sd=s, delta=delta
        )
        assert kappa <= LinearGaussianClass(cls.r1, cls.r2, max_stat_sd=v).class_kappa(a, r, delta)
        freq = (loss > kappa).mean(axis=0)  # per person: at most δ (plus 4 binomial sds)
        assert np.all(freq <= delta + 4 * math.sqrt(delta * (1 - delta) / draws))


def test_exact_release_members_and_a_singular_noise_stay_under_the_certificate() -> None:
    for seed in range(5):
        a, mu, cov, x = _member(10 + seed, 2, 5)
        cls = _tight_class(a, mu, cov, x)
        loss, _ = _exact_losses(mu, cov, a, np.zeros((2, 2)), x, (a @ x)[None, :])
        kappa = linear_bounded_error_kappa(a, cls.r1, cls.r2, max_person_error=cls.max_person_error)
        assert float(loss.max()) <= kappa
        # noise on one statistic only: gamma_max = 1 (R singular), still a valid bound
        r = np.diag([cls.max_stat_sd**2, 0.0])
        t = a @ x + np.random.default_rng(seed).normal(size=(20_000, 2)) * np.sqrt(np.diag(r))
        loss, _ = _exact_losses(mu, cov, a, r, x, t)
        k1 = linear_bounded_error_kappa(
            a, cls.r1, cls.r2, max_person_error=cls.max_person_error,
            max_stat_sd=cls.max_stat_sd, noise_sd=[cls.max_stat_sd, 0.0], delta=0.05,
        )  # fmt: skip
        assert k1 == bounded_error_kappa(
            cls.r1, cls.r2, max_person_error=cls.max_person_error, sigma=1.0, delta=0.05
        )  # the mean's bound with V unbounded: gamma_max = 1
        assert np.all((loss > k1).mean(axis=0) <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / 20_000))


def test_kappa_falls_to_zero_and_the_least_favourable_statistics_stay_below() -> None:
    a = np.array([[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    r1, r2, r0, v, delta = 1.0, 4.0, 1.5, 1.0, 0.05
    c = 1 - 1 / r2
    sds = np.geomspace(0.1, 1000, 25)
    kap = [
        linear_bounded_error_kappa(
            a, r1, r2, max_person_error=r0, max_stat_sd=v, noise_sd=float(s), delta=delta
        )
        for s in sds
    ]
    assert all(p >= q for p, q in itertools.pairwise(kap)) and kap[-1] < 1e-2
    z = np.random.default_rng(7).normal(size=200_000)
    for s, kappa in zip(sds[::4], kap[::4], strict=True):
        gmax = v * v / (v * v + s * s)
        # brute force over what the class allows: gamma <= gmax, rho~^2 <= c gamma, the mean
        # of M up to sqrt(r1 gamma), |z_i| <= r0; the loss is -log b + M^2 - (rho~ z - M)^2 / b
        worst = 0.0
        for g in np.linspace(gmax / 4, gmax, 4):
            for rho2 in np.linspace(0.0, c * g, 4)[1:]:
                b = 1 - rho2
                for w in np.linspace(0.0, math.sqrt(r1 * g), 3):
                    mm = w + math.sqrt(1 - g) * z
                    for zz in np.linspace(-r0, r0, 7):
                        loss = -math.log(b) + mm**2 - (math.sqrt(rho2) * zz - mm) ** 2 / b
                        worst = max(worst, float(np.quantile(loss, 1 - delta)))
        assert worst <= kappa


def test_the_exact_release_bound_covers_a_brute_force_search_over_the_class() -> None:
    a = np.array([[1.0, 1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0, 1.0]])
    for r1, r2, r0 in [(1.0, 4.0, 0.1), (1.0, 4.0, 1.0), (4.0, 2.0, 0.5), (0.5, 10.0, 3.0)]:
        c = 1 - 1 / r2
        kappa = linear_bounded_error_kappa(a, r1, r2, max_person_error=r0)
        rho2 = np.linspace(0, c, 61)[:, None, None]
        w = np.linspace(-math.sqrt(r1), math.sqrt(r1), 61)[None, :, None]
        zz = np.linspace(-r0, r0, 61)[None, None, :]
        b = 1 - rho2  # exact release: gamma = 1, M = w deterministic, |w| <= sqrt(r1)
        loss = -np.log(b) + zz**2 - (zz - np.sqrt(rho2) * w) ** 2 / b
        assert float(loss.max()) <= kappa <= r1 + math.log(r2) + 1e-12
    assert linear_bounded_error_kappa(a, 1.0, 4.0, max_person_error=0.1) < 1 + math.log(4)


def test_the_mean_reduces_to_the_means_certificate_exactly() -> None:
    n = 5
    a = np.full((1, n), 1.0 / n)
    for r1, r2, r0, v, s, delta in itertools.product(
        (0.5, 4.0), (1.5, 4.0), (0.2, 2.0), (0.1, 1.0), (0.0, 0.5, 8.0), (0.05, 0.2)
    ):
        mine = linear_bounded_error_kappa(
            a, r1, r2, max_person_error=r0, max_stat_sd=v, noise_sd=s, delta=delta
        )
        mean = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=v, sigma=s, delta=delta)
        assert mine == mean
    # and through pp.certify: the linear theorem on 1ᵀ/n equals the mean's theorem
    lin = BoundedErrorLinearClass(1.0, 4.0, max_stat_sd=1.0, max_person_error=1.0)
    mc = BoundedErrorGaussianClass(1.0, 4.0, max_mean_sd=1.0, max_person_error=1.0)
    c1 = pp.certify(pp.LinearGaussian(a, 4.0), pp.PersuasivePrivacy(pp.MarginalDSS(), lin, 5, 0.05))
    c2 = pp.certify(
        pp.Chain(pp.ExactMean(), pp.GaussianMechanism(2.0)),
        pp.PersuasivePrivacy(pp.MarginalDSS(), mc, 5, 0.05),
    )
    assert c1.kappa == c2.kappa and "linear_bounded.md" in c1.basis and not c1.exact


def test_a_million_records_cost_no_n_by_n_matrix() -> None:
    n = 1_000_000
    g = np.arange(n) % 3
    a = np.zeros((4, n))
    for j in range(3):
        a[j, g == j] = 1.0 / np.count_nonzero(g == j)
    a[3] = 1.0 / n
    start = time.perf_counter()
    big = linear_bounded_error_kappa(
        a, 1.0, 4.0, max_person_error=1.0, max_stat_sd=1.0, noise_sd=2.0, delta=0.05
    )
    took = time.perf_counter() - start
    small = linear_bounded_error_kappa(
        a[:, :30], 1.0, 4.0, max_person_error=1.0, max_stat_sd=1.0, noise_sd=2.0, delta=0.05
    )
    assert big == small and took < 10.0  # an n x n float matrix would need 8 TB


def test_refusals_and_the_theorem_that_certifies() -> None:
    expose = [[0.25] * 4, [1 / 3, 1 / 3, 1 / 3, 0.0]]  # person 3 is the difference
    with pytest.raises(ValidationError, match="exposes individual"):
        linear_bounded_error_kappa(expose, 1.0, 4.0, max_person_error=1.0)
    with pytest.raises(ValidationError, match="max_person_error"):
        BoundedErrorLinearClass(1.0, 4.0)
    with pytest.raises(ValidationError, match="noise_sd"):
        linear_bounded_error_kappa([[1.0, 1.0]], 1.0, 4.0, max_person_error=1.0, noise_sd=-1)
    cls = BoundedErrorLinearClass(1.0, 4.0, max_person_error=2.0)
    q = pp.GaussianPrior([0.0, 0.0], [3.0, 1.0])
    assert cls.contains(q, [2.0, 0.0], A=[[0.5, 0.5]])
    assert not cls.contains(q, [4.0, 0.0], A=[[0.5, 0.5]])  # |z_0| = 4/sqrt(3) > 2
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), LinearGaussianClass(1.0, 4.0), 3.0)
    assert "linear_bounded" not in pp.certify(pp.LinearGaussian([[1.0, 1.0, 0.0]]), d).basis
    # delta = 0 with noise: only the pointwise bound, finite
    k0 = linear_bounded_error_kappa(
        [[1.0, 1.0, 0.0]], 1.0, 4.0, max_person_error=0.5, max_stat_sd=1.0, noise_sd=1.0
    )
    assert k0 == pytest.approx(-math.log(1 - 0.75 * 0.5) + 0.25, rel=1e-12)
