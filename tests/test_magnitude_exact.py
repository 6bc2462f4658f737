"""Hostile inputs of magnitude releases: published totals exact (checked against Python's
``decimal``/``int`` sums of the input text), refused with one line when a file cannot hold them,
no overflow or NaN κ, a huge ``--insiders`` cheap, and no true total of a suppressed cell in
any written file but ``custodian_cells.*`` (including the raw buffers behind nulls)."""

from __future__ import annotations

import math
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.magnitude.certificate import MagnitudeClass, certify_cells
from persuasive.magnitude.contributors import from_cells
from persuasive.release.magnitude import release_magnitude

ROOT = Path(__file__).resolve().parents[1]
GRUNFELD = ROOT / "examples" / "data" / "grunfeld.csv"
runner = CliRunner()


def run(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def decimal_sums(path: Path, key: str, value: str) -> dict[str, Decimal]:
    """Each cell's total by Python's exact decimal arithmetic on the file's text."""
    df = pl.read_csv(path, infer_schema=False)
    out: dict[str, Decimal] = {}
    for k, v in zip(df[key].to_list(), df[value].to_list(), strict=True):
        out[k] = out.get(k, Decimal(0)) + Decimal(v)
    return out


def test_published_totals_are_the_exact_decimal_sums(tmp_path):
    """Grunfeld's three-decimal values: every published total, as the file's text, is the
    exact decimal sum (float summation gave 1235.0430000000001), and so is the custodian's."""
    out = tmp_path / "y"
    res = run(
        "release", "magnitude", GRUNFELD, "--keys", "year", "--value", "invest", "--unit",
        "firm", "--target-kappa", "3.5", "--out", out, "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    want = decimal_sums(GRUNFELD, "year", "invest")
    published = pl.read_csv(out / "released.csv", infer_schema=False)
    shown = published.filter(pl.col("total").is_not_null())
    assert shown.height == 11
    for year, text in shown.iter_rows():
        assert Decimal(text) == want[year], (year, text)
    custodian = pl.read_csv(out / "custodian_cells.csv", infer_schema=False)
    for year, text in custodian.select("year", "total").iter_rows():
        assert Decimal(text) == want[year]


def test_margins_are_exact_decimal_sums(tmp_path):
    rel = release_magnitude(
        GRUNFELD, keys="industry,period", value="invest", unit="firm", size="market_value",
        insiders=0, target_kappa=5.0, margins="industry,period,total",
    )  # fmt: skip
    df = pl.read_csv(GRUNFELD, infer_schema=False)
    grand = sum((Decimal(x) for x in df["invest"]), Decimal(0))
    by_industry = decimal_sums(GRUNFELD, "industry", "invest")
    m = rel.margins
    assert m is not None
    assert Decimal(repr(m.filter(pl.col("margin") == "total")["total"][0])) == grand
    for industry, total in (
        m.filter(pl.col("margin") == "industry").select("industry", "total").iter_rows()
    ):
        assert Decimal(repr(total)) == by_industry[industry]


@pytest.mark.parametrize("form", ["csv", "parquet"])
def test_integers_above_2_53_are_published_exactly(tmp_path, form):
    big = 2**53 + 1
    df = pl.DataFrame({"k": ["a"] * 4, "id": [1, 2, 3, 4], "v": [big, big, big, 1]})
    path = tmp_path / f"big.{form}"
    df.write_csv(path) if form == "csv" else df.write_parquet(path)
    out = tmp_path / "o"
    res = run("release", "magnitude", path, "--keys", "k", "--value", "v", "--unit", "id",
              "--target-kappa", "30", "--out", out, "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    want = 3 * big + 1  # Python's exact integer sum; float64 would give ...976
    if form == "csv":
        assert (out / "released.csv").read_text().splitlines()[1] == f"a,{want}"
    else:
        got = pl.read_parquet(out / "released.parquet")
        assert got["total"].dtype == pl.Int64 and got["total"][0] == want
    assert run("verify", out / "certificate.json", "--published", out).exit_code == 0


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["a,1,4e18", "a,2,3e18", "a,3,3e18"], "beyond the 64-bit integers"),
        (
            ["a,1,1234567890123456.25", "a,2,1234567890123456", "a,3,1234567890123456"],
            "which a 64-bit float cannot hold",
        ),
        (["a,1,1e308", "a,2,1e308", "a,3,1e308"], "cannot be summed exactly"),
        (["a,1,0x10", "a,2,1", "a,3,1"], "is not"),
    ],
)
def test_totals_a_file_cannot_hold_are_refused_in_one_line(tmp_path, rows, message):
    path = tmp_path / "d.csv"
    path.write_text("k,id,v\n" + "\n".join(rows) + "\n")
    out = tmp_path / "o"
    res = run("release", "magnitude", path, "--keys", "k", "--value", "v", "--unit", "id",
              "--target-kappa", "30", "--out", out)  # fmt: skip
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1 and not out.exists()


