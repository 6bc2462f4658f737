"""Sparse tables (issue 11): absent combinations are counts of zero, or declared structural
zeros; the certificate states which, and ``verify`` recomputes it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from persuasive.classes.receivers import NegativeBinomialReceiver, PoissonReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.files.output import OutputFolder
from persuasive.margins import MarginTable
from persuasive.release.grid import MAX_GRID_CELLS, declared_levels
from persuasive.release.margins import release_table_with_margins
from persuasive.release.pipeline import publish
from persuasive.release.tables import release_table
from persuasive.report.verify import verify_certificate

runner = CliRunner()
POISSON = PoissonReceiver(0.5, 3)
NEGBIN = NegativeBinomialReceiver(1, 40, 1)

#: 3 x 3 levels, two combinations absent: (b, y) and (c, z).
SPARSE = "k1,k2,n\na,x,12\na,y,7\na,z,30\nb,x,40\nb,z,9\nc,x,25\nc,y,31\n"
ABSENT = {("b", "y"), ("c", "z")}


def _cli(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def _release(tmp_path: Path, *extra: Any, name: str = "out") -> tuple[Any, Path]:
    data = tmp_path / "sparse.csv"
    data.write_text(SPARSE)
    out = tmp_path / name
    res = _cli(
        "release", "table", data, "--keys", "k1,k2", "--count", "n", "--h", 10,
        "--poisson-mean", "0.5:3", "--out", out, *extra,
    )  # fmt: skip
    return res, out


def test_zero_fill_publishes_every_cell_of_the_grid(tmp_path: Path) -> None:
    res, out = _release(tmp_path)
    assert res.exit_code == 0, res.output
    published = pl.read_csv(out / "released.csv", infer_schema=False)
    keys = set(published.select("k1", "k2").iter_rows())
    assert keys == set(itertools.product("abc", "xyz"))  # the whole grid
    shown = [int(n) for n in published["n"].drop_nulls()]
    assert min(shown) >= 10  # no count below h, zeros included
    for k1, k2, n in published.iter_rows():
        if (k1, k2) in ABSENT:
            assert n is None  # a zero is below h: suppressed
    assert published.head(7)["k1"].to_list() == list("aaabbcc")  # the input's rows first
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["claim"]["absent"] == "zero"
    assert any("counts of zero" in n for n in doc["notes"])
    assert doc["publication"]["cells"] == 9 and "structural_cells" not in doc["publication"]
    assert _cli("verify", out / "certificate.json", "--published", out).exit_code == 0


def test_structural_zeros_are_not_published_and_the_certificate_says_so(tmp_path: Path) -> None:
    res, out = _release(tmp_path, "--absent", "structural")
    assert res.exit_code == 0, res.output
    published = pl.read_csv(out / "released.csv", infer_schema=False)
    assert published.height == 7
    assert not ABSENT & set(published.select("k1", "k2").iter_rows())
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["claim"]["absent"] == "structural"
    assert doc["publication"]["structural_cells"] == 2
    assert any("structural zeros" in n for n in doc["notes"])
    assert _cli("verify", out / "certificate.json", "--published", out).exit_code == 0
    assert _cli("verify", out / "certificate.json").exit_code == 0


@pytest.mark.parametrize(("treatment", "forged"), [("zero", "structural"), ("structural", "zero")])
def test_a_tampered_absent_field_is_named(tmp_path: Path, treatment: str, forged: str) -> None:
    _res, out = _release(tmp_path, "--absent", treatment)
    cert = out / "certificate.json"
    doc = json.loads(cert.read_text())
    doc["claim"]["absent"] = forged
    cert.write_text(json.dumps(doc))
    for extra in ([], ["--published", out]):
        res = _cli("verify", cert, *extra)
        assert res.exit_code == 1, res.output
        assert "claim.absent" in res.output
    said = str(verify_certificate(cert, published=out).mismatches)
    assert "notes" in said
    if forged == "zero":  # the published file lacks two combinations of its levels
        assert "claim.absent = 'zero'" in said
    else:
        assert "structural_cells" in said


def test_a_structural_count_edited_in_the_certificate_is_named(tmp_path: Path) -> None:
    _res, out = _release(tmp_path, "--absent", "structural")
    cert = out / "certificate.json"
    doc = json.loads(cert.read_text())
    doc["publication"]["structural_cells"] = 0
    cert.write_text(json.dumps(doc))
    res = _cli("verify", cert, "--published", out)
    assert res.exit_code == 1 and "publication.structural_cells" in res.output


def test_a_zero_cell_removed_from_the_published_file_is_named(tmp_path: Path) -> None:
    _res, out = _release(tmp_path)
    path = out / "released.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(line for line in lines if not line.startswith("c,z,")))
    result = verify_certificate(out / "certificate.json", published=out)
    assert not result.ok
    assert any("lacks 1 of the 9 combinations" in m for m in result.mismatches)


def test_enum_levels_are_the_grid() -> None:
    levels = pl.Enum(["north", "south", "islands"])
    frame = pl.DataFrame(
        {
            "region": pl.Series(["north", "south", "north"], dtype=levels),
            "sex": ["f", "f", "m"],
            "n": [20, 30, 40],
        }
    )
    rel = release_table(frame, keys=["region", "sex"], count="n", h=5, receiver=POISSON)
    got = {(str(r), s): n for r, s, n in rel.cells.iter_rows()}
    assert set(got) == set(itertools.product(["north", "south", "islands"], ["f", "m"]))
    assert got[("islands", "f")] == 0 == got[("islands", "m")] == got[("south", "m")]
    assert rel.published.schema["region"] == levels
    one = release_table(frame.head(2).drop("sex"), keys="region", count="n", h=5, receiver=POISSON)
    assert one.published.rows() == [("north", 20), ("south", 30), ("islands", None)]
    records = pl.DataFrame({"region": pl.Series(["north", "north"], dtype=levels)})
    tab = release_table(records, keys="region", microdata=True, h=2, receiver=POISSON)
    assert tab.cells.rows() == [("north", 2), ("south", 0), ("islands", 0)]  # Enum order


def test_categorical_levels_of_pandas_and_arrow_are_declared() -> None:
    pd = pytest.importorskip("pandas")
    import pyarrow as pa

    cats = pd.Categorical(["x", "y"], categories=["x", "y", "z"])
    frame = pd.DataFrame({"a": cats, "n": [3, 4]})
    schema = pl.from_pandas(frame).schema
    found = declared_levels(frame, ("a",), schema)
    assert sorted(found["a"].cast(pl.String).to_list()) == ["x", "y", "z"]
    table = pa.Table.from_pandas(frame)
    found = declared_levels(table, ("a",), pl.from_arrow(table).schema)  # type: ignore[union-attr]
    assert sorted(found["a"].cast(pl.String).to_list()) == ["x", "y", "z"]
    assert declared_levels(pl.DataFrame({"a": ["x"]}), ("a",), pl.Schema({"a": pl.String})) == {}


def test_a_complete_table_is_published_as_before() -> None:
    frame = pl.DataFrame({"a": ["q", "p", "q", "p"], "b": [2, 1, 1, 2], "n": [1, 20, 30, 3]})
    rel = release_table(frame, keys=["a", "b"], count="n", h=5, receiver=POISSON)
    assert rel.published.rows() == [("q", 2, None), ("p", 1, 20), ("q", 1, 30), ("p", 2, None)]


def test_a_grid_above_the_limit_is_refused_before_it_is_built() -> None:
    side = 465  # 465^3 = 100,544,625 > 10^8
    assert side**3 > MAX_GRID_CELLS
    i = np.arange(side)
    frame = pl.DataFrame({"a": i, "b": i, "c": i, "n": np.full(side, 20)})
    with pytest.raises(ValidationError, match=r"100,544,625 combinations .*limit of 100,000,000"):
        release_table(frame, keys=["a", "b", "c"], count="n", h=5, receiver=POISSON)
    rel = release_table(
        frame, keys=["a", "b", "c"], count="n", h=5, receiver=POISSON, absent="structural"
    )
    assert rel.published.height == side  # structural zeros are never built


def test_absent_must_be_zero_or_structural(tmp_path: Path) -> None:
    frame = pl.DataFrame({"a": ["x"], "n": [3]})
    with pytest.raises(ValidationError, match=r"absent must be 'zero' .* got 'none'"):
        release_table(frame, keys="a", count="n", h=2, receiver=POISSON, absent="none")
    res, out = _release(tmp_path, "--absent", "drop")
    assert res.exit_code == 2 and "--absent must be" in res.output and not out.exists()


# --------------------------------------------------------------------------------------------
# With margins
# --------------------------------------------------------------------------------------------


def _sparse_margins_frame() -> pl.DataFrame:
    rows = [(a, b, 5 + 7 * a + 3 * b) for a in range(3) for b in range(4) if (a, b) != (1, 2)]
    return pl.DataFrame(rows, schema=["a", "b", "n"], orient="row")


def test_margins_with_a_sparse_table(tmp_path: Path) -> None:
    frame = _sparse_margins_frame()
    rel = release_table_with_margins(
        frame, keys=["a", "b"], count="n", h=6, receiver=NEGBIN, margins="rows,cols",
        target_kappa=4.5,
    )  # fmt: skip
    assert rel.table.shape == (3, 4) and int(rel.table.counts[1, 2]) == 0
    assert bool(rel.table.suppressed[1, 2]) and not bool(rel.table.secondary[1, 2])
    cell = rel.published.filter((pl.col("a") == 1) & (pl.col("b") == 2))
    assert cell["n"].to_list() == [None] and cell["suppressed"].to_list() == ["primary"]
    outcome = publish(rel, OutputFolder(tmp_path / "out"))
    assert outcome.document["claim"]["absent"] == "zero"
    assert verify_certificate(tmp_path / "out" / "certificate.json", published=tmp_path / "out").ok


def test_margins_with_structural_zeros(tmp_path: Path) -> None:
    """Structural zeros with margins (known zero cells, not published): API and CLI agree, the
    certificate says so and verify recomputes it from the published files."""
    frame = _sparse_margins_frame()
    rel = release_table_with_margins(
        frame, keys=["a", "b"], count="n", h=6, receiver=NEGBIN, margins="rows,cols",
        absent="structural", target_kappa=4.5,
    )  # fmt: skip
    structural = rel.table.structural
    assert structural.any() and not rel.table.suppressed[structural].any()
    data = tmp_path / "t.csv"
    frame.write_csv(data)
    out = tmp_path / "out"
    res = _cli(
        "release", "table", data, "--keys", "a,b", "--count", "n", "--h", 6,
        "--negbin-mean", "1:40", "--negbin-size", 1, "--margins", "rows,cols",
        "--target-kappa", 4.5, "--absent", "structural", "--out", out, "-q",
    )  # fmt: skip
    assert res.exit_code == (0 if rel.ok else 1), res.output
    if not rel.ok:
        assert not out.exists()
        return
    doc = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    assert doc["claim"]["absent"] == "structural"
    assert doc["publication"]["structural_cells"] == int(structural.sum())
    published = pl.read_csv(out / "released.csv", infer_schema=False)
    assert published.height == frame.height  # the structural zeros are not cells
    assert _cli("verify", out / "certificate.json", "--published", out).exit_code == 0


def test_margins_cli_with_a_sparse_table(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    _sparse_margins_frame().write_csv(data)
    out = tmp_path / "out"
    res = _cli(
        "release", "table", data, "--keys", "a,b", "--count", "n", "--h", 6,
        "--negbin-mean", "1:40", "--negbin-size", 1, "--margins", "rows,cols",
        "--target-kappa", 4.5, "--out", out, "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert pl.read_csv(out / "released.csv").height == 12
    assert _cli("verify", out / "certificate.json", "--published", out).exit_code == 0


def test_from_frame_zero_fills_on_request() -> None:
    frame = _sparse_margins_frame()
    with pytest.raises(ValidationError, match="complete grid"):
        MarginTable.from_frame(frame, keys=["a", "b"], count="n", h=6, margins="rows")
    table = MarginTable.from_frame(
        frame, keys=["a", "b"], count="n", h=6, margins="rows", absent="zero"
    )
    assert table.shape == (3, 4) and int(table.counts[1, 2]) == 0
    assert bool(table.suppressed[1, 2])


@pytest.mark.parametrize(
    "values, dtype",
    [
        ([-128, 127, 0, 127], pl.Int8),
        ([0, 255, 255, 7], pl.UInt8),
        ([2**64 - 1, 2**64 - 3, 2**64 - 1], pl.UInt64),
        ([-(2**63), -(2**63) + 5, -(2**63)], pl.Int64),
        ([2**62, -(2**62)], pl.Int64),
        ([1, None, 1, 2], pl.Int32),
        ([], pl.Int64),
    ],
)
def test_n_levels_counts_what_n_unique_counts(values: list, dtype: pl.DataType) -> None:
    """The flag-table count of a key column's levels (two-key grids) against polars' hashing,
    at the ends of each integer type and with nulls (which take the hashing path)."""
    from persuasive.release.grid import n_levels

    col = pl.Series("k", values, dtype=dtype)
    assert n_levels(col) == col.n_unique()


def test_n_levels_on_random_columns() -> None:
    from persuasive.release.grid import n_levels

    rng = np.random.default_rng(7)
    for n, spread in [(1000, 50), (1000, 10**6), (10**5, 3 * 10**5)]:
        col = pl.Series("k", rng.integers(-spread, spread, n))
        assert n_levels(col) == col.n_unique() == np.unique(col.to_numpy()).size


def test_absent_cells_of_a_full_integer_box_and_of_gaps() -> None:
    """Integer keys that fill the box of their ranges have no absent combination (the min/max
    shortcut); with a gap or a hole the count is the grid's size minus the cells, computed
    here by building the grid."""
    from persuasive.release.grid import absent_cells

    a, b = (x.ravel() for x in np.indices((7, 5)))
    full = pl.DataFrame({"a": a + 3, "b": b - 2, "n": np.ones(a.size, dtype=np.int64)})
    assert absent_cells(full, ("a", "b")) == 0
    rng = np.random.default_rng(3)
    for drop in (1, 4, 20):
        part = full.filter(pl.Series(rng.permutation(full.height) >= drop))
        grid = part.select("a").unique().join(part.select("b").unique(), how="cross")
        expected = grid.join(part, on=["a", "b"], how="anti").height
        assert absent_cells(part, ("a", "b")) == expected
