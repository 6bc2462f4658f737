"""Adapters from OpenDP measurements and dp_accounting DpEvents (issue 6).

Oracles: OpenDP's own privacy maps (ε for pure DP, ρ for zCDP), dp_accounting's PLD
accountant (approximate-DP δ(ε), which can never exceed the PDP δ(ε) that PP reads), and
closed forms written out here (Gaussian PDP tail Φ(1/(2σ) − εσ), randomized response matrix).
"""

from __future__ import annotations

import math
import subprocess
import sys

import dp_accounting
import dp_accounting.dp_event as dpe
import numpy as np
import opendp.prelude as dp
import pytest
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution
from scipy import stats

import persuasive as pp
from persuasive.adapters import (
    MissingDependencyError,
    from_dp_event,
    from_opendp,
    read_opendp,
    to_dp_event,
)
from persuasive.mechanisms.composed import ComposedRelease

dp.enable_features("contrib")
FLOAT = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float))
INT = (dp.atom_domain(T=int), dp.absolute_distance(T=int))


def pp_delta(mechanism: pp.Mechanism, eps: float) -> float:
    """PP's δ(ε) under (L, 𝓗) through the public profile."""
    prof = pp.profile(mechanism, pp.probabilistic_dp(1.0, 0.1), deltas=[0.1], kappas=[eps])
    return float(prof.delta_of_kappa[0])


def adp_delta(event: dp_accounting.DpEvent, eps: list[float]) -> list[float]:
    """dp_accounting's approximate-DP δ(ε) (pessimistic PLD, so an upper bound on the truth)."""
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    acc.compose(event)
    return [float(acc.get_delta(e)) for e in eps]


# --- OpenDP ---------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0, 10.0 / 3.0, 7.5])
@pytest.mark.parametrize("d_in", [1.0, 2.0, 0.5])
def test_laplace_pure_dp_agrees_with_opendp_map(scale: float, d_in: float) -> None:
    meas = dp.m.make_laplace(*FLOAT, scale=scale)
    mech = from_opendp(meas, d_in=d_in)
    assert mech == pp.LaplaceMechanism(scale / d_in)
    eps = meas.map(d_in)  # OpenDP's own (upward-rounded) ε
    cert = pp.certify(mech, pp.pure_dp(eps))
    assert cert.holds and cert.exact
    assert cert.kappa <= eps and cert.kappa == pytest.approx(eps, rel=1e-12)
    assert not pp.certify(mech, pp.pure_dp(eps * (1 - 1e-6))).holds  # tight


@pytest.mark.parametrize(("scale", "d_in"), [(1.0, 1.0), (2.0, 1.0), (3.0, 2.0), (0.8, 0.5)])
def test_gaussian_reading_against_zcdp_map_and_dp_accounting(scale: float, d_in: float) -> None:
    meas = dp.m.make_gaussian(*FLOAT, scale=scale)
    mech = from_opendp(meas, d_in=d_in)
    sigma = scale / d_in
    assert mech == pp.GaussianMechanism(sigma)
    assert meas.map(d_in) == pytest.approx(1 / (2 * sigma**2), rel=1e-12)  # ρ of zCDP
    grid = [0.1, 0.5, 1.0, 2.0]
    adp = adp_delta(dp_accounting.GaussianDpEvent(sigma), grid)
    for eps, adp_eps in zip(grid, adp, strict=True):
        pdp = pp_delta(mech, eps)
        assert pdp == pytest.approx(stats.norm.cdf(0.5 / sigma - eps * sigma), abs=1e-12)
        assert pdp >= adp_eps


def test_vector_gaussian_l2_and_vector_laplace_l1() -> None:
    vec = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    g = read_opendp(dp.m.make_gaussian(vec, dp.l2_distance(T=float), scale=2.0), d_in=0.5)
    assert g.mechanism == pp.GaussianMechanism(4.0) and g.sensitivity == 0.5
    assert any("L2" in n for n in g.notes)
    lap = dp.m.make_laplace(vec, dp.l1_distance(T=float), scale=2.0)
    r = read_opendp(lap)
    assert r.mechanism == pp.LaplaceMechanism(2.0) and any("L1" in n for n in r.notes)
    assert pp.certify(r.mechanism, pp.pure_dp(lap.map(1.0))).holds


