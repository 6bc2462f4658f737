"""Prop 3 composition, Prop 4 joint release and Prop 5 chains."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive.certify import Prop3
from persuasive.certify.composition import conjugacy_failure

PDP = pp.probabilistic_dp


def _exact_kappa_product(m1, m2, delta):
    """Exact kappa(delta) of two RR releases of the same x, by enumerating the product kernel."""
    m = np.einsum("it,iu->itu", m1, m2).reshape(m1.shape[0], -1)
    best = math.inf
    losses = sorted({0.0} | {float(np.log(m[0, t] / m[1, t])) for t in range(m.shape[1])})
    for c in losses:
        d = max(float(m[a][np.log(m[a] / m[b]) > c + 1e-12].sum()) for a, b in [(0, 1), (1, 0)])
        if d <= delta:
            best = min(best, c)
    return best


def test_rr_composition_pure():
    m = pp.Composition(pp.RandomizedResponse(1.0), pp.RandomizedResponse(0.5))
    cert = pp.certify(m, pp.pure_dp(1.5))
    # delta = 0: exact (same worst pair in both parts), by the tight composition
    assert cert.kappa == 1.5 and cert.holds and cert.exact
    assert cert.basis == "Prop 6 + privacy-loss distribution (tight composition)"
    ex = _exact_kappa_product(
        pp.RandomizedResponse(1.0).matrix, pp.RandomizedResponse(0.5).matrix, 0.0
    )
    assert cert.kappa == pytest.approx(ex, abs=1e-12)
    # Prop 3 itself still gives its additive bound, equal here
    assert Prop3().kappa_at(m, pp.pure_dp(1.5), 0.0)[0] == pytest.approx(1.5)


@pytest.mark.parametrize("delta", [1e-6, 1e-3, 0.05, 0.3])
def test_gaussian_composition_is_an_upper_bound(delta):
    s1, s2 = 1.0, 2.0
    m = pp.Composition(pp.GaussianMechanism(s1), pp.GaussianMechanism(s2))
    k = pp.certify(m, PDP(1.0, delta)).kappa
    # two Gaussian releases of x = one Gaussian release with 1/s^2 = 1/s1^2 + 1/s2^2
    s = (s1**-2 + s2**-2) ** -0.5
    exact = max(0.0, (0.5 / s - stats.norm.ppf(delta)) / s)
    assert k >= exact - 1e-9
    for part in (pp.GaussianMechanism(s1), pp.GaussianMechanism(s2)):
        assert k >= pp.certify(part, PDP(1.0, delta)).kappa - 1e-12
    # any split is valid: the grid optimum is no worse than the even split
    even = sum(max(0.0, (0.5 / si - stats.norm.ppf(delta / 2)) / si) for si in (s1, s2))
    assert k <= even + 1e-12


def test_composition_profile_consistent():
    m = pp.Composition(pp.LaplaceMechanism(1.0), pp.GaussianMechanism(1.0))
    prof = pp.profile(m, pp.pure_dp(1.0), deltas=[0.01, 0.1, 0.4], kappas=[1.0, 2.0, 3.0])
    assert np.all(np.diff(prof.kappas) <= 1e-12)
    assert np.all(np.diff(prof.delta_of_kappa) <= 1e-12)
    assert not prof.exact


def test_non_conjugate_classes_refused():
    d7 = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 5.0)
    with pytest.raises(pp.UnsupportedCombinationError, match="conjugate"):
        pp.certify(pp.Composition(pp.ExactMean(), pp.ExactMean()), d7)
    d8 = pp.PersuasivePrivacy(pp.SmallCellLogScore(r=3), pp.SmallCellClass(3, 0.2), 5.0)
    with pytest.raises(pp.UnsupportedCombinationError, match="point masses"):
        pp.certify(pp.Composition(pp.CellSuppression(3), pp.CellSuppression(4)), d8)
    with pytest.raises(pp.UnsupportedCombinationError, match="PersuasivePrivacy"):
        pp.certify(
            pp.Composition(pp.GaussianMechanism(1.0), pp.GaussianMechanism(1.0)),
            pp.renyi_dp(2.0, 1.0),
        )


def test_finite_class_closure():
    rr = pp.RandomizedResponse(1.0)
    points = pp.FiniteClass([pp.DiscretePrior([0], [1.0]), pp.DiscretePrior([1], [1.0])])
    assert conjugacy_failure(points, rr) is None
    mixed = pp.FiniteClass([pp.DiscretePrior([0, 1], [0.5, 0.5])])
    assert "not closed" in conjugacy_failure(mixed, rr)
    assert conjugacy_failure(points, pp.GaussianMechanism(1.0)) is not None
    assert conjugacy_failure(pp.NeighbourPriors(), pp.ExactMean()) is None


def test_joint_keeps_certificate():
    m = pp.RandomizedResponse(1.0, 3)
    k = pp.FiniteKernel([[0.5, 0.5], [0.1, 0.9], [0.3, 0.7]])
    for d in (PDP(1.0, 0.0), PDP(0.5, 0.2)):
        cj, cm = pp.certify(pp.Joint(m, k), d), pp.certify(m, d)
        assert cj.kappa == cm.kappa and cj.exact == cm.exact
        assert cj.basis == "Prop 4 (Bon et al. 2026)"
    joint = pp.Joint(pp.GaussianMechanism(1.0), pp.GaussianMechanism(3.0))
    assert (
        pp.certify(joint, PDP(1.0, 0.1)).kappa
        == pp.certify(pp.GaussianMechanism(1.0), PDP(1.0, 0.1)).kappa
    )
    renyi = pp.renyi_dp(2.0, 1.0)
    assert pp.certify(pp.Joint(pp.GaussianMechanism(2.0), k), renyi).kappa == 0.25


def test_chain():
    m, k = pp.RandomizedResponse(1.0), pp.FiniteKernel([[0.9, 0.1], [0.2, 0.8]])
    cert = pp.certify(pp.Chain(m, k), pp.pure_dp(1.0))
    p = m.matrix @ k.matrix
    assert cert.kappa == pytest.approx(float(np.max(np.abs(np.log(p[0] / p[1])))), abs=1e-12)
    assert cert.basis == "Prop 6 (Bon et al. 2026)"
    with pytest.raises(pp.UnsupportedCombinationError, match="Prop 5"):
        pp.certify(pp.Chain(pp.GaussianMechanism(1.0), pp.GaussianMechanism(1.0)), pp.pure_dp(1.0))
