"""The linear release's design by column patterns (issue 14), against the dense computations.

* ``patterns_of_masks`` (codes of the selections) against ``column_patterns`` of the dense A
  (random projection, then checked) and against A itself;
* ``LinearGaussian.from_patterns``: who it exposes against a brute-force rank test
  (:math:`e_i` in A's row space iff appending it leaves the rank unchanged), and its certificate
  against the dense mechanism's (exact, noisy, exposed);
* the release: published values bit for bit ``A @ x`` with A from ``statistics_matrix``, the
  certificate file the same bytes twice, and a certificate written the old way (bitmaps at zlib
  level 9, built here from the masks with ``zlib`` directly) still verifies, while a bitmap
  with bytes after its zlib stream is refused.
"""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import persuasive as pp
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.files.output import OutputFolder
from persuasive.linear import LinearGaussianClass
from persuasive.linear.structured import ColumnPatterns, column_patterns, patterns_of_masks
from persuasive.release.linear import release_linear
from persuasive.release.pipeline import publish
from persuasive.release.statistics import statistics_matrix
from persuasive.report.certificate import digest_of, dumps
from persuasive.report.kinds.linear import KIND, LinearParams
from persuasive.report.verify import verify_certificate


def masks_and_coef(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    g = rng.integers(0, 6, n)
    rows = [np.ones(n, bool)] + [g == j for j in range(min(k - 1, 6))]
    while len(rows) < k:
        rows.append(rng.random(n) < 0.5)
    masks = np.array(rows)
    coef = np.where(rng.random(k) < 0.5, 1.0, 1.0 / np.maximum(masks.sum(axis=1), 1))
    return masks, coef


def same_partition(p: ColumnPatterns, q: ColumnPatterns) -> bool:
    """The two pattern indices define the same grouping of the records."""
    pairs = np.unique(np.stack([p.index, q.index]), axis=1)
    return pairs.shape[1] == p.count.size == q.count.size


@pytest.mark.parametrize(("k", "seed"), [(3, 0), (11, 1), (25, 2)])
def test_patterns_of_masks_are_the_column_patterns(k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    masks, coef = masks_and_coef(rng, 400, k)
    a = masks * coef[:, None]
    p = patterns_of_masks(masks, coef)
    assert p is not None
    assert np.array_equal(p.dense(), a)  # C E is A, entry for entry
    assert np.array_equal(np.bincount(p.index), p.count) and p.shape == a.shape
    assert np.unique(p.columns, axis=1).shape[1] == p.count.size  # distinct columns
    q = column_patterns(a)
    if q is not None:  # the random-projection route finds the same grouping
        assert same_partition(p, q)
    again = patterns_of_masks(list(masks), coef)
    assert again is not None and np.array_equal(again.index, p.index)  # deterministic


def test_patterns_of_masks_declines_what_it_cannot_code() -> None:
    masks = np.ones((63, 5), bool)
    assert patterns_of_masks(masks, np.ones(63)) is None  # more than 62 statistics
    assert patterns_of_masks(np.ones((2, 5), bool), [1.0, 0.0]) is None  # a zero coefficient


def rank_exposed(a: np.ndarray) -> np.ndarray:
    """Brute force: e_i in A's row space iff rank([A; e_i]) = rank(A)."""
    r = np.linalg.matrix_rank(a)
    eye = np.eye(a.shape[1])
    return np.array([np.linalg.matrix_rank(np.vstack([a, eye[i]])) == r for i in range(a.shape[1])])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_from_patterns_exposes_whom_the_rank_test_finds(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 40
    masks, coef = masks_and_coef(rng, n, 4)
    masks = np.vstack([masks, np.arange(n) != 5, np.arange(n) < 3])  # a difference, a group of 3
    coef = np.append(coef, [1.0, 1.0 / 3])
    p = patterns_of_masks(masks, coef)
    assert p is not None
    mech = pp.LinearGaussian.from_patterns(p)
    want = rank_exposed(masks * coef[:, None])
    assert want[5]  # the overall sum minus the sum without row 5
    assert np.array_equal(mech.exposed(), want)


@pytest.mark.parametrize("noise", [None, 0.3])
@pytest.mark.parametrize("v", [None, 0.5])
def test_from_patterns_certifies_as_the_dense_mechanism(
    noise: float | None, v: float | None
) -> None:
    rng = np.random.default_rng(3)
    masks, coef = masks_and_coef(rng, 300, 5)
    p = patterns_of_masks(masks, coef)
    assert p is not None
    d = pp.PersuasivePrivacy(
        pp.MarginalDSS(), LinearGaussianClass(1.0, 4.0, max_stat_sd=v), 3.0, 0.1
    )
    r = None if noise is None else noise**2
    fast = pp.certify(pp.LinearGaussian.from_patterns(p, r), d)
    dense = pp.certify(pp.LinearGaussian(masks * coef[:, None], r), d)
    assert (fast.kappa, fast.exact, fast.holds, fast.basis, fast.notes) == (
        dense.kappa,
        dense.exact,
        dense.holds,
        dense.basis,
        dense.notes,
    )
    assert fast.mechanism["A"]["columns"] == p.columns.tolist()


def test_from_patterns_refuses_an_exposing_design_and_bad_patterns() -> None:
    masks = np.array([np.ones(6, bool), np.arange(6) != 2])
    p = patterns_of_masks(masks, [1.0, 1.0])
    assert p is not None
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), LinearGaussianClass(1.0, 4.0), 3.0)
    with pytest.raises(UnsupportedCombinationError, match=r"exposes individual\(s\) \[2\]"):
        pp.certify(pp.LinearGaussian.from_patterns(p), d)
    bad = ColumnPatterns(p.columns, p.index + 5, p.count)
    with pytest.raises(ValidationError, match="patterns: index must hold"):
        pp.LinearGaussian.from_patterns(bad)
    with pytest.raises(ValidationError, match="ColumnPatterns"):
        pp.LinearGaussian.from_patterns(masks)  # type: ignore[arg-type]


@pytest.mark.parametrize("noise_sd", [None, 0.5])
def test_more_than_62_statistics_certify_from_the_dense_a(noise_sd: float | None) -> None:
    rng = np.random.default_rng(5)
    n, k = 300, 63
    members = tuple(rng.random((k, n)) < 0.5)
    stats = tuple((f"s{j}", "sum", f"w{j}") for j in range(k))
    p = LinearParams("y", stats, (), members, n, 1.0, 4.0, noise_sd, None, 0.1)
    assert p.patterns is None and p.exposures == ()
    body = KIND.certify(p)
    a = np.vstack(members).astype(float)
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), LinearGaussianClass(1.0, 4.0), np.inf, 0.1)
    dense = pp.certify(pp.LinearGaussian(a, None if noise_sd is None else noise_sd**2), d)
    assert body.guarantee["kappa"] == dense.kappa and not rank_exposed(a).any()