def test_integer_laplace_and_geometric_map_to_geometric() -> None:
    for meas in (dp.m.make_laplace(*INT, scale=2.0), dp.m.make_geometric(*INT, scale=2.0)):
        mech = from_opendp(meas)
        assert mech == pp.GeometricMechanism(2.0)
        cert = pp.certify(mech, pp.pure_dp(meas.map(1)))
        assert cert.holds and cert.kappa == pytest.approx(meas.map(1), rel=1e-12)
    with pytest.raises(pp.UnsupportedCombinationError, match="sensitivity 2"):
        from_opendp(dp.m.make_geometric(*INT, scale=2.0), d_in=2)


def test_chain_sensitivity_from_transformation_map() -> None:
    t = dp.t.make_sum(dp.vector_domain(dp.atom_domain(bounds=(0.0, 5.0))), dp.symmetric_distance())
    meas = t >> dp.m.then_laplace(scale=10.0)
    r = read_opendp(meas)
    assert r.sensitivity == t.map(1) and r.scale == 10.0
    assert r.mechanism == pp.LaplaceMechanism(10.0 / t.map(1))
    assert pp.certify(r.mechanism, pp.pure_dp(meas.map(1))).holds
    assert from_opendp(meas, d_in=2) == pp.LaplaceMechanism(10.0 / t.map(2))


def test_context_queries_and_measure_conversions() -> None:
    domain = dp.vector_domain(dp.atom_domain(bounds=(0.0, 5.0)))
    unit = dp.unit_of(contributions=1)
    ctx = dp.Context.compositor(
        data=[1.0, 2.0], privacy_unit=unit, privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=2, domain=domain,
    )  # fmt: skip
    q = ctx.query().sum().laplace()
    mech = from_opendp(q)
    assert isinstance(mech, pp.LaplaceMechanism)
    assert pp.certify(mech, pp.pure_dp(q.resolve().map(1))).holds
    ctx2 = dp.Context.compositor(
        data=[1.0, 2.0], privacy_unit=unit, privacy_loss=dp.loss_of(epsilon=1.0, delta=1e-6),
        split_evenly_over=2, domain=domain,
    )  # fmt: skip
    r = read_opendp(ctx2.query().sum().gaussian())
    assert isinstance(r.mechanism, pp.GaussianMechanism)
    assert any("make_fix_delta" in n for n in r.notes)
    lap = dp.m.make_laplace(*FLOAT, scale=2.0)
    for wrapped in (dp.c.make_approximate(lap), dp.c.make_pureDP_to_zCDP(lap)):
        assert from_opendp(wrapped) == pp.LaplaceMechanism(2.0)


def test_boolean_randomized_response() -> None:
    meas = dp.m.make_randomized_response_bool(0.75)
    mech = from_opendp(meas)
    assert isinstance(mech, pp.RandomizedResponse)
    np.testing.assert_allclose(mech.matrix, [[0.75, 0.25], [0.25, 0.75]], atol=1e-15)
    assert pp.certify(mech, pp.pure_dp(meas.map(1))).holds


def test_opendp_what_does_not_map() -> None:
    cases = [
        (dp.m.make_gaussian(*INT, scale=2.0), "discrete Gaussian"),
        (dp.m.make_laplace(*FLOAT, scale=2.0, k=-10), "granularity"),
        (dp.m.make_randomized_response(["a", "b", "c"], 0.5), "make_randomized_response"),
        (dp.m.make_randomized_response_bool(1.0), "prob"),
    ]
    for meas, needle in cases:
        with pytest.raises(pp.UnsupportedCombinationError, match=needle):
            from_opendp(meas)
    with pytest.raises(pp.ValidationError, match="measurement must be"):
        from_opendp(pp.LaplaceMechanism(1.0))
    with pytest.raises(pp.ValidationError, match="positive"):
        from_opendp(dp.m.make_laplace(*FLOAT, scale=2.0), d_in=0.0)


