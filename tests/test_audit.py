"""Audits (found lower bounds on κ) against values computed another way (docs/math.md §5-§12)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive import _tolerances as tol
from persuasive.audit.core import clopper_pearson_rank, tail_quantile
from persuasive.audit.gaussian_search import batch_marginal_loss
from persuasive.audit.small_cell import cell_losses

# ---------------------------------------------------------------- Prop 7 (docs/math.md §8, §12)


@pytest.mark.parametrize(
    ("r1", "r2", "n", "target"),
    [(1.0, 4.0, 2, 1 + math.log(4.0)), (1.0, 2.0, 5, 1 + math.log(2.0))],
)
def test_prop7_audit_reaches_sharp_bound(r1: float, r2: float, n: int, target: float) -> None:
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(r1, r2), 10.0)
    a = pp.audit(pp.ExactMean(), d, x=np.zeros(n), rng=0, n_starts=2)
    assert abs(a.kappa - target) < 1e-6
    assert a.kappa <= target + tol.LOSS_ATOL
    w = a.witness
    assert d.priors.contains(w.prior, w.x)
    assert pp.relative_loss(w.score, w.prior, pp.ExactMean(), w.x, w.t) == pytest.approx(
        a.kappa, abs=1e-12
    )


def test_prop7_sharp_witnesses_of_math_md() -> None:
    """The two sharp witnesses of docs/math.md §12, evaluated by the batched closed form."""
    got = batch_marginal_loss([[0.0, 0.0]], [np.diag([3.0, 1.0])], [2.0, 0.0]).max()
    assert got == pytest.approx(2.3862943611, abs=1e-10)
    x5 = [2 * math.sqrt(2), 0, 0, 0, 0]
    got5 = batch_marginal_loss(np.zeros((1, 5)), [np.diag([4.0, 1, 1, 1, 1])], x5).max()
    assert got5 == pytest.approx(1.6931471806, abs=1e-10)


def test_batched_prop7_loss_matches_relative_loss() -> None:
    rng = np.random.default_rng(3)
    for n in (2, 3, 5):
        a = rng.normal(size=(4, n, n))
        covs = a @ a.transpose(0, 2, 1) + 0.5 * np.eye(n)
        means = rng.normal(size=(4, n))
        x = rng.normal(size=n)
        fast = batch_marginal_loss(means, covs, x)
        for b in range(4):
            prior = pp.GaussianPrior(means[b], covs[b])
            for i in range(n):
                slow = pp.relative_loss(pp.MarginalDSS(i), prior, pp.ExactMean(), x)
                assert fast[b, i] == pytest.approx(slow, rel=1e-9, abs=1e-9)


def test_prop7_specific_coordinate_and_validation() -> None:
    d = pp.PersuasivePrivacy(pp.MarginalDSS(1), pp.GaussianMeanClass(0.5, 3.0), 10.0)
    a = pp.audit(pp.ExactMean(), d, x=[1.0, 2.0, 3.0], rng=1, n_starts=1)
    assert a.kappa == pytest.approx(0.5 + math.log(3.0), abs=1e-6)
    assert a.witness.x.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(pp.ValidationError, match="x must be one dataset"):
        pp.audit(pp.ExactMean(), d.with_kappa(1.0), x=[1.0])


# ---------------------------------------------------------------- Prop 8 (docs/math.md §9)


def test_prop8_poisson_value_and_sharp_audit() -> None:
    p = stats.poisson(4).pmf(np.arange(80))[None, :]
    assert cell_losses(p, 3, 3).max() == pytest.approx(1.4350506425, abs=1e-10)
    score = pp.SmallCellLogScore(r=3)
    q = pp.IndependentCellsPrior([stats.poisson(4)])
    oracle = max(pp.relative_loss(score, q, pp.CellSuppression(3), [k]) for k in range(9))
    assert oracle == pytest.approx(1.4350506425, abs=1e-10)
    d = pp.PersuasivePrivacy(score, pp.SmallCellClass(3, 0.2), 2.0)
    a = pp.audit(pp.CellSuppression(3), d, x=[5.0, 0.0, 1.0])
    assert a.kappa == pytest.approx(-math.log(0.2), abs=1e-9)
    assert a.kappa >= oracle
    w = a.witness
    assert d.priors.contains(w.prior, w.x)
    assert pp.relative_loss(w.score, w.prior, pp.CellSuppression(3), w.x, w.t) == a.kappa


def test_prop8_threshold_below_r_is_unbounded() -> None:
    d = pp.PersuasivePrivacy(pp.SmallCellLogScore(r=5), pp.SmallCellClass(3, 0.2), 2.0)
    a = pp.audit(pp.CellSuppression(3), d)
    assert a.kappa > 20 and not a.holds
    assert any("without bound" in n for n in a.notes)


# ---------------------------------------------------------------- Prop 6, finite (docs/math.md §6)


@pytest.mark.parametrize(("eps0", "k"), [(1.0, 2), (2.0, 4), (0.5, 3)])
def test_rr_exact_quantiles(eps0: float, k: int) -> None:
    keep = math.exp(eps0) / (math.exp(eps0) + k - 1)
    rr = pp.RandomizedResponse(eps0, k)
    below = pp.audit(rr, pp.probabilistic_dp(0.1, keep * 0.99))
    assert below.kappa == pytest.approx(eps0, abs=1e-9) and below.kappa <= eps0
    above = pp.audit(rr, pp.probabilistic_dp(0.1, min(keep * 1.01, 0.999)))
    assert above.kappa == pytest.approx(0.0, abs=1e-12)


def test_prop5_counterexample_mass_exactly_delta() -> None:
    """docs/math.md §5: a loss of +inf with mass exactly δ = 0.05 is not a violation at δ."""
    p, dl, eps = 0.2, 0.05, 1.0
    pb = p * math.exp(-0.9 * eps)
    r = (1 - dl - p - pb) / 2
    m = pp.FiniteKernel([[dl, p, r, 0, pb, r], [0, pb, r, dl, p, r]])
    merge = pp.FiniteKernel(
        np.array(
            [[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
            float,
        )
    )
    a = pp.audit(m, pp.probabilistic_dp(1.0, 0.05))
    assert a.kappa == pytest.approx(0.9, abs=1e-9)
    chained = pp.audit(pp.Chain(m, merge), pp.probabilistic_dp(1.0, 0.05))
    assert chained.kappa == pytest.approx(math.log((dl + p) / pb), abs=1e-9)
    assert chained.kappa == pytest.approx(1.123144, abs=1e-6) and not chained.holds
    joint = pp.audit(pp.Joint(m, merge), pp.probabilistic_dp(1.0, 0.05))
    assert joint.kappa == pytest.approx(0.9, abs=1e-9)  # Prop 4: receiver post-processing
    w = chained.witness
    assert pp.relative_loss(w.score, w.prior, pp.Chain(m, merge), w.x, w.t) == pytest.approx(
        chained.kappa, abs=1e-12
    )


def test_prop6_limit_increases_as_q_decreases() -> None:
    rr = pp.RandomizedResponse(2.0, 4)
    vals = [pp.audit(rr, pp.pure_dp(1.0), q_grid=[q]).kappa for q in (0.5, 0.1, 1e-3, 1e-9)]
    assert all(b > a for a, b in itertools.pairwise(vals))
    assert vals[-1] == pytest.approx(2.0, abs=1e-8) and vals[-1] <= 2.0
    g = pp.GaussianMechanism(1.0)
    mc = [
        pp.audit(g, pp.probabilistic_dp(1.0, 0.1), q_grid=[q], rng=5, n_samples=20_000).kappa
        for q in (0.5, 0.1, 1e-3, 1e-9)
    ]
    assert all(b > a for a, b in itertools.pairwise(mc))


def test_deterministic_release_under_neighbours_is_unbounded() -> None:
    a = pp.audit(pp.ExactMean(), pp.pure_dp(5.0))
    assert a.kappa == pytest.approx(-math.log(tol.TWO_POINT_Q_MIN)) and not a.holds
    assert any("without bound" in n for n in a.notes)
    same = pp.audit(pp.CellSuppression(3), pp.pure_dp(0.1), x=[[0.0], [1.0]])
    assert same.kappa == pytest.approx(0.0, abs=1e-15)  # both neighbours are suppressed


def test_finite_class_against_brute_force() -> None:
    q1 = pp.DiscretePrior([0, 1, 2], [0.2, 0.5, 0.3])
    q2 = pp.DiscretePrior([0, 1], [0.9, 0.1])
    k = pp.FiniteKernel([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    d = pp.PersuasivePrivacy(pp.LogScore(), pp.FiniteClass([q1, q2]), 1.0)
    best = -np.inf
    for q in (q1, q2):  # Δ = log m(x,t) − log Σ_z Q(z) m(z,t), worst over x in supp Q and t
        for xi in q.support[:, 0].astype(int):
            for t in range(3):
                pred = sum(
                    p * k.matrix[int(z), t] for z, p in zip(q.support[:, 0], q.probs, strict=True)
                )
                best = max(best, math.log(k.matrix[xi, t]) - math.log(pred))
    assert pp.audit(k, d).kappa == pytest.approx(best, abs=1e-12)


# ---------------------------------------------------------------- Monte Carlo (docs/math.md §6)


def test_gaussian_mc_below_and_close_to_closed_form() -> None:
    sigma, delta = 1.0, 0.05
    closed = 1 / (2 * sigma**2) + stats.norm.ppf(1 - delta) / sigma
    a = pp.audit(pp.GaussianMechanism(sigma), pp.probabilistic_dp(1.0, delta), rng=0)
    assert a.kappa <= closed and a.kappa > closed - 0.05
    assert a.method == "monte-carlo" and a.confidence == tol.MC_CONFIDENCE
    w = a.witness
    again = pp.relative_loss(w.score, w.prior, pp.GaussianMechanism(sigma), w.x, w.t)
    assert again == pytest.approx(a.kappa, abs=1e-9)


def test_laplace_mc_continuous_part() -> None:
    b, delta = 1.0, 0.6
    closed = 1 / b + 2 * math.log(2 * (1 - delta))  # docs/math.md §6, inverted
    a = pp.audit(pp.LaplaceMechanism(b), pp.probabilistic_dp(0.1, delta), rng=2)
    assert a.kappa <= closed and a.kappa > closed - 0.03


def test_mc_delta_zero_reports_observed_maximum() -> None:
    a = pp.audit(pp.GaussianMechanism(1.0), pp.pure_dp(1.0), rng=0, n_samples=1000)
    assert 2.0 < a.kappa < 6.0 and not a.holds


# ---------------------------------------------------------------- PPE (docs/math.md §7)


def test_ppe_rr_kl_exact() -> None:
    eps0 = 1.0
    p = math.exp(eps0) / (1 + math.exp(eps0))
    kl = (2 * p - 1) * eps0  # KL(RR(0) || RR(1))
    d = pp.PersuasivePrivacyExpectation(pp.LogScore(), pp.NeighbourPriors(), 1.0, pp.Mean())
    a = pp.audit(pp.RandomizedResponse(eps0, 2), d)  # Prop 11: the mean risk is KL
    assert a.kappa == pytest.approx(kl, abs=1e-9) and a.kappa <= kl + tol.LOSS_ATOL


def test_ppe_gaussian_renyi_mc_lower_bound() -> None:
    sigma, alpha = 2.0, 2.0
    a = pp.audit(pp.GaussianMechanism(sigma), pp.renyi_dp(alpha, 1.0), rng=0)
    assert a.kappa <= alpha / (2 * sigma**2) and a.kappa > 0.9 * alpha / (2 * sigma**2)


# ---------------------------------------------------------------- helpers and errors


def test_tail_quantile_and_rank() -> None:
    assert tail_quantile([1.0, 2.0], [0.5, 0.5], 0.5) == (1.0, 0)
    assert tail_quantile([1.0, 2.0], [0.5, 0.5], 0.49) == (2.0, 1)
    k = clopper_pearson_rank(10_000, 0.01, 0.99)
    assert stats.beta.ppf(0.01, k, 10_000 - k + 1) > 0.01
    assert stats.beta.ppf(0.01, k - 1, 10_000 - k + 2) <= 0.01


def test_unsupported_and_invalid() -> None:
    g = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), 1.0)
    with pytest.raises(pp.UnsupportedCombinationError, match="LaplaceMechanism"):
        pp.audit(pp.LaplaceMechanism(1.0), g)
    h = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.NeighbourPriors(), 1.0)
    with pytest.raises(pp.UnsupportedCombinationError, match="log score"):
        pp.audit(pp.RandomizedResponse(1.0), h)
    with pytest.raises(pp.ValidationError, match="n_samples"):
        pp.audit(pp.GaussianMechanism(1.0), pp.pure_dp(1.0), n_samples=1)
    with pytest.raises(pp.ValidationError, match="confidence"):
        pp.audit(pp.GaussianMechanism(1.0), pp.pure_dp(1.0), confidence=1.5)
    with pytest.raises(pp.ValidationError, match="q_grid"):
        pp.audit(pp.RandomizedResponse(1.0), pp.pure_dp(1.0), q_grid=[0.0])
    with pytest.raises(pp.ValidationError, match="increase n_samples"):
        pp.audit(pp.GaussianMechanism(1.0), pp.probabilistic_dp(1.0, 0.999), n_samples=10)
    assert pp.pure_dp(1.0).audit(pp.RandomizedResponse(1.0)).holds


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 7, 5_000, 30_000, 200_000])
def test_kth_order_statistic_selection_matches_sorting(k: int, largest: bool) -> None:
    # The pre-filtered selection used by the Monte Carlo audit against a full sort.
    from persuasive.audit.montecarlo import _kth_largest_continuous

    a = np.random.default_rng(k).standard_normal(400_000)
    idx = _kth_largest_continuous(a, k, largest=largest)
    expected = np.sort(a)[::-1][k - 1] if largest else np.sort(a)[k - 1]
    assert a[idx] == expected
