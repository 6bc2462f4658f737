"""Audits under the bounded-error classes (issue 14): found lower bounds, with members as witnesses.

Oracles written out here, independently of the library:
- membership: every |z_j| <= r0, w^2 <= r1, the prior sd of the mean <= V and
  c_Phi <= r2 (1 - max sigma^2 / ||sigma||^2), from the witness's mean and covariance;
- the audit's value: the marginal DSS loss at the witness's output, from Gaussian conditioning
  on T = mean(X) (+ noise) written with numpy;
- the exact mean's supremum in closed form where it is attained (docs/release_means.md (e)):
  log r2 + r0^2 when r0 <= sqrt(c r1), r1 + log r2 when r0 >= sqrt(r1 / c);
- audit <= certificate always, and the measured audit/certificate ratios as a guard.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import persuasive as pp
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.errors import ValidationError
from persuasive.linear import BoundedErrorLinearClass, audit_linear

TOL = 1e-9


def _random_class(rng: np.random.Generator) -> BoundedErrorGaussianClass:
    r1 = float(np.exp(rng.uniform(math.log(0.2), math.log(5.0))))
    r2 = float(1.0 + np.exp(rng.uniform(math.log(0.2), math.log(20.0))))
    r0 = float(np.exp(rng.uniform(math.log(0.1), math.log(4.0))))
    v = float(np.exp(rng.uniform(math.log(0.3), math.log(3.0))))
    return BoundedErrorGaussianClass(r1, r2, max_mean_sd=v, max_person_error=r0)


def a_definition(cls: BoundedErrorGaussianClass) -> pp.PersuasivePrivacy:
    """(I, cls, 10, 0)-PP: the exact mean's definition (κ large: the audit's value is the point)."""
    return pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 10.0)


def _is_member(cls: BoundedErrorGaussianClass, prior: pp.GaussianPrior, x: np.ndarray) -> bool:
    """The class's conditions written out (the test's own check, not ``contains``)."""
    mu, cov = np.asarray(prior.mean_), np.asarray(prior.cov_)
    n = x.shape[0]
    sd = np.sqrt(np.diag(cov))
    slack = 1.0 + 1e-9
    z = np.abs(x - mu) / sd
    sbar = cov.sum() / n**2
    w2 = (x.mean() - mu.mean()) ** 2 / sbar
    eig = np.linalg.eigvalsh(cov / np.outer(sd, sd))
    spread = 1.0 - sd.max() ** 2 / (sd**2).sum()
    ok = z.max() <= cls.max_person_error * slack and w2 <= cls.r1 * slack
    ok = ok and eig[-1] / eig[0] <= cls.r2 * spread * slack
    if cls.max_mean_sd is not None:
        ok = ok and sbar <= cls.max_mean_sd**2 * slack
    return bool(ok)


def _conditioned_loss(prior: pp.GaussianPrior, x: np.ndarray, t: float, s: float) -> np.ndarray:
    """Delta_i for every i at output t of T = mean(x) + N(0, s^2), by Gaussian conditioning."""
    mu, cov = np.asarray(prior.mean_), np.asarray(prior.cov_)
    n = x.shape[0]
    a = cov.sum(axis=1) / n  # Cov(X, T)
    var_t = cov.sum() / n**2 + s * s
    m = mu + a * (t - mu.mean()) / var_t
    tau2 = np.diag(cov) - a * a / var_t
    s2 = np.diag(cov)
    return np.log(s2) + (x - mu) ** 2 / s2 - np.log(tau2) - (x - m) ** 2 / tau2


# ------------------------------------------------------------------------------- exact mean


@pytest.mark.parametrize("seed", range(12))
def test_exact_mean_audit_is_a_member_below_the_certificate(seed: int) -> None:
    cls = _random_class(np.random.default_rng(seed))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 10.0)
    a = pp.audit(pp.ExactMean(), d, rng=seed)
    cert = pp.certify(pp.ExactMean(), d).kappa
    prior, x = a.witness.prior, np.asarray(a.witness.x)
    assert cls.contains(prior, x) and _is_member(cls, prior, x)
    again = _conditioned_loss(prior, x, float(x.mean()), 0.0).max()
    assert a.kappa == pytest.approx(again, abs=1e-8)
    assert a.kappa <= cert + TOL


@pytest.mark.parametrize(
    ("r1", "r2", "r0"),
    [(1.0, 4.0, 0.5), (0.3, 10.0, 0.05), (2.0, 1.5, 0.3), (1.0, 4.0, 3.0), (0.5, 2.0, 2.0)],
)
def test_exact_mean_audit_reaches_the_closed_form_where_attained(
    r1: float, r2: float, r0: float
) -> None:
    c = 1.0 - 1.0 / r2
    if r0 <= math.sqrt(c * r1):
        sup = math.log(r2) + r0 * r0  # z = r0, w = r0 / rho, rho^2 = c
    else:
        assert r0 >= math.sqrt(r1 / c)
        sup = r1 + math.log(r2)  # w = sqrt(r1), z = w / rho <= r0
    cls = BoundedErrorGaussianClass(r1, r2, max_person_error=r0)
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 10.0)
    a = pp.audit(pp.ExactMean(), d)
    assert a.kappa == pytest.approx(sup, abs=1e-7)
    assert pp.certify(pp.ExactMean(), d).kappa == pytest.approx(sup, abs=1e-7)


def test_exact_mean_audit_is_the_supremum_of_a_brute_force_grid() -> None:
    """Lemma 2 at g = 1 on a (rho^2, w, z) grid over the class's statistics (n free)."""
    r1, r2, r0 = 1.0, 4.0, 1.0  # neither closed form is attained here
    c = 1.0 - 1.0 / r2
    rho2, w, z = np.meshgrid(
        np.linspace(1e-3, c, 300), np.linspace(-1, 1, 201) * math.sqrt(r1),
        np.linspace(-1, 1, 201) * r0, indexing="ij", sparse=True,
    )  # fmt: skip
    rho = np.sqrt(rho2)
    grid = (-np.log(1 - rho2) + z**2 - (z - rho * w) ** 2 / (1 - rho2)).max()
    cls = BoundedErrorGaussianClass(r1, r2, max_person_error=r0)
    a = pp.audit(pp.ExactMean(), a_definition(cls))
    assert grid - 1e-3 <= a.kappa <= grid + 1e-3
    assert a.kappa < pp.certify(pp.ExactMean(), a_definition(cls)).kappa  # the bound is loose


