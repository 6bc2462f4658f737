"""Priors, mechanisms, prior classes and definitions: behaviour and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import persuasive as pp

# ---------------------------------------------------------------- priors


def test_gaussian_prior_logpdf_matches_scipy() -> None:
    cov = np.array([[2.0, 0.4], [0.4, 1.0]])
    q = pp.GaussianPrior([1.0, -1.0], cov)
    x = np.array([0.3, 0.2])
    assert q.logpdf(x) == pytest.approx(stats.multivariate_normal([1, -1], cov).logpdf(x))


def test_singular_gaussian_is_minus_infinity_off_its_support() -> None:
    post = pp.posterior(pp.GaussianPrior([0.0, 0.0], [1.0, 1.0]), pp.ExactMean(), 1.0)
    assert post.logpdf([2.0, 0.0]) > -np.inf
    assert post.logpdf([2.0, 1.0]) == -np.inf


def test_discrete_prior_merges_duplicates_and_moments() -> None:
    q = pp.DiscretePrior([0, 1, 1], [0.2, 0.3, 0.5])
    assert q.probs.tolist() == pytest.approx([0.2, 0.8])
    assert q.mean()[0] == pytest.approx(0.8)
    assert q.cov()[0, 0] == pytest.approx(0.8 - 0.64)


def test_independent_cells_accepts_arrays_and_scipy_laws() -> None:
    q = pp.IndependentCellsPrior([[0.5, 0.5], stats.poisson(3)])
    assert q.logpdf([1, 4]) == pytest.approx(math.log(0.5) + stats.poisson(3).logpmf(4))
    assert q.logpdf([2, 4]) == -np.inf
    assert q.cell_cdf_below(1, 3) == pytest.approx(stats.poisson(3).cdf(2))
    np.testing.assert_allclose(q.mean(), [0.5, 3.0])


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: pp.GaussianPrior([0.0, np.nan], np.eye(2)), "mean"),
        (lambda: pp.GaussianPrior([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]]), "positive definite"),
        (lambda: pp.GaussianPrior([0.0, 0.0], [[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
        (lambda: pp.GaussianPrior([0.0], [[np.inf]]), "finite"),
        (lambda: pp.DiscretePrior([0, 1], [0.5, 0.6]), "sum to one"),
        (lambda: pp.DiscretePrior([0, 1], [-0.5, 1.5]), "non-negative"),
        (lambda: pp.DiscretePrior([0, 1, 2], [0.5, 0.5]), "one entry per support point"),
        (lambda: pp.IndependentCellsPrior([[0.5, 0.4]]), r"pmfs\[0\]"),
        (lambda: pp.IndependentCellsPrior([]), "non-empty"),
        (lambda: pp.IndependentCellsPrior([stats.norm(0, 1)]), r"pmfs\[0\] must be a 1-d pmf"),
        (lambda: pp.IndependentCellsPrior([stats.poisson]), "needs parameters"),
        (lambda: pp.IndependentCellsPrior([[0.5, 0.5], stats.randint(-2, 3)]), r"pmfs\[1\]"),
        (lambda: pp.TwoPointPrior(0, 1, 1.5), "q must be in"),
    ],
)
def test_prior_bad_input(build, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pp.ValidationError, match=match):
        build()


# ---------------------------------------------------------------- mechanisms


@pytest.mark.parametrize(
    ("mech", "dist"),
    [
        (pp.LaplaceMechanism(1.5), stats.laplace(loc=2.0, scale=1.5)),
        (pp.GaussianMechanism(0.7), stats.norm(loc=2.0, scale=0.7)),
    ],
)
def test_continuous_noise_likelihood_and_sampling(mech, dist) -> None:  # type: ignore[no-untyped-def]
    t = np.linspace(-3, 7, 11)
    np.testing.assert_allclose(mech.log_likelihood([2.0], t[:, None]), dist.logpdf(t))
    draws = mech.sample([2.0], 20_000, np.random.default_rng(0))[:, 0]
    assert stats.kstest(draws, dist.cdf).pvalue > 1e-3


def test_geometric_mechanism_pmf_sums_to_one_and_sampler_agrees() -> None:
    m = pp.GeometricMechanism(2.0)
    k = np.arange(-200, 201, dtype=float)
    pmf = np.exp(m.log_likelihood([0.0], k[:, None]))
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    draws = m.sample([0.0], 50_000, np.random.default_rng(1))[:, 0]
    emp = np.array([(draws == v).mean() for v in range(-3, 4)])
    np.testing.assert_allclose(emp, pmf[197:204], atol=0.01)
    assert m.log_likelihood([0.0], [0.5]) == -np.inf


def test_randomized_response_matrix_closed_form() -> None:
    rr = pp.RandomizedResponse(2.0, 4)
    keep = math.exp(2) / (math.exp(2) + 3)
    assert rr.matrix[1, 1] == pytest.approx(keep)
    assert rr.matrix[1, 0] == pytest.approx((1 - keep) / 3)


def test_cell_suppression_and_linear_statistic() -> None:
    assert pp.CellSuppression(5).apply([4, 5, 0]).tolist() == [-1, 5, -1]
    assert pp.LinearStatistic([1.0, -1.0]).apply([3.0, 1.0]).tolist() == [2.0]
    assert pp.CellSuppression(5).log_likelihood(np.array([[4, 5], [6, 5]]), [-1, 5]).tolist() == [
        0.0,
        -np.inf,
    ]


def test_chain_and_joint_of_finite_kernels() -> None:
    m = pp.FiniteKernel([[0.6, 0.4], [0.1, 0.9]])
    k = pp.FiniteKernel([[0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(pp.Chain(m, k).as_finite().matrix, m.matrix @ k.matrix)
    joint = pp.Joint(m, k).as_finite().matrix
    assert joint.shape == (2, 4)
    np.testing.assert_allclose(joint.reshape(2, 2, 2).sum(axis=2), m.matrix)
    # Chain likelihood without converting: logsumexp over the intermediate output.
    ll = pp.Chain(m, k).log_likelihood([0], 1)
    assert np.exp(ll) == pytest.approx((m.matrix @ k.matrix)[0, 1])


@given(st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_finite_kernel_output_distribution_is_its_row(k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    mat = rng.dirichlet(np.ones(k), size=k)
    fk = pp.FiniteKernel(mat)
    x = int(rng.integers(k))
    outs, probs = fk.output_distribution([x])
    assert probs.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(probs, mat[x][outs.astype(int)])


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: pp.LaplaceMechanism(0.0), "scale must be in"),
        (lambda: pp.GaussianMechanism(-1.0), "sigma must be in"),
        (lambda: pp.GaussianMechanism(float("nan")), "sigma must be a finite"),
        (lambda: pp.RandomizedResponse(1.0, 1), "k must be an integer"),
        (lambda: pp.CellSuppression(0), "h must be an integer"),
        (lambda: pp.FiniteKernel([[0.5, 0.6]]), "row-stochastic"),
        (lambda: pp.LinearStatistic([[1.0, np.nan]]), "A must contain only finite"),
        (lambda: pp.CellSuppression(3).apply([1.5, 2.0]), "non-negative integer counts"),
        (lambda: pp.RandomizedResponse(1.0, 2).log_likelihood([5], 0), "x must be an integer"),
    ],
)
def test_mechanism_bad_input(build, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pp.ValidationError, match=match):
        build()


# ---------------------------------------------------------------- classes


def test_gaussian_mean_class_membership_against_hand_computation() -> None:
    g = pp.GaussianMeanClass(1.0, 4.0)
    # Σ = diag(3, 1): c_Φ = 1, 1 − 3/4 = 1/4, r2 · 1/4 = 1 >= 1: on the boundary.
    q = pp.GaussianPrior([0.0, 0.0], [3.0, 1.0])
    assert g.contains(q, [2.0, 0.0])  # w² = 1 = r1
    assert not g.contains(q, [2.1, 0.0])
    assert not pp.GaussianMeanClass(1.0, 3.9).contains(q, [2.0, 0.0])
    # σ read as sds (docs/math.md §8): with the variance reading diag(3, 1) would need r2 >= 10.
    assert pp.GaussianMeanClass(1.0, 4.0).kappa == pytest.approx(1 + math.log(4))


def test_small_cell_class_membership() -> None:
    c = pp.SmallCellClass(3, 0.2)
    assert c.contains(pp.IndependentCellsPrior([stats.poisson(4), stats.poisson(2)]))
    assert not c.contains(pp.IndependentCellsPrior([stats.poisson(4), stats.poisson(8)]))
    assert not c.contains(pp.GaussianPrior([0.0], [[1.0]]))


def test_neighbour_priors_membership() -> None:
    h = pp.NeighbourPriors()
    assert h.contains(pp.TwoPointPrior(2, 3, 0.5))
    assert not h.contains(pp.DiscretePrior([0, 1, 2], [0.2, 0.3, 0.5]))
    hx = pp.NeighbourPriors(anchored=True)
    assert hx.contains(pp.TwoPointPrior(2, 3, 0.5), x=[2])
    assert not hx.contains(pp.TwoPointPrior(2, 3, 0.5), x=[5])
    fin = pp.NeighbourPriors(pairs=[(0, 2)])
    assert fin.contains(pp.TwoPointPrior(2, 0, 0.3))
    assert not fin.contains(pp.TwoPointPrior(0, 1, 0.3))
    assert fin.neighbour_pairs(range(3)) == [(0, 2), (2, 0)]


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: pp.GaussianMeanClass(0.0, 2.0), "r1 must be in"),
        (lambda: pp.GaussianMeanClass(1.0, 1.0), "r2 must be in"),
        (lambda: pp.SmallCellClass(0, 0.2), "h must be an integer"),
        (lambda: pp.SmallCellClass(3, 0.0), "alpha must be in"),
        (lambda: pp.SmallCellClass(3, 1.5), "alpha must be in"),
        (lambda: pp.NeighbourPriors(pairs=[(0, 0)]), "at least one pair"),
        (lambda: pp.FiniteClass([]), "at least one Prior"),
    ],
)
def test_class_bad_input(build, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pp.ValidationError, match=match):
        build()


# ---------------------------------------------------------------- definitions


def test_definitions_are_frozen_and_validated() -> None:
    d = pp.PersuasivePrivacy(pp.LogScore(), pp.NeighbourPriors(), 1.0, 0.05)
    assert d.scores == (pp.LogScore(),)
    with pytest.raises(AttributeError):
        d.kappa = 2.0  # type: ignore[misc]
    assert d.with_kappa(2.0).kappa == 2.0 and d.kappa == 1.0
    assert pp.renyi_dp(3.0, 0.5).risk == pp.Renyi(3.0)
    assert pp.pure_dp(1.0).delta == 0.0


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: pp.PersuasivePrivacy(pp.LogScore(), pp.NeighbourPriors(), -0.1), "kappa must"),
        (lambda: pp.PersuasivePrivacy(pp.LogScore(), pp.NeighbourPriors(), 1.0, 1.0), "delta"),
        (lambda: pp.PersuasivePrivacy(pp.LogScore(), pp.NeighbourPriors(), 1.0, -0.1), "delta"),
        (lambda: pp.PersuasivePrivacy(pp.LogScore(), pp.NeighbourPriors(), np.nan), "kappa"),
        (lambda: pp.PersuasivePrivacy([], pp.NeighbourPriors(), 1.0), "scores"),
        (lambda: pp.PersuasivePrivacy(pp.LogScore(), "H", 1.0), "priors must be"),  # type: ignore[arg-type]
        (lambda: pp.Renyi(1.0), "alpha must be in"),
        (lambda: pp.FDivergence("hellinger"), "name must be one of"),
        (
            lambda: pp.PersuasivePrivacyExpectation(pp.LogScore(), pp.NeighbourPriors(), 1.0, "kl"),
            "risk must be",
        ),  # type: ignore[arg-type]
    ],
)
def test_definition_bad_input(build, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pp.ValidationError, match=match):
        build()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        # ε is the preset's own argument: the error names it, not the κ it becomes
        (lambda: pp.pure_dp(-1.0), "epsilon must be in [0, inf]; got -1.0"),
        (lambda: pp.pure_dp(math.nan), "epsilon must be a finite number; got nan"),
        (lambda: pp.pure_dp("1"), "epsilon must be a real number; got '1'"),
        (lambda: pp.probabilistic_dp(-0.5, 0.1), "epsilon must be in [0, inf]; got -0.5"),
        (lambda: pp.probabilistic_dp(1.0, 1.0), "delta must be in [0, 1); got 1.0"),
        (lambda: pp.probabilistic_dp(1.0, -0.1), "delta must be in [0, 1); got -0.1"),
        (lambda: pp.renyi_dp(2.0, -1.0), "epsilon must be in [0, inf]; got -1.0"),
        (lambda: pp.renyi_dp(2.0, math.nan), "epsilon must be a finite number; got nan"),
        # the order of renyi_dp is α > 1, as for pp.Renyi (α = 1 is no Rényi risk)
        (lambda: pp.renyi_dp(1.0, 0.5), "alpha must be in (1, inf); got 1.0"),
        (lambda: pp.renyi_dp(1, 0.5), "alpha must be in (1, inf); got 1"),
        (lambda: pp.renyi_dp(0.5, 0.5), "alpha must be in (1, inf); got 0.5"),
        (lambda: pp.Renyi(1.0), "alpha must be in (1, inf); got 1.0"),
    ],
)
def test_presets_name_their_own_arguments(build, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pp.ValidationError) as err:
        build()
    assert str(err.value) == message
    assert "kappa" not in str(err.value)


def test_presets_equal_their_definitions() -> None:
    log, h = pp.LogScore(), pp.NeighbourPriors()
    assert pp.pure_dp(math.inf).kappa == math.inf  # no guarantee, still a definition
    assert pp.pure_dp(1.5) == pp.PersuasivePrivacy(log, h, 1.5, 0.0)
    assert pp.probabilistic_dp(1.0, 0.25) == pp.PersuasivePrivacy(log, h, 1.0, 0.25)
    assert pp.renyi_dp(3.0, 0.5) == pp.PersuasivePrivacyExpectation(log, h, 0.5, pp.Renyi(3.0))
    anchored = pp.NeighbourPriors(anchored=True)
    assert pp.pure_dp(1.0, anchored).priors == anchored


def test_joint_and_chain_sampling_match_their_kernels() -> None:
    # Empirical frequencies of the vectorised samplers against the exact kernels (5 sd bound).
    m = pp.FiniteKernel([[0.6, 0.4], [0.1, 0.9]])
    k = pp.FiniteKernel([[0.5, 0.5], [0.2, 0.8]])
    n = 100_000
    t1, t2 = pp.Joint(m, k).sample([0], n, np.random.default_rng(0))
    joint = pp.Joint(m, k).as_finite().matrix[0]
    freq = np.bincount((2 * t1 + t2).astype(int), minlength=4) / n
    assert np.all(np.abs(freq - joint) < 5 * np.sqrt(joint * (1 - joint) / n))
    chain = pp.Chain(m, k).sample([1], n, np.random.default_rng(1))
    p = (m.matrix @ k.matrix)[1, 1]
    assert abs(chain.mean() - p) < 5 * np.sqrt(p * (1 - p) / n)


def test_randomized_response_large_epsilon_does_not_overflow() -> None:
    rr = pp.RandomizedResponse(1e6, 3)
    np.testing.assert_allclose(rr.matrix, np.eye(3))
    rr = pp.RandomizedResponse(700.0, 2)
    assert rr.matrix[0, 1] == pytest.approx(math.exp(-700.0))
