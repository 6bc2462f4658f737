"""A Receiver class in which noise on the mean pays (issue 14): Prop 7's class with a bounded
prior sd of the mean and a bounded error on every person. The certificate is checked against
the exact posterior (``persuasive.relative_loss``), pointwise against the loss of Lemma 2, by
Monte Carlo over the noise, and by brute force over the class's statistics for the exact mean."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive.certify.bounded_error import (
    bounded_error_kappa,
    person_error_bound,
    pointwise_bound,
)
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.classes.gaussian_mean import class_terms
from persuasive.errors import ValidationError


def _member(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random Gaussian prior (mean, cov) and data x."""
    low = rng.normal(size=(n, n))
    cov = low @ low.T / n + np.diag(rng.uniform(0.2, 2.0, n))
    return rng.normal(size=n), cov, rng.normal(size=n) * 1.5


def _statistics(mu: np.ndarray, cov: np.ndarray, x: np.ndarray) -> dict[str, float]:
    """The class parameters this prior meets with equality (so it is a member)."""
    w2, c_phi, spread = class_terms(mu, cov, x)
    z = np.abs(x - mu) / np.sqrt(np.diag(cov))
    return {
        "r1": w2,
        "r2": max(c_phi / spread, 1.0 + 1e-9),
        "v": math.sqrt(cov.sum() / x.size**2),
        "r0": float(z.max()),
    }


@pytest.mark.parametrize("seed", range(6))
def test_the_loss_never_passes_the_pointwise_bound_and_the_tail_meets_delta(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, delta = 6, 0.05
    mu, cov, x = _member(rng, n)
    st = _statistics(mu, cov, x)
    cls = BoundedErrorGaussianClass(
        st["r1"] * 1.001, st["r2"] * 1.001, max_mean_sd=st["v"] * 1.001,
        max_person_error=st["r0"] * 1.001,
    )  # fmt: skip
    assert cls.contains(pp.GaussianPrior(mu, cov), x)
    prior = pp.GaussianPrior(mu, cov)
    one = np.full(n, 1.0 / n)
    sbar = float(one @ cov @ one)
    sd = np.sqrt(np.diag(cov))
    rho = (cov @ one) / (sd * math.sqrt(sbar))
    z = (x - mu) / sd
    c = 1 - 1 / cls.r2
    assert float(np.max(rho**2)) <= c + 1e-9  # Lemma 0
    for sigma in (0.3 * st["v"], st["v"], 4 * st["v"]):
        mech = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(sigma))
        g = sbar / (sbar + sigma**2)
        t = x.mean() + rng.normal(size=20_000) * sigma
        v = (t - mu.mean()) / math.sqrt(sbar + sigma**2)
        a = rho[None, :] * math.sqrt(g)
        b = 1 - a**2
        loss = -np.log(b) + v[:, None] ** 2 - (v[:, None] - a * z[None, :]) ** 2 / b
        for k in range(3):  # Lemma 2's loss is the exact posterior's (independent oracle)
            for i in range(n):
                exact = pp.relative_loss(pp.MarginalDSS(i), prior, mech, x, float(t[k]))
                assert loss[k, i] == pytest.approx(exact, rel=1e-7, abs=1e-9)
        gmax = cls.max_mean_sd**2 / (cls.max_mean_sd**2 + sigma**2)
        pointwise = -math.log(1 - c * gmax) + 2 * cls.max_person_error * math.sqrt(
            c * gmax
        ) * np.abs(v) / (1 - c * gmax)
        assert np.all(loss <= pointwise[:, None] + 1e-9)
        kappa = bounded_error_kappa(
            cls.r1, cls.r2, max_person_error=cls.max_person_error,
            max_mean_sd=cls.max_mean_sd, sigma=sigma, delta=delta,
        )  # fmt: skip
        # per person, the frequency above kappa is at most delta (plus 4 binomial sds)
        freq = (loss > kappa).mean(axis=0)
        assert np.all(freq <= delta + 4 * math.sqrt(delta * (1 - delta) / t.size))


def test_kappa_falls_to_zero_as_the_noise_grows_and_the_worst_receiver_stays_below() -> None:
    r1, r2, r0, v, delta = 1.0, 4.0, 1.5, 1.0, 0.05
    c = 1 - 1 / r2
    sigmas = np.geomspace(0.1, 1000, 30)
    kappas = [bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=v, sigma=float(s),
                                  delta=delta) for s in sigmas]  # fmt: skip
    assert all(a >= b for a, b in itertools.pairwise(kappas)) and kappas[-1] < 1e-2
    for s, kappa in zip(sigmas, kappas, strict=True):  # never worse than the G^{r,V} bound
        assert kappa <= gaussian_noise_kappa(r1, r2, float(s), v, delta)[0]
    rng = np.random.default_rng(3)
    z_noise = rng.normal(size=400_000)
    for s, kappa in zip(sigmas[::6], kappas[::6], strict=True):
        g = v * v / (v * v + s * s)  # the least favourable statistics the class allows
        vv = math.sqrt(r1 * g) + math.sqrt(1 - g) * z_noise
        a, b = math.sqrt(c * g), 1 - c * g
        worst = np.maximum.reduce(
            [-math.log(b) + vv**2 - (vv - a * zz) ** 2 / b for zz in (-r0, r0)]
        )
        assert float(np.quantile(worst, 1 - delta)) <= kappa


