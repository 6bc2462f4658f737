"""Audits of compositions (summed privacy loss) and the audit's public boundary (rng, n_samples).

Oracles: brute-force enumeration of every output tuple written here, the witness re-evaluated
through ``persuasive.relative_loss`` (the Bayes update of the two-point prior, not the audit's
loss formula), exact order statistics of the regenerated draws, and the certificate (every
audit must stay at or below it).
"""

from __future__ import annotations

import itertools
import math
import tracemalloc

import numpy as np
import pytest

import persuasive as pp
from persuasive import _tolerances as tol
from persuasive.audit import stream
from persuasive.spec import spec_from_dict

PDP = pp.probabilistic_dp

COMPOSED = {
    "Laplace(3) x Laplace(3)": pp.Composition(pp.LaplaceMechanism(3.0), pp.LaplaceMechanism(3.0)),
    "3 x Gaussian(2)": pp.ComposedRelease.repeat(pp.GaussianMechanism(2.0), 3),
    "50 x Laplace(10)": pp.ComposedRelease.repeat(pp.LaplaceMechanism(10.0), 50),
    "2 x RR(0.9, 3) + 3 x Laplace(4)": pp.ComposedRelease(
        [pp.RandomizedResponse(0.9, 3), pp.LaplaceMechanism(4.0)], [2, 3]
    ),
    "geometric(1.7) x Gaussian(3)": pp.Composition(
        pp.GeometricMechanism(1.7), pp.GaussianMechanism(3.0)
    ),
    "RR(1) x RR(0.5)": pp.Composition(pp.RandomizedResponse(1.0), pp.RandomizedResponse(0.5)),
    "8 x RR(0.4, 4)": pp.ComposedRelease.repeat(pp.RandomizedResponse(0.4, 4), 8),  # 4^8 outputs
}


@pytest.mark.parametrize("name", list(COMPOSED))
@pytest.mark.parametrize("delta", [0.0, 1e-3, 0.1])
def test_audit_at_most_certificate_for_composed_releases(name, delta):
    mech = COMPOSED[name]
    d = PDP(100.0, delta)
    cert = pp.certify(mech, d)
    a = pp.audit(mech, d, rng=1, n_samples=20_000)
    assert a.kappa <= cert.kappa + tol.LOSS_ATOL, (name, delta, a.kappa, cert.kappa)
    assert np.isfinite(a.kappa) and a.kappa > 0
    # the witness is genuine: its loss recomputed through the Bayes update of the two-point
    # prior (persuasive.relative_loss), not the audit's summed-loss formula
    w = a.witness
    again = pp.relative_loss(pp.LogScore(), w.prior, mech, w.x, w.t)
    assert again == pytest.approx(a.kappa, abs=1e-9)


def test_audit_is_sharp_where_the_truth_is_known():
    # two Laplace(3) at delta = 0.1 < 1/4: both atoms +1/3, kappa = 2/3 exactly
    m = COMPOSED["Laplace(3) x Laplace(3)"]
    a = pp.audit(m, PDP(1.0, 0.1), rng=2, n_samples=20_000)
    assert a.kappa == pytest.approx(2.0 / 3.0, abs=1e-9)
    # three Gaussian(2) are one Gaussian with sigma 2 / sqrt(3): within 5% of the closed form
    g = COMPOSED["3 x Gaussian(2)"]
    cert = pp.certify(g, PDP(1.0, 0.1))
    a = pp.audit(g, PDP(1.0, 0.1), rng=3, n_samples=100_000)
    assert 0.95 * cert.kappa <= a.kappa <= cert.kappa