# --- dp_accounting --------------------------------------------------------------------------


def test_dp_events_map_to_mechanisms() -> None:
    assert from_dp_event(dp_accounting.LaplaceDpEvent(2.0)) == pp.LaplaceMechanism(2.0)
    assert from_dp_event(dp_accounting.GaussianDpEvent(1.5)) == pp.GaussianMechanism(1.5)
    geo = from_dp_event(dpe.DiscreteLaplaceDpEvent(0.5, 1))
    assert geo == pp.GeometricMechanism(2.0)


@pytest.mark.parametrize(("p", "k"), [(0.5, 2), (0.3, 4), (0.9, 3)])
def test_randomized_response_event(p: float, k: int) -> None:
    mech = from_dp_event(dp_accounting.RandomizedResponseDpEvent(p, k))
    # dp_accounting's description: keep w.p. 1 - p, else uniform over all k buckets
    expected = np.full((k, k), p / k) + np.eye(k) * (1 - p)
    np.testing.assert_allclose(mech.matrix, expected, rtol=1e-12)
    eps0 = math.log((1 - p + p / k) / (p / k))
    assert pp.certify(mech, pp.pure_dp(10.0)).kappa == pytest.approx(eps0, rel=1e-12)
    oracle = privacy_loss_distribution.from_randomized_response(
        p, k, value_discretization_interval=1e-4
    )
    assert oracle.get_epsilon_for_delta(1e-12) == pytest.approx(eps0, abs=1e-3)
    identity = from_dp_event(dp_accounting.RandomizedResponseDpEvent(0.0, 3))
    np.testing.assert_array_equal(identity.matrix, np.eye(3))


@pytest.mark.parametrize("b", [0.5, 1.0, 2.0])
def test_laplace_event_pure_dp_matches_pld_accountant(b: float) -> None:
    mech = from_dp_event(dp_accounting.LaplaceDpEvent(b))
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.LaplaceDpEvent(b))
    assert pp.certify(mech, pp.pure_dp(10.0)).kappa == pytest.approx(1 / b, rel=1e-12)
    assert acc.get_epsilon(1e-12) == pytest.approx(1 / b, abs=1e-3)
    grid = [0.1, 0.5 / b]
    for eps, adp_eps in zip(grid, adp_delta(dp_accounting.LaplaceDpEvent(b), grid), strict=True):
        assert pp_delta(mech, eps) >= adp_eps


def test_compositions_map_to_composed_release() -> None:
    g, lap = dp_accounting.GaussianDpEvent(2.0), dp_accounting.LaplaceDpEvent(1.0)
    m = from_dp_event(dp_accounting.SelfComposedDpEvent(g, 5))
    assert m == ComposedRelease.repeat(pp.GaussianMechanism(2.0), 5)
    nested = dp_accounting.ComposedDpEvent(
        [dp_accounting.SelfComposedDpEvent(lap, 3), g, dp_accounting.NoOpDpEvent()]
    )
    m2 = from_dp_event(nested)
    assert m2 == ComposedRelease([pp.LaplaceMechanism(1.0), pp.GaussianMechanism(2.0)], [3, 1])
    assert m2.k == 4


def test_composed_events_pp_tail_dominates_dp_accounting() -> None:
    """k-fold Gaussian: PP's δ(ε) (through the composition certifier) is the closed form with
    σ/√k and is never below dp_accounting's approximate-DP δ(ε) of the same event."""
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 4)
    mech = from_dp_event(event)
    grid = [0.25, 0.5, 1.0]
    for eps, adp_eps in zip(grid, adp_delta(event, grid), strict=True):
        pdp = pp_delta(mech, eps)
        assert pdp == pytest.approx(stats.norm.cdf(0.5 / 1.0 - eps * 1.0), abs=1e-9)
        assert pdp >= adp_eps


