"""The mean release against Receivers with bounded error on every person (issue 14).

``release_mean`` / ``release_group_means`` / ``calibrate_mean`` / ``persuasive release mean``
with ``max_person_error`` (the class of docs/release_means.md, section (e)). Oracles: the
certificate recomputed by ``bounded_error_kappa`` and by the formulas of the proof written out
here; the exact posterior (``persuasive.relative_loss``) of random members of the class; a
Monte Carlo audit of members (random and least favourable) and the exact quantile of the
loss's quadratic form (``audit.noisy_mean.quadratic_quantile``) over the class's statistics;
brute-force grids for the calibration; ``persuasive verify`` for the certificate.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner

import persuasive as pp
from persuasive.audit.noisy_mean import quadratic_quantile, witness_prior
from persuasive.certify.bounded_error import bounded_error_kappa
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.classes.gaussian_mean import class_terms
from persuasive.cli import app
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.release.means import calibrate_mean, release_group_means, release_mean
from persuasive.report.certificate import digest_of
from persuasive.report.verify import verify_certificate

runner = CliRunner()
VALUES = [1.2, 3.4, 2.2, 5.0, 0.3, 2.8]


def _proof_kappa(r1: float, r2: float, r0: float, v: float | None, s: float, d: float) -> float:
    """The certificate of section (e) written out from its statement (no library call but the
    G^{r,V} bound of section (b) and Prop 7's r1 + log r2)."""
    c = 1 - 1 / r2
    g = 1.0 if s == 0 or v is None else v * v / (v * v + s * s)
    point = -math.log(1 - c * g) + r0 * r0
    if s == 0:
        tail = math.log(r2) + 2 * r0 * r2 * math.sqrt(c * r1)
        return min(r1 + math.log(r2), tail, point)
    if d == 0:
        return point
    k = math.sqrt(r1 * g) + stats.norm.isf(d / 2)
    tail = -math.log(1 - c * g) + 2 * r0 * math.sqrt(c * g) * k / (1 - c * g)
    return min(gaussian_noise_kappa(r1, r2, s, v, d)[0], tail, point)


# --------------------------------------------------------------------------------------------
# The certificate of the release
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("r1", "r2", "r0", "v", "s", "d"),
    [
        (1.0, 4.0, 0.1, None, 0.0, 0.0),
        (1.0, 4.0, 1.0, 1.0, 0.0, 0.0),
        (4.0, 2.0, 0.5, 1.0, 0.0, 0.0),
        (1.0, 4.0, 1.0, 1.0, 8.0, 0.05),
        (2.0, 3.0, 2.0, 0.5, 1.0, 0.1),
        (1.0, 4.0, 0.7, 1.0, 2.0, 0.0),  # delta = 0: the pointwise bound alone
    ],
)
def test_release_certificate_is_the_proven_bound(r1, r2, r0, v, s, d) -> None:
    noise = None if s == 0 else ("gaussian", s)
    rel = release_mean(
        VALUES, r1=r1, r2=r2, noise=noise, max_mean_sd=v, delta=d, max_person_error=r0, rng=0
    )
    kap = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=v, sigma=s, delta=d)
    assert rel.certificate.kappa == kap
    assert kap == pytest.approx(_proof_kappa(r1, r2, r0, v, s, d), rel=1e-9)
    assert kap >= _proof_kappa(r1, r2, r0, v, s, d) * (1 - 1e-15)  # rounded up, never down
    assert not rel.certificate.exact and rel.certificate.holds
    assert rel.certificate.basis.startswith("Prop 7 with bounded error")
    # never above the certificate without the bound on each person's error
    if s == 0:
        assert kap <= r1 + math.log(r2) + 1e-12
    elif d > 0:
        assert kap <= gaussian_noise_kappa(r1, r2, s, v, d)[0]
    groups = pl.DataFrame({"g": ["a", "a", "b", "b", "b", "a"], "y": VALUES})
    grel = release_group_means(
        groups, value="y", group="g", r1=r1, r2=r2, noise=noise, max_mean_sd=v, delta=d,
        max_person_error=r0, rng=0,
    )  # fmt: skip
    assert grel.certificate.kappa == kap  # parallel composition: the per-group κ