def _brute_force_audit(matrices, delta, q):
    """Exact upper (1 - delta)-quantile of the two-point loss over every output tuple, maximised
    over neighbour pairs |i - j| = 1 (docs/math.md §6: Delta_q = -log(q + (1-q) e^{-l}))."""
    k = matrices[0].shape[0]
    best = -math.inf
    for a, b in [(i, j) for i in range(k) for j in range(k) if abs(i - j) == 1]:
        vals, probs = [], []
        for t in itertools.product(*[range(m.shape[1]) for m in matrices]):
            px = math.prod(m[a, j] for m, j in zip(matrices, t, strict=True))
            pxp = math.prod(m[b, j] for m, j in zip(matrices, t, strict=True))
            if px == 0:
                continue
            ell = math.inf if pxp == 0 else math.log(px / pxp)
            vals.append(-math.log(q + (1 - q) * math.exp(-ell)))
            probs.append(px)
        order = np.argsort(vals)[::-1]
        cum = np.cumsum(np.asarray(probs)[order])
        hit = np.flatnonzero(cum > delta + 1e-12)
        best = max(best, np.asarray(vals)[order][hit[0]])
    return best


@pytest.mark.parametrize("seed", range(4))
def test_exact_enumeration_of_small_finite_compositions(seed):
    rng = np.random.default_rng(seed)
    mats = [rng.dirichlet(np.ones(3), size=3) for _ in range(3)]
    mech = pp.ComposedRelease([pp.FiniteKernel(m) for m in mats])
    for delta in (0.0, 0.05, 0.3):
        a = pp.audit(mech, PDP(100.0, delta), q_grid=[1e-9])
        assert a.method == "enumeration"
        assert a.kappa == pytest.approx(_brute_force_audit(mats, delta, 1e-9), abs=1e-9)
        assert a.kappa <= pp.certify(mech, PDP(100.0, delta)).kappa + tol.LOSS_ATOL


def test_composition_expectation_audit_below_renyi_certificate():
    m = pp.ComposedRelease([pp.GaussianMechanism(2.0), pp.LaplaceMechanism(2.0)], [2, 2])
    d = pp.renyi_dp(2.0, 100.0)
    cert = pp.certify(m, d)
    a = pp.audit(m, d, rng=4, n_samples=50_000)
    assert a.kappa <= cert.kappa and a.kappa > 0.8 * cert.kappa


def test_composition_spec_audits():
    # `persuasive audit` of a composition spec used to raise IndexError in the Monte Carlo
    document = {
        "mechanism": {
            "type": "composition",
            "first": {"type": "laplace", "scale": 2.0},
            "second": {"type": "gaussian", "sigma": 1.5},
        },
        "definition": {
            "kind": "pp",
            "kappa": 2.0,
            "delta": 0.05,
            "scores": [{"type": "log"}],
            "priors": {"class": "neighbours"},
        },
        "audit": {"seed": 5, "n_samples": 20_000},
    }
    spec = spec_from_dict(document)
    a = spec.audit()
    assert a.method == "monte-carlo" and a.kappa <= spec.certify().kappa


# --- the public boundary ---------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["abc", -1, 1.5, True, [1, 2], object()])
def test_rng_is_validated(bad):
    with pytest.raises(pp.ValidationError, match="rng") as err:
        pp.audit(pp.GaussianMechanism(1.0), PDP(1.0, 0.1), rng=bad, n_samples=1000)
    msg = str(err.value)
    assert "Generator" in msg and "int" in msg and repr(bad)[:20] in msg


@pytest.mark.parametrize("good", [None, 0, 7, np.int64(3), np.random.default_rng(1)])
def test_rng_accepts_seeds_and_generators(good):
    a = pp.audit(pp.GaussianMechanism(1.0), PDP(1.0, 0.1), rng=good, n_samples=1000)
    assert a.kappa <= pp.certify(pp.GaussianMechanism(1.0), PDP(1.0, 0.1)).kappa


def test_same_seed_same_audit():
    m = COMPOSED["2 x RR(0.9, 3) + 3 x Laplace(4)"]
    a1 = pp.audit(m, PDP(1.0, 0.05), rng=9, n_samples=5000)
    a2 = pp.audit(m, PDP(1.0, 0.05), rng=9, n_samples=5000)
    assert a1.kappa == a2.kappa


