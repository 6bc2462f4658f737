"""The tight composition certificate (Prop 6 + PLD) against Prop 3 and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive.certify.tight import TightComposition

PDP = pp.probabilistic_dp
BASIS = "Prop 6 + privacy-loss distribution (tight composition)"


def _additive(notes):
    (line,) = [n for n in notes if n.startswith("additive Prop 3")]
    return float(line.rsplit("=", 1)[1])


@pytest.mark.parametrize(
    "mech",
    [
        pp.ComposedRelease.repeat(pp.LaplaceMechanism(5.0), 10),
        pp.ComposedRelease([pp.LaplaceMechanism(2.0), pp.RandomizedResponse(1.0)], [3, 2]),
        pp.Composition(pp.GeometricMechanism(1.0), pp.LaplaceMechanism(1.0)),
        pp.ComposedRelease([pp.GaussianMechanism(3.0), pp.LaplaceMechanism(3.0)], [4, 4]),
    ],
)
@pytest.mark.parametrize("delta", [1e-6, 1e-3, 0.1])
def test_tight_never_above_additive(mech, delta):
    cert = pp.certify(mech, PDP(1.0, delta))
    assert cert.basis == BASIS and not cert.exact
    assert cert.kappa <= _additive(cert.notes) + 1e-12
    assert any(n.startswith("discretisation") for n in cert.notes)


def test_laplace_k_fold_strictly_tighter():
    m = pp.ComposedRelease.repeat(pp.LaplaceMechanism(10.0), 50)
    cert = pp.certify(m, PDP(1.0, 1e-5))
    assert cert.kappa < 0.7 * _additive(cert.notes)


@pytest.mark.parametrize("delta", [1e-8, 1e-4, 0.2])
def test_gaussian_heterogeneous_closed_form(delta):
    m = pp.ComposedRelease([pp.GaussianMechanism(2.0), pp.GaussianMechanism(3.0)], [3, 5])
    s = (3 / 4 + 5 / 9) ** -0.5
    exact = max(0.0, (0.5 / s - stats.norm.ppf(delta)) / s)
    cert = pp.certify(m, PDP(1.0, delta))
    assert cert.exact and cert.kappa == pytest.approx(exact, rel=1e-12)
    th = TightComposition()
    assert th.delta_at(m, PDP(1.0, delta), exact) == pytest.approx(delta, rel=1e-9)


def test_nested_composition_equals_composed_release():
    lap, rr = pp.LaplaceMechanism(2.0), pp.RandomizedResponse(1.0)
    nested = pp.Composition(pp.Composition(lap, rr), pp.Composition(lap, lap))
    flat = pp.ComposedRelease([lap, rr], [3, 1])
    a, b = pp.certify(nested, PDP(1.0, 1e-3)), pp.certify(flat, PDP(1.0, 1e-3))
    assert a.kappa == pytest.approx(b.kappa, abs=1e-12)


def test_pure_dp_binary_composition_left_to_prop3():
    # A binary Composition at δ = 0 goes to Prop 3; a k-fold ComposedRelease is summed here.
    binary = pp.Composition(pp.RandomizedResponse(1.0), pp.RandomizedResponse(1.0))
    assert TightComposition().supports(binary, pp.pure_dp(3.0)) is not None
    m = pp.ComposedRelease.repeat(pp.RandomizedResponse(1.0), 3)
    assert TightComposition().supports(m, pp.pure_dp(3.0)) is None
    assert pp.certify(m, pp.pure_dp(3.0)).kappa == pytest.approx(3.0)


def test_unsupported_parts_fall_back():
    m = pp.Composition(pp.ExactMean(), pp.GaussianMechanism(1.0))
    assert "no privacy-loss distribution" in TightComposition().supports(m, PDP(1.0, 0.1))


def test_expectation_orders_add():
    m = pp.ComposedRelease([pp.GaussianMechanism(2.0), pp.LaplaceMechanism(1.0)], [4, 2])
    cert = pp.certify(m, pp.renyi_dp(3.0, 10.0))
    lap = pp.certify(pp.LaplaceMechanism(1.0), pp.renyi_dp(3.0, 10.0)).kappa
    assert cert.exact and cert.kappa == pytest.approx(4 * 3 / 8 + 2 * lap)
    assert cert.basis.startswith("App. C + Rényi additivity")


def test_profile_monotone():
    m = pp.ComposedRelease([pp.LaplaceMechanism(3.0), pp.RandomizedResponse(0.5)], [5, 2])
    prof = pp.profile(m, PDP(1.0, 0.01), deltas=[0.0, 1e-4, 0.01, 0.3], kappas=[0.5, 1, 2, 4])
    assert np.all(np.diff(prof.kappas) <= 1e-12)
    assert np.all(np.diff(prof.delta_of_kappa) <= 1e-12)
    assert prof.basis == BASIS


def test_pure_dp_of_a_k_fold_release_is_the_sum_of_the_parts() -> None:
    # δ = 0: the k-fold Laplace release is (k/b)-DP (sum of essential suprema), checked against
    # the closed form; a Gaussian part has no pure-DP guarantee.
    m = pp.ComposedRelease.repeat(pp.LaplaceMechanism(2.0), 3)
    cert = pp.certify(m, pp.pure_dp(1.5))
    assert cert.holds and cert.kappa == pytest.approx(3 / 2.0)
    assert not pp.certify(m, pp.pure_dp(1.49)).holds
    gauss = pp.ComposedRelease.repeat(pp.GaussianMechanism(2.0), 3)
    assert pp.certify(gauss, pp.pure_dp(10.0)).kappa == float("inf")
