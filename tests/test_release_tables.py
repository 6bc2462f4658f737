"""Count-table releases (Prop 8): suppression, per-cell losses, certificate, calibration, I/O."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import persuasive as pp
from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    SmallCellReceiver,
)
from persuasive.errors import ValidationError
from persuasive.release.calibrate import calibrate_threshold
from persuasive.release.tables import release_table
from persuasive.spec import spec_from_dict

POI = PoissonReceiver(0.5, 4.0)


def _frame(counts: list[int], **extra: list[object]) -> pl.DataFrame:
    return pl.DataFrame({"area": [f"a{i}" for i in range(len(counts))], "n": counts, **extra})


def _cell_loss(x: int, h: int, r: int, q: object) -> float:
    """docs/math.md §9 per-value Δ under prior q: −log q(x) + log(q(x)/Q(X<h)) for x < r, else 0."""
    if x >= r:
        return 0.0
    qx, below = float(q.pmf(x)), float(q.cdf(h - 1))  # type: ignore[attr-defined]
    if qx == 0.0:
        return 0.0
    return -math.log(qx) + math.log(qx / below)


# ------------------------------------------------------------------ the release


def test_suppression_loss_and_certificate_against_independent_computations() -> None:
    counts = [0, 1, 2, 3, 4, 5, 9, 40]
    h, r = 5, 3
    rel = release_table(_frame(counts), keys="area", count="n", h=h, receiver=POI, r=r)
    t = rel.table
    assert t.columns == ["area", "n", "suppressed", "loss"]
    assert t["suppressed"].to_list() == [c < h for c in counts]
    assert t["n"].to_list() == [None if c < h else c for c in counts]
    worst = stats.poisson(4.0)
    expected = [_cell_loss(c, h, r, worst) for c in counts]
    np.testing.assert_allclose(t["loss"].to_numpy(), expected, rtol=1e-9)
    alpha = stats.poisson.cdf(h - 1, 4.0)
    assert rel.certificate.holds and rel.certificate.exact
    assert rel.certificate.kappa == pytest.approx(-math.log(alpha), rel=1e-10)
    assert rel.certificate.basis == "Prop 8 (Bon et al. 2026)"
    assert max(expected) <= rel.certificate.kappa + 1e-9  # sharp: attained on cells < r
    s = rel.summary()
    assert (s["n_cells"], s["n_suppressed"], s["n_released"]) == (8, 5, 3)
    assert s["share_suppressed"] == pytest.approx(5 / 8)
    assert s["max_loss"] == pytest.approx(max(expected))


def test_losses_match_the_engine_relative_loss_cell_by_cell() -> None:
    counts = [0, 2, 3, 4, 6, 11]
    for rc in (POI, NegativeBinomialReceiver(0.2, 3.0, 1.5), SmallCellReceiver(0.3)):
        for h, r in ((4, 4), (4, 2), (6, 3)):
            rel = release_table(_frame(counts), keys="area", count="n", h=h, receiver=rc, r=r)
            q = pp.IndependentCellsPrior([rc.worst_prior(h)])
            m, score = pp.CellSuppression(h), pp.SmallCellLogScore(r=r)
            # a released count outside the worst prior's support has loss 0 (docs/math.md §9)
            engine = [
                pp.relative_loss(score, q, m, [c]) if q.cell_logpmf(0, c) > -np.inf else 0.0
                for c in counts
            ]
            np.testing.assert_allclose(rel.table["loss"].to_numpy(), engine, rtol=1e-9, atol=1e-12)


def test_multi_key_float_counts_and_lazy_source() -> None:
    df = pl.DataFrame(
        {"region": ["x", "x", "y", "y"], "year": [1, 2, 1, 2], "n": [1.0, 7.0, 0.0, 12.0]}
    )
    rel = release_table(df.lazy(), keys=["region", "year"], count="n", h=3, receiver=POI)
    assert rel.table["n"].dtype == pl.Int64
    assert rel.table["n"].to_list() == [None, 7, None, 12]
    assert rel.r == 3 and rel.claim["columns"] == {"keys": ["region", "year"], "count": "n"}
    assert rel.published.schema == {"region": pl.String, "year": pl.Int64, "n": pl.Int64}


def test_unsorted_keys_are_checked_by_hashing() -> None:
    rel = release_table(_frame([3, 1, 8]).reverse(), keys="area", count="n", h=2, receiver=POI)
    assert rel.table["n"].to_list() == [8, None, 3]


@given(
    data=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(0, 30) | st.integers(0, 10**9)),
        min_size=1,
        max_size=60,
        unique_by=lambda t: t[0],
    ),
    h=st.integers(2, 40),
    shuffle=st.booleans(),
)
def test_property_no_small_cell_released_and_released_cells_exact(
    data: list[tuple[int, int]], h: int, shuffle: bool
) -> None:
    keys, counts = [k for k, _ in data], [c for _, c in data]
    df = pl.DataFrame({"k": sorted(keys) if not shuffle else keys, "n": counts})
    rel = release_table(df, keys="k", count="n", h=h, receiver=SmallCellReceiver(0.2))
    out = rel.table
    assert out["k"].to_list() == df["k"].to_list()
    for c, got, sup in zip(counts, out["n"].to_list(), out["suppressed"].to_list(), strict=True):
        assert sup == (c < h)
        assert got == (None if c < h else c)
    released = out.filter(~pl.col("suppressed"))["n"]
    assert released.null_count() == 0 and (released >= h).all()


@pytest.mark.parametrize("target", [None, 5.0])
def test_spec_round_trips_to_an_equal_certificate(target: float | None) -> None:
    for rc in (POI, SmallCellReceiver(0.2), NegativeBinomialReceiver(0, 5, 2)):
        rel = release_table(
            _frame([0, 4, 9]), keys="area", count="n", h=4, receiver=rc, r=2, target_kappa=target
        )
        spec = spec_from_dict(json.loads(json.dumps(rel.spec)))
        assert spec.mechanism == pp.CellSuppression(4)
        assert pp.certify(spec.mechanism, spec.definition) == rel.certificate
        # the definition's κ is the target (∞ without one); the certificate's is −log α
        assert spec.definition.kappa == (math.inf if target is None else target)
        assert rel.certificate.kappa == pytest.approx(-math.log(rc.alpha(4)), rel=1e-12)


def test_spec_and_certificate_do_not_depend_on_the_data() -> None:
    """Assumption 1: two different tables, same parameters -> byte-identical claims."""
    a = release_table(_frame([0, 1, 2]), keys="area", count="n", h=5, receiver=POI)
    b = release_table(
        pl.DataFrame({"area": ["z", "y"], "n": [100.0, 3.0]}),
        keys="area",
        count="n",
        h=5,
        receiver=POI,
    )
    for doc in (lambda rel: rel.spec, lambda rel: rel.certificate.to_dict(), lambda r: r.claim):
        assert json.dumps(doc(a), sort_keys=True) == json.dumps(doc(b), sort_keys=True)
    assert a.summary() != b.summary()


# ------------------------------------------------------------------ calibration


@pytest.mark.parametrize(
    ("rc", "cdf"),
    [
        (POI, lambda h: stats.poisson.cdf(h - 1, 4.0)),
        (NegativeBinomialReceiver(1, 6, 2.5), lambda h: stats.nbinom.cdf(h - 1, 2.5, 2.5 / 8.5)),
    ],
)
@pytest.mark.parametrize("target", [0.0005, 0.01, 0.2, 0.9, 1.5, 3.0, 20.0])
def test_calibration_is_the_first_grid_point_under_the_target(
    rc: object, cdf: object, target: float
) -> None:
    grid = np.arange(2, 400)
    closed = -np.log(cdf(grid))  # type: ignore[operator]
    first = int(grid[np.argmax(closed <= target)])
    assert calibrate_threshold(rc, target) == first  # type: ignore[arg-type]
    rel = release_table(_frame([0, 50]), keys="area", count="n", h=first, receiver=rc)  # type: ignore[arg-type]
    _hs, kappas = rel.calibration_curve(grid)
    np.testing.assert_allclose(kappas, closed, rtol=1e-9, atol=1e-12)
    assert rel.certificate.kappa <= target


def test_calibration_respects_r_and_edge_cases() -> None:
    assert calibrate_threshold(POI, 50.0, r=7) == 7
    with pytest.raises(pp.ValidationError, match="target_kappa must be a finite number; got inf"):
        calibrate_threshold(POI, math.inf)  # a target is a finite κ (domain [0, inf))
    assert calibrate_threshold(POI, 1e300) == 2
    assert calibrate_threshold(SmallCellReceiver(0.2), 1.7) == 2
    with pytest.raises(pp.ValidationError, match="not reached by any threshold h <= h_max = 10000"):
        calibrate_threshold(SmallCellReceiver(0.2), 1.0)
    with pytest.raises(pp.ValidationError, match="h_max = 8"):
        calibrate_threshold(POI, 1e-6, h_max=8)
    with pytest.raises(pp.ValidationError, match="target_kappa must be in"):
        calibrate_threshold(POI, -0.1)
    with pytest.raises(pp.ValidationError, match="target_kappa must be a finite number; got nan"):
        calibrate_threshold(POI, float("nan"))
    rel = release_table(_frame([1]), keys="area", count="n", h=5, receiver=POI, r=4)
    _hs, kappas = rel.calibration_curve([2, 3, 4, 5])
    assert np.isinf(kappas[:2]).all() and np.isfinite(kappas[2:]).all()
    default_r = release_table(_frame([1]), keys="area", count="n", h=5, receiver=POI)
    _, below_min = default_r.calibration_curve([1, 2])  # h = 1 is not an allowed threshold
    assert np.isinf(below_min[0]) and np.isfinite(below_min[1])


# ------------------------------------------------------------------ bad input


BAD_TABLES = [
    (pl.DataFrame({"area": [], "n": []}, schema={"area": pl.String, "n": pl.Int64}), "empty"),
    (_frame([1, 2]).drop("n"), "count column 'n' does not exist; available columns: area"),
    (_frame([1, 2]).rename({"area": "zone"}), "key column 'area' does not exist"),
    (pl.DataFrame({"area": ["a", "b"], "n": ["1", "<5"]}), "'n' at row 2 (area='b') is '<5'"),
    (pl.DataFrame({"area": ["a", "b"], "n": ["1", "3.0"]}), "'n' at row 2 (area='b') is '3.0'"),
    (_frame([1, 2]).with_columns(pl.col("n") > 0), "count column 'n' has type Boolean"),
    (
        pl.DataFrame({"area": ["a", "b"], "n": [1, None]}),
        "'n' at row 2 (area='b') is missing",
    ),
    (
        pl.DataFrame({"area": ["a", "b"], "n": [1.0, float("nan")]}),
        "'n' at row 2 (area='b') is NaN",
    ),
    (pl.DataFrame({"area": ["a", "b"], "n": [1.0, math.inf]}), "at row 2 (area='b') is infinite"),
    (_frame([1, -3, 2]), "'n' at row 2 (area='a1') is negative (-3)"),
    (
        pl.DataFrame({"area": ["a", "b"], "n": [1.0, 2.5]}),
        "at row 2 (area='b') is fractional (2.5)",
    ),
    (pl.DataFrame({"area": ["a", "b"], "n": [1.0, 1e20]}), "at row 2 (area='b') is 1e+20, above"),
    (
        pl.DataFrame(
            {"area": ["a", "b"], "n": [1, 2**63]}, schema={"area": pl.String, "n": pl.UInt64}
        ),
        "at row 2 (area='b') is 9223372036854775808, above the largest count",
    ),
    (pl.DataFrame({"area": ["a", None], "n": [1, 2]}), "'area' at row 2 is missing"),
    (
        pl.DataFrame({"area": ["a", "b", "a"], "n": [1, 2, 3]}),
        "duplicated key (area='a') at rows 1 and 3",
    ),
]


@pytest.mark.parametrize(("df", "needle"), BAD_TABLES)
def test_bad_tables(df: pl.DataFrame, needle: str) -> None:
    with pytest.raises(pp.ValidationError) as err:
        release_table(df, keys="area", count="n", h=3, receiver=POI)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_largest_count_is_exact() -> None:
    """2^63 − 1 is a count (published exactly, never through a float); text counts of a frame
    are parsed like a CSV's."""
    big = 2**63 - 1
    for df in (
        pl.DataFrame(
            {"area": ["a", "b"], "n": [1, big]}, schema={"area": pl.String, "n": pl.UInt64}
        ),
        pl.DataFrame({"area": ["a", "b"], "n": ["1", str(big)]}),
    ):
        rel = release_table(df, keys="area", count="n", h=3, receiver=POI)
        assert rel.published["n"].to_list() == [None, big]
        assert rel.published["n"].dtype == pl.Int64


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"h": 0}, "h must be an integer >= 2: counts below h are suppressed"),
        ({"h": 1}, "Prop 8 needs h >= r with a score threshold r >= 2"),
        ({"h": 2.5}, "h must be an integer; got 2.5"),
        ({"h": 3, "r": 5}, "r = 5 exceeds h = 3: Prop 8 needs h >= r"),
        ({"h": 3, "r": 1}, "r must be an integer in [2, "),
        ({"keys": "n"}, "count column 'n' is also a key"),
        ({"keys": []}, "keys must be one or more distinct column names"),
        ({"receiver": 0.2}, "receiver must be a Receiver model"),
        ({"receiver": PoissonReceiver(0, 1e4)}, "puts no prior mass below h"),
    ],
)
def test_bad_parameters(kw: dict[str, object], needle: str) -> None:
    args: dict[str, object] = {"keys": "area", "count": "n", "h": 3, "receiver": POI, **kw}
    with pytest.raises(pp.ValidationError) as err:
        release_table(_frame([1, 2]), **args)  # type: ignore[arg-type]
    assert needle in str(err.value)


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(pp.ValidationError, match="not found"):
        release_table(tmp_path / "no.csv", keys="area", count="n", h=3, receiver=POI)
    (tmp_path / "t.xlsx").write_text("x")
    with pytest.raises(pp.ValidationError, match=r"must end in \.csv, \.parquet or \.pq"):
        release_table(tmp_path / "t.xlsx", keys="area", count="n", h=3, receiver=POI)
    (tmp_path / "t.csv").write_text("area,n\na,1\nb,<5\n")
    with pytest.raises(pp.ValidationError, match=r"'n' at row 2 \(area='b'\) is '<5'"):
        release_table(tmp_path / "t.csv", keys="area", count="n", h=3, receiver=POI)
    (tmp_path / "u.csv").write_text("area,n\na,1\nb,NA\n")  # NA is text, not a missing count
    with pytest.raises(pp.ValidationError, match=r"'n' at row 2 \(area='b'\) is 'NA'"):
        release_table(tmp_path / "u.csv", keys="area", count="n", h=3, receiver=POI)
    (tmp_path / "v.csv").write_text("area,n\na,1\nb,\n")  # an empty field is missing
    with pytest.raises(pp.ValidationError, match=r"'n' at row 2 \(area='b'\) is missing"):
        release_table(tmp_path / "v.csv", keys="area", count="n", h=3, receiver=POI)
    (tmp_path / "w.csv").write_text("area,n,n\na,1,1\n")
    with pytest.raises(pp.ValidationError, match="'n' twice"):
        release_table(tmp_path / "w.csv", keys="area", count="n", h=3, receiver=POI)