@pytest.mark.parametrize("n", [10**12, 2**62])
def test_huge_n_samples_is_refused_clearly(n):
    with pytest.raises(pp.ValidationError, match="n_samples") as err:
        pp.audit(pp.LaplaceMechanism(1.0), PDP(1.0, 0.1), n_samples=n)
    assert str(n) in str(err.value) or f"{n:.0e}" in str(err.value)


def test_streamed_kth_largest_equals_the_exact_order_statistic():
    # the chunked reduction against a plain sort of the same (regenerated) draws
    def draw(rng, size):
        z = rng.laplace(size=(2, size))
        return np.vstack([z[0], z[0] + z[1]])

    n, chunk, seed = 50_000, 3_000, 11
    full = np.hstack(
        [draw(stream.chunk_rng(seed, i), s) for i, s in enumerate(stream.chunk_sizes(n, chunk))]
    )
    for k in (1, 17, 2_000):
        vals, chunks, rows, exact = stream.stream_kth_largest(draw, n, k, seed, chunk)
        assert exact
        ref = -np.sort(-full, axis=1)[:, k - 1]
        np.testing.assert_array_equal(vals, ref)
        for s in range(2):  # the (chunk, row) points at a draw with that value
            size = stream.chunk_sizes(n, chunk)[chunks[s]]
            assert draw(stream.chunk_rng(seed, int(chunks[s])), size)[s, rows[s]] == vals[s]


def test_streamed_thresholds_are_a_lower_bound(monkeypatch):
    # large ranks: a pilot threshold reached by >= k draws, at most the exact k-th largest
    monkeypatch.setattr(stream, "EXACT_RANK", 100)

    def draw(rng, size):
        return rng.normal(size=(1, size))

    n, chunk, seed = 200_000, 10_000, 12
    full = np.hstack(
        [draw(stream.chunk_rng(seed, i), s) for i, s in enumerate(stream.chunk_sizes(n, chunk))]
    )[0]
    ranked = -np.sort(-full)
    for k in (500, 20_000):
        vals, chunks, rows, exact = stream.stream_kth_largest(draw, n, k, seed, chunk)
        assert not exact and chunks[0] == 0
        assert vals[0] <= ranked[k - 1]  # valid: no larger than the k-th largest
        assert vals[0] >= ranked[int(1.05 * k)]  # and close to it
        assert np.count_nonzero(full >= vals[0]) >= k
        assert draw(stream.chunk_rng(seed, 0), chunk)[0, rows[0]] == vals[0]


def test_large_audits_stream_in_bounded_memory(monkeypatch):
    # a small chunk stands in for a huge n: the audit holds O(chunk) values, not O(n)
    from persuasive.audit import composition, montecarlo

    monkeypatch.setattr(composition, "CHUNK_VALUES", 2**15)
    monkeypatch.setattr(montecarlo, "IN_MEMORY_VALUES", 2**16)
    m = pp.LaplaceMechanism(1.5)
    n = 2_000_000  # in memory: about 4 arrays of n floats = 64 MB
    tracemalloc.start()
    a = pp.audit(m, PDP(0.1, 0.2), rng=6, n_samples=n)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 * 2**20, peak
    cert = pp.certify(m, PDP(0.1, 0.2))
    assert a.kappa <= cert.kappa + tol.LOSS_ATOL
    assert a.kappa > 0.99 * cert.kappa  # the atom 1/b has mass 1/2 > 0.2
    comp = pp.Composition(pp.GaussianMechanism(1.0), pp.LaplaceMechanism(2.0))
    a = pp.audit(comp, PDP(1.0, 1e-3), rng=7, n_samples=300_000)
    assert a.kappa <= pp.certify(comp, PDP(1.0, 1e-3)).kappa