@pytest.mark.parametrize(
    "event",
    [
        dp_accounting.LaplaceDpEvent(2.0),
        dp_accounting.GaussianDpEvent(0.7),
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 5),
        dp_accounting.ComposedDpEvent(
            [
                dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(1.0), 3),
                dp_accounting.GaussianDpEvent(2.0),
            ]
        ),
    ],
)
def test_dp_event_round_trip(event: dp_accounting.DpEvent) -> None:
    assert to_dp_event(from_dp_event(event)) == event
    mech = from_dp_event(event)
    assert from_dp_event(to_dp_event(mech)) == mech


def test_round_trip_of_finite_and_geometric_parameters() -> None:
    rr = pp.RandomizedResponse(1.3, 4)
    back = from_dp_event(to_dp_event(rr))
    np.testing.assert_allclose(back.matrix, rr.matrix, rtol=1e-12)
    geo = from_dp_event(to_dp_event(pp.GeometricMechanism(3.0)))
    assert geo.scale == pytest.approx(3.0, rel=1e-15)
    joint = to_dp_event(pp.Composition(pp.LaplaceMechanism(1.0), pp.LaplaceMechanism(1.0)))
    assert joint == dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(1.0), 2)


def test_dp_events_that_do_not_map() -> None:
    g = dp_accounting.GaussianDpEvent(1.0)
    cases = [
        (dp_accounting.PoissonSampledDpEvent(0.1, g), "PoissonSampledDpEvent.*subsampling"),
        (dp_accounting.SampledWithoutReplacementDpEvent(100, 10, g), "subsampling"),
        (dp_accounting.ZCDpEvent(0.5), "ZCDpEvent"),
        (dp_accounting.NonPrivateDpEvent(), "NonPrivateDpEvent"),
        (dp_accounting.ComposedDpEvent([g, dp_accounting.PoissonSampledDpEvent(0.1, g)]), "Poi"),
        (dp_accounting.NoOpDpEvent(), "releases nothing"),
        (dp_accounting.SelfComposedDpEvent(g, 0), "releases nothing"),
        (dpe.DiscreteLaplaceDpEvent(0.5, 2), "sensitivity 2"),
    ]
    for event, needle in cases:
        with pytest.raises(pp.UnsupportedCombinationError, match=needle):
            from_dp_event(event)
    with pytest.raises(pp.ValidationError, match="DpEvent"):
        from_dp_event(pp.LaplaceMechanism(1.0))
    with pytest.raises(pp.UnsupportedCombinationError, match="FiniteKernel"):
        to_dp_event(pp.FiniteKernel([[0.5, 0.5], [0.5, 0.5]]))


# --- missing packages -----------------------------------------------------------------------


def test_missing_opendp_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    meas = dp.m.make_laplace(*FLOAT, scale=1.0)
    monkeypatch.setitem(sys.modules, "opendp.mod", None)
    with pytest.raises(MissingDependencyError, match="'opendp'") as info:
        from_opendp(meas)
    assert isinstance(info.value, ImportError) and isinstance(info.value, pp.PersuasiveError)


def test_missing_dp_accounting_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    event = dp_accounting.LaplaceDpEvent(1.0)
    monkeypatch.setitem(sys.modules, "dp_accounting", None)
    monkeypatch.setitem(sys.modules, "dp_accounting.dp_event", None)
    with pytest.raises(MissingDependencyError, match="'dp-accounting'"):
        from_dp_event(event)
    with pytest.raises(MissingDependencyError, match="pip install dp-accounting"):
        to_dp_event(pp.LaplaceMechanism(1.0))


def test_core_and_adapters_import_without_the_optional_packages() -> None:
    code = (
        "import sys; sys.modules['opendp'] = None; sys.modules['dp_accounting'] = None\n"
        "import persuasive, persuasive.adapters, persuasive.qif\n"
        "print(persuasive.certify(persuasive.LaplaceMechanism(1.0), persuasive.pure_dp(1.0)).holds)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
