"""Issue 4's acceptance check: a differencing attack is exposed, and calibrated noise repairs it.

The exposure is checked through the generic engine (posterior + marginal DSS through
``pp.relative_loss``), the repair by a Monte Carlo audit of the repaired release that uses the
engine's exact posterior — not the linear module's closed forms that produced the calibration.
"""

from __future__ import annotations

import numpy as np
import pytest

import persuasive as pp
from persuasive.audit.core import clopper_pearson_rank
from persuasive.linear import analyse, calibrate_noise

N_PEOPLE = 12
SD = 2.0
A = np.vstack([np.full(N_PEOPLE, 1 / N_PEOPLE), np.r_[np.full(N_PEOPLE - 1, 1 / 11), 0.0]])
PRIOR = pp.GaussianPrior(np.zeros(N_PEOPLE), np.eye(N_PEOPLE) * SD**2)
TARGET, R1, DELTA = 5.0, 1.0, 0.05


def test_mean_and_mean_without_one_expose_exactly_that_person() -> None:
    an = analyse(PRIOR.mean(), PRIOR.cov(), A)
    assert an.exposed.tolist() == [False] * (N_PEOPLE - 1) + [True]
    (exp,) = an.exposures()
    np.testing.assert_allclose(A.T @ exp.combination, np.eye(N_PEOPLE)[-1], atol=1e-9)
    x = np.r_[np.random.default_rng(0).normal(size=N_PEOPLE - 1), 1.7]
    losses = [
        pp.relative_loss(pp.MarginalDSS(i), PRIOR, pp.LinearStatistic(A), x)
        for i in range(N_PEOPLE)
    ]
    assert losses[-1] == np.inf and np.all(np.isfinite(losses[:-1]))
    # The combination recovers the person's value from the released statistics.
    assert float(exp.combination @ (A @ x)) == pytest.approx(1.7, rel=1e-9)


def test_calibrated_noise_brings_the_exposed_person_to_the_target_checked_by_audit() -> None:
    cal = calibrate_noise(A, TARGET, mean=PRIOR.mean(), cov=PRIOR.cov(), r1=R1, delta=DELTA)
    assert 0.0 < cal.sd and cal.kappa <= TARGET + 1e-9
    mech = cal.mechanism
    # Audit: datasets x within the prior-error bound ‖(AΣAᵀ)^{-1/2} A(x − μ)‖² ≤ r1, with the
    # exposed person far from the prior mean; the (1 − δ) tail of their loss by Monte Carlo,
    # losses from the engine's exact posterior (pp.relative_loss).
    g_inv = np.linalg.inv(A @ PRIOR.cov() @ A.T)
    rng = np.random.default_rng(1)
    n_samples = 1500
    k = clopper_pearson_rank(n_samples, DELTA, 0.99)
    worst = -np.inf
    for a in (0.25, 1.0, 2.0, 4.0, 8.0):
        s_grid = np.linspace(-80, 80, 16001)
        v = np.stack([(s_grid + a) / N_PEOPLE, s_grid / (N_PEOPLE - 1)])
        feasible = s_grid[np.einsum("in,ij,jn->n", v, g_inv, v) <= R1]
        if feasible.size == 0:  # the bound on the statistics' error also bounds x_i here
            continue
        for s in (feasible.min(), feasible.mean(), feasible.max()):
            x = np.r_[np.full(N_PEOPLE - 1, s / (N_PEOPLE - 1)), a]
            ts = mech.sample(x, n_samples, rng)
            losses = np.sort(
                [pp.relative_loss(pp.MarginalDSS(N_PEOPLE - 1), PRIOR, mech, x, t=t) for t in ts]
            )
            worst = max(worst, float(losses[n_samples - k]))
    assert 1.0 < worst <= TARGET  # the repair is real, and the search reaches a real loss
