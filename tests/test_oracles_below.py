"""Oracles from below: every certified κ must meet or exceed an independent lower bound.

A certificate that claims a κ below the truth (a privacy loss rounded *down*, or the lower end
of a discretisation bracket) must fail here. The oracles (``tests/oracles.py``) share no code
with the library: a fine lattice rounding every loss down (lower bound on every tail, hence on
κ) or up, composed with ``scipy.signal.fftconvolve``, and Monte Carlo Clopper-Pearson lower
bounds from sampled outputs. Parameters put the losses *between* the certificate's grid points
(1/3, 1/7, 0.73215, 1/1.7 on a grid of 1e-4), where rounding in the wrong direction shows.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from oracles import (
    Bracket,
    geometric_part,
    kappa_bracket,
    kernel_parts,
    laplace_part,
    mc_kappa_lower,
    rr_matrix,
    sample_kernel_loss,
    sample_loss,
)

import persuasive as pp
from persuasive.certify import find_theorem
from persuasive.pld import STEP

PDP = pp.probabilistic_dp
H = STEP / 16  # the oracle lattice: 16 times finer than the certificate's grid
ATOL = 1e-9  # float noise allowed in a comparison (the mutants err by >= 1e-5)


def _pairs(k: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(k) for j in range(k) if abs(i - j) == 1]


def _rr(eps0: float, k: int) -> dict:
    return kernel_parts(rr_matrix(eps0, k), _pairs(k))


# Each case: the mechanism, and its privacy-loss laws per neighbour pair as oracle parts.
CASES = {
    "2 x Laplace(3)": (
        pp.ComposedRelease.repeat(pp.LaplaceMechanism(3.0), 2),
        [[(laplace_part(3.0), 2)]],
    ),
    "50 x Laplace(10)": (
        pp.ComposedRelease.repeat(pp.LaplaceMechanism(10.0), 50),
        [[(laplace_part(10.0), 50)]],
    ),
    "5 x Laplace(7) + 2 x Laplace(3)": (
        pp.ComposedRelease([pp.LaplaceMechanism(7.0), pp.LaplaceMechanism(3.0)], [5, 2]),
        [[(laplace_part(7.0), 5), (laplace_part(3.0), 2)]],
    ),
    "6 x RR(0.73215, 3)": (
        pp.ComposedRelease.repeat(pp.RandomizedResponse(0.73215, 3), 6),
        [[(law, 6)] for law in _rr(0.73215, 3).values()],
    ),
    "RR(0.73215) x RR(1.1)": (
        pp.Composition(pp.RandomizedResponse(0.73215), pp.RandomizedResponse(1.1)),
        [[(_rr(0.73215, 2)[p], 1), (_rr(1.1, 2)[p], 1)] for p in _pairs(2)],
    ),
    "8 x geometric(1.7)": (
        pp.ComposedRelease.repeat(pp.GeometricMechanism(1.7), 8),
        [[(geometric_part(1.7), 8)]],
    ),
    "3 x geometric(1.7) + 4 x Laplace(7)": (
        pp.ComposedRelease([pp.GeometricMechanism(1.7), pp.LaplaceMechanism(7.0)], [3, 4]),
        [[(geometric_part(1.7), 3), (laplace_part(7.0), 4)]],
    ),
    "2 x RR(0.9, 3) + 3 x Laplace(4)": (
        pp.ComposedRelease([pp.RandomizedResponse(0.9, 3), pp.LaplaceMechanism(4.0)], [2, 3]),
        [[(law, 2), (laplace_part(4.0), 3)] for law in _rr(0.9, 3).values()],
    ),
}

_RNG = np.random.default_rng(20260501)
_KERNEL = _RNG.dirichlet(np.full(4, 2.0), size=3)
CASES["3 x random kernel"] = (
    pp.ComposedRelease.repeat(pp.FiniteKernel(_KERNEL), 3),
    [[(law, 3)] for law in kernel_parts(_KERNEL, _pairs(3)).values()],
)

DELTAS = {
    "2 x Laplace(3)": [0.1, 0.3, 1e-3],  # below 1/4: both atoms, kappa = 2/3 exactly
    "50 x Laplace(10)": [1e-5, 1e-2],
}


@functools.cache
def _bracket(name: str) -> Bracket:
    return Bracket(CASES[name][1], H)


def _deltas(name: str) -> list[float]:
    return DELTAS.get(name, [1e-3, 0.05, 0.2])


@pytest.mark.parametrize("name", list(CASES))
def test_certified_kappa_at_least_the_lattice_lower_bound(name):
    mech, laws = CASES[name]
    for delta in _deltas(name):
        cert = pp.certify(mech, PDP(10.0, delta))
        assert cert.basis.startswith("Prop 6 + privacy-loss")
        low, high = _bracket(name).kappa(delta)
        assert cert.kappa >= low - ATOL, (name, delta, cert.kappa, low)
        # and not absurdly pessimistic: within the certificate's own grid of the truth
        rounds = sum(k for parts in laws[:1] for _, k in parts)
        assert cert.kappa <= high + rounds * STEP + ATOL, (name, delta, cert.kappa, high)


def test_two_laplace_three_is_two_thirds():
    # below delta = 1/4 both atoms +1/3 are reached: kappa = 2/3 exactly, not 0.6666
    cert = pp.certify(pp.ComposedRelease.repeat(pp.LaplaceMechanism(3.0), 2), PDP(1.0, 0.1))
    assert cert.kappa >= 2.0 / 3.0 - 1e-15
    assert cert.kappa <= 2.0 / 3.0 + 2 * STEP


@pytest.mark.parametrize("name", list(CASES))
def test_certified_delta_at_least_the_lattice_lower_bound(name):
    # the profile delta(eps) at eps between grid points (0.12345, ...) and on atoms
    mech = CASES[name][0]
    d = PDP(10.0, 0.1)
    th = find_theorem(mech, d)
    # and just below sums of atoms (1/3, 2/3, 1/1.7, 2/1.7, 0.73215, 1/7, ...), where a loss
    # rounded down to the grid falls below eps and the tail drops
    below = [a - 3e-5 for a in (1 / 3, 2 / 3, 1 / 1.7, 2 / 1.7, 0.73215, 2 / 7, 0.9 + 0.25)]
    for eps in (0.012345, 0.12345, 0.45678, 1.0 / 3.0 + 1.0 / 7.0, 0.93, *below):
        low = _bracket(name).tail(eps)[0]
        got = th.delta_at(mech, d, eps)
        assert got >= low - ATOL, (name, eps, got, low)
        assert got <= 1.0


MC = {
    "50 x Laplace(10)": (
        lambda n, rng: sum(sample_loss("laplace", 10.0, n, rng) for _ in range(50))
    ),
    "5 x Laplace(7) + 2 x Laplace(3)": (
        lambda n, rng: (
            sum(sample_loss("laplace", 7.0, n, rng) for _ in range(5))
            + sum(sample_loss("laplace", 3.0, n, rng) for _ in range(2))
        )
    ),
    "8 x geometric(1.7)": (
        lambda n, rng: sum(sample_loss("geometric", 1.7, n, rng) for _ in range(8))
    ),
    "6 x RR(0.73215, 3)": (
        lambda n, rng: sum(
            sample_kernel_loss(rr_matrix(0.73215, 3), 0, 1, n, rng) for _ in range(6)
        )
    ),
    "3 x random kernel": (
        lambda n, rng: [
            sum(sample_kernel_loss(_KERNEL, a, b, n, rng) for _ in range(3)) for a, b in _pairs(3)
        ]
    ),
}


@pytest.mark.parametrize("name", list(MC))
def test_certified_kappa_at_least_the_monte_carlo_lower_bound(name):
    mech, _ = CASES[name]
    rng = np.random.default_rng(7)
    samples = MC[name](200_000, rng)
    per_pair = samples if isinstance(samples, list) else [samples]
    for delta in (1e-3, 0.05, 0.2):
        # the sup over pairs is at least each pair's bound (confidence split over the pairs)
        conf = 1.0 - 1e-3 / len(per_pair)
        lower = max(mc_kappa_lower(s, delta, conf) for s in per_pair)
        cert = pp.certify(mech, PDP(10.0, delta))
        assert cert.kappa >= lower - ATOL, (name, delta, cert.kappa, lower)


def test_monte_carlo_oracle_is_sharp_enough_to_matter():
    # the Monte Carlo bound is within 1% of the lattice bracket for a Laplace composition, so
    # it is not vacuous (an oracle that asserts nothing would not catch anything)
    losses = MC["5 x Laplace(7) + 2 x Laplace(3)"](200_000, np.random.default_rng(8))
    low, _ = _bracket("5 x Laplace(7) + 2 x Laplace(3)").kappa(0.05)
    assert mc_kappa_lower(losses, 0.05) == pytest.approx(low, rel=0.01)


@pytest.mark.parametrize("b", [3.0, 7.0, 1.0 / 0.37])
def test_single_laplace_and_geometric_closed_forms_from_below(b):
    # single releases use Prop 6's closed forms; the lattice oracle bounds them too
    for mech, part in (
        (pp.LaplaceMechanism(b), laplace_part(b)),
        (pp.GeometricMechanism(b), geometric_part(b)),
    ):
        for delta in (1e-3, 0.3, 0.55):
            low, high = kappa_bracket([[(part, 1)]], delta, H)
            k = pp.certify(mech, PDP(10.0, delta)).kappa
            assert low - ATOL <= k <= high + ATOL


def test_exact_lattice_for_randomized_response():
    # k-fold RR on the lattice eps0 Z: the summed loss is eps0 * (N+ - N-), a trinomial walk;
    # kappa(delta) = eps0 * j* exactly (computed here by convolution of integer steps)
    eps0, k, reps = 0.73215, 3, 6
    keep = math.exp(eps0) / (math.exp(eps0) + k - 1)
    other = (1.0 - keep) / (k - 1)
    step = np.array([other, 1.0 - keep - other, keep])  # loss -eps0, 0, +eps0 against x' = 1
    walk = np.array([1.0])
    for _ in range(reps):
        walk = np.convolve(walk, step)
    js = np.arange(-reps, reps + 1)
    mech = pp.ComposedRelease.repeat(pp.RandomizedResponse(eps0, k), reps)
    for delta in (1e-3, 0.05, 0.2):
        tails = np.array([walk[js > j].sum() for j in js])
        j_star = js[np.flatnonzero((tails <= delta) & (js >= 0))[0]]
        exact = eps0 * j_star
        cert = pp.certify(mech, PDP(10.0, delta)).kappa
        assert exact - ATOL <= cert <= exact + reps * STEP + ATOL
