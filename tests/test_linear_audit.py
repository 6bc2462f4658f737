"""Audit, calibration and withholding for linear releases (issue 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from persuasive.errors import ValidationError
from persuasive.linear import (
    LinearGaussianClass,
    analyse,
    audit_linear,
    calibrate_noise,
    fixed_quantile,
    greedy_withhold,
)

A3 = np.array([[1, 1, 1, 1, 1.0], [1, 1, 0, 0, 0], [0, 1, 1, 1, 0]]) / 3


def differencing(n: int) -> np.ndarray:
    return np.vstack([np.full(n, 1 / n), np.r_[np.full(n - 1, 1 / (n - 1)), 0.0]])


def test_audit_below_certificate_and_close_exact():
    cls = LinearGaussianClass(1.0, 10.0)
    res = audit_linear(A3, cls, starts=16, rng=1)
    assert res.kappa <= cls.class_kappa(A3) + 1e-9
    assert res.kappa == pytest.approx(1 + math.log(10), abs=1e-3)  # sharp witness found
    assert cls.contains(res.witness.prior, res.witness.x, A=A3)


def test_audit_below_certificate_noisy():
    cls = LinearGaussianClass(1.0, 10.0, max_stat_sd=1.0)
    res = audit_linear(A3, cls, R=0.5, delta=0.05, starts=6, rng=2)
    assert res.kappa <= cls.class_kappa(A3, 0.5, 0.05) + 1e-9


def test_calibration_repairs_differencing_fixed_prior():
    n, r1, delta, target = 8, 1.0, 0.05, 5.0
    a = differencing(n)
    mu, cov = np.zeros(n), np.eye(n)
    assert np.isinf(analyse(mu, cov, a).kappa(r1).max())
    cal = calibrate_noise(a, target, mean=mu, cov=cov, r1=r1, delta=delta)
    assert 0 < cal.sd and cal.kappa <= target
    an = analyse(mu, cov, a, cal.R)
    assert an.kappa(r1, delta).max() <= target
    # a bit less noise misses the target (smallest scale)
    assert analyse(mu, cov, a, (0.99 * cal.sd) ** 2).kappa(r1, delta).max() > target
    # audit at witnesses on the constraint: the exact fixed-(x, Q) quantile stays below
    an0 = analyse(mu, cov, a)
    i = n - 1
    w, q = np.linalg.eigh(a @ cov @ a.T)
    for s in np.random.default_rng(0).standard_normal((20, n)):
        u = (q / np.sqrt(w)).T @ (a @ s)
        x = mu + s * math.sqrt(r1) / np.linalg.norm(u)
        assert fixed_quantile(an, x, i, delta) <= target + 1e-9
    per = calibrate_noise(a, target, mean=mu, cov=cov, r1=r1, delta=delta, per_statistic=True)
    assert per.kappa <= target and per.sds.shape == (2,)
    del an0


def test_calibration_under_class_checked_by_audit():
    cls = LinearGaussianClass(1.0, 10.0, max_stat_sd=0.5)
    target = 3.0  # below the noise-free r1 + log r2 = 3.30
    cal = calibrate_noise(A3, target, cls=cls, delta=0.1)
    assert cal.sd > 0 and cal.kappa <= target
    res = audit_linear(A3, cls, R=cal.R, delta=0.1, starts=4, rng=3)
    assert res.kappa <= target + 1e-9


def test_unreachable_target():
    with pytest.raises(ValidationError, match="unreachable"):
        calibrate_noise(differencing(4), 1.0, mean=np.zeros(4), cov=np.eye(4), r1=1.0, delta=0.05)


def test_greedy_withholding_differencing():
    a = np.vstack([differencing(6), np.r_[1.0, -1, 0, 0, 0, 0]])
    w = greedy_withhold(a, 4.0, mean=np.zeros(6), cov=np.eye(6), r1=1.0)
    assert len(w.dropped) == 1 and w.dropped[0] in (0, 1)
    assert w.kappa.max() <= 4.0 and w.path[0] == math.inf
    assert sorted(w.kept + w.dropped) == [0, 1, 2]