def test_kappa_falls_to_zero_with_the_noise_and_never_rises() -> None:
    sigmas = np.geomspace(0.05, 1e5, 25)
    kap = [
        release_mean(
            VALUES, r1=1.0, r2=4.0, noise=("gaussian", float(s)), max_mean_sd=1.0,
            max_person_error=1.0, delta=0.05, rng=0,
        ).certificate.kappa
        for s in sigmas
    ]  # fmt: skip
    assert all(a >= b for a, b in itertools.pairwise(kap))
    exact = release_mean(VALUES, r1=1.0, r2=4.0, max_person_error=1.0).certificate.kappa
    assert kap[0] <= exact and kap[-1] < 1e-4
    # the G^{r,V} certificate stays above the chi-square quantile at every sd
    assert all(gaussian_noise_kappa(1.0, 4.0, float(s), 1.0, 0.05)[0] > 3.8 for s in sigmas[-5:])


def test_refusals_name_the_arguments() -> None:
    with pytest.raises(ValidationError, match="max_person_error = 1 with Gaussian noise needs"):
        release_mean(VALUES, r1=1, r2=4, noise=("gaussian", 1.0), delta=0.05, max_person_error=1)
    with pytest.raises(ValidationError, match=r"max_person_error must be in \(0, inf\)"):
        release_mean(VALUES, r1=1, r2=4, max_person_error=0.0)
    with pytest.raises(UnsupportedCombinationError, match="Laplace noise with max_person_error"):
        release_mean(
            VALUES, r1=1, r2=4, noise=("laplace", 1.0), max_mean_sd=1, delta=0.05,
            max_person_error=1,
        )  # fmt: skip
    with pytest.raises(ValidationError, match="delta must be > 0"):  # unchanged without r0
        release_mean(VALUES, r1=1, r2=4, noise=("gaussian", 1.0), max_mean_sd=1.0)


# --------------------------------------------------------------------------------------------
# Against the exact posterior and a Monte Carlo audit of members of the class
# --------------------------------------------------------------------------------------------


