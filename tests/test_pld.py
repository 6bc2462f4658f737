"""Privacy-loss distributions: single mechanisms, FFT composition, oracles (issue 6)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from oracles import Bracket, laplace_part
from scipy import stats

import persuasive as pp
from persuasive import pld
from persuasive.certify import prop6

PDP = pp.probabilistic_dp

EPS = np.linspace(0.0, 3.0, 31)


def _in_bracket(pmf_or_pld, eps, exact, atol=1e-12):
    lo, hi = pmf_or_pld.bracket(eps)
    assert np.all(lo <= exact + atol) and np.all(exact <= hi + atol)
    return hi - lo


@pytest.mark.parametrize(
    ("mech", "closed"),
    [
        (pp.GaussianMechanism(1.3), lambda e: prop6.gaussian_delta(1.3, e)),
        (pp.LaplaceMechanism(0.7), lambda e: prop6.laplace_delta(0.7, e)),
        (pp.GeometricMechanism(0.9), lambda e: prop6.geometric_delta(0.9, e)),
        (pp.RandomizedResponse(1.5, 3), lambda e: prop6.rr_delta(1.5, 3, e)),
    ],
)
def test_single_mechanism_tail_matches_prop6(mech, closed):
    pmfs = pld.mechanism_pmfs(mech, step=1e-3)
    exact = np.array([closed(e) for e in EPS])
    worst = np.max([p.tail(EPS) for p in pmfs.values()], axis=0)
    assert np.all(worst >= exact - 1e-12)
    for p in pmfs.values():
        lo, _ = p.bracket(EPS)
        assert np.all(lo <= exact + 1e-12)


def test_pessimistic_rounding_exact_on_grid():
    # P[ceil(l) > j step] = P[l > j step]: on grid points the Gaussian tail is exact
    p = pld.gaussian_pmf(1.0, 1e-3)
    grid = np.array([0.0, 0.5, 1.0, 2.0])
    assert np.allclose(p.tail(grid), stats.norm.cdf(0.5 - grid), atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("k", [2, 10, 100])
def test_gaussian_k_fold_against_closed_form(k):
    sigma = np.sqrt(k) * 1.2  # k-fold = one Gaussian with sigma / sqrt(k) = 1.2
    c = pld.compose([(pp.GaussianMechanism(sigma), k)], step=1e-3)
    exact = stats.norm.cdf(0.5 / 1.2 - EPS * 1.2)
    width = _in_bracket(c, EPS, exact)
    assert np.max(width) < 0.5 * k * 1e-3 + 1e-9
    assert c.sigma == pytest.approx(1.2)
    # hockey stick: upper bound on the exact Gaussian value
    mu = 1 / 1.2
    hs = stats.norm.cdf(-EPS / mu + mu / 2) - np.exp(EPS) * stats.norm.cdf(-EPS / mu - mu / 2)
    ours = c.hockey_stick(EPS)
    assert np.all(ours >= hs - 1e-12) and np.max(ours - hs) < k * 1e-3


def test_convolve_small_exact():
    rr = pld.LossPMF(1.0, -1, np.array([0.25, 0.0, 0.75]), inf_mass=0.0)
    out = pld.convolve([(rr, 3)])
    ref = np.convolve(np.convolve(rr.masses, rr.masses), rr.masses)
    assert out.offset == -3 and np.allclose(out.masses, ref, atol=1e-15)
    inf = pld.LossPMF(1.0, 0, np.array([0.9]), inf_mass=0.1)
    both = pld.convolve([(inf, 2), (rr, 1)])
    assert both.inf_mass == pytest.approx(1 - 0.9**2)
    assert both.masses.sum() + both.inf_mass == pytest.approx(1.0)


def test_truncation_goes_to_infinity():
    c = pld.compose([(pp.LaplaceMechanism(1.0), 200)], step=1e-3)
    p = c.pmfs[(0, 1)]
    assert 0 < p.truncated <= 1e-14
    assert p.masses.sum() + p.truncated >= 1 - 1e-9
    assert p.tail(1e6)[0] >= p.truncated


def test_finite_kernel_infinite_atom_and_pairs():
    mat = np.array([[0.5, 0.5, 0.0], [0.2, 0.5, 0.3], [0.0, 0.4, 0.6]])
    pmfs = pld.mechanism_pmfs(pp.FiniteKernel(mat), step=1e-3)
    assert set(pmfs) == {(0, 1), (1, 0), (1, 2), (2, 1)}
    assert pmfs[(1, 0)].inf_mass == pytest.approx(0.3)  # m(1, 2) > 0 = m(0, 2)
    assert pmfs[(0, 1)].inf_mass == 0.0
    # 2-fold: tail at a huge epsilon = P[some +inf] = 1 - 0.7^2 for the pair (1, 0)
    c = pld.compose([(pp.FiniteKernel(mat), 2)], step=1e-3)
    assert c.tail(1e3)[0] == pytest.approx(1 - 0.7**2)
    # enumeration oracle for the 2-fold product kernel
    prod = np.einsum("it,iu->itu", mat, mat).reshape(3, -1)
    pairs = np.array([[0, 1], [1, 0], [1, 2], [2, 1]])
    for e in (0.0, 0.4, 1.0, 2.0):
        exact = prop6.finite_delta(prod, pairs, e)
        lo, hi = c.bracket(e)
        assert lo[0] - 1e-12 <= exact <= hi[0] + 1e-12


def _mc_loss(mech, size, rng, x=0.0, xp=1.0):
    t = np.asarray(mech.sample(np.array([x]), size, rng), dtype=np.float64)
    return mech.log_likelihood(np.array([x]), t) - mech.log_likelihood(np.array([xp]), t)


def test_heterogeneous_tail_against_monte_carlo():
    rng = np.random.default_rng(6)
    parts = [(pp.LaplaceMechanism(2.0), 3), (pp.GaussianMechanism(1.5), 2)]
    n = 200_000
    loss = sum(_mc_loss(m, n, rng) for m, k in parts for _ in range(k))
    c = pld.compose(parts, step=1e-3)
    for e in (0.0, 0.5, 1.0, 2.0, 3.0):
        hits = int(np.sum(loss > e))
        ci = stats.binomtest(hits, n).proportion_ci(confidence_level=1 - 1e-6)
        lo, hi = c.bracket(e)
        assert hi[0] >= ci.low and lo[0] <= ci.high


def _dp(mech, pessimistic, k, step):
    from dp_accounting.pld import privacy_loss_distribution as dpl

    make = dpl.from_laplace_mechanism if mech == "laplace" else dpl.from_gaussian_mechanism
    kw = {} if pessimistic else {"use_connect_dots": False}
    return make(
        2.0, pessimistic_estimate=pessimistic, value_discretization_interval=step, **kw
    ).self_compose(k)


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_hockey_stick_against_dp_accounting(kind):
    logging.getLogger().setLevel(logging.ERROR)
    k, step = 10, 1e-3
    m = pp.LaplaceMechanism(2.0) if kind == "laplace" else pp.GaussianMechanism(2.0)
    c = pld.compose([(m, k)], step=step)
    p = c.pmfs[(0, 1)]
    ours = c.hockey_stick(EPS)
    ours_low = p.hockey_stick(EPS + p.rounds * p.step) - p.truncated
    dp_hi = np.asarray(_dp(kind, True, k, step).get_delta_for_epsilon(EPS))
    dp_lo = np.asarray(_dp(kind, False, k, step).get_delta_for_epsilon(EPS))
    # both are brackets of the same exact value: they must intersect
    assert np.all(ours >= dp_lo - 1e-12) and np.all(dp_hi >= ours_low - 1e-12)
    assert np.max(np.abs(ours - dp_hi)) < k * step


def test_renyi_composition_and_conversion():
    g = pp.GaussianMechanism(2.0)
    assert pld.composed_renyi([(g, 4)], 5.0) == pytest.approx(4 * 5 / 8)
    rr = pp.RandomizedResponse(1.0)
    d1 = pld.renyi_divergence(rr, 2.0)[(0, 1)]
    mixed = [(rr, 3), (pp.LaplaceMechanism(1.0), 2)]
    lap = pld.renyi_divergence(pp.LaplaceMechanism(1.0), 2.0)[(0, 1)]
    assert pld.composed_renyi(mixed, 2.0) == pytest.approx(3 * d1 + 2 * lap)
    bound = pld.pdp_tail_from_renyi(mixed, EPS)
    lo, _ = pld.compose(mixed, step=1e-3).bracket(EPS)
    assert np.all(bound >= lo - 1e-12)
    assert pld.compose(mixed, step=1e-3).pmfs[(0, 1)].mean() >= pld.composed_renyi(mixed, 1.0)


def test_calibration_gaussian_exact_and_monotone():
    scales = []
    for kappa in (0.5, 1.0, 2.0, 4.0):
        c = pld.calibrate_noise("gaussian", 50, kappa, 1e-6)
        assert c.exact and c.scale > 0 and np.isfinite(c.scale)
        m = pp.ComposedRelease.repeat(pp.GaussianMechanism(c.scale), 50)
        assert pp.certify(m, pp.probabilistic_dp(kappa, 1e-6)).kappa == pytest.approx(kappa)
        scales.append(c.scale)
    assert np.all(np.diff(scales) < 0)


def _additive_laplace(b, k, delta):
    """k times Prop 6's kappa(delta / k) of one Laplace(b) release (docs/math.md §6)."""
    d = delta / k
    if d < 0.5:
        return k / b
    return k * max(0.0, 1.0 / b + 2.0 * np.log(2.0 * (1.0 - d)))