def test_a_suppressed_total_a_file_cannot_hold_refuses_nothing(tmp_path):
    """A total that is not published is not checked against the published form: the release
    goes ahead, and the custodian's file has it exactly (as text)."""
    path = tmp_path / "d.csv"
    path.write_text("k,id,v\na,1,9223372036854775807\na,2,1\na,3,1\nb,4,2\nb,5,2\nb,6,2\n")
    out = tmp_path / "o"
    res = run("release", "magnitude", path, "--keys", "k", "--value", "v", "--unit", "id",
              "--target-kappa", "5", "--out", out, "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (out / "released.csv").read_text().splitlines()[1:] == ["a,", "b,6"]
    custodian = pl.read_csv(out / "custodian_cells.csv", infer_schema=False)
    assert custodian["total"].to_list() == [str(2**63 - 1 + 2), "6"]


def test_a_float_column_publishes_the_float_nearest_the_exact_sum():
    """Floats carry only float64 precision: the total is the nearest float to the exact sum of
    their shortest decimal forms (Python's Decimal), not the drift of summing floats."""
    vals = [0.1] * 10 + [0.2, 1e-3, 12345.678]
    df = pl.DataFrame({"k": ["a"] * len(vals), "id": range(len(vals)), "v": vals})
    rel = release_magnitude(df, keys="k", value="v", unit="id", target_kappa=50.0)
    want = float(sum((Decimal(repr(v)) for v in vals), Decimal(0)))
    assert rel.published["total"][0] == want
    assert sum(vals) != want  # the naive float sum drifts here


def test_no_overflow_and_no_nan_kappa():
    """Values or sizes near the float limit: κ by the closed form on rescaled values, no
    warning, never NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = from_cells([[1e308, 1e308, 1e300], [3e307, 1e307, 1e307, 1e307]])
        cert = certify_cells(c, MagnitudeClass(1.0), 1)
    want0 = 1 + math.log1p(1.0 / 1e-16)  # 1e308² / (1e300)², relative
    want1 = 1 + math.log1p(9.0 / 2.0)
    np.testing.assert_allclose(cert.cell, [want0, want1], rtol=1e-12)
    assert not np.isnan(cert.contributor_insider).any()


def test_huge_insiders_costs_what_the_largest_cell_needs():
    """m = 10^9 is cheap (no 10^9 segment sums) and certifies what m = max n - 1 does."""
    c = from_cells([[5.0, 3.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    huge = certify_cells(c, MagnitudeClass(1.0), 10**9)
    full = certify_cells(c, MagnitudeClass(1.0), 3)
    assert huge.insiders == 10**9
    np.testing.assert_array_equal(huge.cell, full.cell)
    np.testing.assert_array_equal(huge.contributor_insider, full.contributor_insider)
    assert huge.exposed.all() and np.isinf(huge.cell).all()


def _hidden_texts(custodian: pl.DataFrame) -> list[str]:
    hidden = custodian.filter(pl.col("suppressed"))["total"].cast(pl.Float64).to_list()
    return [t for x in hidden for t in (repr(x), f"{x:.4g}", f"{x:,.1f}", f"{x:.6g}")]


@pytest.mark.parametrize("margins", [None, "industry,period,total"])
def test_no_suppressed_total_outside_the_custodian_file(tmp_path, margins):
    """Every written file but custodian_cells.* — the publication, the certificate, the report
    (HTML and Markdown) — holds no true total of a suppressed cell, even rounded; nor do the
    raw Parquet/Arrow buffers behind the nulls."""
    out = tmp_path / "o"
    args = ["release", "magnitude", GRUNFELD, "--keys", "industry,period", "--value", "invest",
            "--unit", "firm", "--size", "market_value", "--insiders", "0", "--target-kappa", "5",
            "--format", "parquet", "--out", out, "--report", "-q"]  # fmt: skip
    res = run(*args, *(["--margins", margins] if margins else []))
    assert res.exit_code == 0, res.output
    custodian = pl.read_parquet(out / "custodian_cells.parquet")
    hidden = custodian.filter(pl.col("suppressed"))["total"].cast(pl.Float64).to_numpy()
    assert hidden.size > 0
    texts = _hidden_texts(custodian)
    written = [p for p in out.rglob("*") if p.is_file() and "custodian" not in p.name]
    assert any(p.suffix == ".html" for p in written)
    for p in written:
        raw = p.read_bytes()
        assert not any(np.float64(x).tobytes() in raw for x in hidden), p
        if p.suffix in {".html", ".md", ".json"}:
            text = raw.decode()
            assert not [t for t in texts if t in text], p
    table = pq.read_table(out / "released.parquet").column("total").combine_chunks()
    buf = np.frombuffer(table.buffers()[1], dtype=np.float64)
    assert not np.isin(hidden, buf).any()
    rel = release_magnitude(
        GRUNFELD, keys="industry,period", value="invest", unit="firm", size="market_value",
        insiders=0, target_kappa=5.0, margins=margins,
    )  # fmt: skip
    arrow = rel.published["total"].to_arrow()
    assert not np.isin(hidden, np.frombuffer(arrow.buffers()[1], dtype=np.float64)).any()


def test_cli_names_the_custodian_file_and_counts_insiders_in_words(tmp_path):
    res = run("release", "magnitude", GRUNFELD, "--keys", "year", "--value", "invest", "--unit",
              "firm", "--target-kappa", "3.5", "--out", tmp_path / "o")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "custodian_cells.* is the only file with the true totals" in res.output
    assert "up to 1 insider;" in res.output and "1 insiders" not in res.output
    res = run("release", "magnitude", GRUNFELD, "--keys", "year", "--value", "invest", "--unit",
              "firm", "--target-kappa", "3.5", "--insiders", "0",
              "--out", tmp_path / "p")  # fmt: skip
    assert "outsiders only" in res.output


def test_an_empty_value_is_named_as_empty(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("k,id,v\na,1,5\na,2,\n")
    with pytest.raises(ValidationError, match="row 2: the value is missing"):
        release_magnitude(path, keys="k", value="v", unit="id", target_kappa=3.0)


@pytest.mark.parametrize("seed", range(3))
def test_float_fast_path_equals_the_shortest_text(seed):
    """Floats read without text (fewest round-tripping decimals) give the mantissas of their
    shortest representations (Python's repr, parsed as text)."""
    from persuasive.magnitude.exact import exact_values

    rng = np.random.default_rng(seed)
    rounded = np.round(rng.lognormal(0, 2, 500), int(rng.integers(0, 5)))
    corners = [0.1, 0.2, 0.3, 1e-7, 4503599627370495.5]
    x = np.concatenate([rounded, rng.lognormal(0, 1, 50), corners])
    fast = exact_values(pl.DataFrame({"v": x}), "v")
    text = exact_values(pl.DataFrame({"v": [repr(float(v)) for v in x]}), "v")
    assert fast.scale == text.scale
    assert (fast.mantissa == text.mantissa).all()
    sums = [Decimal(repr(float(v))) for v in x]
    assert Decimal(str(fast.mantissa.sum())) / Decimal(10) ** fast.scale == sum(sums)


@pytest.mark.parametrize(
    ("header", "keys", "margins"), [("total", "total", None), ("margin", "margin,b", "b")]
)
def test_a_key_named_like_a_published_column_is_refused(tmp_path, header, keys, margins):
    """A key called 'total' (or 'margin' with margins) would collide with the published
    columns: one line, exit 2, nothing written (it was an internal error)."""
    path = tmp_path / "d.csv"
    rows = [f"a,x,{i},{v}" for i, v in enumerate([5, 4, 3, 3, 3])]
    path.write_text(f"{header},b,id,v\n" + "\n".join(rows) + "\n")
    out = tmp_path / "o"
    extra = ["--margins", margins] if margins else []
    res = run("release", "magnitude", path, "--keys", keys, "--value", "v", "--unit", "id",
              "--target-kappa", "9", "--out", out, *extra)  # fmt: skip
    assert res.exit_code == 2, res.output
    assert f"keys: '{header}' names a column of the published files" in res.output
    assert len(res.output.strip().splitlines()) == 1 and not out.exists()


def test_exposure_is_named_in_the_custodian_file():
    """Each exposed cell names who is exposed to whom (a one-contributor cell to everyone, a
    two-contributor cell each to the other, n ≤ m + 1 each to the n − 1 others); the rest null.
    Checked against the contributors listed per cell by a plain group-by."""
    df = pl.DataFrame(
        {"k": ["a", "b", "b", "c", "c", "c", "d", "d", "d", "d"],
         "id": list("pqrstuvwxy"), "v": [1.0, 2, 3, 4, 5, 6, 1, 1, 1, 1]}
    )  # fmt: skip
    rel = release_magnitude(df, keys="k", value="v", unit="id", target_kappa=3.5, insiders=2)
    got = dict(zip(rel.cells["k"].to_list(), rel.cells["exposure"].to_list(), strict=True))
    assert got["a"] == "p: its only contributor, read off the total by anyone"
    assert got["b"] == "r, q: each is the total minus the other's value"
    assert (
        got["c"]
        == "each of u, t, s: the total minus the values of the 2 others (a coalition of insiders)"
    )
    assert got["d"] is None  # 4 contributors > m + 1 = 3
    assert rel.cells["exposed"].to_list() == [v is not None for v in got.values()]


def test_a_unit_named_like_a_holding_stays_its_own_contributor():
    """Unit 'holding G' and holding G's units are two contributors (they were merged by
    label): checked against the cell's values listed by hand."""
    from persuasive.magnitude.contributors import contributions

    df = pl.DataFrame(
        {"k": ["a"] * 4, "id": ["holding G", "u1", "u2", "u3"], "v": [5.0, 2.0, 1.0, 4.0],
         "h": [None, "G", "G", None]}
    )  # fmt: skip
    c = contributions(df, keys=["k"], value="v", unit="id", holding="h")
    assert c.value.tolist() == [5.0, 4.0, 3.0]  # unit "holding G", u3, holding G (u1 + u2)
    assert c.units.tolist() == [1, 1, 2]


def test_contributor_counts_published_on_request(tmp_path):
    """--counts: every cell's number of contributors (a plain group-by of distinct firms per
    cell, Grunfeld has no zero investment), suppressed cells too; the claim and the sentence
    say so; verify passes, and an edited count is caught."""
    out = tmp_path / "o"
    res = run("release", "magnitude", GRUNFELD, "--keys", "industry,period", "--value",
              "invest", "--unit", "firm", "--target-kappa", "3.5", "--counts", "--out", out,
              "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    pub = pl.read_csv(out / "released.csv", schema_overrides={"period": pl.String})
    want = pl.read_csv(GRUNFELD).group_by("industry", "period").agg(pl.col("firm").n_unique())
    got = pub.join(want, on=["industry", "period"])
    assert got.height == 20 and (got["contributors"] == got["firm"]).all()
    assert pub["total"].null_count() == 20  # all suppressed, counts still published
    doc = (out / "certificate.json").read_text()
    assert '"counts": true' in doc and "with the number of contributors of every cell" in doc
    assert run("verify", out / "certificate.json", "--published", out).exit_code == 0
    text = (out / "released.csv").read_text().replace("autos,1935-1939,,2", "autos,1935-1939,,3")
    (out / "released.csv").write_text(text)
    assert run("verify", out / "certificate.json", "--published", out).exit_code != 0


def test_a_table_without_any_positive_contribution(tmp_path):
    """Every value 0 (no contributor anywhere): the zero total is published exactly and the
    exposure column is empty (the polars list of no names was an internal error)."""
    path = tmp_path / "z.csv"
    path.write_text("k,id,v\na,1,0\na,2,0\n")
    out = tmp_path / "o"
    res = run("release", "magnitude", path, "--keys", "k", "--value", "v", "--unit", "id",
              "--target-kappa", "3", "--out", out, "--report", "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (out / "released.csv").read_text().splitlines() == ["k,total", "a,0"]
    rel = release_magnitude(path, keys="k", value="v", unit="id", target_kappa=3.0)
    assert rel.cells["exposure"].to_list() == [None] and rel.cells["contributors"][0] == 0


def test_float_values_spanning_too_many_digits_are_refused_not_wrapped():
    """Floats 9e15 (no decimals) beside 1e-17 need 33 digits each at the finest place: 10^6 of
    them would wrap a 128-bit sum, so the release is refused with the value named."""
    from persuasive.magnitude.exact import exact_values

    x = np.full(1_000_000, 9e15)
    x[0] = 1e-17
    with pytest.raises(ValidationError, match="cannot be summed exactly"):
        exact_values(pl.DataFrame({"v": x}), "v")
    few = exact_values(pl.DataFrame({"v": x[:1000]}), "v")  # 1000 rows fit: exact
    want = Decimal("1e-17") + 999 * Decimal(9 * 10**15)
    assert Decimal(str(few.mantissa.sum())) / Decimal(10) ** few.scale == want


def test_microdata_without_rows_is_refused(tmp_path):
    """A header and no rows: one line, exit 2, nothing written (it published an empty table
    with a certificate that 'holds')."""
    path = tmp_path / "h.csv"
    path.write_text("k,id,v\n")
    out = tmp_path / "o"
    res = run("release", "magnitude", path, "--keys", "k", "--value", "v", "--unit", "id",
              "--target-kappa", "3", "--out", out)  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "the microdata has no rows" in res.output and not out.exists()


def test_extreme_class_parameters_do_not_crash(tmp_path):
    """γ = 1e200 (γ² overflows): κ by 2 log γ + log(ratio), all suppressed, and the sentence
    writes 1e+200, not 200 digits; a target above 1000 nats is refused in one line (e^(κ/2)
    overflowed into an internal error)."""
    rel = release_magnitude(
        GRUNFELD, keys="year", value="invest", unit="firm", target_kappa=1000.0, gamma=1e200
    )
    c = rel.contributors
    for j in range(c.n_cells):
        x = c.of_cell(j)
        want = 1.0 + 2.0 * math.log(1e200) + math.log(x[0] ** 2 / float(np.sum(x[2:] ** 2)))
        assert rel.cells["kappa"][j] == pytest.approx(want, rel=1e-12)
    assert "up to a factor 1e+200 between" in rel.statement()
    res = run("release", "magnitude", GRUNFELD, "--keys", "year", "--value", "invest", "--unit",
              "firm", "--target-kappa", "2000", "--out", tmp_path / "o")  # fmt: skip
    assert res.exit_code == 2 and "--target-kappa must be in [0, 1000]" in res.output
    with pytest.raises(ValidationError, match="target_kappa"):
        release_magnitude(GRUNFELD, keys="year", value="invest", unit="firm", target_kappa=1e20)