def test_csv_keys_are_text_exactly_as_written(tmp_path: Path) -> None:
    """``01`` keeps its zero, ``1`` and ``1.0`` are different keys, ``NA`` is a key."""
    src = tmp_path / "t.csv"
    src.write_text("area,n\n01,7\n1,8\n1.0,9\nNA,2\n")
    rel = release_table(src, keys="area", count="n", h=3, receiver=POI)
    assert rel.published.schema == {"area": pl.String, "n": pl.Int64}
    assert rel.published.rows() == [("01", 7), ("1", 8), ("1.0", 9), ("NA", None)]
    out = rel.write(tmp_path / "out") / "released.csv"
    assert out.read_text().splitlines() == ["area,n", "01,7", "1,8", "1.0,9", "NA,"]


# ------------------------------------------------------------------ writing


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_file_round_trip(tmp_path: Path, suffix: str) -> None:
    df = _frame([0, 3, 8, 2, 15])
    src = tmp_path / f"in{suffix}"
    df.write_csv(src) if suffix == ".csv" else df.write_parquet(src)
    rel = release_table(src, keys="area", count="n", h=4, receiver=POI)
    folder = rel.write(tmp_path / "out", format=suffix[1:])
    out = folder / f"released{suffix}"
    back = pl.read_csv(out) if suffix == ".csv" else pl.read_parquet(out)
    assert back.equals(rel.published)
    assert back.columns == ["area", "n"]  # no loss column: it would leak counts below r
    assert back["n"].to_list() == [None, None, 8, None, 15]
    if suffix == ".csv":
        assert out.read_text().splitlines()[1] == "a0,"  # empty, not a number
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([src.name, folder.name])
    assert sorted(p.name for p in folder.iterdir()) == [
        ".persuasive-output.json",
        "certificate.json",
        out.name,
    ]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_failed_write_leaves_nothing(
    tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rel = release_table(_frame([0, 9]), keys="area", count="n", h=4, receiver=POI)

    def broken(self: object, path: object, *a: object, **k: object) -> None:
        Path(str(path)).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_csv", broken)
    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken)
    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        rel.write(tmp_path / "out", format=suffix[1:])
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(pp.ValidationError, match="format must be one of csv, parquet"):
        rel.write(tmp_path / "out", format="json")
    assert list(tmp_path.iterdir()) == []