def _member(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    low = rng.normal(size=(n, n))
    cov = low @ low.T / n + np.diag(rng.uniform(0.2, 2.0, n))
    return rng.normal(size=n), cov, rng.normal(size=n) * 1.5


def _losses(prior: pp.GaussianPrior, mech: Any, x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Every person's marginal DSS loss at outputs ``t`` from the exact posterior (affine in t:
    two posteriors by ``pp.posterior``), checked against ``relative_loss`` at two outputs."""
    p0, p1 = pp.posterior(prior, mech, 0.0), pp.posterior(prior, mech, 1.0)
    m0, slope = p0.mean(), p1.mean() - p0.mean()
    var_t, var0 = p0.marginal_var(), prior.marginal_var()
    before = np.log(var0) + (x - prior.mean()) ** 2 / var0
    loss = before - np.log(var_t) - (x - (m0 + slope * t[:, None])) ** 2 / var_t
    for j in (0, len(t) - 1):
        i = int(np.argmax(loss[j]))
        exact = pp.relative_loss(pp.MarginalDSS(i), prior, mech, x, float(t[j]))
        assert loss[j, i] == pytest.approx(exact, rel=1e-8, abs=1e-9)
    return np.asarray(loss)


@pytest.mark.parametrize("seed", range(5))
def test_monte_carlo_audit_of_random_members_stays_below_the_certificate(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, delta, draws = 5, 0.05, 40_000
    mu, cov, x = _member(rng, n)
    w2, c_phi, spread = class_terms(mu, cov, x)
    r1, r2 = w2 * 1.001 + 1e-3, max(c_phi / spread, 1.0 + 1e-6) * 1.001
    v = math.sqrt(cov.sum()) / n * 1.001
    r0 = float(np.max(np.abs(x - mu) / np.sqrt(np.diag(cov)))) * 1.001
    cls = BoundedErrorGaussianClass(r1, r2, max_mean_sd=v, max_person_error=r0)
    prior = pp.GaussianPrior(mu, cov)
    assert cls.contains(prior, x)
    exact_k = release_mean(x, r1=r1, r2=r2, max_person_error=r0).certificate.kappa
    for i in range(n):  # the exact mean: the loss is deterministic
        assert pp.relative_loss(pp.MarginalDSS(i), prior, pp.ExactMean(), x) <= exact_k + 1e-9
    for s in (0.3 * v, v, 5 * v):
        rel = release_mean(
            x, r1=r1, r2=r2, noise=("gaussian", s), max_mean_sd=v, delta=delta,
            max_person_error=r0, rng=seed,
        )  # fmt: skip
        mech = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(s))
        t = x.mean() + rng.normal(size=draws) * s
        loss = _losses(prior, mech, x, t)
        # the audit's found lower bound: a lower confidence bound on each person's quantile
        k = int(stats.binom.ppf(1e-4, draws, delta))  # P[#(loss > q) >= k] small at the truth
        found = np.sort(loss, axis=0)[draws - max(k, 1)]
        assert np.all(found <= rel.certificate.kappa)
        freq = (loss > rel.certificate.kappa).mean(axis=0)
        assert np.all(freq <= delta + 4 * math.sqrt(delta * (1 - delta) / draws))
        # the pointwise bound holds at every output (it is the delta = 0 certificate)
        zero = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=v, sigma=s)
        assert float(loss.max()) <= zero + 1e-9


def test_least_favourable_member_and_the_exact_quantile_over_the_class() -> None:
    r1, r2, r0, v, delta = 1.0, 4.0, 1.0, 1.0, 0.05
    c = 1 - 1 / r2
    for s in (0.5, 2.0, 8.0):
        kap = bounded_error_kappa(r1, r2, max_person_error=r0, max_mean_sd=v, sigma=s, delta=delta)
        gmax = v * v / (v * v + s * s)
        # exact (1 - delta)-quantiles of Delta_i over a grid of the class's statistics
        # (rho_i^2 <= c, gamma <= gamma_max, |w| <= sqrt(r1), |z_i| <= r0: zeta = rho sqrt(g) z)
        rho2 = np.linspace(0.05, 1.0, 8)[:, None, None, None] * c
        gam = np.geomspace(1e-3, 1.0, 10)[None, :, None, None] * gmax * (1 - 1e-9)
        w = np.linspace(-1.0, 1.0, 9)[None, None, :, None] * math.sqrt(r1)
        z = np.linspace(-1.0, 1.0, 9)[None, None, None, :] * r0
        zeta = np.sqrt(rho2 * gam) * z
        q = np.empty(np.broadcast_shapes(rho2.shape, gam.shape, w.shape, z.shape))
        for a in range(rho2.shape[0]):  # quadratic_quantile takes one rho^2 (as c) at a time
            q[a] = quadratic_quantile(gam[0], w[0], zeta[a], float(rho2[a, 0, 0, 0]), delta)
        assert float(q.max()) <= kap
        # the least favourable member built as a prior: Monte Carlo with the exact posterior
        n, i = 4, 0
        g = gmax * (1 - 1e-6)
        prior, x = witness_prior(r1, r2, s, g, math.sqrt(r1), math.sqrt(c * g) * r0 * 0.999, i, n)
        cls = BoundedErrorGaussianClass(r1, r2, max_mean_sd=v, max_person_error=r0)
        assert cls.contains(prior, x)
        mech = pp.Chain(pp.ExactMean(), pp.GaussianMechanism(s))
        t = x.mean() + np.random.default_rng(7).normal(size=100_000) * s
        loss = _losses(prior, mech, x, t)[:, i]
        assert float(np.quantile(loss, 1 - delta)) <= kap


# --------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("target", "r0", "delta"), [(1.0, 1.0, 0.05), (0.3, 0.5, 0.05)])
def test_calibrated_noise_is_the_smallest_on_a_grid(target: float, r0: float, delta: float):
    kw = {"r2": 4.0, "r1": 1.0, "max_mean_sd": 1.0, "delta": delta, "max_person_error": r0}
    s = calibrate_mean(target, noise="gaussian", **kw)

    def kap(x: float) -> float:
        return bounded_error_kappa(
            1.0, 4.0, max_person_error=r0, max_mean_sd=1.0, sigma=x, delta=delta
        )

    assert kap(s) <= target < kap(s * (1 - 1e-5))  # the proven end, and not much above
    grid = np.geomspace(s / 3, s * 3, 31)
    assert all((kap(float(g)) <= target) == (g >= s) for g in grid)
    rel = release_mean(
        VALUES, r1=1.0, r2=4.0, noise=("gaussian", s), max_mean_sd=1.0, delta=delta,
        max_person_error=r0, target_kappa=target, rng=0,
    )  # fmt: skip
    assert rel.certificate.holds and rel.certificate.kappa <= target


def test_calibrated_r1_under_the_class() -> None:
    r0 = 0.1  # exact mean: min(r1 + log r2, log r2 + 2 r0 r2 sqrt(c r1), log r2 + r0^2)
    r1 = calibrate_mean(1.39, r2=4.0, max_person_error=r0)
    k = bounded_error_kappa(r1, 4.0, max_person_error=r0)
    assert k <= 1.39 < bounded_error_kappa(r1 * (1 + 1e-5), 4.0, max_person_error=r0)
    for g in np.linspace(0.001, 0.2, 40):
        assert (bounded_error_kappa(float(g), 4.0, max_person_error=r0) <= 1.39) == (g <= r1)
    # a target above log r2 + r0^2 holds for every r1: the largest is the cap
    assert calibrate_mean(1.5, r2=4.0, max_person_error=r0) >= 5e8
    with pytest.raises(ValidationError, match="unreachable for the exact mean"):
        calibrate_mean(1.3, r2=4.0, max_person_error=r0)  # below log 4 = 1.386
    r1n = calibrate_mean(
        1.0, r2=4.0, noise=("gaussian", 4.0), max_mean_sd=1.0, delta=0.05, max_person_error=1.0
    )
    kn = bounded_error_kappa(r1n, 4.0, max_person_error=1.0, max_mean_sd=1.0, sigma=4.0,
                             delta=0.05)  # fmt: skip
    assert (
        kn
        <= 1.0
        < bounded_error_kappa(
            r1n * (1 + 1e-5), 4.0, max_person_error=1.0, max_mean_sd=1.0, sigma=4.0, delta=0.05
        )
    )


# --------------------------------------------------------------------------------------------
# Command line, certificate and verify
# --------------------------------------------------------------------------------------------


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "v.csv"
    path.write_text("x\n" + "\n".join(map(str, VALUES)) + "\n", encoding="utf-8")
    return path


def _cli(tmp_path: Path, out: str, *extra: str) -> Any:
    args = ["release", "mean", str(_data(tmp_path)), "--column", "x", "--r1", "1", "--r2", "4"]
    return runner.invoke(app, [*args, "--out", str(tmp_path / out), *extra])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--max-person-error", "-1"], "--max-person-error must be in (0, inf); got -1.0"),
        (["--max-person-error", "0"], "--max-person-error must be in (0, inf)"),
        (
            ["--max-person-error", "1", "--noise", "gaussian:1", "--delta", "0.05"],
            "--max-person-error 1 with --noise gaussian needs --max-mean-sd V",
        ),
    ],
)
def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path, extra, message) -> None:
    result = _cli(tmp_path, "o", *extra)
    assert result.exit_code == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]
    assert not (tmp_path / "o").exists()


def test_cli_summary_sentence_and_verify(tmp_path: Path) -> None:
    extra = ["--noise", "gaussian:8", "--max-mean-sd", "1", "--max-person-error", "1"]
    result = _cli(tmp_path, "o", *extra, "--delta", "0.05", "--report")
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "Receivers who are at most 1 prior sd wrong about any one person and whose prior " \
        "sd of the mean is at most 1" in text  # fmt: skip
    assert "who is at most 1 prior standard deviation wrong about any one person" in text
    doc = json.loads((tmp_path / "o" / "certificate.json").read_text(encoding="utf-8"))
    priors = doc["claim"]["spec"]["definition"]["priors"]
    assert priors == {
        "class": "bounded_error_gaussian", "r1": 1.0, "r2": 4.0, "max_mean_sd": 1.0,
        "max_person_error": 1.0,
    }  # fmt: skip
    want = bounded_error_kappa(1.0, 4.0, max_person_error=1, max_mean_sd=1, sigma=8, delta=0.05)
    assert doc["guarantee"]["kappa"] == want
    assert verify_certificate(doc, published=tmp_path / "o").ok
    assert (tmp_path / "o" / "report" / "calibration.png").is_file()
    # a target the release misses: the certificate says so (the sentence too)
    miss = release_mean(
        VALUES, r1=1, r2=4, noise=("gaussian", 8.0), max_mean_sd=1, delta=0.05,
        max_person_error=1, target_kappa=0.1,
    )  # fmt: skip
    assert not miss.certificate.holds and "the target is NOT met" in miss.statement()
    # the calibrated noise under the class
    cal = _cli(
        tmp_path, "c", "--noise", "gaussian", "--max-mean-sd", "1", "--max-person-error", "1",
        "--delta", "0.05", "--target-kappa", "1",
    )  # fmt: skip
    assert cal.exit_code == 0, cal.stderr
    assert "the smallest gaussian noise sd with κ ≤ 1 is 4.04" in " ".join(cal.stdout.split())


def test_verify_rejects_a_tampered_r0_and_reads_old_certificates(tmp_path: Path) -> None:
    extra = ["--noise", "gaussian:2", "--max-mean-sd", "1", "--max-person-error", "1"]
    assert _cli(tmp_path, "o", *extra, "--delta", "0.05").exit_code == 0
    folder = tmp_path / "o"
    doc = json.loads((folder / "certificate.json").read_text(encoding="utf-8"))
    for r0 in (0.5, 2.0):
        bad = copy.deepcopy(doc)
        bad["claim"]["spec"]["definition"]["priors"]["max_person_error"] = r0
        bad["digest"] = digest_of(bad)  # anyone can recompute the digest: κ still differs
        res = verify_certificate(bad, published=folder)
        assert not res.ok and any(m.startswith("guarantee.kappa") for m in res.mismatches)
    bad = copy.deepcopy(doc)  # r0 removed: the claim is of the other class, κ differs
    del bad["claim"]["spec"]["definition"]["priors"]["max_person_error"]
    bad["digest"] = digest_of(bad)
    res = verify_certificate(bad, published=folder)
    assert not res.ok and any("priors.class" in m for m in res.mismatches)
    bad = copy.deepcopy(doc)  # κ lowered to what the class would not give
    bad["guarantee"]["kappa"] = 0.1
    bad["digest"] = digest_of(bad)
    assert not verify_certificate(bad, published=folder).ok
    # an old certificate (no r0): its claim is what it always was, and it verifies unchanged
    assert _cli(tmp_path, "old", "--noise", "gaussian:2", "--max-mean-sd", "1",
                "--delta", "0.05").exit_code == 0  # fmt: skip
    old = json.loads((tmp_path / "old" / "certificate.json").read_text(encoding="utf-8"))
    assert old["claim"]["spec"]["definition"]["priors"] == {
        "class": "gaussian_mean", "r1": 1.0, "r2": 4.0, "max_mean_sd": 1.0,
    }  # fmt: skip
    assert old["guarantee"]["kappa"] == gaussian_noise_kappa(1.0, 4.0, 2.0, 1.0, 0.05)[0]
    assert verify_certificate(old, published=tmp_path / "old").ok


def _leaves(x: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in _leaves(v, (*path, k))]
    if isinstance(x, list):
        return [p for i, v in enumerate(x) for p in _leaves(v, (*path, i))] or [path]
    return [path]


def test_every_leaf_replaced_or_removed_is_refused_without_a_crash(tmp_path: Path) -> None:
    assert _cli(tmp_path, "o", "--max-person-error", "0.3").exit_code == 0
    folder = tmp_path / "o"
    doc = json.loads((folder / "certificate.json").read_text(encoding="utf-8"))
    paths = [p for p in _leaves(doc) if p != ("digest",)]  # the digest is recomputed below
    assert ("claim", "spec", "definition", "priors", "max_person_error") in paths
    for path in paths:
        for new in ([], {}, "inf", -1.0, None):
            bad = copy.deepcopy(doc)
            at = bad
            for part in path[:-1]:
                at = at[part]
            if new is not None and at[path[-1]] == new:
                continue  # the same value: not an edit
            if new is None:
                del at[path[-1]]
            else:
                at[path[-1]] = new
            bad["digest"] = digest_of(bad)
            try:
                res = verify_certificate(bad, published=folder)
            except ValidationError:
                continue  # exit 2: not verified
            # a target of inf is no target (the same claim); the version is bound by the digest
            same = path == ("claim", "target_kappa") and new == "inf"
            assert not res.ok or same or path == ("library", "version"), (path, new)


def test_the_report_curve_is_kappa_against_noise_under_the_class() -> None:
    exact = release_mean(VALUES, r1=1.0, r2=4.0, max_mean_sd=1.0, max_person_error=0.5)
    xs, ks, label = exact.calibration_curve()
    assert label.startswith("Gaussian noise sd") and "δ = 0.05" in label
    assert all(a >= b for a, b in itertools.pairwise(ks)) and ks[-1] < 0.05
    for x, k in list(zip(xs, ks, strict=True))[::10]:
        assert k == bounded_error_kappa(
            1.0, 4.0, max_person_error=0.5, max_mean_sd=1.0, sigma=float(x), delta=0.05
        )
    no_v = release_mean(VALUES, r1=1.0, r2=4.0, max_person_error=0.5)  # against r1 then
    xs, ks, label = no_v.calibration_curve()
    assert label.startswith("r1") and all(a <= b for a, b in itertools.pairwise(ks))
    assert ks[5] == bounded_error_kappa(float(xs[5]), 4.0, max_person_error=0.5)
