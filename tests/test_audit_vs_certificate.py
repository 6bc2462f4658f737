"""A found lower bound never exceeds a proven upper bound: audit.kappa <= certify(...).kappa.

Random instances (seeded) of every theorem the audits cover. Each audit is also compared with the
closed form of docs/math.md §6-§9 computed here independently, so the test is meaningful without
``persuasive.certify``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive import _tolerances as tol

RNG = np.random.default_rng(20260101)
ATOL = tol.LOSS_ATOL


def _check(mech: pp.Mechanism, d: pp.PersuasivePrivacy, closed: float, **kw: object) -> float:
    a = pp.audit(mech, d, **kw)
    assert a.kappa <= closed + ATOL, (a.kappa, closed)
    cert = pp.certify(mech, d)
    assert a.kappa <= cert.kappa + ATOL, (a.kappa, cert.kappa, cert.basis)
    assert cert.kappa == pytest.approx(closed, rel=1e-9, abs=1e-9) or cert.kappa >= closed
    return a.kappa


def _pdp_kappa_finite(matrix: np.ndarray, pairs: list[tuple[int, int]], delta: float) -> float:
    """Independent oracle: the smallest ε >= 0 with max_pairs P_x[ℓ > ε] <= δ (PDP, Prop 6)."""
    with np.errstate(divide="ignore"):
        logm = np.log(matrix)
    cands = [0.0]
    for i, j in pairs:
        ell = logm[i] - logm[j]
        cands += [float(e) for e in ell[matrix[i] > 0] if e > 0]
    for eps in sorted(cands):
        worst = max(matrix[i][(logm[i] - logm[j] > eps) & (matrix[i] > 0)].sum() for i, j in pairs)
        if worst <= delta + 1e-12:
            return eps
    return math.inf


@pytest.mark.parametrize("seed", range(4))
def test_gaussian_noise(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sigma, delta = rng.uniform(0.5, 3.0), rng.uniform(0.01, 0.4)
    closed = 1 / (2 * sigma**2) + stats.norm.ppf(1 - delta) / sigma
    k = _check(
        pp.GaussianMechanism(sigma),
        pp.probabilistic_dp(1.0, delta),
        closed,
        rng=seed,
        n_samples=20_000,
    )
    assert k > closed - 0.15 / sigma


@pytest.mark.parametrize("seed", range(4))
def test_laplace_noise(seed: int) -> None:
    rng = np.random.default_rng(seed)
    b, delta = rng.uniform(0.3, 3.0), rng.uniform(0.05, 0.95)
    closed = 1 / b if delta < 0.5 else max(0.0, 1 / b + 2 * math.log(2 * (1 - delta)))
    _check(
        pp.LaplaceMechanism(b), pp.probabilistic_dp(0.1, delta), closed, rng=seed, n_samples=20_000
    )


@pytest.mark.parametrize("seed", range(3))
def test_geometric_noise(seed: int) -> None:
    rng = np.random.default_rng(seed)
    b, delta = rng.uniform(0.3, 3.0), rng.uniform(0.3, 0.9)
    a = math.exp(-1 / b)
    closed = 1 / b if delta < 1 / (1 + a) else 0.0  # P(ℓ = 1/b) = P(noise <= 0) = 1/(1+a)
    _check(
        pp.GeometricMechanism(b),
        pp.probabilistic_dp(0.1, delta),
        closed,
        rng=seed,
        n_samples=20_000,
    )


@pytest.mark.parametrize("seed", range(5))
def test_randomized_response(seed: int) -> None:
    rng = np.random.default_rng(seed)
    eps0, k = rng.uniform(0.1, 3.0), int(rng.integers(2, 6))
    delta = rng.uniform(0.0, 0.9)
    keep = math.exp(eps0) / (math.exp(eps0) + k - 1)
    closed = eps0 if delta < keep else 0.0
    got = _check(pp.RandomizedResponse(eps0, k), pp.probabilistic_dp(0.1, delta), closed)
    assert got == pytest.approx(closed, abs=1e-8)


@pytest.mark.parametrize("seed", range(5))
def test_random_finite_kernels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    kk, j = int(rng.integers(2, 5)), int(rng.integers(2, 6))
    m = rng.dirichlet(np.ones(j), size=kk)
    delta = rng.uniform(0.0, 0.5)
    pairs = [(i, i2) for i in range(kk) for i2 in range(kk) if abs(i - i2) == 1]
    closed = _pdp_kappa_finite(m, pairs, delta)
    got = _check(pp.FiniteKernel(m), pp.probabilistic_dp(0.1, delta), closed)
    assert got == pytest.approx(closed, abs=1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_prop7_random_r(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    r1 = rng.uniform(0.1, 3.0)
    r2 = rng.uniform(n / (n - 1) + 0.2, 12.0)
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2), 1.0)
    got = _check(pp.ExactMean(), d, r1 + math.log(r2), x=rng.normal(size=n), rng=seed, n_starts=1)
    assert got == pytest.approx(r1 + math.log(r2), abs=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_prop8_random_alpha_h(seed: int) -> None:
    rng = np.random.default_rng(seed)
    h, alpha = int(rng.integers(2, 6)), rng.uniform(0.05, 0.9)
    r = int(rng.integers(2, h + 1))
    d = pp.PersuasivePrivacy(pp.SmallCellLogScore(r=r), pp.SmallCellClass(h, alpha), 1.0)
    got = _check(pp.CellSuppression(h), d, -math.log(alpha))
    assert got == pytest.approx(-math.log(alpha), abs=1e-9)


def test_ppe_against_certificate() -> None:
    sigma, alpha = float(RNG.uniform(1.0, 3.0)), 3.0
    d = pp.renyi_dp(alpha, 1.0)
    a = pp.audit(pp.GaussianMechanism(sigma), d, rng=0, n_samples=50_000)
    closed = alpha / (2 * sigma**2)
    assert a.kappa <= closed + ATOL
    assert a.kappa <= pp.certify(pp.GaussianMechanism(sigma), d).kappa + ATOL
