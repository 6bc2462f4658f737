"""Releasing means (release/means.py) against independent computations."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import polars as pl
import pytest

import persuasive as pp
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.release.means import calibrate_mean, release_group_means, release_mean
from persuasive.spec import spec_from_dict

GAUSS = ("gaussian", 1.0)


def test_exact_mean_is_prop7():
    rel = release_mean([1.0, 2.0, 6.0], r1=1.0, r2=4.0)
    assert rel.kind == "mean" and rel.value == 3.0
    assert rel.certificate.kappa == pytest.approx(1.0 + math.log(4.0), abs=1e-12)
    assert rel.certificate.exact and rel.certificate.holds
    assert "at most 1 prior standard deviation" in rel.statement() and "2.386" in rel.statement()


def test_noisy_mean_value_and_certificate():
    rel = release_mean(
        np.arange(10.0), r1=4.0, r2=4.0, noise=GAUSS, max_mean_sd=0.1, delta=0.05, rng=0
    )
    noise = np.random.default_rng(0).normal(0.0, 1.0)
    assert rel.value == pytest.approx(4.5 + noise)
    assert not rel.certificate.exact and rel.certificate.kappa < 4.0 + math.log(4.0)
    assert "at most 0.05" in rel.statement() and "at most 0.1" in rel.statement()


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"noise": GAUSS, "max_mean_sd": 0.5, "delta": 0.05},
        {"noise": ("gaussian", 2.0), "delta": 0.1},
    ],
)
def test_spec_round_trip_and_data_independence(kw):
    a = release_mean([1.0, 2.0, 3.0, 10.0], r1=1.0, r2=4.0, rng=1, **kw)
    b = release_mean([-5.0, 0.0, 7.5], r1=1.0, r2=4.0, rng=2, **kw)
    assert a.spec == b.spec
    assert json.dumps(a.certificate.to_dict(), sort_keys=True) == json.dumps(
        b.certificate.to_dict(), sort_keys=True
    )
    spec = spec_from_dict(a.spec)
    again = pp.certify(spec.mechanism, spec.definition)
    assert again.to_dict() == a.certificate.to_dict()


@pytest.mark.parametrize("group", [False, True])
def test_written_certificates_depend_on_the_data_only_through_the_publication(tmp_path, group):
    """Assumption 1 on the written certificate: claim, guarantee and notes are byte-identical
    for different data; the publication section (the published file's hash) is not."""
    from persuasive.files.output import OutputFolder
    from persuasive.release.pipeline import publish

    docs = []
    for i, ys in enumerate(([1.0, 2.0, 3.0, 10.0], [-5.0, 0.0, 7.5, 2.0])):
        if group:
            frame = pl.DataFrame({"g": ["a", "a", "b", "b"], "y": ys})
            rel = release_group_means(frame, value="y", group="g", r1=1.0, r2=4.0)
        else:
            rel = release_mean(ys, r1=1.0, r2=4.0, column="y")
        docs.append(publish(rel, OutputFolder(tmp_path / str(i))).document)
    for field in ("claim", "guarantee", "notes"):
        assert json.dumps(docs[0][field], sort_keys=True) == json.dumps(
            docs[1][field], sort_keys=True
        )
    assert docs[0]["publication"]["files"] != docs[1]["publication"]["files"]
    assert docs[0]["claim"]["columns"] == {"value": "y", "group": "g" if group else None}
    assert docs[0]["guarantee"]["kappa"] == pytest.approx(1.0 + math.log(4.0), abs=1e-12)


def test_group_means_match_per_group_prop7():
    rng = np.random.default_rng(0)
    df = pl.DataFrame({"g": rng.integers(0, 5, 400).astype(str), "y": rng.normal(size=400)})
    rel = release_group_means(df, value="y", group="g", r1=2.0, r2=3.0)
    ref = {k: float(np.mean(df.filter(pl.col("g") == k)["y"].to_numpy())) for k in df["g"].unique()}
    got = dict(zip(rel.values["g"].to_list(), rel.values["mean"].to_list(), strict=True))
    assert got == pytest.approx(ref, rel=1e-12)
    single = release_mean(df["y"].to_numpy()[:10], r1=2.0, r2=3.0).certificate
    assert rel.certificate.to_dict() == single.to_dict()  # max over groups of equal kappas
    assert rel.kind == "mean" and rel.params.group == "g" and rel.summary()["n_groups"] == 5
    assert rel.published.columns == ["g", "mean"]  # the group sizes stay with the custodian
    spec_from_dict(rel.spec)
    lazy = release_group_means(df.lazy(), value="y", group="g", r1=2.0, r2=3.0)
    # Same groups and sizes; the means agree to rounding (polars may sum in another order).
    assert lazy.values.drop("mean").equals(rel.values.drop("mean"))
    np.testing.assert_allclose(
        lazy.values["mean"].to_numpy(), rel.values["mean"].to_numpy(), rtol=1e-12
    )


def test_group_means_noise_and_refusals():
    df = pl.DataFrame({"g": ["a", "a", "b", "b", "c"], "y": [1.0, 2.0, 3.0, 4.0, 5.0]})
    with pytest.raises(ValidationError, match="group 'c' has n = 1"):
        release_group_means(df, value="y", group="g", r1=1.0, r2=4.0)
    ok = df.filter(pl.col("g") != "c")
    with pytest.raises(UnsupportedCombinationError, match="conjugate"):
        release_group_means(ok, value="y", group="g", r1=1.0, r2=4.0, independent_groups=False)
    noisy = release_group_means(
        ok, value="y", group="g", r1=1.0, r2=4.0, noise=GAUSS, delta=0.05, rng=3
    )
    draw = np.random.default_rng(3).normal(0.0, 1.0, size=2)
    np.testing.assert_allclose(noisy.values["mean"].to_numpy(), np.array([1.5, 3.5]) + draw)
    with pytest.raises(ValidationError, match="r2 >= n/\\(n-1\\)"):
        release_group_means(ok, value="y", group="g", r1=1.0, r2=1.5)


@pytest.mark.parametrize(
    ("frame", "kw", "msg"),
    [
        (
            pl.DataFrame({"g": ["a"], "y": [1.0]}),
            {"value": "z", "group": "g"},
            "'z' does not exist",
        ),
        (pl.DataFrame({"g": ["a"], "y": ["x"]}), {"value": "y", "group": "g"}, "'x', not a number"),
        (pl.DataFrame({"g": ["a"], "y": [True]}), {"value": "y", "group": "g"}, "not numbers"),
        (
            pl.DataFrame({"g": ["a", "a"], "y": [1.0, None]}),
            {"value": "y", "group": "g"},
            "missing",
        ),
        (
            pl.DataFrame({"g": ["a", "a"], "y": [1.0, float("nan")]}),
            {"value": "y", "group": "g"},
            "NaN",
        ),
        (
            pl.DataFrame({"g": ["a", None], "y": [1.0, 2.0]}),
            {"value": "y", "group": "g"},
            "'g' at row 2 is missing",
        ),
        (
            pl.DataFrame({"g": [], "y": []}, schema={"g": pl.String, "y": pl.Float64}),
            {"value": "y", "group": "g"},
            "empty",
        ),
    ],
)
def test_group_bad_input(frame, kw, msg):
    with pytest.raises(ValidationError, match=msg):
        release_group_means(frame, r1=1.0, r2=4.0, **kw)


@pytest.mark.parametrize(
    ("values", "kw", "err", "msg"),
    [
        ([], {}, ValidationError, "non-empty"),
        ([[1.0, 2.0]], {}, ValidationError, "1-d"),
        (["a", "b"], {}, ValidationError, "real numbers"),
        ([1.0, float("nan")], {}, ValidationError, r"values\[1\] = nan"),
        ([1.0], {}, ValidationError, "n = 1"),
        ([1.0, 2.0], {"noise": ("uniform", 1.0)}, ValidationError, "noise must be"),
        ([1.0, 2.0], {"noise": ("gaussian", -1.0)}, ValidationError, "noise scale"),
        ([1.0, 2.0], {"noise": GAUSS}, ValidationError, "delta must be > 0"),
        (
            [1.0, 2.0],
            {"noise": ("laplace", 1.0), "delta": 0.1},
            UnsupportedCombinationError,
            "Laplace",
        ),
        ([1.0, 2.0], {"max_mean_sd": 0.0}, ValidationError, "max_mean_sd"),
    ],
)
def test_release_mean_bad_input(values, kw, err, msg):
    with pytest.raises(err, match=msg):
        release_mean(values, r1=1.0, r2=4.0, **kw)


def test_calibrate_r1_exact_mean():
    for target in [0.5, 2.0, 7.0]:
        r1 = calibrate_mean(target, r2=1.5)
        assert r1 == pytest.approx(target - math.log(1.5))
        assert release_mean([0.0, 1.0, 2.0], r1=r1, r2=1.5).certificate.kappa <= target + 1e-12
    with pytest.raises(ValidationError, match="unreachable"):
        calibrate_mean(1.0, r2=4.0)


def test_calibrate_noise_sd_monotone_and_hits_target():
    kw = {"r2": 4.0, "r1": 4.0, "noise": "gaussian", "max_mean_sd": 1.0, "delta": 0.05}
    targets = [4.0, 4.5, 5.5, 7.0]
    sds = [calibrate_mean(t, **kw) for t in targets]
    assert all(a >= b > 0 for a, b in itertools.pairwise(sds))
    for t, s in zip(targets, sds, strict=True):
        rel = release_mean(
            [0.0, 1.0], r1=4.0, r2=4.0, noise=("gaussian", s), max_mean_sd=1.0, delta=0.05
        )
        assert rel.certificate.kappa <= t
        slightly_less = release_mean(
            [0.0, 1.0], r1=4.0, r2=4.0, noise=("gaussian", s * 0.999), max_mean_sd=1.0, delta=0.05
        )
        assert slightly_less.certificate.kappa > t - 1e-3
    with pytest.raises(ValidationError, match="unreachable"):
        calibrate_mean(3.0, **kw)  # below the chi-square(1) quantile 3.84
    with pytest.raises(ValidationError, match="max_mean_sd"):
        calibrate_mean(5.0, r2=4.0, r1=4.0, noise="gaussian", delta=0.05)


def test_calibrate_r1_with_noise():
    kw = {"r2": 4.0, "noise": ("gaussian", 1.0), "max_mean_sd": 0.1, "delta": 0.05}
    r1 = calibrate_mean(4.5, **kw)
    rel = release_mean(
        [0.0, 1.0], r1=r1, r2=4.0, noise=("gaussian", 1.0), max_mean_sd=0.1, delta=0.05
    )
    assert 0 < r1 and rel.certificate.kappa <= 4.5
    assert calibrate_mean(5.0, **kw) > r1


def test_calibration_curve():
    rel = release_mean([0.0, 1.0], r1=1.0, r2=4.0)
    _xs, ks, label = rel.calibration_curve([0.5, 1.0, 2.0])
    np.testing.assert_allclose(ks, np.array([0.5, 1.0, 2.0]) + math.log(4.0))
    assert "r1" in label
    noisy = release_mean([0.0, 1.0], r1=4.0, r2=4.0, noise=GAUSS, max_mean_sd=1.0, delta=0.05)
    _xs, ks, label = noisy.calibration_curve()
    assert np.all(np.diff(ks) <= 1e-12) and "noise" in label
    assert noisy.certificate.kappa in ks