def test_exact_mean_audit_at_a_given_dataset_and_person() -> None:
    cls = BoundedErrorGaussianClass(1.0, 4.0, max_mean_sd=2.0, max_person_error=0.5)
    x = np.random.default_rng(3).normal(size=6)
    d = pp.PersuasivePrivacy(pp.MarginalDSS(4), cls, 10.0)
    a = pp.audit(pp.ExactMean(), d, x=x)
    assert np.array_equal(np.asarray(a.witness.x), x) and a.witness.score.i == 4
    assert cls.contains(a.witness.prior, x) and _is_member(cls, a.witness.prior, x)
    assert a.kappa == pytest.approx(_conditioned_loss(a.witness.prior, x, x.mean(), 0.0)[4])
    assert a.kappa == pytest.approx(math.log(4.0) + 0.25, abs=1e-7)


def test_exact_mean_audit_refuses_a_dataset_too_small_for_the_class() -> None:
    # r2 = 1.2: every share <= 1/6, so three people cannot hold a member
    cls = BoundedErrorGaussianClass(1.0, 1.2, max_person_error=0.5)
    with pytest.raises(ValidationError, match=r"^x must be one dataset") as e:
        pp.audit(pp.ExactMean(), a_definition(cls), x=[0.0, 0.0, 0.0])
    assert "\n" not in str(e.value)
    with pytest.raises(ValidationError, match=r"^x must have at most 2000 entries .*got 2001$"):
        pp.audit(pp.ExactMean(), a_definition(cls), x=np.zeros(2001))
    # r2 = 1.0004: every member has at least 1 + 1/(r2 - 1) = 2501 people
    close = BoundedErrorGaussianClass(1.0, 1.0004, max_person_error=0.5)
    with pytest.raises(ValidationError, match=r"^r2 must leave room .* needs 2502$"):
        pp.audit(pp.ExactMean(), a_definition(close))


def test_r2_close_to_one_needs_more_people() -> None:
    """r2 = 1.005: a member has at least 201 people (shares <= c = 1/201); still audited."""
    cls = BoundedErrorGaussianClass(1.0, 1.005, max_mean_sd=1.0, max_person_error=0.5)
    a = pp.audit(pp.ExactMean(), a_definition(cls))
    x = np.asarray(a.witness.x)
    assert x.shape[0] >= 201 and _is_member(cls, a.witness.prior, x)
    assert a.kappa <= pp.certify(pp.ExactMean(), a_definition(cls)).kappa + TOL


# ------------------------------------------------------------------------------- noisy mean


@pytest.mark.parametrize("seed", range(8))
def test_noisy_mean_audit_is_a_member_below_the_certificate(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    cls = _random_class(rng)
    s = float(np.exp(rng.uniform(math.log(0.1), math.log(30.0))))
    m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(s))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 10.0, 0.05)
    a = pp.audit(m, d, rng=seed, n_samples=20_000)
    cert = pp.certify(m, d).kappa
    prior, x, i = a.witness.prior, np.asarray(a.witness.x), a.witness.score.i
    assert cls.contains(prior, x) and _is_member(cls, prior, x)
    again = _conditioned_loss(prior, x, float(a.witness.t), s)[i]
    assert a.kappa == pytest.approx(again, abs=1e-8)
    assert a.kappa <= cert + TOL


