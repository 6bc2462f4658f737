"""Connect-the-dots hockey-stick δ (persuasive.pld.dots): exact Gaussian, dp_accounting oracle."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import persuasive as pp
from persuasive import pld
from persuasive.errors import ValidationError
from persuasive.pld.dots import atoms_dots, gaussian_dots, laplace_dots

EPS = np.linspace(0.0, 3.0, 31)


def _exact_gaussian(sigma: float, k: int, eps: np.ndarray) -> np.ndarray:
    mu = np.sqrt(k) / sigma
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


@pytest.mark.parametrize(("sigma", "k"), [(1.0, 1), (3.0, 10), (10.0, 100)])
def test_gaussian_upper_bound_and_close(sigma: float, k: int) -> None:
    got = pld.dots_compose([(pp.GaussianMechanism(sigma), k)], step=1e-3).hockey_stick(EPS)
    ex = _exact_gaussian(sigma, k, EPS)
    assert np.all(got >= ex - 1e-13)
    assert np.max(got - ex) < 1e-5  # ~ k Δ² / 30 here
    # far tighter than the pessimistic (rounded-up) pmf on the same grid
    pess = pld.compose([(pp.GaussianMechanism(sigma), k)], step=1e-3).hockey_stick(EPS)
    assert np.max(got - ex) < 0.1 * np.max(pess - ex)


def test_single_mechanisms_exact_at_grid_points() -> None:
    eps = np.array([0.0, 0.25, 0.5])
    lap = laplace_dots(1.0, 1e-3).hockey_stick(eps)
    # Laplace b = 1: δ(ε) = 1 - exp((ε - 1)/2)
    np.testing.assert_allclose(lap, 1 - np.exp((eps - 1) / 2), atol=1e-12)
    np.testing.assert_allclose(
        gaussian_dots(2.0, 1e-3).hockey_stick(eps), _exact_gaussian(2.0, 1, eps), atol=1e-12
    )


def test_atoms_preserve_mass_and_exp_moment() -> None:
    vals, probs = np.array([0.15, -0.15, 0.33, np.inf]), np.array([0.4, 0.3, 0.2, 0.1])
    p = atoms_dots(vals, probs, 0.1)
    assert p.inf_mass == pytest.approx(0.1)
    assert p.masses.sum() == pytest.approx(0.9)
    fin = np.isfinite(vals)
    assert np.dot(p.masses, np.exp(-p.values)) == pytest.approx(
        np.dot(probs[fin], np.exp(-vals[fin]))
    )
    eps = np.linspace(-0.5, 0.5, 21)
    exact = (probs[:3] * np.clip(1 - np.exp(eps[:, None] - vals[:3]), 0, None)).sum(1) + 0.1
    assert np.all(p.hockey_stick(eps) >= exact - 1e-14)


def test_randomized_response_exact() -> None:
    rr = pp.RandomizedResponse(1.0, 2)
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    got = pld.dots_compose([(rr, 3)], step=1e-2).hockey_stick(eps)
    ref = pld.compose([(rr, 3)], step=1e-6).hockey_stick(eps)  # losses ±1 on the grid
    np.testing.assert_allclose(got, ref, atol=1e-9)


@pytest.mark.parametrize(("kind", "k"), [("laplace", 10), ("gaussian", 30)])
def test_agrees_with_dp_accounting(kind: str, k: int) -> None:
    dpl = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    scale, step = float(np.sqrt(k)), 1e-3
    m = pp.LaplaceMechanism(scale) if kind == "laplace" else pp.GaussianMechanism(scale)
    make = dpl.from_laplace_mechanism if kind == "laplace" else dpl.from_gaussian_mechanism
    theirs = np.asarray(
        make(scale, value_discretization_interval=step).self_compose(k).get_delta_for_epsilon(EPS)
    )
    ours = pld.dots_compose([(m, k)], step=step).hockey_stick(EPS)
    if kind == "gaussian":  # dp_accounting's own error against the closed form
        tol = max(np.max(np.abs(theirs - _exact_gaussian(scale, k, EPS))), 1e-9)
    else:
        tol = 1e-7
    np.testing.assert_allclose(ours, theirs, atol=2 * tol)


def test_bad_input() -> None:
    with pytest.raises(ValidationError):
        pld.dots_compose([(pp.GaussianMechanism(1.0), 0)])
    with pytest.raises(ValidationError):
        pld.dots_compose([(pp.GaussianMechanism(1.0), 1)]).hockey_stick([np.nan])