def test_published_file_depends_only_on_what_is_released(tmp_path: Path) -> None:
    # With r < h, two tables whose suppressed counts differ (one below r, one between r and h)
    # have different per-cell losses but must publish byte-identical files.
    a = release_table(_frame([0, 9, 1]), keys="area", count="n", h=5, r=2, receiver=POI)
    b = release_table(_frame([3, 9, 4]), keys="area", count="n", h=5, r=2, receiver=POI)
    assert a.table["loss"].to_list() != b.table["loss"].to_list()
    fa, fb = a.write(tmp_path / "a") / "released.csv", b.write(tmp_path / "b") / "released.csv"
    assert fa.read_bytes() == fb.read_bytes()


def test_header_only_csv_is_reported_as_empty(tmp_path: Path) -> None:
    src = tmp_path / "empty.csv"
    src.write_text("area,n\n")
    with pytest.raises(pp.ValidationError, match="the table is empty"):
        release_table(src, keys="area", count="n", h=4, receiver=POI)


@pytest.mark.parametrize("offset", [0, -5, 10**12])
def test_duplicated_integer_keys_are_caught_on_the_bitmap_path(offset: int) -> None:
    # Shuffled integer keys take the bitmap uniqueness check; a duplicate must still be named.
    keys = np.random.default_rng(1).permutation(1000) + offset
    keys[700] = keys[3]
    df = pl.DataFrame({"cell": keys, "n": np.arange(1000)})
    with pytest.raises(pp.ValidationError, match="duplicated"):
        release_table(df, keys="cell", count="n", h=4, receiver=POI)
    ok = pl.DataFrame(
        {"cell": np.random.default_rng(2).permutation(1000) + offset, "n": np.arange(1000)}
    )
    assert release_table(ok, keys="cell", count="n", h=4, receiver=POI).table.height == 1000