def frame(n: int = 2000) -> pl.DataFrame:
    rng = np.random.default_rng(7)
    return pl.DataFrame({"y": rng.normal(10.0, 2.0, n), "g": rng.integers(0, 6, n)})


STATS = [("all", "mean", "true"), ("g1", "mean", "g = 1"), ("low", "sum", "g < 3")]


@pytest.mark.parametrize("noisy", [False, True])
def test_published_values_are_the_dense_product_bit_for_bit(noisy: bool) -> None:
    df = frame()
    kw = {"target_kappa": 2.0, "max_stat_sd": 1.0, "delta": 0.5, "rng": 4} if noisy else {}
    rel = release_linear(df, value="y", statistics=STATS, r1=1.0, r2=4.0, **kw)
    _, a = statistics_matrix(df, STATS, value="y")
    t = a @ df["y"].to_numpy()
    if noisy:
        assert rel.noise_sd is not None
        t = t + np.random.default_rng(4).normal(0.0, rel.noise_sd, size=t.shape)
    assert rel.values["value"].to_list() == t.tolist()  # == on floats: the same bits


def written(rel, folder: Path) -> dict:
    publish(rel, OutputFolder(folder))
    return json.loads((folder / "certificate.json").read_text(encoding="utf-8"))


def test_old_level_9_certificate_verifies_and_new_ones_are_deterministic(tmp_path: Path) -> None:
    df = frame()
    rel = release_linear(df, value="y", statistics=STATS, r1=1.0, r2=4.0)
    doc = written(rel, tmp_path / "a")
    again = written(release_linear(df, value="y", statistics=STATS, r1=1.0, r2=4.0), tmp_path / "b")
    a_bytes = (tmp_path / "a" / "certificate.json").read_bytes()
    assert a_bytes == (tmp_path / "b" / "certificate.json").read_bytes() and doc == again
    # the old writer: each statistic's mask, packed little-endian, zlib level 9, base64
    _, a = statistics_matrix(df, STATS, value="y")
    old = json.loads(json.dumps(doc))
    for entry, row in zip(old["claim"]["design"]["statistics"], a, strict=True):
        bits = np.packbits(row != 0, bitorder="little").tobytes()
        entry["members"] = base64.b64encode(zlib.compress(bits, 9)).decode("ascii")
    assert old["claim"]["design"]["statistics"] != doc["claim"]["design"]["statistics"]
    old["digest"] = digest_of(old)
    (tmp_path / "a" / "certificate.json").write_text(dumps(old), encoding="utf-8")
    check = verify_certificate(tmp_path / "a" / "certificate.json", published=tmp_path / "a")
    assert check.ok, check.mismatches
    # a bitmap followed by other bytes is not a bitmap
    trailing = json.loads(json.dumps(doc))
    first = trailing["claim"]["design"]["statistics"][0]
    raw = base64.b64decode(first["members"]) + b"\x00hidden"
    first["members"] = base64.b64encode(raw).decode("ascii")
    trailing["digest"] = digest_of(trailing)
    bad = verify_certificate(trailing)
    assert not bad.ok
    assert any("claim.design.statistics[0].members" in m for m in bad.mismatches), bad.mismatches


@pytest.mark.parametrize(("target", "v", "delta"), [(2.0, 1.0, 0.5), (1.5, 0.5, 0.5)])
def test_calibration_in_batches_equals_the_sequential_bisection(
    target: float, v: float, delta: float
) -> None:
    from persuasive.linear.calibrate import ClassCurve, _search

    cls = LinearGaussianClass(1.0, 4.0, max_stat_sd=v)
    curve = ClassCurve(cls, delta)
    a, c = np.ones((3, 4)) / 4, np.ones(3)

    def f(s: float) -> float:
        return curve(s**2 * np.eye(3), 3)

    one = _search(f, a, c, v, target)  # one κ evaluation per bisection step
    batched = pp.linear.calibrate_noise(a, target, cls=cls, delta=delta)
    assert (one.sd, one.kappa) == (batched.sd, batched.kappa)
    assert batched.kappa <= target < f(batched.sd * (1 - 1e-6))
