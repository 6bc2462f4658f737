"""The exact worst case over a Receiver model with published margins, checked another way.

Oracles: brute-force enumeration of every completion of the table (the posterior of the true
value under an explicit prior), members of the class drawn at random (log-linear means) and a
fine grid of common means (the supremum is never exceeded and the witness attains it), and the
publication bound recomputed as the maximum over every table consistent with the publication.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    SmallCellReceiver,
)
from persuasive.errors import ValidationError
from persuasive.margins import (
    MarginTable,
    cell_losses,
    posterior_marginals,
    surprise,
    worst_case_losses,
)

POI = PoissonReceiver(1.0, 4.0)
NB = NegativeBinomialReceiver(0.5, 3.0, size=2.0)


def _sums(x, margin):
    return x.sum(axis=tuple(a for a in range(x.ndim) if a not in margin))


def _completions(t: MarginTable):
    """Every completion of the suppressed cells consistent with what was published."""
    counts = t.counts
    idx = t.suppressed_index
    sec = t.secondary.ravel()[idx]
    total = int(counts.sum())
    ranges = [range(t.h, total + 1) if s else range(t.h) for s in sec]
    target = [_sums(counts, m) for m in t.margins]
    for vals in itertools.product(*ranges):
        x = counts.ravel().copy()
        x[idx] = vals
        x = x.reshape(counts.shape)
        if all(np.array_equal(_sums(x, m), s) for m, s in zip(t.margins, target, strict=True)):
            yield x


_COMPLETIONS: dict[tuple, np.ndarray] = {}


def _completion_rows(t: MarginTable) -> np.ndarray:
    """Every completion of ``t`` (:func:`_completions`), one flattened table a row; enumerated
    once per table, then reused by each member of the class a test evaluates."""
    key = (t.counts.tobytes(), t.shape, t.suppressed.tobytes(), t.secondary.tobytes(), t.h,
           tuple(map(tuple, t.margins)))  # fmt: skip
    if key not in _COMPLETIONS:
        _COMPLETIONS[key] = np.array([x.ravel() for x in _completions(t)])
    return _COMPLETIONS[key]


def brute_loss(t: MarginTable, means: np.ndarray, family: str, r: int) -> np.ndarray:
    """Δ_i^r at the true table for independent cells with the given means, by enumeration."""
    mu = means.ravel()
    law = stats.poisson(mu) if family == "poisson" else stats.nbinom(2.0, 2.0 / (2.0 + mu))
    x_true = t.counts.ravel()
    xs = _completion_rows(t)
    w = np.exp(law.logpmf(xs).sum(axis=1))  # the prior weight of each completion
    z = w.sum()
    num = (w[:, None] * (xs == x_true)).sum(axis=0)
    post = num / z
    loss = -law.logpmf(x_true) + np.log(post)
    sup = t.suppressed.ravel() & (x_true < r)
    return np.where(sup, loss, 0.0).reshape(t.shape)


def _loglinear_means(shape, lo, hi, rng, margins):
    """Means exp(sum of main effects) of the published one-way margins, inside [lo, hi]."""
    k = len(margins)
    parts = [rng.uniform(np.log(lo) / k, np.log(hi) / k, shape[m[0]]) for m in margins]
    log_mu = np.zeros(shape)
    for m, p in zip(margins, parts, strict=True):
        sh = [1] * len(shape)
        sh[m[0]] = shape[m[0]]
        log_mu = log_mu + p.reshape(sh)
    return np.exp(log_mu)


TABLES = [
    ([[1, 2, 7], [2, 1, 9]], 3, "rows,cols"),
    ([[0, 2, 5], [1, 1, 2], [2, 6, 0]], 3, "rows,cols"),
    ([[1, 2, 7], [2, 1, 9]], 3, "rows"),
    ([[0, 3, 5], [1, 1, 2], [2, 6, 1]], 4, "rows,cols,total"),
    ([[[0, 1], [2, 5]], [[1, 6], [0, 2]]], 3, [[0], [1], [2]]),
]


@pytest.mark.parametrize(("counts", "h", "margins"), TABLES)
@pytest.mark.parametrize(("receiver", "family"), [(POI, "poisson"), (NB, "nbinom")])
def test_supremum_is_exact_against_enumeration(counts, h, margins, receiver, family):
    t = MarginTable(counts, h=h, margins=margins)
    w = worst_case_losses(t, receiver)
    assert w.all_certified and np.array_equal(w.kappa_lower, w.kappa_upper)
    lo, hi = receiver.mean_min, receiver.mean_max
    # the witness member (a common mean at an end of the range) attains the certificate
    for mu in (lo, hi):
        got = brute_loss(t, np.full(t.shape, mu), family, h)
        at = w.witness_mean == mu
        np.testing.assert_allclose(got[at], w.kappa_upper[at], rtol=1e-9, atol=1e-12)
    # a fine grid of common means and random log-linear members never exceed it
    for mu in np.linspace(lo, hi, 13):
        assert np.all(brute_loss(t, np.full(t.shape, mu), family, h) <= w.kappa_upper + 1e-9)
    rng = np.random.default_rng(7)
    one_way = [m for m in t.margins if len(m) == 1]
    for _ in range(4):
        means = _loglinear_means(t.shape, lo, hi, rng, one_way)
        assert means.min() >= lo - 1e-12 and means.max() <= hi + 1e-12
        assert np.all(brute_loss(t, means, family, h) <= w.kappa_upper + 1e-9)


def test_posterior_is_the_same_for_every_member():
    """Sufficiency: log-linear means in the margins leave the posterior unchanged; other means
    (an interaction the margins do not carry) change it, and can beat the class's supremum."""
    t = MarginTable([[1, 2, 7], [2, 1, 9], [0, 5, 1]], h=3, margins="rows,cols")
    rng = np.random.default_rng(3)

    def post(means):
        q = pp.IndependentCellsPrior([stats.poisson(m) for m in means.ravel()])
        return np.exp(posterior_marginals(t, q).log_pmf)

    base = post(np.ones(t.shape))
    for _ in range(3):
        means = np.outer(rng.uniform(0.5, 2, 3), rng.uniform(0.5, 2, 3))
        np.testing.assert_allclose(post(means), base, atol=1e-12)
    inter = np.ones(t.shape)
    inter[0, 0] = 4.0  # not a product of row and column effects
    assert np.abs(post(inter) - base).max() > 0.05
    # outside the class the supremum can be beaten: the class is a real assumption
    w = worst_case_losses(t, POI)
    means = np.array([[1.0, 4.0, 1.0], [4.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    q = pp.IndependentCellsPrior([stats.poisson(m) for m in means.ravel()])
    beyond = cell_losses(t, q).small_cell - w.kappa_upper
    assert beyond[t.suppressed].max() > 0.5


@pytest.mark.parametrize("r", [2, 3])
def test_publication_bound_is_the_max_over_consistent_tables(r):
    t = MarginTable([[0, 2, 5], [1, 1, 2], [2, 6, 0]], h=3, margins="rows,cols")
    w = worst_case_losses(t, POI, r=r)
    worst = np.zeros(t.shape)
    n = 0
    for x in _completions(t):
        other = MarginTable(x, h=3, margins="rows,cols", suppressed=t.suppressed)
        worst = np.maximum(worst, worst_case_losses(other, POI, r=r).kappa_upper)
        n += 1
    assert n > 1
    np.testing.assert_allclose(w.kappa_published, worst, rtol=1e-12)
    assert np.all(w.kappa_published >= w.kappa_upper)


def test_disclosed_cell_loses_its_surprise():
    t = MarginTable([[1, 5], [6, 8]], h=3, margins="rows")
    w = worst_case_losses(t, POI)
    b, mu = surprise(POI, [1])
    assert w.disclosed[0, 0] and w.kappa_upper[0, 0] == pytest.approx(b[0])
    assert w.witness_mean[0, 0] == mu[0]


def test_mcmc_component_is_flagged_and_bounded():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 3, size=(4, 4))
    t = MarginTable(counts, h=3, margins="rows,cols")
    exact = worst_case_losses(t, POI)
    est = worst_case_losses(t, POI, max_states=1)  # forces the Markov chain
    assert exact.all_certified and not est.all_certified
    sup = t.suppressed
    b, _ = surprise(POI, counts)
    assert np.all(est.kappa_upper[sup] <= b[sup] + 1e-12)  # B, or the switching bound below it
    assert np.all(est.kappa_lower[sup] == 0.0)
    assert np.all(exact.kappa_upper <= est.kappa_upper + 1e-12)
    assert np.abs(est.estimate - exact.estimate)[sup].max() < 0.5
    assert any("MCMC" in n for n in est.notes)


def test_small_cell_class_is_unbounded_with_margins_and_prop8_without():
    t = MarginTable([[1, 5, 7], [6, 8, 9], [2, 8, 1]], h=3, margins="rows")
    w = worst_case_losses(t, SmallCellReceiver(0.2))
    assert np.all(np.isinf(w.kappa_upper[t.suppressed])) and w.exact[t.suppressed].all()
    t2 = MarginTable([[1, 5], [6, 8]], h=3)  # no margins: Prop 8
    w2 = worst_case_losses(t2, SmallCellReceiver(0.2))
    assert w2.kappa_upper[0, 0] == pytest.approx(-math.log(0.2))
    w3 = worst_case_losses(t2, POI)
    mass = stats.poisson(4.0).cdf(2)
    assert w3.kappa_lower[0, 0] == pytest.approx(-math.log(mass))
    # Prop 8 at the top of the range, by enumeration of the truncated prior
    got = -stats.poisson(4.0).logpmf(1) + math.log(stats.poisson(4.0).pmf(1) / mass)
    assert w3.kappa_upper[0, 0] == pytest.approx(got, rel=1e-9)


def test_cell_losses_agree_with_the_class_member():
    t = MarginTable([[1, 2, 7], [2, 1, 9]], h=3, margins="rows,cols")
    w = worst_case_losses(t, POI)
    q = pp.IndependentCellsPrior([stats.poisson(4.0)] * 6)
    c = cell_losses(t, q)
    at = w.witness_mean == 4.0
    np.testing.assert_allclose(c.small_cell[at], w.kappa_upper[at], rtol=1e-12)


def test_nothing_suppressed():
    t = MarginTable([[5, 6], [7, 8]], h=3, margins="rows,cols")
    w = worst_case_losses(t, POI)
    assert w.max_upper == 0.0 and w.posterior is None and w.all_certified
    q = pp.IndependentCellsPrior([stats.poisson(4.0)] * 4)
    assert posterior_marginals(t, q).cells.size == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"receiver": "poisson"}, "receiver must be"),
        ({"r": 4}, "r must be"),
        ({"table": [[1, 2]]}, "table must be a MarginTable"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"table": MarginTable([[1, 5], [6, 8]], h=3, margins="rows"), "receiver": POI}
    args.update(kwargs)
    with pytest.raises(ValidationError, match=match):
        worst_case_losses(**args)
