"""The linear release against Receivers with bounded error on every person (issue 14).

``release_linear(..., max_person_error=r0)`` and ``persuasive release linear ...
--max-person-error R0`` (the class of docs/linear_bounded.md). Oracles: the theorem of
docs/linear_bounded.md written out here (the plain class's bound of docs/linear.md, the tail
bound and the pointwise bound), and ``linear_bounded_error_kappa`` on the release's A; a
brute-force grid of that function for the calibration; the certificate of the same release
without noise (under the same class) for whether noise pays; ``audit_linear`` (a found lower
bound) below the certificate; certificates written by the code at commit 6713781 for old claims.
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
from test_release_linear import R1, R2, run

from persuasive.certify.linear_bounded_error import linear_bounded_error_kappa
from persuasive.errors import ValidationError
from persuasive.linear import LinearGaussianClass, audit_linear
from persuasive.linear.advice import linear_noise_advice
from persuasive.linear.bounded_error import BoundedErrorLinearClass
from persuasive.release.linear import release_linear
from persuasive.report.certificate import digest_of
from persuasive.report.verify import verify_certificate

STATS = [("all", "mean", "true"), ("g1", "mean", "g = 1"), ("g2", "sum", "g = 2")]
OLD = Path(__file__).parent / "data" / "linear_6713781"


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(14)
    n = 30
    return pl.DataFrame({"y": rng.gamma(2.0, 1.5, size=n), "g": np.arange(n) % 3})


@pytest.fixture(scope="module")
def csv(frame: pl.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "people.csv"
    frame.write_csv(path)
    return path


def release(frame: pl.DataFrame, **kw: Any) -> Any:
    return release_linear(frame, value="y", statistics=STATS, r1=R1, r2=R2, rng=7, **kw)


def theorem(r1: float, r2: float, r0: float, v: float | None, s: float, d: float) -> float:
    """κ of docs/linear_bounded.md ("The theorem"), written out for R = s² I: only the plain
    class's bound (Thm 4 of docs/linear.md) is the library's."""
    c = 1 - 1 / r2
    if s == 0:
        return min(r1 + math.log(r2), math.log(r2) + 2 * r0 * r2 * math.sqrt(c * r1),
                   math.log(r2) + r0 * r0)  # fmt: skip
    g = 1.0 if v is None else v * v / (v * v + s * s)
    point = -math.log(1 - c * g) + r0 * r0
    if d == 0:
        return point
    k = math.sqrt(r1 * g) + stats.norm.isf(d / 2)
    tail = -math.log(1 - c * g) + 2 * r0 * math.sqrt(c * g) * k / (1 - c * g)
    plain = LinearGaussianClass(r1, r2, max_stat_sd=v).noise_kappa(s * s, 1, d)
    return min(plain, tail, point)


# --------------------------------------------------------------------------------------------
# The certificate
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("r0", "v", "s", "d"),
    [
        (0.1, None, 0.0, 0.0),
        (1.0, 1.0, 0.0, 0.0),
        (0.5, None, 0.0, 0.0),
        (1.0, 1.0, 8.0, 0.05),
        (2.0, 0.5, 1.0, 0.1),
        (0.7, 1.0, 2.0, 0.0),  # delta = 0 with noise: the pointwise bound alone
    ],
)
def test_certificate_is_the_theorem_on_the_release_matrix(frame, r0, v, s, d) -> None:
    noise = None if s == 0 else s
    rel = release(frame, noise_sd=noise, max_stat_sd=v, delta=d, max_person_error=r0)
    a = rel.matrix
    assert a.shape == (3, frame.height)
    kap = linear_bounded_error_kappa(a, R1, R2, max_person_error=r0, max_stat_sd=v,
                                     noise_sd=s, delta=d)  # fmt: skip
    assert rel.certificate.kappa == kap
    assert kap == pytest.approx(theorem(R1, R2, r0, v, s, d), rel=1e-9)
    assert kap >= theorem(R1, R2, r0, v, s, d) * (1 - 1e-15)  # rounded up, never down
    assert rel.certificate.holds and not rel.certificate.exact
    assert rel.certificate.delta == d
    assert "bounded error on every person" in rel.certificate.basis
    priors = rel.spec["definition"]["priors"]
    assert priors["class"] == "bounded_error_linear" and priors["max_person_error"] == r0
    assert ("max_stat_sd" in priors) == (v is not None)
    # the class is a subclass of the linear one: never above its certificate
    if s == 0:
        assert kap <= R1 + math.log(R2) + 1e-12
    elif d > 0:
        assert kap <= LinearGaussianClass(R1, R2, max_stat_sd=v).noise_kappa(s * s, 3, d)


def test_published_values_do_not_depend_on_the_class(frame, csv, tmp_path) -> None:
    """The class changes only the certificate: the same seed gives the same numbers."""
    for kw in ({}, {"noise_sd": 2.0, "max_stat_sd": 1.0}):
        plain, bounded = release(frame, **kw), release(frame, max_person_error=0.5, **kw)
        assert plain.values.equals(bounded.values)  # bit for bit (polars compares exactly)
        assert plain.certificate.kappa != bounded.certificate.kappa
    x = frame["y"].to_numpy()
    exact = release(frame, max_person_error=0.5).values["value"].to_list()
    assert exact == pytest.approx([x.mean(), x[1::3].mean(), x[2::3].sum()], rel=1e-12)
    args = ["release", "linear", csv, "--value", "y", "--stat", "all:mean:true",
            "--stat", "g1:mean:g = 1", "--r1", R1, "--r2", R2, "--noise-sd", 2,
            "--max-stat-sd", 1, "--seed", 5, "-q"]  # fmt: skip
    assert run(*args, "--out", tmp_path / "a").exit_code == 0
    assert run(*args, "--max-person-error", 1, "--out", tmp_path / "b").exit_code == 0
    assert (tmp_path / "a" / "released.csv").read_bytes() == (
        tmp_path / "b" / "released.csv"
    ).read_bytes()


def test_kappa_falls_to_zero_with_the_noise_and_never_rises(frame) -> None:
    sds = np.geomspace(0.05, 1e5, 20)
    kap = [release(frame, noise_sd=float(s), max_stat_sd=1.0, max_person_error=1.0,
                   delta=0.05).certificate.kappa for s in sds]  # fmt: skip
    assert all(a >= b for a, b in itertools.pairwise(kap))
    exact = release(frame, max_person_error=1.0).certificate.kappa
    assert kap[0] <= exact and kap[-1] < 1e-4
    # the plain class's certificate stays above the chi-square quantile at every sd
    plain = [release(frame, noise_sd=float(s), max_stat_sd=1.0, delta=0.05).certificate.kappa
             for s in sds[-3:]]  # fmt: skip
    assert min(plain) > stats.chi2.isf(0.05, 1)


def test_curve_is_the_certificate_under_the_class(frame) -> None:
    rel = release(frame, noise_sd=2.0, max_stat_sd=1.0, max_person_error=1.0, delta=0.05)
    xs, ks, label = rel.calibration_curve([0.1, 1.0, 2.0, 10.0, 100.0])
    want = [linear_bounded_error_kappa(rel.matrix, R1, R2, max_person_error=1.0, max_stat_sd=1.0,
                                       noise_sd=float(x), delta=0.05) for x in xs]  # fmt: skip
    assert list(ks) == want
    assert "at most 1 prior sd off on anyone" in label and ks[-1] < ks[0]
    # the exact statistics with V: from V/100 to 100 V, at delta 0.05, falling below the exact
    exact = release(frame, max_stat_sd=1.0, max_person_error=1.0)
    xs, ks, label = exact.calibration_curve()
    assert xs[0] == pytest.approx(0.01) and xs[-1] == pytest.approx(100.0)
    assert ks[-1] < 0.1 < exact.certificate.kappa and "δ = 0.05" in label
    # without r0 the curve is the plain class's (flat above the chi-square quantile here)
    plain = release(frame, noise_sd=2.0, max_stat_sd=1.0, delta=0.05)
    _, ks, label = plain.calibration_curve([0.5, 2.0, 8.0])
    cls = LinearGaussianClass(R1, R2, max_stat_sd=1.0)
    assert list(ks) == [cls.class_kappa(plain.matrix, s * s, 0.05) for s in (0.5, 2.0, 8.0)]
    assert "wrong" not in label


def test_audit_is_below_the_certificate(frame) -> None:
    small = frame.head(6)
    for kw in ({"max_person_error": 0.5}, {"max_person_error": 1.0, "noise_sd": 1.0,
                                           "max_stat_sd": 1.0, "delta": 0.05}):  # fmt: skip
        rel = release(small, **kw)
        a = rel.matrix
        cls = BoundedErrorLinearClass(R1, R2, A=a, max_stat_sd=kw.get("max_stat_sd"),
                                      max_person_error=kw["max_person_error"])  # fmt: skip
        r = None if "noise_sd" not in kw else kw["noise_sd"] ** 2 * np.eye(a.shape[0])
        res = audit_linear(a, cls, r, delta=rel.delta, families=("diagonal", "equicorrelated"),
                           starts=16, rng=0)  # fmt: skip
        assert cls.contains(res.witness.prior, np.asarray(res.witness.x), a)
        assert 0.0 < res.kappa <= rel.certificate.kappa


# --------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("target", "r0", "v", "d"), [(1.0, 1.0, 1.0, 0.05), (0.3, 0.5, 2.0, 0.1),
                                                     (0.5, 0.6, 1.0, 0.0)])  # fmt: skip
def test_calibration_against_a_brute_force_grid(frame, target, r0, v, d) -> None:
    rel = release(frame, target_kappa=target, max_stat_sd=v, max_person_error=r0, delta=d)
    s = rel.noise_sd
    assert s is not None and rel.holds and rel.certificate.kappa <= target
    grid = np.geomspace(1e-2, 1e3, 40)  # each point costs a γ-supremum (~30 ms)

    def kappa(u: float) -> float:
        return linear_bounded_error_kappa(rel.matrix, R1, R2, max_person_error=r0,
                                          max_stat_sd=v, noise_sd=u, delta=d)  # fmt: skip

    meets = [kappa(float(u)) <= target for u in grid]
    first = int(np.argmax(meets))
    assert meets[first] and all(meets[first:])  # monotone: one threshold
    assert grid[first - 1] < s <= grid[first]  # the grid's smallest sd, to its resolution
    assert kappa(s / (1 + 1e-5)) > target  # and nothing much smaller meets it
    assert rel.calibrated.startswith("the smallest noise sd on every statistic")


def test_calibration_is_not_needed_when_the_exact_statistics_meet_the_target(frame) -> None:
    exact = theorem(R1, R2, 0.5, None, 0.0, 0.0)  # log 4 + 0.25 = 1.636
    rel = release(frame, target_kappa=1.7, max_person_error=0.5)
    assert rel.noise_sd is None and rel.certificate.kappa == pytest.approx(exact) and rel.holds
    # the plain class needs more for the same target: r1 + log r2 = 2.386 > 1.7
    assert release(frame, target_kappa=2.0, max_stat_sd=1.0, delta=0.5).noise_sd is not None


def test_refusals_name_the_argument(frame) -> None:
    with pytest.raises(ValidationError, match=r"max_person_error must be in \(0, inf\); got 0"):
        release(frame, max_person_error=0.0)
    with pytest.raises(ValidationError, match="max_person_error must be a finite number; got nan"):
        release(frame, max_person_error=float("nan"))
    with pytest.raises(ValidationError, match="max_person_error = 1 with noise_sd needs max_stat"):
        release(frame, noise_sd=1.0, max_person_error=1.0)
    with pytest.raises(ValidationError, match="noise cannot lower it without max_stat_sd"):
        release(frame, target_kappa=1.0, max_person_error=1.0)
    with pytest.raises(ValidationError, match="unreachable at delta = 0"):
        release(frame, target_kappa=0.5, max_stat_sd=1.0, max_person_error=1.0, delta=0.0)
    with pytest.raises(ValidationError, match="delta must be > 0 with noise"):
        release(frame, noise_sd=1.0, max_stat_sd=1.0, delta=0.0)  # without r0: as before


# --------------------------------------------------------------------------------------------
# The advice
# --------------------------------------------------------------------------------------------

ADVICE_CASES = [  # each advice costs ~1 s (bisections over r0): few cases
    {"noise_sd": 1.0, "max_stat_sd": 1.0},
    {"noise_sd": 8.0, "max_stat_sd": 1.0, "max_person_error": 1.0},
    {"noise_sd": 0.05, "max_stat_sd": 1.0, "max_person_error": 3.0},
]


@pytest.mark.parametrize("kw", ADVICE_CASES)
def test_advice_exactly_when_noise_does_not_lower_kappa(frame, kw) -> None:
    rel = release(frame, **kw)
    exact = release(frame, **{k: v for k, v in kw.items() if k in ("max_person_error",)})
    pays = rel.certificate.kappa < exact.certificate.kappa  # both under the release's class
    advice = rel.noise_advice  # = linear_noise_advice (checked in the command-line test below)
    assert (advice is None) == pays, (rel.certificate.kappa, exact.certificate.kappa)
    if advice is not None:  # the sentence names the class under which this noise would pay
        assert "--max-person-error" in advice
    assert release(frame, **{k: v for k, v in kw.items() if k != "noise_sd"}).noise_advice is None


def test_cli_prints_the_advice_and_puts_it_in_json(csv, tmp_path) -> None:
    args = ["release", "linear", csv, "--value", "y", "--stat", "all:mean:true", "--r1", R1,
            "--r2", R2, "-q"]  # fmt: skip
    want = linear_noise_advice(R1, R2, 1.0, max_stat_sd=None, delta=0.05)
    assert want is not None
    res = run(*args, "--noise-sd", 1, "--out", tmp_path / "a")
    assert res.exit_code == 0, res.output
    out = res.output.replace("\n", " ")
    verdict = out.index("verdict")
    assert 0 <= out.index(want[:60]) < verdict  # printed before the verdict
    doc = json.loads(run(*args, "--noise-sd", 1, "--out", tmp_path / "b", "--json").output)
    assert doc["advice"] == want and want in doc["notes"]
    good = run(*args, "--max-stat-sd", 1, "--max-person-error", 1, "--noise-sd", 8,
               "--out", tmp_path / "c", "--json")  # fmt: skip
    doc = json.loads(good.output)
    assert good.exit_code == 0 and doc["advice"] is None and doc["max_person_error"] == 1.0
    assert doc["certificate"]["guarantee"]["kappa"] == pytest.approx(0.4645, abs=1e-4)


# --------------------------------------------------------------------------------------------
# Wording
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("r0", "words"),
    [(1.0, "1 prior standard deviation wrong"), (0.5, "0.5 prior standard deviations wrong")],
)
def test_sentence_names_the_class(frame, r0, words) -> None:
    text = release(frame, max_person_error=r0).statement()
    assert f"who is at most {words} about any one person" in text
    assert text.endswith("to linear statistics, with bounded error on every person.")
    assert "wrong about" not in release(frame).statement()


# --------------------------------------------------------------------------------------------
# Verify: genuine, tampered, old
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(csv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rel") / "out"
    res = run("release", "linear", csv, "--value", "y", "--stat", "all:mean:true",
              "--stat", "g1:mean:g = 1", "--r1", R1, "--r2", R2, "--noise-sd", 4,
              "--max-stat-sd", 1, "--max-person-error", 1, "--seed", 1, "--out", out,
              "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    return out


def test_genuine_certificate_verifies(written) -> None:
    doc = json.loads((written / "certificate.json").read_text(encoding="utf-8"))
    priors = doc["claim"]["spec"]["definition"]["priors"]
    assert priors == {"class": "bounded_error_linear", "r1": 1.0, "r2": 4.0,
                      "max_stat_sd": 1.0, "max_person_error": 1.0}  # fmt: skip
    result = verify_certificate(written / "certificate.json", published=written)
    assert result.ok, result.mismatches
    kap = theorem(R1, R2, 1.0, 1.0, 4.0, 0.05)
    assert doc["guarantee"]["kappa"] == pytest.approx(kap, rel=1e-12)
    assert doc["guarantee"]["kappa"] >= kap  # rounded up
    res = run("verify", written / "certificate.json", "--published", written)
    assert res.exit_code == 0 and res.output.startswith("verified (")


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda p: p.pop("max_person_error"), "priors.max_person_error: missing"),
        (lambda p: p.update(max_person_error=2.0), "guarantee.kappa"),
        (lambda p: p.update(max_person_error=0.5), "guarantee.kappa"),
        (lambda p: p.pop("max_stat_sd"), "priors.max_stat_sd: missing"),  # noise needs V
        (lambda p: p.update({"class": "linear_gaussian"}), "priors.class"),
    ],
    ids=["r0 removed", "r0 raised", "r0 lowered", "V removed", "class renamed"],
)
def test_tampered_class_is_caught_with_a_recomputed_digest(written, edit, named) -> None:
    doc = json.loads((written / "certificate.json").read_text(encoding="utf-8"))
    bad = copy.deepcopy(doc)
    edit(bad["claim"]["spec"]["definition"]["priors"])
    bad["digest"] = digest_of(bad)
    result = verify_certificate(bad, published=written)
    assert not result.ok and any(named in m for m in result.mismatches), result.mismatches


def test_removing_r0_and_the_class_name_is_caught_by_kappa(written) -> None:
    """A forger who turns the claim back into the plain class must also state its κ."""
    doc = json.loads((written / "certificate.json").read_text(encoding="utf-8"))
    priors = doc["claim"]["spec"]["definition"]["priors"]
    del priors["max_person_error"]
    priors["class"] = "linear_gaussian"
    doc["digest"] = digest_of(doc)
    result = verify_certificate(doc, published=written)
    plain = LinearGaussianClass(R1, R2, max_stat_sd=1.0).noise_kappa(16.0, 2, 0.05)
    assert plain > doc["guarantee"]["kappa"]  # the plain class certifies more
    assert not result.ok
    assert any(m.startswith("guarantee.kappa") for m in result.mismatches), result.mismatches


@pytest.mark.parametrize("which", ["exact", "noisy"])
def test_certificates_of_the_old_code_verify_unchanged(which) -> None:
    """Written by commit 6713781 (tests/data/linear_6713781/README.md): no max_person_error."""
    folder = OLD / which
    doc = json.loads((folder / "certificate.json").read_text(encoding="utf-8"))
    assert "max_person_error" not in doc["claim"]["spec"]["definition"]["priors"]
    result = verify_certificate(folder / "certificate.json", published=folder)
    assert result.ok, result.mismatches
    assert verify_certificate(doc).ok  # from the claim alone too


# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--max-person-error", "0"], r"--max-person-error must be in \(0, inf\); got 0"),
        (["--max-person-error", "-1"], r"--max-person-error must be in \(0, inf\)"),
        (["--max-person-error", "nan"], "--max-person-error must be a finite number"),
        (["--max-person-error", "x"], "--max-person-error"),
        (["--max-person-error", "1", "--noise-sd", "1"],
         "--max-person-error 1 with --noise-sd needs --max-stat-sd"),
        (["--max-person-error", "1", "--target-kappa", "1"], "without max_stat_sd"),
        (["--max-person-error", "1", "--max-stat-sd", "1", "--target-kappa", "0.5",
          "--delta", "0"], "unreachable at delta = 0"),
    ],
)  # fmt: skip
def test_cli_bad_person_error_exit_2_nothing_written(csv, tmp_path, extra, match) -> None:
    import re

    out = tmp_path / "out"
    res = run("release", "linear", csv, "--value", "y", "--stat", "all:mean:true",
              "--r1", R1, "--r2", R2, *extra, "--out", out)  # fmt: skip
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert re.search(match, res.output), res.output
    assert not out.exists()


def test_cli_exit_codes(csv, tmp_path) -> None:
    base = ["release", "linear", csv, "--value", "y", "--stat", "all:mean:true", "--r1", R1,
            "--r2", R2, "--max-person-error", 0.5, "-q"]  # fmt: skip
    res = run(*base, "--out", tmp_path / "a", "--target-kappa", 1.7)
    assert res.exit_code == 0, res.output  # the exact statistics: log 4 + 0.25 <= 1.7
    assert "Receivers who are at most 0.5 prior sds wrong about any one person" in res.output
    res = run(*base, "--out", tmp_path / "b", "--target-kappa", 1.7, "--withhold")
    assert res.exit_code == 0, res.output
    res = run(*base, "--out", tmp_path / "c", "--stat", "no0:sum:row_id != 0")
    assert res.exit_code == 1 and "EXPOSED: row 0" in res.output  # refused: nothing written
    assert not (tmp_path / "c").exists()
