"""check_properness: proper scores pass, the small-cell score L^r is flagged (docs/math.md §9)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import persuasive as pp

# ---------------------------------------------------------------- strategies


@st.composite
def discrete_family(draw: st.DrawFn, min_k: int = 2) -> list[pp.DiscretePrior]:
    """2–4 beliefs on a common finite support of scalars, all probabilities positive."""
    k = draw(st.integers(min_k, 5))
    pts = sorted(draw(st.sets(st.integers(-6, 6), min_size=k, max_size=k)))
    out = []
    for _ in range(draw(st.integers(2, 4))):
        w = np.array(draw(st.lists(st.integers(1, 20), min_size=k, max_size=k)), dtype=float)
        out.append(pp.DiscretePrior([p / 2 for p in pts], w / w.sum()))
    return out


@st.composite
def gaussian_family(draw: st.DrawFn) -> list[pp.GaussianPrior]:
    n = draw(st.integers(1, 3))
    out = []
    for _ in range(draw(st.integers(2, 3))):
        mu = draw(st.lists(st.floats(-3, 3), min_size=n, max_size=n))
        a = np.array(draw(st.lists(st.floats(-1, 1), min_size=n * n, max_size=n * n)))
        cov = a.reshape(n, n) @ a.reshape(n, n).T + 0.5 * np.eye(n)
        out.append(pp.GaussianPrior(mu, cov))
    return out


def _poisson_and_truncation(lam: float, r: int) -> tuple[Any, Any]:
    below = stats.poisson(lam).pmf(np.arange(r))
    return (
        pp.IndependentCellsPrior([stats.poisson(lam)]),
        pp.IndependentCellsPrior([below / below.sum()]),
    )


# ---------------------------------------------------------------- proper scores pass


@given(discrete_family())
def test_log_brier_spherical_dss_proper_on_discrete_beliefs(beliefs: list[Any]) -> None:
    for score in (
        pp.LogScore(),
        pp.BrierScore(),
        pp.SphericalScore(),
        pp.DawidSebastiani(),
        pp.MarginalDSS(),
    ):
        res = pp.check_properness(score, beliefs)
        assert res.proper, (score, res.explain())
        assert res.counterexample is None


@given(discrete_family(min_k=1), st.sampled_from([0.5, 1.0, 2.0, 3.5]))
def test_interval_score_proper_on_discrete_beliefs(beliefs: list[Any], s: float) -> None:
    res = pp.check_properness(pp.IntervalScore(s), beliefs)
    assert res.proper, res.explain()


@given(discrete_family())
def test_strictly_proper_scores_have_negative_gap_on_distinct_beliefs(beliefs: list[Any]) -> None:
    distinct = {tuple(b.probs.round(12)) for b in beliefs}
    if len(distinct) < len(beliefs):
        return
    for score in (pp.LogScore(), pp.BrierScore(), pp.SphericalScore()):
        assert pp.check_properness(score, beliefs).gap < 0.0


def test_interval_score_not_strictly_proper() -> None:
    # N(0,1) and N(0,4) share the Bayes act [-1/2, 1/2], so S(P, Q) = S(Q, Q) exactly
    beliefs = [pp.GaussianPrior([0.0], [[1.0]]), pp.GaussianPrior([0.0], [[4.0]])]
    res = pp.check_properness(pp.IntervalScore(1.0), beliefs)
    assert res.proper and res.gap == 0.0 and res.method == "closed form"


@given(gaussian_family())
def test_dss_closed_form_proper_on_gaussian_beliefs(beliefs: list[Any]) -> None:
    res = pp.check_properness(pp.DawidSebastiani(), beliefs)
    assert res.proper and res.method == "closed form"
    # independent check: S(Q,Q) = logdet Σ_Q + n <= logdet Σ_P + tr(Σ_P⁻¹Σ_Q) + Mahalanobis
    for P in beliefs:
        for Q in beliefs:
            sp, sq = P.cov(), Q.cov()
            d = Q.mean() - P.mean()
            s_pq = (
                np.linalg.slogdet(sp)[1]
                + np.trace(np.linalg.solve(sp, sq))
                + d @ np.linalg.solve(sp, d)
            )
            assert np.linalg.slogdet(sq)[1] + Q.dim <= s_pq + 1e-9


def test_dss_closed_form_matches_monte_carlo() -> None:
    rng = np.random.default_rng(1)
    P = pp.GaussianPrior([0.5, -1.0], [[2.0, 0.3], [0.3, 1.0]])
    Q = pp.GaussianPrior([0.0, 0.0], [[1.0, -0.2], [-0.2, 0.5]])
    xs = Q.sample(40_000, rng)
    vals = np.array([pp.DawidSebastiani()(P, x) for x in xs])
    sp, d = P.cov(), Q.mean() - P.mean()
    closed = (
        np.linalg.slogdet(sp)[1]
        + np.trace(np.linalg.solve(sp, Q.cov()))
        + d @ np.linalg.solve(sp, d)
    )
    assert abs(vals.mean() - closed) < 5 * vals.std() / math.sqrt(vals.size)


def test_monte_carlo_path_log_score_gaussian_is_proper() -> None:
    beliefs = [pp.GaussianPrior([0.0], [[1.0]]), pp.GaussianPrior([0.3], [[2.0]])]
    res = pp.check_properness(pp.LogScore(), beliefs, n_samples=5000, rng=0)
    assert res.proper and res.method == "monte carlo"
    # KL(Q || P) = S(P, Q) − S(Q, Q) in closed form for the first ordered pair (P = 2nd, Q = 1st)
    kl = 0.5 * (1 / 2 + 0.3**2 / 2 - 1 + math.log(2))
    assert res.gap == pytest.approx(-kl, abs=0.05)


@dataclass(frozen=True)
class _TwiceMeanSquaredError(pp.Score):
    """An improper score, S(P, x) = (x − 2 μ_P)²: a belief at μ_Q/2 beats the truth."""

    proper = False

    def __call__(self, P: pp.Prior, x: Any) -> float:
        return float((np.asarray(x, dtype=float)[0] - 2 * P.mean()[0]) ** 2)


def test_monte_carlo_path_flags_an_improper_score() -> None:
    Q, P = pp.GaussianPrior([2.0], [[1.0]]), pp.GaussianPrior([1.0], [[1.0]])
    res = pp.check_properness(_TwiceMeanSquaredError(), [P, Q], n_samples=4000, rng=3)
    assert not res.proper and res.counterexample is not None
    c = res.counterexample
    assert c.Q is Q and c.P is P and c.standard_error > 0
    # S(Q, Q) = 1 + 4 = 5, S(P, Q) = 1 (exact)
    assert c.S_QQ == pytest.approx(5.0, abs=6 * c.standard_error + 0.05)
    assert c.S_PQ == pytest.approx(1.0, abs=0.1)


def test_independent_cells_truncated_grid_is_used_and_proper() -> None:
    beliefs = [
        pp.IndependentCellsPrior([stats.poisson(2.0), stats.poisson(1.0)]),
        pp.IndependentCellsPrior([stats.poisson(3.0), [0.5, 0.5]]),
    ]
    res = pp.check_properness(pp.LogScore(), beliefs)
    assert res.proper and "truncated" in res.method


# ---------------------------------------------------------------- L^r is flagged


def test_smallcell_flagged_with_math_md_numbers() -> None:
    Q, P = _poisson_and_truncation(2.0, 3)
    res = pp.check_properness(pp.SmallCellLogScore(0, r=3), [Q, P])
    assert not res.proper
    c = res.counterexample
    assert c is not None and c.Q is Q and c.P is P
    q = stats.poisson(2.0).pmf(np.arange(3))
    s_qq = float(-(q * np.log(q)).sum())  # E_Q L^r(Q, X): only X < 3 contributes
    s_pq = float(-(q * np.log(q / q.sum())).sum())
    assert c.S_QQ == pytest.approx(s_qq, rel=1e-12) and c.S_QQ == pytest.approx(
        0.97812375, abs=1e-8
    )
    assert c.S_PQ == pytest.approx(s_pq, rel=1e-12) and c.S_PQ == pytest.approx(
        0.71383960, abs=1e-8
    )
    assert res.gap == pytest.approx(s_qq - s_pq)
    assert res.to_dict()["proper"] is False and "Not proper" in res.explain()


def test_smallcell_flagged_with_discrete_priors_and_family() -> None:
    q = stats.poisson(2.0).pmf(np.arange(12))
    q = q / q.sum()
    Q = pp.DiscretePrior(np.arange(12), q)
    P = pp.DiscretePrior(np.arange(3), q[:3] / q[:3].sum())
    assert not pp.check_properness(pp.SmallCellLogScore(0, r=3), [P, Q]).proper
    two = [
        pp.IndependentCellsPrior([[0.5, 0.5], [0.2, 0.3, 0.5]]),
        pp.IndependentCellsPrior([[0.5, 0.5], [0.4, 0.6]]),
    ]
    res = pp.check_properness(pp.SmallCellLogScore(r=2), two)
    assert not res.proper and res.counterexample is not None
    assert res.counterexample.score == pp.SmallCellLogScore(1, r=2)


@given(st.floats(0.3, 8.0), st.integers(2, 5))
def test_smallcell_always_beaten_by_its_truncation(lam: float, r: int) -> None:
    # S(Q(.|X<r), Q) − S(Q, Q) = c log c < 0 with c = Q(X < r)
    Q, P = _poisson_and_truncation(lam, r)
    c = stats.poisson(lam).cdf(r - 1)
    res = pp.check_properness(pp.SmallCellLogScore(0, r=r), [Q, P])
    if -c * math.log(c) > 1e-6:
        assert not res.proper
        assert res.gap == pytest.approx(-c * math.log(c), rel=1e-6, abs=1e-12)


# ---------------------------------------------------------------- validation and result object


def test_check_properness_validation() -> None:
    g = pp.GaussianPrior([0.0], [[1.0]])
    with pytest.raises(pp.ValidationError, match="beliefs"):
        pp.check_properness(pp.LogScore(), [g])
    with pytest.raises(pp.ValidationError, match=r"beliefs\[1\]"):
        pp.check_properness(pp.LogScore(), [g, "x"])  # type: ignore[list-item]
    with pytest.raises(pp.ValidationError, match="dimension"):
        pp.check_properness(pp.LogScore(), [g, pp.GaussianPrior([0.0, 0.0], [1.0, 1.0])])
    with pytest.raises(pp.ValidationError, match="n_samples"):
        pp.check_properness(pp.LogScore(), [g, g], n_samples=1)
    with pytest.raises(pp.ValidationError, match="score"):
        pp.check_properness("log", [g, g])  # type: ignore[arg-type]


def test_proper_check_is_frozen() -> None:
    res = pp.check_properness(
        pp.BrierScore(),
        [pp.DiscretePrior([0, 1], [0.5, 0.5]), pp.DiscretePrior([0, 1], [0.1, 0.9])],
    )
    assert res.proper and res.pairs == 2 and res.method == "exact"
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.proper = False  # type: ignore[misc]
    assert res.to_dict()["counterexample"] is None
