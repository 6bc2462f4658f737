"""Interval, small-cell, Brier/spherical scores, privacy functions: against independent oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scoringrules as sr
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from scipy.spatial.distance import cosine

import persuasive as pp

# ---------------------------------------------------------------- strategies


@st.composite
def discrete_beliefs(draw: st.DrawFn, max_k: int = 6) -> tuple[list[float], list[float]]:
    """Distinct sorted support points on a coarse grid (so ties occur) and positive probs."""
    k = draw(st.integers(1, max_k))
    pts = sorted(draw(st.sets(st.integers(-8, 8), min_size=k, max_size=k)))
    w = draw(st.lists(st.integers(1, 6), min_size=k, max_size=k))
    total = sum(w)
    return [p / 2 for p in pts], [x / total for x in w]


def _brute_interval(points: list[float], probs: list[float], s: float) -> tuple[float, float]:
    """Smallest a of maximal P([a, a+s]) over a dense candidate set, by direct summation."""
    cands = sorted(
        {p - s for p in points}
        | set(points)
        | {float(a) for a in np.arange(min(points) - s - 1, max(points) + 1, 0.05)}
    )
    best_mass, best_a = -1.0, math.nan
    for a in cands:
        mass = sum(q for p, q in zip(points, probs, strict=True) if a <= p <= a + s)
        if mass > best_mass + 1e-12:
            best_mass, best_a = mass, a
    return best_a, best_mass


# ---------------------------------------------------------------- interval score


@pytest.mark.parametrize(("mu", "var", "s"), [(0.0, 1.0, 1.0), (3.0, 0.25, 0.2), (-2.0, 9.0, 5.0)])
def test_interval_gaussian_closed_form_and_grid(mu: float, var: float, s: float) -> None:
    a, b = pp.IntervalScore(s).bayes_act(pp.GaussianPrior([mu], [[var]]))
    assert a == pytest.approx(mu - s / 2, abs=1e-12)  # docs/math.md §2: symmetric unimodal
    assert b - a == pytest.approx(s)
    law = stats.norm(mu, math.sqrt(var))
    grid = np.linspace(mu - 3 * s - 5, mu + 2 * s + 5, 200_001)
    mass = law.cdf(grid + s) - law.cdf(grid)
    assert abs(grid[np.argmax(mass)] - a) <= 2 * (grid[1] - grid[0])


@pytest.mark.parametrize(("k", "s"), [(2.0, 1.0), (3.0, 0.5), (5.5, 2.0)])
def test_interval_gamma_closed_form(k: float, s: float) -> None:
    # p(a+s) = p(a) for Gamma(k, 1):  ((a+s)/a)^(k-1) = e^s  =>  a = s / (e^{s/(k-1)} - 1)
    exact = s / math.expm1(s / (k - 1))
    a, b = pp.interval_bayes_act(stats.gamma(k), s)
    assert a == pytest.approx(exact, abs=1e-9)
    assert b - a == pytest.approx(s)


def test_interval_gamma_2_1_matches_math_md() -> None:
    a, _ = pp.IntervalScore(1.0).bayes_act(stats.gamma(2.0))
    assert a == pytest.approx(1 / (math.e - 1), abs=1e-9)
    assert a == pytest.approx(0.5819767069, abs=1e-9)


@pytest.mark.parametrize(
    ("law", "s"),
    [
        (stats.lognorm(0.7), 0.8),
        (stats.beta(2, 5), 0.1),
        (stats.weibull_min(1.5, scale=2), 1.0),
        (stats.t(3, loc=1.0), 2.0),
    ],
)
def test_interval_continuous_against_brute_force_grid(law: object, s: float) -> None:
    a, _ = pp.interval_bayes_act(law, s)
    lo, hi = law.ppf(1e-9) - s, law.ppf(1 - 1e-9)  # type: ignore[attr-defined]
    grid = np.linspace(lo, hi, 400_001)
    mass = law.cdf(grid + s) - law.cdf(grid)  # type: ignore[attr-defined]
    found = law.cdf(a + s) - law.cdf(a)  # type: ignore[attr-defined]
    assert found >= mass.max() - 1e-12
    assert abs(grid[np.argmax(mass)] - a) <= 2 * (grid[1] - grid[0])


def test_interval_flat_top_uses_smallest_left_end() -> None:
    a, b = pp.interval_bayes_act(stats.uniform(0, 1), 0.5)
    assert a == pytest.approx(0.0, abs=1e-12) and b == pytest.approx(0.5, abs=1e-12)


def test_interval_point_mass_tie_break() -> None:
    # every [a, a+s] containing c is optimal; the smallest left end is c - s
    assert pp.IntervalScore(1.0).bayes_act(pp.DiscretePrior([2.0], [1.0])) == (1.0, 2.0)
    deg = pp.GaussianPrior([2.0], [[0.0]], allow_singular=True)
    assert pp.IntervalScore(1.0).bayes_act(deg) == (1.0, 2.0)


@given(discrete_beliefs(), st.sampled_from([0.5, 1.0, 1.5, 2.25]))
def test_interval_discrete_against_brute_force(
    belief: tuple[list[float], list[float]], s: float
) -> None:
    pts, probs = belief
    a, b = pp.IntervalScore(s).bayes_act(pp.DiscretePrior(pts, probs))
    a_ref, mass_ref = _brute_interval(pts, probs, s)
    assert a == pytest.approx(a_ref, abs=1e-9)
    mass = sum(q for p, q in zip(pts, probs, strict=True) if a <= p <= b)
    assert mass == pytest.approx(mass_ref, abs=1e-12)


def test_interval_integer_laws_against_enumeration() -> None:
    law = stats.poisson(4.0)
    pmf = law.pmf(np.arange(60))
    for s in (0.5, 1.0, 2.5, 4.0):
        a_ref, _ = _brute_interval(list(range(60)), list(pmf), s)
        assert pp.interval_bayes_act(law, s)[0] == pytest.approx(a_ref)
        cells = pp.IndependentCellsPrior([law])
        assert pp.IntervalScore(s).bayes_act(cells)[0] == pytest.approx(a_ref)


def test_interval_score_values_and_relative_loss() -> None:
    q = pp.DiscretePrior([0, 1, 2, 3], [0.4, 0.3, 0.2, 0.1])
    score = pp.IntervalScore(1.0)
    assert score.bayes_act(q) == (0.0, 1.0)  # mass 0.7
    assert [score(q, x) for x in range(4)] == [0.0, 0.0, 1.0, 1.0]
    # suppression of x < 2: releasing x = 3 reveals it (Δ = 1); x = 1 stays hidden (Δ = 0)
    assert pp.relative_loss(score, q, pp.CellSuppression(2), [3]) == 1.0
    assert pp.relative_loss(score, q, pp.CellSuppression(2), [1]) == 0.0
    # Gaussian, noisy release: N(0,1) prior, T = x + N(0,1) = 3 -> posterior N(1.5, 0.5)
    g = pp.GaussianPrior([0.0], [[1.0]])
    assert pp.relative_loss(score, g, pp.GaussianMechanism(1.0), [2.0], t=[3.0]) == 1.0
    assert pp.relative_loss(score, g, pp.GaussianMechanism(1.0), [0.0], t=[3.0]) == -1.0


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "1", None])
def test_interval_rejects_bad_s(bad: object) -> None:
    with pytest.raises(pp.ValidationError, match="s must"):
        pp.IntervalScore(bad)  # type: ignore[arg-type]
    with pytest.raises(pp.ValidationError, match="s must"):
        pp.IntervalPrivacyFunction(bad)  # type: ignore[arg-type]


def test_interval_rejects_multivariate_belief() -> None:
    with pytest.raises(pp.ValidationError, match="univariate"):
        pp.IntervalScore(1.0)(pp.GaussianPrior([0.0, 0.0], [1.0, 1.0]), [0.0, 0.0])


def test_interval_privacy_function() -> None:
    rho = pp.IntervalPrivacyFunction(1.0)
    assert rho((0.0, 1.0), 1.0) == 0.0
    assert rho((0.0, 1.0), 1.5) == 1.0
    assert rho((0.0, 1.5), 0.5) == 1.0  # too long: the Receiver gains nothing
    assert rho((0.2, 0.2), 0.2) == 0.0
    with pytest.raises(pp.ValidationError, match="d must"):
        rho((1.0, 0.0), 0.5)


@given(discrete_beliefs(), st.sampled_from([0.2, 0.7, 1.0, 3.0]))
def test_induced_interval_score_equals_interval_score(
    belief: tuple[list[float], list[float]], s: float
) -> None:
    q = pp.DiscretePrior(*belief)
    induced = pp.InducedScore(pp.IntervalPrivacyFunction(s))
    for x in [*belief[0], 0.3, 10.0]:
        assert induced(q, x) == pp.IntervalScore(s)(q, x)


# ---------------------------------------------------------------- small-cell log score


def test_smallcell_values_against_scipy() -> None:
    law = stats.poisson(4.0)
    q = pp.IndependentCellsPrior([law, [0.5, 0.25, 0.25]])
    for x0 in range(8):
        expected = -law.logpmf(x0) if x0 < 3 else 0.0
        assert pp.SmallCellLogScore(0, r=3)(q, [x0, 1]) == pytest.approx(expected, rel=1e-13)
    assert pp.SmallCellLogScore(1, r=2)(q, [9, 1]) == pytest.approx(math.log(4))
    assert pp.SmallCellLogScore(1, r=2)(q, [9, 2]) == 0.0


def test_smallcell_discrete_prior_marginal() -> None:
    support = [[0, 0], [0, 3], [1, 0], [2, 5]]
    probs = [0.1, 0.2, 0.3, 0.4]
    q = pp.DiscretePrior(support, probs)
    marg: dict[int, float] = {}
    for (a, _), p in zip(support, probs, strict=True):
        marg[a] = marg.get(a, 0.0) + p
    for a in (0, 1):
        assert pp.SmallCellLogScore(0, r=2)(q, [a, 7]) == pytest.approx(-math.log(marg[a]))
    assert pp.SmallCellLogScore(0, r=2)(q, [2, 7]) == 0.0
    assert pp.SmallCellLogScore(1, r=2)(q, [0, 1]) == math.inf  # x_1 = 1 has marginal mass 0


def test_smallcell_family_and_flags() -> None:
    fam = pp.SmallCellLogScore(r=3)
    assert fam.is_family and not pp.SmallCellLogScore(0, r=3).is_family
    assert fam.members(3) == [pp.SmallCellLogScore(j, 3) for j in range(3)]
    assert pp.SmallCellLogScore.proper is False and fam.proper is False
    with pytest.raises(pp.ValidationError, match="family"):
        fam(pp.IndependentCellsPrior([[1.0]]), [0])
    with pytest.raises(pp.ValidationError, match="i must"):
        pp.SmallCellLogScore(2, r=3).members(2)
    with pytest.raises(pp.ValidationError, match="P must"):
        pp.SmallCellLogScore(0)(pp.GaussianPrior([0.0], [[1.0]]), [0])


@pytest.mark.parametrize(
    ("kw", "name"),
    [({"r": 0}, "r"), ({"r": 1.5}, "r"), ({"r": "3"}, "r"), ({"i": -1}, "i"), ({"i": 0.5}, "i")],
)
def test_smallcell_rejects_bad_parameters(kw: dict[str, object], name: str) -> None:
    with pytest.raises(pp.ValidationError, match=f"{name} must"):
        pp.SmallCellLogScore(**kw)  # type: ignore[arg-type]


def test_smallcell_threshold_is_at_least_two_as_in_the_spec() -> None:
    # §5.2 takes r >= 2; before, the API accepted r = 1 although the spec rejected it.
    with pytest.raises(pp.ValidationError) as err:
        pp.SmallCellLogScore(r=1)
    assert str(err.value) == "r must be an integer in [2, 1000000]; got 1"
    with pytest.raises(pp.ValidationError, match=r"r must be an integer in \[2, 1000000\]"):
        pp.SmallCellLogScore(0, r=10**7)
    assert pp.SmallCellLogScore(r=2).r == 2 and pp.SmallCellLogScore(r=2.0).r == 2


def test_smallcell_cell_suppression_relative_loss_math_md_9() -> None:
    law = stats.poisson(4.0)
    q = pp.IndependentCellsPrior([law])
    deltas = [
        pp.relative_loss(pp.SmallCellLogScore(r=3), q, pp.CellSuppression(3), [x]) for x in range(9)
    ]
    bound = -math.log(law.cdf(2))  # −log P(X < 3)
    assert max(deltas) == pytest.approx(1.4350506425, abs=1e-10)
    assert max(deltas) == pytest.approx(bound, rel=1e-13)
    assert deltas[:3] == pytest.approx([bound] * 3, rel=1e-12) and deltas[3:] == [0.0] * 6
    # h < r breaks Prop 8: a released x = 3 < r = 5 costs −log q(3) (docs/math.md §9: 1.632876)
    d3 = pp.relative_loss(pp.SmallCellLogScore(r=5), q, pp.CellSuppression(3), [3])
    assert d3 == pytest.approx(-law.logpmf(3)) and d3 == pytest.approx(1.632876, abs=1e-6)


def test_smallcell_two_cells_worst_member() -> None:
    q = pp.IndependentCellsPrior([stats.poisson(4.0), stats.poisson(2.0)])
    got = pp.relative_loss(pp.SmallCellLogScore(r=3), q, pp.CellSuppression(3), [5, 1])
    assert got == pytest.approx(-stats.poisson(2.0).logcdf(2))


# ---------------------------------------------------------------- Brier / spherical


@given(discrete_beliefs(max_k=8), st.integers(-20, 20))
def test_brier_against_scoringrules(belief: tuple[list[float], list[float]], xi: int) -> None:
    pts, probs = belief
    q = pp.DiscretePrior(pts, probs)
    x = xi / 2
    # categorical Brier = sum over categories of the binary Brier score of each indicator
    cats = sorted(set(pts) | {x})
    fct = [dict(zip(pts, probs, strict=True)).get(c, 0.0) for c in cats]
    obs = [1.0 if c == x else 0.0 for c in cats]
    expected = float(np.sum(sr.brier_score(np.array(obs), np.array(fct))))
    assert pp.BrierScore()(q, x) == pytest.approx(expected, abs=1e-12)


@given(discrete_beliefs(max_k=8), st.integers(-20, 20))
def test_spherical_against_cosine(belief: tuple[list[float], list[float]], xi: int) -> None:
    pts, probs = belief
    x = xi / 2
    cats = sorted(set(pts) | {x})
    vec = np.array([dict(zip(pts, probs, strict=True)).get(c, 0.0) for c in cats])
    ind = np.array([1.0 if c == x else 0.0 for c in cats])
    expected = -(1.0 - cosine(vec, ind))  # −cos angle(P, e_x) = −P(x)/‖P‖
    assert pp.SphericalScore()(pp.DiscretePrior(pts, probs), x) == pytest.approx(
        expected, abs=1e-12
    )


def test_brier_spherical_on_independent_cells_match_product_table() -> None:
    c0, c1 = np.array([0.2, 0.8]), np.array([0.5, 0.3, 0.2])
    cells = pp.IndependentCellsPrior([c0, c1])
    support = [[i, j] for i in range(2) for j in range(3)]
    table = pp.DiscretePrior(support, [c0[i] * c1[j] for i, j in support])
    for x in [[0, 0], [1, 2], [3, 0]]:
        assert pp.BrierScore()(cells, x) == pytest.approx(pp.BrierScore()(table, x))
        assert pp.SphericalScore()(cells, x) == pytest.approx(pp.SphericalScore()(table, x))


def test_finite_scores_reject_infinite_spaces() -> None:
    with pytest.raises(pp.ValidationError, match="P must"):
        pp.BrierScore()(pp.GaussianPrior([0.0], [[1.0]]), 0.0)
    with pytest.raises(pp.ValidationError, match="P must"):
        pp.SphericalScore()(pp.IndependentCellsPrior([stats.poisson(1.0)]), [0])


# ---------------------------------------------------------------- privacy functions


def test_finite_privacy_function_bayes_act_by_hand() -> None:
    R = [[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [0.4, 0.4, 0.4]]
    rho = pp.FinitePrivacyFunction(["x0", "x1", "abstain"], R)
    for probs in ([0.7, 0.2, 0.1], [0.1, 0.5, 0.4], [0.3, 0.3, 0.4], [0.5, 0.5, 0.0]):
        exp = [sum(p * r for p, r in zip(probs, row, strict=True)) for row in R]
        best = min(exp)
        expected = ["x0", "x1", "abstain"][[abs(e - best) < 1e-12 for e in exp].index(True)]
        assert rho.bayes_act(pp.DiscretePrior([0, 1, 2], probs)) == expected
    score = pp.InducedScore(rho)
    assert score(pp.DiscretePrior([0, 1, 2], [0.7, 0.2, 0.1]), 1) == 1.0
    assert rho("abstain", 2) == 0.4


def test_finite_privacy_function_validation() -> None:
    with pytest.raises(pp.ValidationError, match="rho_matrix"):
        pp.FinitePrivacyFunction(["a"], [[0.0], [1.0]])
    with pytest.raises(pp.ValidationError, match="decisions"):
        pp.FinitePrivacyFunction(["a", "a"], [[0.0], [1.0]])
    rho = pp.FinitePrivacyFunction(["a", "b"], [[0.0, 1.0], [1.0, 0.0]], outcomes=[10, 20])
    with pytest.raises(pp.ValidationError, match="x must"):
        rho("a", 0)
    with pytest.raises(pp.ValidationError, match="d must"):
        rho("c", 10)
    assert rho.bayes_act(pp.DiscretePrior([10, 20], [0.2, 0.8])) == "b"


def test_log_privacy_function_induces_log_score() -> None:
    q = pp.DiscretePrior([0, 1, 5], [0.2, 0.3, 0.5])
    induced = pp.InducedScore(pp.LogPrivacyFunction())
    for x, p in ((0, 0.2), (1, 0.3), (5, 0.5)):
        assert induced(q, x) == pytest.approx(-math.log(p))
    assert induced(q, 2) == math.inf
    g = pp.GaussianPrior([1.0], [[4.0]])
    assert induced(g, 0.0) == pytest.approx(-stats.norm(1.0, 2.0).logpdf(0.0))


def test_privacy_function_from_score() -> None:
    q = pp.DiscretePrior([0, 1], [0.3, 0.7])
    for s in (pp.BrierScore(), pp.SphericalScore(), pp.LogScore()):
        assert pp.InducedScore(pp.privacy_function_from_score(s))(q, 1) == s(q, 1)
    with pytest.raises(pp.ValidationError, match="proper"):
        pp.privacy_function_from_score(pp.SmallCellLogScore(0, r=3))
    with pytest.raises(pp.ValidationError, match="family"):
        pp.privacy_function_from_score(pp.MarginalDSS())
    with pytest.raises(pp.ValidationError, match="rho must"):
        pp.InducedScore("not a function")  # type: ignore[arg-type]


def test_describe_is_json_ready() -> None:
    import json

    cases = [
        (pp.IntervalScore(1.0), "IntervalScore", {"s": 1.0}),
        (pp.SmallCellLogScore(r=3), "SmallCellLogScore", {"r": 3}),
        (pp.BrierScore(), "BrierScore", {}),
        (pp.SphericalScore(), "SphericalScore", {}),
        (pp.InducedScore(pp.IntervalPrivacyFunction(2.0)), "InducedScore", {}),
        (pp.FinitePrivacyFunction(["a"], [[1.0, 2.0]]), "FinitePrivacyFunction", {}),
    ]
    for obj, name, params in cases:
        d = obj.describe()
        assert json.loads(json.dumps(d)) == d  # survives a JSON round trip unchanged
        assert name in json.dumps(d)  # names what it describes
        for key, value in params.items():  # and carries its parameters
            assert d[key] == value