def _grid_kappa(b, k, delta, h, snap=0.0):
    """kappa(delta) of the k-fold Laplace(b) loss rounded up onto h Z (independent lattice)."""
    return Bracket([[(laplace_part(b), k)]], h, snap).kappa(delta)[1]


@pytest.mark.parametrize(
    ("k", "kappa", "delta"), [(8, 2.00005, 1e-3), (20, 5.00005, 1e-6), (50, 3.00005, 1e-5)]
)
def test_calibration_laplace_is_the_smallest_certified_scale(k, kappa, delta):
    # targets between grid points of the certificate (1e-4), so no tie decides the result
    c = pld.calibrate_noise("laplace", k, kappa, delta)
    lo, hi = c.bracket
    assert 0 < lo < hi == c.scale and hi / lo <= 1 + pld.calibrate.CALIBRATION_RTOL + 1e-12
    assert c.achieved_kappa <= kappa

    def cert(b):
        return pp.certify(pp.ComposedRelease.repeat(pp.LaplaceMechanism(b), k), PDP(kappa, delta))

    assert cert(hi).holds and cert(hi).kappa == c.achieved_kappa
    smaller = hi / (1 + pld.calibrate.CALIBRATION_RTOL)
    for b in (lo, smaller):
        assert not cert(b).holds
    # independently: the composed Laplace tail on the certificate's own grid (rounded up,
    # lattice convolution) and Prop 3's closed form: the certificate's kappa is their minimum
    for b, certified in ((hi, True), (lo, False), (smaller, False)):
        grid = min(_grid_kappa(b, k, delta, pld.STEP), _additive_laplace(b, k, delta))
        assert (grid <= kappa) == certified, (b, grid, kappa)
    # and the target is truly met at the returned scale: the upper bound of a finer lattice
    # aligned with the atoms 1/b (exact up to float error, allowed for by 1e-9)
    m = math.ceil(8 / (hi * pld.STEP))
    assert _grid_kappa(hi, k, delta, 1.0 / hi / m, snap=1e-6) <= kappa + 1e-9