@pytest.mark.parametrize("name", ["a", "b", "__row__first", "__row__second"])
@pytest.mark.parametrize("shape", ["text", "integer", "two keys"])
def test_a_duplicate_is_named_whatever_the_key_is_called(name: str, shape: str) -> None:
    """The duplicate check's own columns never clash with a key (keys named like them used to
    raise polars' DuplicateError instead of naming the duplicate)."""
    keys = [name] if shape != "two keys" else [name, "z"]
    values: list[object] = ["x", "y", "x"] if shape != "integer" else [5, 6, 5]
    data: dict[str, list[object]] = {name: values, "c": [1, 2, 3]}
    if shape == "two keys":
        data["z"] = ["q", "q", "q"]
    with pytest.raises(ValidationError, match=r"duplicated key .* at rows 1 and 3"):
        release_table(
            pl.DataFrame(data), keys=keys, count="c", h=5, receiver=PoissonReceiver(0.5, 3.0)
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"engine": "gpu"}, "engine must be one of polars, streaming, spark; got 'gpu'"),
        ({"engine": 3}, "engine must be one of polars, streaming, spark; got 3"),
        ({"spark": "local[1]"}, "spark='local[1]' is for engine='spark'"),
        ({"engine": "streaming", "spark": "local[1]"}, "got engine='streaming'"),
    ],
)
def test_a_bad_engine_is_one_line_naming_it(kwargs: dict[str, object], message: str) -> None:
    df = pl.DataFrame({"k": ["a"], "n": [3]})
    with pytest.raises(ValidationError) as info:
        release_table(df, keys="k", count="n", h=5, receiver=POI, **kwargs)  # type: ignore[arg-type]
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--engine", "gpu"], "error: --engine must be one of polars, streaming, spark; got 'gpu'"),
        (["--spark-master", "local[1]"], "error: --spark-master needs --engine spark"),
        (["--engine", "spark", "--spark-master", " "], "master URL, e.g. local[2]; got ' '"),
        (["--engine", "streaming", "--margins", "rows"], "error: --engine streaming releases"),
    ],
)
def test_bad_engine_options_exit_2_with_one_line(
    tmp_path: Path, options: list[str], message: str
) -> None:
    from typer.testing import CliRunner

    from persuasive.cli import app

    data = tmp_path / "t.csv"
    data.write_text("k,n\na,3\nb,9\n", encoding="utf-8")
    args = ["release", "table", str(data), "--keys", "k", "--count", "n", "--h", "5"]
    args += ["--poisson-mean", "0.5:3", "--out", str(tmp_path / "out"), *options]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert message in result.stderr and not (tmp_path / "out").exists()
