"""QIF beside PP (App. D.1): oracles are scipy.stats.entropy (mutual information), brute force
over guessing strategies (vulnerability), brute force over priors (capacity) and
persuasive.relative_loss averaged by hand (the App. D.1 identity)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive.qif import (
    bayes_vulnerability,
    min_entropy_leakage,
    multiplicative_capacity,
    multiplicative_leakage,
    mutual_information,
    posterior_bayes_vulnerability,
    qif_report,
)

RNG = np.random.default_rng(20260601)
KERNELS = [
    pp.RandomizedResponse(1.0, 2),
    pp.RandomizedResponse(2.0, 4),
    pp.FiniteKernel([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7], [0.0, 0.0, 1.0]]),  # zeros
    pp.FiniteKernel(RNG.dirichlet(np.ones(4), size=3)),
]
PRIORS = [None, [0.7, 0.2, 0.1], [0.0, 0.6, 0.4]]


def _prior(kernel: pp.FiniteKernel, p: list[float] | None) -> np.ndarray:
    k = kernel.n_inputs
    if p is None or len(p) != k:
        return RNG.dirichlet(np.ones(k))
    return np.asarray(p)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("prior", PRIORS)
def test_mutual_information_against_scipy_entropy(kernel: pp.FiniteKernel, prior) -> None:
    pi = _prior(kernel, prior)
    m = kernel.matrix
    # I = H(T) - H(T | X), entropies by scipy (nats)
    h_t = stats.entropy(pi @ m)
    h_t_given_x = sum(p * stats.entropy(row) for p, row in zip(pi, m, strict=True) if p > 0)
    assert mutual_information(kernel, pi) == pytest.approx(h_t - h_t_given_x, abs=1e-12)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("prior", PRIORS)
def test_vulnerability_by_brute_force_over_guessing_strategies(kernel, prior) -> None:
    pi = _prior(kernel, prior)
    m = kernel.matrix
    k, j = m.shape
    best = max(
        sum(pi[g[t]] * m[g[t], t] for t in range(j))
        for g in itertools.product(range(k), repeat=j)  # every deterministic guess t -> x
    )
    assert posterior_bayes_vulnerability(kernel, pi) == pytest.approx(best, abs=1e-14)
    assert bayes_vulnerability(pi) == max(pi)
    lk = multiplicative_leakage(kernel, pi)
    assert lk == pytest.approx(best / max(pi), rel=1e-13) and lk >= 1 - 1e-12
    assert min_entropy_leakage(kernel, pi) == pytest.approx(math.log(best / max(pi)), abs=1e-12)


@pytest.mark.parametrize("kernel", KERNELS)
def test_capacity_is_the_largest_leakage_over_priors(kernel: pp.FiniteKernel) -> None:
    cap = multiplicative_capacity(kernel)
    k = kernel.n_inputs
    leak = [multiplicative_leakage(kernel, RNG.dirichlet(np.ones(k))) for _ in range(200)]
    assert max(leak) <= cap + 1e-12
    assert multiplicative_leakage(kernel, np.full(k, 1.0 / k)) == pytest.approx(cap, rel=1e-12)


@pytest.mark.parametrize("kernel", KERNELS[:3])
def test_mutual_information_is_the_averaged_log_score_relative_loss(kernel) -> None:
    """App. D.1 / docs/math.md §7: E_{x~Q} E_{T~M(x)} Δ_L(Q, T, x) = I_Q(X; T)."""
    k = kernel.n_inputs
    pi = np.arange(k, 0, -1) / (k * (k + 1) / 2)  # k, k-1, ..., 1 normalised
    prior = pp.DiscretePrior(np.arange(k), pi)
    avg = 0.0
    for x in range(k):
        for t in range(kernel.n_outputs):
            w = pi[x] * kernel.matrix[x, t]
            if w > 0:
                avg += w * pp.relative_loss(pp.LogScore(), prior, kernel, [x], t)
    assert mutual_information(kernel, prior) == pytest.approx(avg, abs=1e-12)


def test_known_values_and_discrete_prior_input() -> None:
    ident = pp.FiniteKernel(np.eye(3))
    assert mutual_information(ident, [1 / 3] * 3) == pytest.approx(math.log(3), abs=1e-14)
    flat = pp.FiniteKernel(np.full((3, 2), 0.5))
    assert mutual_information(flat, [0.2, 0.3, 0.5]) == 0.0
    assert multiplicative_capacity(flat) == pytest.approx(1.0)
    q = pp.DiscretePrior([0, 2], [0.5, 0.5])  # no mass on row 1
    assert mutual_information(ident, q) == pytest.approx(math.log(2), abs=1e-14)
    assert bayes_vulnerability(q, n_inputs=3) == 0.5


def test_qif_report_puts_pp_beside_qif() -> None:
    rr = pp.RandomizedResponse(2.0, 4)
    pi = [0.4, 0.3, 0.2, 0.1]
    r = qif_report(rr, pi)
    assert r.certificate.kappa == pytest.approx(2.0) and r.certificate.exact
    assert r.mutual_information == pytest.approx(mutual_information(rr, pi))
    assert r.multiplicative_capacity == pytest.approx(multiplicative_capacity(rr))
    assert r.prior == tuple(pi)
    text = r.explain()
    assert "Average case" in text and "Worst case" in text and "Prop 6" in text
    json.dumps(r.to_dict())  # serialisable (inf kappa of the default becomes "inf")
    r2 = qif_report(rr, pi, pp.probabilistic_dp(1.0, 0.05))
    assert not r2.certificate.holds and r2.certificate.delta == 0.05
    with pytest.raises(AttributeError):
        r.mutual_information = 0.0  # type: ignore[misc]


def test_bad_input() -> None:
    rr = pp.RandomizedResponse(1.0, 2)
    with pytest.raises(pp.ValidationError, match="mechanism must be a finite kernel"):
        mutual_information(pp.LaplaceMechanism(1.0), [0.5, 0.5])
    with pytest.raises(pp.ValidationError, match=r"one probability per mechanism row \(2\)"):
        qif_report(rr, [0.2, 0.3, 0.5])
    with pytest.raises(pp.ValidationError, match="prior must sum to one"):
        mutual_information(rr, [0.5, 0.6])
    with pytest.raises(pp.ValidationError, match="non-negative"):
        posterior_bayes_vulnerability(rr, [1.5, -0.5])
    with pytest.raises(pp.ValidationError, match="finite"):
        multiplicative_leakage(rr, [float("nan"), 1.0])
    with pytest.raises(pp.ValidationError, match="only 2 rows"):
        mutual_information(rr, pp.DiscretePrior([0, 5], [0.5, 0.5]))
    with pytest.raises(pp.ValidationError, match=r"rows 0\.\.K-1"):
        mutual_information(rr, pp.DiscretePrior([0.5, 1], [0.5, 0.5]))
    with pytest.raises(pp.ValidationError, match="finite kernel"):
        multiplicative_capacity(pp.GaussianMechanism(1.0))