def test_calibration_laplace_monotone_and_beats_pure_dp():
    scales = []
    for kappa in (1.00005, 2.00005, 4.00005):
        c = pld.calibrate_noise("laplace", 20, kappa, 1e-6)
        scales.append(c.scale)
        assert c.scale <= 20 / kappa * (1 + 1e-12)  # never above the pure-DP scale k / kappa
    assert np.all(np.diff(scales) < 0)
    # the certificate's kappa is non-increasing in the scale (what the bisection relies on)
    ks = [pld.calibrate.certified_laplace_kappa(b, 20, 1e-6) for b in np.geomspace(2, 20, 25)]
    assert np.all(np.diff(ks) <= 0)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: pp.ComposedRelease.repeat(pp.GaussianMechanism(1.0), 0), "k"),
        (lambda: pld.compose([(pp.GaussianMechanism(1.0), 0)]), "k"),
        (lambda: pld.laplace_pmf(-1.0), "scale"),
        (lambda: pld.calibrate_noise("laplace", 3, 1.0, 0.1, step=-1.0), "step"),
        (lambda: pld.calibrate_noise("gaussian", 0, 1.0, 0.1), "k"),
        (lambda: pld.gaussian_pmf(1.0).tail([0.0, np.nan]), "eps"),
        (lambda: pld.compose(pp.LaplaceMechanism(1.0)).hockey_stick([np.nan]), "eps"),
        (lambda: pld.calibrate_noise("gaussian", 3, 1.0, 0.0), "unreachable"),
        (lambda: pld.calibrate_noise("gaussian", 3, 0.0, 0.2), "unreachable"),
        (lambda: pld.calibrate_noise("uniform", 3, 1.0, 0.1), "kind"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(pp.ValidationError, match=name):
        call()
