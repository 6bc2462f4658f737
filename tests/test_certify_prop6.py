"""Prop 6 certificates (PDP = PP with the log score) against independent oracles."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_mechanism as plm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

import persuasive as pp
from persuasive.certify import find_theorem

PDP = pp.probabilistic_dp


def delta_of(mech: pp.Mechanism, eps: float, priors: pp.NeighbourPriors | None = None) -> float:
    d = pp.pure_dp(eps, priors)
    return find_theorem(mech, d).delta_at(mech, d, eps)


# docs/math.md §6 table (independent reference computation)
TABLE = [
    (pp.GaussianMechanism(1.0), 1.0, 0.30853754),
    (pp.GaussianMechanism(1.0), 2.0, 0.06680720),
    (pp.GaussianMechanism(2.0), 0.5, 0.22662735),
    (pp.LaplaceMechanism(1.0), 0.5, 0.61059961),
    (pp.LaplaceMechanism(1.0), 0.9, 0.52438529),
    (pp.LaplaceMechanism(1.0), 1.0, 0.0),
    (pp.RandomizedResponse(1.0, 2), 0.5, 0.73105858),
    (pp.RandomizedResponse(2.0, 4), 1.0, 0.71123459),
]


@pytest.mark.parametrize(("mech", "eps", "expected"), TABLE)
def test_math_table(mech, eps, expected):
    assert delta_of(mech, eps) == pytest.approx(expected, abs=1e-8)


@pytest.mark.parametrize(("mech", "eps", "expected"), TABLE)
def test_kappa_inverts_table(mech, eps, expected):
    if expected == 0.0:
        return
    # the table is rounded to 8 digits: just above it kappa <= eps, just below kappa >= eps
    cert = pp.certify(mech, PDP(eps, expected + 1e-8))
    assert cert.exact and cert.basis == "Prop 6 (Bon et al. 2026)"
    assert cert.kappa <= eps and cert.holds
    assert pp.certify(mech, PDP(eps, expected - 1e-8)).kappa >= eps - 1e-12


def test_gaussian_against_dp_accounting_tail():
    # PDP delta(eps) = P_{mu_upper}[loss > eps]; the loss is decreasing in the noise value.
    for sigma in (0.5, 1.0, 2.0, 3.0):
        pl = plm.GaussianPrivacyLoss(standard_deviation=sigma, sensitivity=1.0)
        for eps in (0.0, 0.1, 0.5, 1.0, 2.0):
            ref = pl.mu_upper_cdf(pl.inverse_privacy_loss(eps))
            got = delta_of(pp.GaussianMechanism(sigma), eps)
            assert got == pytest.approx(ref, rel=1e-9, abs=1e-12)
            # ADP delta never exceeds the PDP delta
            assert pl.get_delta_for_epsilon(eps) <= got + 1e-12


def test_laplace_against_dp_accounting_tail():
    for b in (0.5, 1.0, 2.0):
        pl = plm.LaplacePrivacyLoss(b, sensitivity=1.0)
        for eps in (0.0, 0.2, 0.4, 0.9 / b):
            ref = pl.mu_upper_cdf(pl.inverse_privacy_loss(eps))
            assert delta_of(pp.LaplaceMechanism(b), eps) == pytest.approx(ref, abs=1e-10)


def test_gaussian_monte_carlo():
    rng = np.random.default_rng(1)
    sigma, eps, n = 1.3, 0.4, 400_000
    t = rng.normal(0.0, sigma, size=n)
    loss = stats.norm.logpdf(t, 0.0, sigma) - stats.norm.logpdf(t, 1.0, sigma)
    k = int(np.sum(loss > eps))
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9999)
    assert ci.low <= delta_of(pp.GaussianMechanism(sigma), eps) <= ci.high


def test_geometric_by_enumeration():
    for b in (0.5, 1.0, 3.0):
        a = math.exp(-1.0 / b)
        ks = np.arange(-400, 401)
        pmf = (1 - a) / (1 + a) * a ** np.abs(ks)  # T - x for x = 0
        steps = np.abs(ks - 1) - np.abs(ks)  # the loss against x' = 1 is steps / b
        for eps in (0.0, 0.5 / b, 0.99 / b, 1.0 / b, 2.0 / b):
            # the loss compared with eps in exact (rational) arithmetic: fl(1/3) < 1/3, so at
            # eps = fl(1/b) the atom 1/b is a failure for b = 3 but not for b = 0.5 or 1
            fails = [Fraction(int(s)) / Fraction(b) > Fraction(eps) for s in steps]
            ref = float(pmf[np.array(fails)].sum())
            assert delta_of(pp.GeometricMechanism(b), eps) == pytest.approx(ref, abs=1e-12)


def _ref_delta(matrix, pairs, eps):
    worst = 0.0
    for i, j in pairs:
        tot = 0.0
        for t in range(matrix.shape[1]):
            p, q = matrix[i, t], matrix[j, t]
            if p > 0 and (q == 0 or math.log(p / q) > eps):
                tot += p
        worst = max(worst, tot)
    return worst


def _random_kernel(seed, k=4, j=5):
    rng = np.random.default_rng(seed)
    m = rng.random((k, j)) * (rng.random((k, j)) > 0.2)
    m[:, 0] += 0.01
    return m / m.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(8))
def test_finite_kernel_delta_and_kappa(seed):
    m = _random_kernel(seed)
    pairs = [(i, i + 1) for i in range(3)] + [(i + 1, i) for i in range(3)]
    mech = pp.FiniteKernel(m)
    for eps in (0.0, 0.3, 1.0, 2.5):
        assert delta_of(mech, eps) == pytest.approx(_ref_delta(m, pairs, eps), abs=1e-12)
    for delta in (0.0, 0.05, 0.2, 0.5):
        k = pp.certify(mech, PDP(1.0, delta)).kappa
        if math.isinf(k):
            assert _ref_delta(m, pairs, 1e12) > delta
            continue
        # ties l = k are decided in floating point, so check just above and below k
        assert _ref_delta(m, pairs, k + 1e-9) <= delta + 1e-12  # k is valid
        if k > 0:
            assert _ref_delta(m, pairs, k - 1e-9) > delta  # and minimal


def test_explicit_pairs():
    # (the comparison of anchored = True with the default was vacuous: certify never reads
    # `anchored`; the two classes are compared member by member in
    # tests/test_properties.py::test_anchored_and_unanchored_neighbours_agree)
    m = _random_kernel(3)
    h = pp.NeighbourPriors(pairs=[(0, 3)])
    assert delta_of(pp.FiniteKernel(m), 0.2, h) == pytest.approx(
        _ref_delta(m, [(0, 3), (3, 0)], 0.2)
    )


def _pp_delta_gaussian(sigma, eps, q=1e-9):
    # P_x[Delta_q > eps] with x = 0, x' = 1 through relative_loss; Delta_q is decreasing in t
    prior = pp.TwoPointPrior(0.0, 1.0, q)
    mech = pp.GaussianMechanism(sigma)

    def f(t):
        return pp.relative_loss(pp.LogScore(), prior, mech, [0.0], np.array([t])) - eps

    t_star = optimize.brentq(f, -50.0, 0.5 - eps * sigma**2 + 1e-6, xtol=1e-14)
    return stats.norm.cdf(t_star / sigma)


@pytest.mark.parametrize(("sigma", "eps"), [(1.0, 1.0), (1.0, 2.0), (2.0, 0.5), (0.7, 0.3)])
def test_pp_two_point_equals_pdp_gaussian(sigma, eps):
    assert _pp_delta_gaussian(sigma, eps) == pytest.approx(
        delta_of(pp.GaussianMechanism(sigma), eps), abs=1e-7
    )


@pytest.mark.parametrize("seed", range(4))
def test_pp_two_point_equals_pdp_finite(seed):
    m = _random_kernel(seed)
    mech = pp.FiniteKernel(m)
    for eps in (0.1, 0.7):
        worst = 0.0
        for x, xp in [(i, i + 1) for i in range(3)] + [(i + 1, i) for i in range(3)]:
            prior = pp.TwoPointPrior(x, xp, 1e-9)
            outs, probs = mech.output_distribution([x])
            lo = [pp.relative_loss(pp.LogScore(), prior, mech, [x], t) for t in outs]
            worst = max(worst, float(np.sum(probs[np.array(lo) > eps])))
        assert worst == pytest.approx(delta_of(mech, eps), abs=1e-12)


def test_edge_cases():
    assert pp.certify(pp.GaussianMechanism(1.0), pp.pure_dp(5.0)).kappa == math.inf
    assert pp.certify(pp.LaplaceMechanism(0.5), pp.pure_dp(2.0)).kappa == 2.0
    assert pp.certify(pp.GeometricMechanism(0.5), pp.pure_dp(2.0)).kappa == 2.0
    assert pp.certify(pp.RandomizedResponse(0.0, 3), pp.pure_dp(0.0)).kappa == 0.0
    big = pp.certify(pp.GaussianMechanism(1.0), PDP(1.0, 0.9))
    assert big.kappa == 0.0 and big.holds
    cert = pp.certify(pp.ExactMean(), pp.pure_dp(10.0))
    assert cert.kappa == math.inf and not cert.holds
    assert pp.certify(pp.LinearStatistic([[0.0, 0.0]]), pp.pure_dp(0.0)).kappa == 0.0


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(
        [
            pp.GaussianMechanism(0.8),
            pp.LaplaceMechanism(1.5),
            pp.GeometricMechanism(0.7),
            pp.FiniteKernel(_random_kernel(5)),
        ]
    ),
    st.lists(st.floats(0.0, 0.99), min_size=2, max_size=6),
)
def test_kappa_non_increasing_in_delta(mech, deltas):
    ds = sorted(deltas)
    ks = [pp.certify(mech, PDP(1.0, d)).kappa for d in ds]
    assert all(a >= b for a, b in itertools.pairwise(ks))


def test_bad_inputs():
    with pytest.raises(pp.ValidationError, match="mechanism"):
        pp.certify("gauss", pp.pure_dp(1.0))
    with pytest.raises(pp.ValidationError, match="definition"):
        pp.certify(pp.GaussianMechanism(1.0), {"kappa": 1})
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.NeighbourPriors(), 1.0)
    with pytest.raises(pp.UnsupportedCombinationError) as err:
        pp.certify(pp.GaussianMechanism(1.0), d)
    msg = str(err.value)
    assert "LogScore" in msg and "GaussianMeanClass" in msg and "Prop 6" in msg
    with pytest.raises(pp.UnsupportedCombinationError, match="only 2 inputs"):
        pp.certify(pp.RandomizedResponse(1.0), pp.pure_dp(1.0, pp.NeighbourPriors([(0, 5)])))
    with pytest.raises(pp.UnsupportedCombinationError, match="explicit pairs"):
        pp.certify(pp.GaussianMechanism(1.0), pp.pure_dp(1.0, pp.NeighbourPriors([(0, 1)])))