def test_the_exact_mean_bound_covers_a_brute_force_search_over_the_class() -> None:
    r1, r2, r0 = 1.0, 4.0, 0.1
    c = 1 - 1 / r2
    kappa = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=1.0)
    assert kappa < r1 + math.log(r2)  # a small r0 certifies below Prop 7
    rho2 = np.linspace(0, c, 61)[:, None, None]
    w = np.linspace(-math.sqrt(r1), math.sqrt(r1), 61)[None, :, None]
    z = np.linspace(-r0, r0, 61)[None, None, :]
    b = 1 - rho2  # the exact mean: g = 1, m = w (Lemma 2)
    loss = -np.log(b) + z**2 - (z - np.sqrt(rho2) * w) ** 2 / b
    assert float(loss.max()) <= kappa
    assert person_error_bound(r1, r2, r0, 0.0, 1.0, 0.0) >= float(loss.max())


def test_the_class_refuses_what_it_cannot_state() -> None:
    with pytest.raises(ValidationError, match="max_person_error must be a number"):
        BoundedErrorGaussianClass(1.0, 4.0, max_mean_sd=1.0)
    with pytest.raises(ValidationError, match="max_person_error must be in"):
        BoundedErrorGaussianClass(1.0, 4.0, max_mean_sd=1.0, max_person_error=0.0)
    # without V the class is G^r with bounded person error: the exact mean's bound needs no V
    cls = BoundedErrorGaussianClass(1.0, 4.0, max_person_error=0.5)
    assert cls.max_mean_sd is None
    assert bounded_error_kappa(1.0, 4.0, max_person_error=0.5) == pytest.approx(
        math.log(4) + 0.25, rel=1e-12
    )
    assert stats.norm.isf(0.025) > 1.95  # the quantile used for delta = 0.05


def test_the_pointwise_bound_holds_for_every_output_and_at_delta_zero() -> None:
    """Delta_i <= -log(1 - c g) + z_i^2 for every output (Lemma 2's last term is <= 0): checked
    against the exact posterior (relative_loss) on random members and extreme outputs."""
    rng = np.random.default_rng(11)
    for _ in range(5):
        n = 5
        mu, cov, x = _member(rng, n)
        st = _statistics(mu, cov, x)
        prior = pp.GaussianPrior(mu, cov)
        for sigma in (0.0, 0.5 * st["v"], 3 * st["v"]):
            mech = (
                pp.ExactMean()
                if sigma == 0
                else pp.Chain(pp.ExactMean(), pp.GaussianMechanism(sigma))
            )
            ts = [None] if sigma == 0 else list(x.mean() + sigma * np.array([-40, -3, 0, 3, 40]))
            bound = pointwise_bound(st["r2"] * 1.001, st["r0"] * 1.001, sigma, st["v"] * 1.001)
            for t in ts:
                for i in range(n):
                    loss = pp.relative_loss(pp.MarginalDSS(i), prior, mech, x, t)
                    assert loss <= bound + 1e-9
    # at delta = 0 noise is certified by the pointwise bound alone (finite), tending to r0^2
    k0 = [bounded_error_kappa(1.0, 4.0, max_person_error=0.5, max_mean_sd=1.0, sigma=s)
          for s in (0.1, 1.0, 100.0)]  # fmt: skip
    assert all(math.isfinite(k) for k in k0) and k0 == sorted(k0, reverse=True)
    assert k0[-1] == pytest.approx(0.25, abs=1e-3)


def test_certify_uses_the_bounded_error_theorem_also_for_laplace_noise() -> None:
    """pp.certify asks BoundedError before Prop 7 and the noisy-mean theorems; under Laplace
    noise (no finite κ against G^{r,V}) the class still gives log r2 + r0^2, checked against
    the exact Laplace posterior (relative_loss) of random members at many outputs."""
    rng = np.random.default_rng(5)
    mu, cov, x = _member(rng, 4)
    st = _statistics(mu, cov, x)
    cls = BoundedErrorGaussianClass(
        st["r1"] * 1.001, st["r2"] * 1.001, max_mean_sd=st["v"] * 1.001,
        max_person_error=st["r0"] * 1.001,
    )  # fmt: skip
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 100.0, 0.05)
    for mech in (pp.ExactMean(), pp.Chain(pp.ExactMean(), pp.GaussianMechanism(1.0))):
        assert pp.certify(mech, d).basis.startswith("Prop 7 with bounded error")
    lap = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(0.7))
    cert = pp.certify(lap, d)
    assert cert.basis.startswith("Prop 7 with bounded error") and not cert.exact
    assert cert.kappa == pytest.approx(math.log(cls.r2) + cls.max_person_error**2, rel=1e-12)
    prior = pp.GaussianPrior(mu, cov)
    for t in x.mean() + np.array([-30.0, -2.0, 0.0, 0.5, 3.0, 30.0]):
        for i in range(4):
            loss = pp.relative_loss(pp.MarginalDSS(i), prior, lap, x, float(t))
            assert loss <= cert.kappa + 1e-9