def test_noisy_mean_audit_at_delta_zero_is_below_the_pointwise_bound() -> None:
    cls = BoundedErrorGaussianClass(1.0, 4.0, max_mean_sd=1.0, max_person_error=1.0)
    m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(8.0))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 10.0, 0.0)
    a = pp.audit(m, d, rng=0, n_samples=20_000)
    pointwise = -math.log(1 - 0.75 / 65) + 1.0  # -log(1 - c g_max) + r0^2
    assert pp.certify(m, d).kappa == pytest.approx(pointwise, rel=1e-9)
    assert cls.contains(a.witness.prior, a.witness.x)
    assert 0.0 < a.kappa <= pointwise
    # r0 = 0.01: the argmax of the loss in v, z / (rho sqrt(g)) = 0.09, is where v's draws
    # are, so the sampled maximum reaches the pointwise bound (measured: ratio 1 - 4e-9)
    small = BoundedErrorGaussianClass(1.0, 4.0, max_mean_sd=1.0, max_person_error=0.01)
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), small, 10.0, 0.0)
    a = pp.audit(m, d, rng=0, n_samples=20_000)
    pointwise = -math.log(1 - 0.75 / 65) + 1e-4
    assert small.contains(a.witness.prior, a.witness.x)
    assert 0.999 * pointwise <= a.kappa <= pointwise


#: The ratio guard: measured on 40 random classes (r1 in [0.2, 5], r2 - 1 in [0.2, 20], r0 in
#: [0.1, 4], V in [0.3, 3], log-uniform; noise sd in [0.1, 30]; delta = 0.05; 20 000 samples):
#: exact mean median 1.000 (min 0.677, where neither closed form is attained and the
#: certificate is loose), noisy mean median 0.812 (min 0.515); the Monte Carlo value is within
#: 0.965-1 of the design's exact quantile, so the gap is the certificate's. Checked here on the
#: first 8 of the random classes above with a margin.
RATIO_EXACT, RATIO_NOISY = 0.95, 0.6


def test_ratio_guard() -> None:
    exact, noisy = [], []
    for seed in range(8):
        rng = np.random.default_rng(200 + seed)
        cls = _random_class(rng)
        s = float(np.exp(rng.uniform(math.log(0.1), math.log(30.0))))
        d0 = a_definition(cls)
        exact.append(pp.audit(pp.ExactMean(), d0).kappa / pp.certify(pp.ExactMean(), d0).kappa)
        m = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(s))
        d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 10.0, 0.05)
        noisy.append(pp.audit(m, d, rng=seed, n_samples=20_000).kappa / pp.certify(m, d).kappa)
    assert max(exact) <= 1.0 + 1e-9 and max(noisy) <= 1.0 + 1e-9
    assert float(np.median(exact)) >= RATIO_EXACT, exact
    assert float(np.median(noisy)) >= RATIO_NOISY, noisy


# ----------------------------------------------------------------------------------- linear


@pytest.mark.parametrize("seed", range(4))
def test_linear_audit_returns_members_below_the_certificate(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    k, n = int(rng.integers(1, 3)), int(rng.integers(3, 6))
    a_mat = rng.uniform(0.1, 1.0, (k, n))
    r0 = float(np.exp(rng.uniform(math.log(0.1), math.log(3.0))))
    noisy = seed % 2 == 1
    v = 1.0 if noisy else None
    r = 0.5 * np.eye(k) if noisy else None
    delta = 0.05 if noisy else 0.0
    cls = BoundedErrorLinearClass(1.0, 4.0, A=a_mat, max_stat_sd=v, max_person_error=r0)
    res = audit_linear(
        a_mat, cls, r, delta=delta, families=("diagonal", "equicorrelated"), starts=3, rng=seed
    )
    prior, x = res.witness.prior, np.asarray(res.witness.x)
    assert cls.contains(prior, x, a_mat)
    z = np.abs(x - prior.mean_) / np.sqrt(np.diag(prior.cov_))
    assert z.max() <= r0 * (1 + 1e-9)
    assert math.isfinite(res.kappa) and res.kappa <= cls.class_kappa(a_mat, r, delta) + TOL


# ------------------------------------------------------------------------------ Laplace mean


@pytest.mark.parametrize("seed", range(6))
def test_laplace_mean_audit_is_a_member_below_the_certificate(seed: int) -> None:
    """The mean plus Laplace noise against the bounded class (certificate log r2 + r0², the
    pointwise bound of docs/release_means.md (e)): the audit's witness is a member (the class's
    conditions written out above) and its value at most the certificate; with the noise small
    against V (b <= V/10) it comes within 15% of it (measured ratios on these seeds: 0.956-0.999
    at b <= V/10, 0.36-0.53 at b = V, where the noise itself protects)."""
    rng = np.random.default_rng(300 + seed)
    cls = _random_class(rng)
    b = float(cls.max_mean_sd) * float(rng.choice([0.01, 0.1, 1.0]))
    mech = pp.Chain(pp.ExactMean(), pp.LaplaceMechanism(b))
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 10.0, 0.05)
    audit = pp.audit(mech, d, rng=seed, n_samples=20_000)
    cert = pp.certify(mech, d)
    wit = audit.witness
    assert wit is not None and _is_member(cls, wit.prior, np.asarray(wit.x))
    assert audit.kappa <= cert.kappa + TOL
    assert cert.kappa == pytest.approx(math.log(cls.r2) + cls.max_person_error**2, rel=1e-9)
    if b <= 0.1 * float(cls.max_mean_sd):
        assert audit.kappa >= 0.85 * cert.kappa
