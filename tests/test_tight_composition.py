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


def test_pure_dp_composition_is_exact_here():
    # δ = 0: binary Compositions and k-fold releases alike are certified here, exactly
    binary = pp.Composition(pp.RandomizedResponse(1.0), pp.RandomizedResponse(1.0))
    assert TightComposition().supports(binary, pp.pure_dp(3.0)) is None
    m = pp.ComposedRelease.repeat(pp.RandomizedResponse(1.0), 3)
    assert TightComposition().supports(m, pp.pure_dp(3.0)) is None
    cert = pp.certify(m, pp.pure_dp(3.0))
    assert cert.kappa == 3.0 and cert.exact and cert.holds


def _brute_force_pure(matrices, counts, pairs):
    """κ(0) by enumerating every output tuple of the composition and every neighbour pair:
    the largest summed loss log m(x, t) - log m(x', t) over outputs x can produce."""
    import itertools

    best = 0.0
    for a, b in pairs:
        outs = [range(m.shape[1]) for m, c in zip(matrices, counts, strict=True) for _ in range(c)]
        mats = [m for m, c in zip(matrices, counts, strict=True) for _ in range(c)]
        for t in itertools.product(*outs):
            px = np.prod([m[a, j] for m, j in zip(mats, t, strict=True)])
            if px == 0:
                continue
            pxp = np.prod([m[b, j] for m, j in zip(mats, t, strict=True)])
            best = max(best, np.inf if pxp == 0 else float(np.log(px) - np.log(pxp)))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_pure_dp_of_finite_kernels_against_brute_force(seed):
    # two (or three) random 4-row kernels: the supremum over pairs of the summed losses at the
    # same pair, not the sum of each part's supremum (Prop 3's additive value is larger)
    rng = np.random.default_rng(seed)
    mats = [rng.dirichlet(np.ones(4), size=4) for _ in range(2 + seed % 2)]
    counts = [1 + (seed + i) % 2 for i in range(len(mats))]
    mech = pp.ComposedRelease([pp.FiniteKernel(m) for m in mats], counts)
    pairs = [(i, j) for i in range(4) for j in range(4) if abs(i - j) == 1]
    exact = _brute_force_pure(mats, counts, pairs)
    cert = pp.certify(mech, pp.pure_dp(100.0))
    assert cert.exact and cert.basis == BASIS
    assert exact <= cert.kappa <= exact + 1e-12
    additive = sum(
        c * max(np.max(np.log(m[a]) - np.log(m[b])) for a, b in pairs)
        for m, c in zip(mats, counts, strict=True)
    )
    assert cert.kappa <= additive + 1e-12
    if seed < 2:  # the issue's case: the parts' worst pairs differ
        assert cert.kappa < additive - 0.1
    # the certificate at delta = 0 is never above its own value at a tiny delta plus the grid
    small = pp.certify(mech, PDP(100.0, 1e-12)).kappa
    assert cert.kappa <= small + 1e-9
    # binary Composition of two kernels: the same value
    if len(mats) == 2 and counts == [1, 1]:
        comp = pp.Composition(pp.FiniteKernel(mats[0]), pp.FiniteKernel(mats[1]))
        assert pp.certify(comp, pp.pure_dp(100.0)).kappa == pytest.approx(exact, abs=1e-12)


def test_pure_dp_with_explicit_pairs_and_infinite_loss():
    # explicit pairs: only (0, 2) neighbours; the second kernel gives an infinite loss at (1, 0)
    a = np.array([[0.6, 0.4], [0.3, 0.7], [0.5, 0.5]])
    b = np.array([[0.0, 1.0], [0.5, 0.5], [0.0, 1.0]])
    priors = pp.NeighbourPriors(pairs=[(0, 2)])
    mech = pp.Composition(pp.FiniteKernel(a), pp.FiniteKernel(b))
    exact = _brute_force_pure([a, b], [1, 1], [(0, 2), (2, 0)])
    assert np.isfinite(exact)
    cert = pp.certify(mech, pp.pure_dp(10.0, priors))
    assert exact <= cert.kappa <= exact + 1e-12
    default = pp.certify(mech, pp.pure_dp(10.0))  # |i - j| = 1: (1, 0) produces t2 = 0
    assert default.kappa == np.inf and not default.holds


def test_pure_dp_mixed_noise_and_kernel():
    # a Laplace part adds k/b at every pair; the kernel's worst pair decides the rest
    a = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.2, 0.2, 0.6]])
    mech = pp.ComposedRelease([pp.FiniteKernel(a), pp.LaplaceMechanism(4.0)], [2, 3])
    pairs = [(0, 1), (1, 0), (1, 2), (2, 1)]
    exact = _brute_force_pure([a], [2], pairs) + 3 / 4.0
    cert = pp.certify(mech, pp.pure_dp(10.0))
    assert exact <= cert.kappa <= exact + 1e-12
    gauss = pp.Composition(pp.FiniteKernel(a), pp.GaussianMechanism(1.0))
    assert pp.certify(gauss, pp.pure_dp(10.0)).kappa == np.inf


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
