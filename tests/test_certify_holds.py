"""``holds`` has no slack in the Sender's favour: rounding may only make a certificate refuse.

Each case builds, independently of the certificate, a member of the class whose loss (through
``persuasive.relative_loss``) exceeds a definition's κ a hair below the sharp value with
probability above δ, so that definition is violated and ``holds`` must be False.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest

import persuasive as pp
from persuasive._rounding import add_up, div_up, log_up, loss_up, sum_up

HAIR = 5e-10  # the definition's kappa is this far below the sharp value


def _violation_probability(mech, prior, x, kappa, score=None):
    """P_x[Δ > κ] by enumerating the outputs of a finite kernel, Δ through relative_loss."""
    outs, probs = mech.output_distribution(x)
    score = score or pp.LogScore()
    losses = np.array([pp.relative_loss(score, prior, mech, x, t) for t in outs])
    return float(probs[losses > kappa].sum())


def test_randomized_response_a_hair_below_epsilon():
    mech = pp.RandomizedResponse(1.3, 3)
    kappa = 1.3 - HAIR
    # a two-point neighbour prior Q({0}) = q, Q({1}) = 1 - q: at the kept output the loss is
    # -log(q + (1 - q) e^{-1.3}) -> 1.3 as q -> 0, above kappa once q < HAIR / (e^1.3 - 1)
    prior = pp.TwoPointPrior([0.0], [1.0], 1e-12)
    assert pp.NeighbourPriors().contains(prior)
    p_fail = _violation_probability(mech, prior, [0.0], kappa)
    keep = math.exp(1.3) / (math.exp(1.3) + 2.0)
    assert p_fail == pytest.approx(keep, rel=1e-12) and p_fail > 0.647
    cert = pp.certify(mech, pp.pure_dp(kappa))
    assert not cert.holds and cert.kappa == 1.3
    assert pp.certify(mech, pp.pure_dp(1.3)).holds  # the sharp value itself holds
    # and a PDP definition whose delta is below the violation probability
    assert not pp.certify(mech, pp.probabilistic_dp(kappa, 0.6)).holds


def test_prop7_member_a_hair_below_the_sharp_value():
    r1, r2, eta = 1.0, 4.0, 1e-12
    # Phi = I, sigma_1^2 / ||sigma||^2 = (1 - 1/r2)(1 - eta) < 1 - 1/r2 and w^2 = r1 (1 - eta):
    # strictly inside G^r_x (docs/math.md §8); sup over x_1 attained at z_1 = w / rho_1
    s = (1.0 - 1.0 / r2) * (1.0 - eta)
    var = np.array([s, 1.0 - s]) * 4.0
    sbar = var.sum() / 4.0  # Var(mean) for n = 2 and a diagonal covariance
    w = math.sqrt(r1 * (1.0 - eta))
    rho = math.sqrt(var[0] / var.sum())
    mu = np.zeros(2)
    x = np.empty(2)
    x[0] = w / rho * math.sqrt(var[0])
    x[1] = 2.0 * w * math.sqrt(sbar) - x[0]  # so that (xbar - mubar)^2 / Sbar = w^2
    prior = pp.GaussianPrior(mu, np.diag(var))
    # membership checked with its own arithmetic, no tolerance: both margins are eta-sized
    assert (x.mean() - mu.mean()) ** 2 / sbar < r1
    assert 1.0 <= r2 * (1.0 - var.max() / var.sum())
    assert pp.GaussianMeanClass(r1, r2).contains(prior, x)
    sharp = r1 + math.log(r2)
    kappa = sharp - HAIR
    loss = pp.relative_loss(pp.MarginalDSS(0), prior, pp.ExactMean(), x)
    closed = w**2 - math.log(1.0 - rho**2)  # docs/math.md §8: sup_z Delta_i
    assert loss == pytest.approx(closed, abs=1e-12)
    assert kappa < loss < sharp + 1e-12  # deterministic release: violated with probability 1
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2), kappa)
    cert = pp.certify(pp.ExactMean(), d)
    assert cert.exact and not cert.holds
    _holds_exactly_at_the_sharp_value(
        lambda k: pp.certify(
            pp.ExactMean(), pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2), k)
        ),
        Decimal(r1) + Decimal(r2).ln(_CTX),
    )


_CTX = Context(prec=60)


def _holds_exactly_at_the_sharp_value(certify_at, exact: Decimal) -> None:
    """The sharp κ is the exact value rounded *up* to a float (decimal arithmetic, independent of
    the library): a definition holds at that float, and not at the float below it, whichever
    side of the exact value the nearest float falls."""
    kappa = certify_at(math.inf).kappa
    assert Decimal(kappa) >= exact > Decimal(math.nextafter(kappa, 0.0))
    assert certify_at(kappa).holds
    assert not certify_at(math.nextafter(kappa, 0.0)).holds
    nearest = float(exact)
    assert certify_at(nearest).holds == (Decimal(nearest) >= exact)


def test_prop8_member_a_hair_below_the_sharp_value():
    h, r, alpha, eta = 3, 3, 0.2, 1e-12
    # a cell prior with Q(X < h) = alpha (1 + eta) >= alpha: a member of C^{h, alpha}
    below = alpha * (1.0 + eta)
    pmf = np.array([below / 3.0, below / 3.0, below / 3.0, 1.0 - below])
    assert pmf[:h].sum() >= alpha
    prior = pp.IndependentCellsPrior([pmf])
    assert pp.SmallCellClass(h, alpha).contains(prior)
    sharp = -math.log(alpha)
    kappa = sharp - HAIR
    score = pp.SmallCellLogScore(r=r)
    for cell in range(r):  # every small count is suppressed; loss -log Q(X < h)
        loss = pp.relative_loss(score, prior, pp.CellSuppression(h), [float(cell)])
        assert loss == pytest.approx(-math.log(pmf[:h].sum()), abs=1e-12)
        assert kappa < loss  # deterministic release: violated with probability 1
    d = pp.PersuasivePrivacy(score, pp.SmallCellClass(h, alpha), kappa)
    cert = pp.certify(pp.CellSuppression(h), d)
    assert cert.exact and not cert.holds
    _holds_exactly_at_the_sharp_value(
        lambda k: pp.certify(
            pp.CellSuppression(h), pp.PersuasivePrivacy(score, pp.SmallCellClass(h, alpha), k)
        ),
        -Decimal(alpha).ln(_CTX),
    )


@pytest.mark.parametrize("b", [3.0, 7.0, 0.3, 1.0 / 3.0])
def test_laplace_kappa_is_never_below_one_over_b(b):
    # exact rational check: the certificate's kappa >= 1/b, the loss of the atom
    k = pp.certify(pp.LaplaceMechanism(b), pp.pure_dp(10.0)).kappa
    assert Fraction(k) >= 1 / Fraction(b)
    assert k - 1.0 / b <= 2e-16 * k  # and at most one ulp above


def test_rounding_helpers_against_rational_arithmetic():
    rng = np.random.default_rng(3)
    for a, b in rng.uniform(1e-3, 10.0, size=(200, 2)):
        assert Fraction(div_up(a, b)) >= Fraction(a) / Fraction(b)
        assert Fraction(add_up(a, b)) >= Fraction(a) + Fraction(b)
        assert math.nextafter(div_up(a, b), -math.inf) < Fraction(a) / Fraction(b)  # tight
        assert log_up(a) >= math.log(a)
    counts, values = rng.integers(1, 50, 30), rng.random(30)
    terms = [(int(k), float(v)) for k, v in zip(counts, values, strict=True)]
    exact = sum(k * Fraction(v) for k, v in terms)
    s = sum_up(terms)
    assert Fraction(s) >= exact > Fraction(math.nextafter(s, -math.inf))
    p = rng.dirichlet(np.ones(6), size=2)
    lp, lq = np.log(p[0]), np.log(p[1])
    up = loss_up(lp, lq, lp - lq)
    assert np.all(up >= lp - lq) and np.all(up - (lp - lq) < 1e-13)
    assert loss_up(lp, lp, lp - lp).tolist() == [0.0] * 6  # equal entries: exactly 0


def test_finite_kernel_exact_tie_is_not_a_failure():
    # the infinite-loss output has probability exactly 0.05 = delta: PDP holds at delta = 0.05
    # (the tail mass equals delta, not more), decided in rational arithmetic
    m = pp.FiniteKernel([[0.05, 0.45, 0.5], [0.0, 0.5, 0.5]])
    assert pp.certify(m, pp.probabilistic_dp(1.0, 0.05)).holds
    assert not pp.certify(m, pp.probabilistic_dp(1.0, math.nextafter(0.05, 0.0))).holds
