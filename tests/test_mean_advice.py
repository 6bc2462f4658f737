"""Whether Gaussian noise pays for a mean (issue 14, honest messages): the advice beside a noisy
mean's certificate is checked against the certificate itself, a brute-force scan over the bound
V, and a Monte Carlo of the loss of the Receiver the proven lower bound describes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import special
from typer.testing import CliRunner

from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.cli import app
from persuasive.release.mean_advice import largest_mean_sd, noise_advice, noise_floors
from persuasive.release.means import release_mean


def test_the_floors_are_the_normal_and_chi_square_quantiles() -> None:
    for delta in (0.01, 0.05, 0.2):
        proven, certified = noise_floors(delta)
        assert proven == pytest.approx(special.ndtri(1 - delta) ** 2, rel=1e-12)
        assert certified == pytest.approx(special.ndtri(1 - delta / 2) ** 2, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_advice_is_given_exactly_when_the_noise_certifies_no_lower(seed: int) -> None:
    rng = np.random.default_rng(seed)
    r1, r2 = float(rng.uniform(0.3, 9)), float(rng.uniform(1.2, 8))
    sigma, delta = float(rng.uniform(0.05, 3)), float(rng.choice([0.01, 0.05, 0.1]))
    v = None if seed % 3 == 0 else float(rng.uniform(0.01, 2))
    advice = noise_advice(r1, r2, sigma, v, delta)
    noisy = gaussian_noise_kappa(r1, r2, sigma, v, delta)[0]
    assert (advice is None) == (noisy < r1 + math.log(r2))
    if advice is not None:
        assert "\n" not in advice and f"{r1 + math.log(r2):.4g}" in advice


def test_the_bound_on_v_is_the_largest_under_which_noise_beats_the_exact_mean() -> None:
    r1, r2, sigma, delta = 4.0, 4.0, 1.0, 0.05
    exact = r1 + math.log(r2)
    v_star = largest_mean_sd(r1, r2, sigma, delta)
    assert v_star is not None
    grid = np.geomspace(1e-3, 10, 120)  # brute force: the bound at each V
    kappas = [gaussian_noise_kappa(r1, r2, sigma, float(g), delta)[0] for g in grid]
    beats = np.array(kappas) < exact
    assert beats[grid < v_star * 0.999].all() and not beats[grid > v_star * 1.001].any()
    # the advice states V rounded down, so the stated bound still certifies below
    advice = noise_advice(r1, r2, sigma, None, delta)
    assert advice is not None
    stated = float(advice.split("--max-mean-sd ")[1].split(" ")[0])
    assert stated <= v_star and gaussian_noise_kappa(r1, r2, sigma, stated, delta)[0] < exact


def test_below_the_proven_floor_a_monte_carlo_receiver_beats_every_noise_level() -> None:
    # r = (1, 4), delta = 0.05: the exact mean has 2.386 < z^2 = 2.706. The Receiver of the
    # lower bound: prior sd of the mean -> 0 (gamma -> 0), far off about person i so that
    # zeta = rho sqrt(gamma) z_i = z_{1-delta}; Delta_i = -log b + v^2 - (v - zeta)^2 / b with
    # v ~ N(0, 1 - gamma) (docs/release_means.md). Its (1 - delta)-quantile is about z^2.
    r1, r2, delta, gamma = 1.0, 4.0, 0.05, 1e-8
    rho2 = 1 - 1 / r2
    zeta = float(special.ndtri(1 - delta))
    b = 1 - rho2 * gamma
    v = np.random.default_rng(0).normal(0.0, math.sqrt(1 - gamma), 2_000_000)
    loss = -math.log(b) + v**2 - (v - zeta) ** 2 / b
    quantile = float(np.quantile(loss, 1 - delta))
    assert quantile > r1 + math.log(r2)  # noise made the worst case worse, whatever its sd
    assert quantile == pytest.approx(noise_floors(delta)[0], abs=0.02)
    for sigma in (1e-3, 1.0, 1e3):
        advice = noise_advice(r1, r2, sigma, None, delta)
        assert advice is not None and advice.startswith("Noise cannot beat the exact mean")


def test_between_the_floors_noise_cannot_be_certified_lower() -> None:
    r1, r2, delta = 2.2, 4.0, 0.05  # 2.706 < 3.586 <= 3.841
    for v in (None, 1e-4, 0.5):
        advice = noise_advice(r1, r2, 1.0, v, delta)
        assert advice is not None and "no noise level can be certified below 3.841" in advice


def test_the_release_and_the_command_line_say_it(tmp_path: Path) -> None:
    values = np.random.default_rng(1).normal(size=50)
    rel = release_mean(values, r1=1.0, r2=4.0, noise=("gaussian", 0.5), delta=0.05, rng=0)
    assert rel.noise_advice == noise_advice(1.0, 4.0, 0.5, None, 0.05)
    assert release_mean(values, r1=1.0, r2=4.0).noise_advice is None
    good = release_mean(values, r1=4, r2=4, noise=("gaussian", 1.0), max_mean_sd=0.1, delta=0.05)
    assert good.noise_advice is None and good.certificate.kappa < 4 + math.log(4)
    data = tmp_path / "v.csv"
    data.write_text("x\n" + "\n".join(f"{x:.6f}" for x in values) + "\n", encoding="utf-8")
    args = ["release", "mean", str(data), "--column", "x", "--r1", "1", "--r2", "4"]
    args += ["--noise", "gaussian:0.5", "--delta", "0.05", "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0
    assert "Noise cannot beat the exact mean here (proven)" in result.output + result.stderr


def _stated(advice: str, flag: str) -> float:
    return float(advice.split(flag + " ")[1].split(" ")[0].rstrip(","))


@pytest.mark.parametrize(
    ("r1", "r2", "sigma", "v"), [(1.0, 4.0, 1.0, None), (1.0, 4.0, 0.3, 2.0), (2.2, 4.0, 1.0, 0.5)]
)
def test_the_advice_names_the_person_error_under_which_this_noise_would_pay(r1, r2, sigma, v):
    """The r0 stated (rounded down) certifies below the exact mean's r1 + log r2 with
    bounded_error_kappa, and a brute-force grid of r0 shows it is within 1% of the largest."""
    from persuasive.certify.bounded_error import bounded_error_kappa
    from persuasive.release.mean_advice import largest_person_error

    delta, exact = 0.05, r1 + math.log(r2)
    advice = noise_advice(r1, r2, sigma, v, delta)
    assert advice is not None and "\n" not in advice
    r0 = _stated(advice, "--max-person-error")
    vv = sigma if v is None else v
    if v is None:
        assert _stated(advice, "--max-mean-sd") == sigma
    else:
        assert "--max-mean-sd" not in advice

    c, g = 1 - 1 / r2, vv * vv / (vv * vv + sigma * sigma)
    k = math.sqrt(r1 * g) + float(special.ndtri(1 - delta / 2))
    top = gaussian_noise_kappa(r1, r2, sigma, vv, delta)[0]  # does not depend on r0

    def kap(x: float) -> float:  # section (e)'s statement, written out
        tail = -math.log(1 - c * g) + 2 * x * math.sqrt(c * g) * k / (1 - c * g)
        return min(top, tail, -math.log(1 - c * g) + x * x)

    stated = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=vv, sigma=sigma,
                                 delta=delta)  # fmt: skip
    assert stated == pytest.approx(kap(r0), rel=1e-9) and stated < exact
    assert f"would certify κ = {str(stated)[:4]}" in advice  # the κ stated is this one
    grid = np.geomspace(r0 / 10, r0 * 10, 200)
    beats = np.array([kap(float(g)) < exact for g in grid])
    largest = float(grid[beats].max())
    assert largest <= largest_person_error(r1, r2, sigma, vv, delta) * (1 + 1e-9)
    assert r0 >= largest / 1.01 * (1 - 1e-3)  # rounded down to 3 digits, not further
    assert not beats[grid > largest_person_error(r1, r2, sigma, vv, delta) * 1.001].any()


def test_against_the_bounded_class_the_advice_names_a_noise_sd_that_pays() -> None:
    from persuasive.certify.bounded_error import bounded_error_kappa

    r1, r2, r0, v, delta = 0.1, 4.0, 1.0, 1.0, 0.05  # exact: r1 + log r2 = 1.486 < log r2 + r0^2
    exact = bounded_error_kappa(r1, r2, max_person_error=r0)
    advice = noise_advice(r1, r2, 0.1, v, delta, max_person_error=r0)
    assert advice is not None and advice.startswith("Noise does not lower κ here: against")
    s = float(advice.split("--noise gaussian:")[1].split(")")[0])
    for g in np.geomspace(s, 1e4 * s, 8):  # that sd and every larger one pays
        k = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=v, sigma=float(g),
                                delta=delta)  # fmt: skip
        assert k < exact
    # a noise that pays gives no advice; the release says the same
    assert noise_advice(r1, r2, 2 * s, v, delta, max_person_error=r0) is None
    rel = release_mean(np.arange(6.0), r1=r1, r2=r2, noise=("gaussian", 0.1), max_mean_sd=v,
                       delta=delta, max_person_error=r0, rng=0)  # fmt: skip
    assert rel.noise_advice == advice
