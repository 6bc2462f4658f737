"""Data in the shapes users hold it (issue 11): files of every format, CSV dialects, in-memory
tables of every library, through the Python API and ``persuasive release``.

Oracles are written here by hand: the expected published text (``released.csv``) of a small
table whose cells at or above h are kept and the others left empty, the mean computed with the
standard library, and the bytes of the publication written from a polars frame (the format
under which the shapes must agree byte for byte).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat
import pytest
from typer.testing import CliRunner

from persuasive.classes.receivers import SmallCellReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.files import DataFile
from persuasive.files import reading as rd
from persuasive.files.output import OutputFolder
from persuasive.files.sources import as_source
from persuasive.release.linear import release_linear
from persuasive.release.means import release_group_means, release_mean
from persuasive.release.pipeline import write_release
from persuasive.release.tables import release_table

runner = CliRunner()
RECEIVER = SmallCellReceiver(0.5)
AREAS = ["01", "02", "03", "10"]
COUNTS = [0, 12, 4, 7]
#: The publication of (AREAS, COUNTS) at h = 5, written by hand.
RELEASED = "area,n\n01,\n02,12\n03,\n10,7\n"


def run(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def release_cli(data: Path, out: Path, *extra: Any, keys: str = "area") -> Any:
    return run(
        "release", "table", data, "--keys", keys, "--count", "n", "--h", 5, "--alpha", 0.5,
        "--out", out, "--quiet", *extra,
    )  # fmt: skip


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def message(exc: pytest.ExceptionInfo[BaseException]) -> str:
    return str(exc.value)


# --------------------------------------------------------------------------------------------
# In-memory shapes: pandas, pyarrow, polars DataFrame and LazyFrame give the same bytes
# --------------------------------------------------------------------------------------------


def shapes() -> dict[str, Any]:
    frame = pl.DataFrame({"area": AREAS, "n": COUNTS})
    return {
        "pandas": pd.DataFrame({"area": pd.Series(AREAS, dtype=object), "n": COUNTS}),
        "pyarrow": pa.table({"area": AREAS, "n": COUNTS}),
        "polars": frame,
        "lazy": frame.lazy(),
    }


@pytest.mark.parametrize("table_format", ["csv", "parquet"])
def test_four_in_memory_shapes_give_byte_identical_releases(
    tmp_path: Path, table_format: str
) -> None:
    written = {}
    for name, data in shapes().items():
        rel = release_table(data, keys="area", count="n", h=5, receiver=RECEIVER)
        write_release(rel, tmp_path / name, table_format=table_format)
        written[name] = folder_bytes(tmp_path / name)
    assert set(written["polars"]) == {"certificate.json", f"released.{table_format}"}
    for name in ("pandas", "pyarrow", "lazy"):
        assert written[name] == written["polars"], name
    if table_format == "csv":
        assert written["pandas"]["released.csv"].decode() == RELEASED


def test_four_shapes_agree_for_group_means_and_linear_statistics(tmp_path: Path) -> None:
    data = {"g": ["a", "a", "a", "b", "b", "b"], "y": [1.0, 2.0, 6.0, 2.0, 2.0, 5.0]}
    frame = pl.DataFrame(data)
    inputs = [pd.DataFrame(data), pa.table(data), frame, frame.lazy()]
    stats = [("all", "mean", "true"), ("a", "sum", "g = 'a'")]
    for i, src in enumerate(inputs):
        write_release(
            release_group_means(src, value="y", group="g", r1=1.0, r2=4.0), tmp_path / f"m{i}"
        )
        lin = release_linear(src, value="y", statistics=stats, r1=1.0, r2=4.0)
        write_release(lin, tmp_path / f"l{i}")
    for stem in ("m", "l"):
        first = folder_bytes(tmp_path / f"{stem}0")
        assert all(folder_bytes(tmp_path / f"{stem}{i}") == first for i in range(1, 4))
    assert b"a,3.0" in folder_bytes(tmp_path / "m0")["released.csv"]


def test_release_mean_reads_a_table() -> None:
    ys = [1.0, 2.5, 6.0, 3.5]
    expected = statistics.fmean(ys)
    for src in (pd.DataFrame({"y": ys}), pa.table({"y": ys}), pl.DataFrame({"y": ys})):
        rel = release_mean(src, column="y", r1=1.0, r2=4.0)
        assert rel.value == expected and rel.n == 4
    assert release_mean(pd.Series(ys), r1=1.0, r2=4.0).value == expected  # still array-like


def test_pandas_conversion_is_exact() -> None:
    df = pd.DataFrame(
        {
            "code": pd.Series(["007", "0", None], dtype=object),
            "s": pd.Series(["a", "b", "c"], dtype="string"),
            "k": pd.array([1, None, 3], dtype="Int64"),
            "f": [1.5, float("nan"), 2.0],
            "cat": pd.Categorical(["b", "a", "b"], categories=["b", "a", "z"]),
        }
    )
    out = as_source(df)
    assert isinstance(out, pl.DataFrame)
    assert out.schema == {
        "code": pl.String,
        "s": pl.String,
        "k": pl.Int64,
        "f": pl.Float64,
        "cat": pl.Enum(["b", "a", "z"]),
    }
    assert out.rows() == [
        ("007", "a", 1, 1.5, "b"),
        ("0", "b", None, None, "a"),
        (None, "c", 3, 2.0, "b"),
    ]
    named = pd.DataFrame({"area": ["01", "02"], "n": [3, 9]}).set_index("area")
    assert as_source(named).rows() == [("01", 3), ("02", 9)]  # a named index is a column


def test_pandas_leading_zeros_and_categories_are_published(tmp_path: Path) -> None:
    df = pd.DataFrame({"area": pd.Series(AREAS, dtype=object), "n": COUNTS})
    rel = release_table(df, keys="area", count="n", h=5, receiver=RECEIVER)
    assert rel.published["area"].to_list() == AREAS
    cats = df.assign(area=pd.Categorical(AREAS, categories=AREAS[::-1]))
    rel = release_table(cats, keys="area", count="n", h=5, receiver=RECEIVER)
    assert rel.published.schema["area"] == pl.Enum(AREAS[::-1])
    write_release(rel, tmp_path / "cats")
    assert (tmp_path / "cats" / "released.csv").read_text() == RELEASED


def test_pandas_missing_values_are_named_by_row() -> None:
    nullable = pd.DataFrame({"area": AREAS, "n": pd.array([0, None, 4, 7], dtype="Int64")})
    with pytest.raises(ValidationError, match=r"column 'n' at row 2 \(area='02'\) is missing"):
        release_table(nullable, keys="area", count="n", h=5, receiver=RECEIVER)
    floats = pd.DataFrame({"area": AREAS, "n": [0.0, 12.0, float("nan"), 7.0]})
    with pytest.raises(ValidationError, match=r"column 'n' at row 3 \(area='03'\) is missing"):
        release_table(floats, keys="area", count="n", h=5, receiver=RECEIVER)
    ok = release_table(floats.fillna(4.0), keys="area", count="n", h=5, receiver=RECEIVER)
    assert ok.published["n"].to_list() == [None, 12, None, 7]


def test_unsupported_and_ambiguous_objects_are_refused() -> None:
    for bad in ([("01", 3)], {"area": AREAS}, 3):
        with pytest.raises(ValidationError) as exc:
            release_table(bad, keys="area", count="n", h=5, receiver=RECEIVER)
        text = message(exc)
        assert "pandas DataFrame" in text and "pyarrow Table" in text and "DataFile" in text
        assert f"got {type(bad).__name__}" in text
    with pytest.raises(ValidationError, match=r"pandas Series: pass series\.to_frame\(\)"):
        rd.header(pd.Series([1, 2], name="n"))
    with pytest.raises(ValidationError, match=r"pandas column 'm' .* cannot be converted exactly"):
        as_source(pd.DataFrame({"m": [1, "a"]}, dtype=object))
    with pytest.raises(ValidationError, match="column names must be text; got 0"):
        as_source(pd.DataFrame({0: [1]}))
    with pytest.raises(ValidationError, match="names column 'n' twice"):
        as_source(pd.DataFrame([[1, 2]], columns=["n", "n"]))


# --------------------------------------------------------------------------------------------
# File formats, through the API and the CLI
# --------------------------------------------------------------------------------------------

#: A coded variable with value labels (published as its codes) beside text keys and counts.
#: A complete grid: the same with or without absent combinations filled in.
CODED = pd.DataFrame({"area": ["01", "01", "10", "10"], "sex": [1, 2, 1, 2], "n": COUNTS})
LABELS = {"sex": {1: "male", 2: "female"}}
CODED_RELEASED = "area,sex,n\n01,1,\n01,2,12\n10,1,\n10,2,7\n"


def write_format(tmp_path: Path, suffix: str) -> Path:
    path = tmp_path / f"in{suffix}"
    if suffix == ".csv":
        pl.from_pandas(CODED).write_csv(path)
    elif suffix == ".parquet":
        pl.from_pandas(CODED).write_parquet(path)
    elif suffix == ".dta":
        pyreadstat.write_dta(CODED, path, variable_value_labels=LABELS)
    elif suffix == ".sav":
        pyreadstat.write_sav(CODED, path, variable_value_labels=LABELS)
    elif suffix == ".zsav":
        pyreadstat.write_sav(CODED, path, variable_value_labels=LABELS, compress=True)
    elif suffix == ".xpt":
        pyreadstat.write_xport(CODED, path)
    return path


FILE_FORMATS = [".csv", ".parquet", ".dta", ".sav", ".zsav", ".xpt"]


@pytest.mark.parametrize("suffix", FILE_FORMATS)
def test_every_format_round_trips_through_the_cli(tmp_path: Path, suffix: str) -> None:
    path = write_format(tmp_path, suffix)
    out = tmp_path / "out"
    result = release_cli(path, out, keys="area,sex")
    assert result.exit_code == 0, result.output
    written = "released.parquet" if suffix == ".parquet" else "released.csv"  # dta etc. -> CSV
    assert sorted(folder_bytes(out)) == [".persuasive-output.json", "certificate.json", written]
    back = pl.read_parquet(out / written) if suffix == ".parquet" else None
    if back is None:
        assert (out / written).read_text(encoding="utf-8") == CODED_RELEASED
    else:
        assert back.rows() == [("01", 1, None), ("01", 2, 12), ("10", 1, None), ("10", 2, 7)]
    assert run("verify", out / "certificate.json", "--published", out).exit_code == 0


@pytest.mark.parametrize("suffix", FILE_FORMATS)
def test_every_format_round_trips_through_the_api(tmp_path: Path, suffix: str) -> None:
    path = write_format(tmp_path, suffix)
    assert rd.header(path) == ["area", "sex", "n"]
    assert isinstance(rd.scan(path), pl.LazyFrame)  # every format scans to a lazy frame
    rel = release_table(path, keys=["area", "sex"], count="n", h=5, receiver=RECEIVER)
    write_release(rel, tmp_path / "out")
    assert (tmp_path / "out" / "released.csv").read_text() == CODED_RELEASED


def test_statistical_files_keep_codes_text_and_missing_values(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {"k": ["a", "b", "c"], "code": [1.0, 2.0, 3.0], "y": [1.5, float("nan"), 2.0]}
    )
    path = tmp_path / "s.sav"
    pyreadstat.write_sav(df, path, variable_value_labels={"code": {1.0: "x", 2.0: "y"}})
    frame = rd.scan(path).collect()
    assert frame.schema == {"k": pl.String, "code": pl.Int64, "y": pl.Float64}
    assert frame.rows() == [("a", 1, 1.5), ("b", 2, None), ("c", 3, 2.0)]
    with pytest.raises(ValidationError, match=r"column 'y' at row 2 is missing"):
        release_mean(path, column="y", r1=1.0, r2=4.0)


def test_statistical_file_errors(tmp_path: Path) -> None:
    fake = tmp_path / "broken.sas7bdat"  # no sas7bdat writer exists; a broken one is refused
    fake.write_bytes(b"not a SAS file")
    with pytest.raises(ValidationError, match=r"is not a readable SAS file"):
        rd.header(fake)
    dta = write_format(tmp_path, ".dta")
    with pytest.raises(ValidationError, match="separator applies to CSV files only"):
        rd.header(DataFile(dta, separator=";"))
    parquet = write_format(tmp_path, ".parquet")
    with pytest.raises(ValidationError, match="encoding does not apply to Parquet"):
        rd.header(DataFile(parquet, encoding="latin-1"))
    assert rd.header(DataFile(dta, encoding="utf-8")) == ["area", "sex", "n"]
    with pytest.raises(ValidationError, match=r"Stata, SPSS and SAS files are read, not written"):
        rd.format_of(tmp_path / "out.dta", role="output file", output=True)
    result = release_cli(dta, tmp_path / "o", "--format", "dta", keys="area,sex")
    assert result.exit_code == 2
    assert "--format must be csv or parquet" in result.output


# --------------------------------------------------------------------------------------------
# CSV dialects: separators, BOM, quoted fields, encodings
# --------------------------------------------------------------------------------------------


def semicolon_csv(tmp_path: Path, sep: str = ";") -> Path:
    path = tmp_path / "semi.csv"
    path.write_text(
        "".join(f"{a}{sep}{n}\n" for a, n in [("area", "n"), *zip(AREAS, COUNTS, strict=True)])
    )
    return path


def test_semicolon_csv_with_separator(tmp_path: Path) -> None:
    path = semicolon_csv(tmp_path)
    result = release_cli(path, tmp_path / "out", "--separator", ";")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "released.csv").read_text() == RELEASED  # published with commas
    rel = release_table(
        DataFile(path, separator=";"), keys="area", count="n", h=5, receiver=RECEIVER
    )
    assert rel.published["area"].to_list() == AREAS


def test_wrong_separator_suggests_the_right_one(tmp_path: Path) -> None:
    path = semicolon_csv(tmp_path)
    result = release_cli(path, tmp_path / "out")
    assert result.exit_code == 2
    assert "pass --separator ';'" in result.output and "'area;n'" in result.output
    assert not (tmp_path / "out").exists()
    tabbed = semicolon_csv(tmp_path, "\t")
    with pytest.raises(ValidationError, match="pass --separator 'tab'"):
        release_table(tabbed, keys="area", count="n", h=5, receiver=RECEIVER)


@pytest.mark.parametrize("word", ["tab", "\\t", "\t", "TAB"])
def test_tab_separator_words(tmp_path: Path, word: str) -> None:
    path = semicolon_csv(tmp_path, "\t")
    result = release_cli(path, tmp_path / "out", "--separator", word)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "released.csv").read_text() == RELEASED


@pytest.mark.parametrize("bad", [";;", "", '"', "\n", "§"])
def test_bad_separator_values(tmp_path: Path, bad: str) -> None:
    path = semicolon_csv(tmp_path)
    with pytest.raises(ValidationError) as exc:
        DataFile(path, separator=bad)
    assert f"got {bad!r}" in message(exc) and "one ASCII character" in message(exc)
    result = release_cli(path, tmp_path / "out", "--separator", bad)
    assert result.exit_code == 2 and "--separator must be one ASCII character" in result.output


def test_latin1_keys_are_published_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("région;n\nNîmes;12\nBéziers;3\nSète;7\n".encode("latin-1"))
    out = tmp_path / "out"
    result = release_cli(path, out, "--separator", ";", "--encoding", "latin-1", keys="région")
    assert result.exit_code == 0, result.output
    assert (out / "released.csv").read_bytes() == "région,n\nNîmes,12\nBéziers,\nSète,7\n".encode()
    assert "é" in (out / "certificate.json").read_text(encoding="utf-8")  # the key's name
    no_encoding = release_cli(path, tmp_path / "o2", "--separator", ";", keys="région")
    assert no_encoding.exit_code == 2
    assert "not UTF-8 text" in no_encoding.output and "--encoding" in no_encoding.output


def test_cp1252_is_decoded_strictly(tmp_path: Path) -> None:
    path = tmp_path / "win.csv"
    path.write_bytes("k,n\n€uro,5\n".encode("cp1252"))
    src = DataFile(path, encoding="cp1252")
    assert rd.scan(src).collect().rows() == [("€uro", "5")]
    path.write_bytes("k,n\n€uro,5\n".encode("cp1252") + b"x\x81,2\n")  # 0x81: no cp1252 char
    with pytest.raises(ValidationError, match=r"is not cp1252 text \(byte 12\)"):
        rd.header(src)
    big = b"k,n\n" + b"a,1\n" * 300_000 + b"\x81,2\n"  # the bad byte beyond the header's 1 MiB
    path.write_bytes(big)
    assert rd.header(src) == ["k", "n"]
    with pytest.raises(ValidationError, match=r"is not cp1252 text \(near byte 1200004\)"):
        rd.scan(src)


def test_unknown_encoding(tmp_path: Path) -> None:
    path = semicolon_csv(tmp_path)
    for bad in ("klingon", "base64"):
        with pytest.raises(
            ValidationError, match=f"encoding must name a text encoding.*got '{bad}'"
        ):
            DataFile(path, encoding=bad)
    result = release_cli(path, tmp_path / "out", "--encoding", "klingon")
    assert result.exit_code == 2 and "--encoding must name a text encoding" in result.output


@pytest.mark.parametrize("encoding", [None, "latin-1"])
def test_bom_is_not_part_of_the_first_name(tmp_path: Path, encoding: str | None) -> None:
    path = tmp_path / "bom.csv"
    body = "area;n\n" + "".join(f"{a};{n}\n" for a, n in zip(AREAS, COUNTS, strict=True))
    path.write_bytes(b"\xef\xbb\xbf" + body.encode() if encoding is None else body.encode(encoding))
    src = DataFile(path, separator=";", encoding=encoding)
    assert rd.header(src) == ["area", "n"]
    assert rd.scan(src).collect_schema().names() == ["area", "n"]
    rel = release_table(src, keys="area", count="n", h=5, receiver=RECEIVER)
    write_release(rel, tmp_path / "out")
    assert (tmp_path / "out" / "released.csv").read_bytes() == RELEASED.encode()


def test_quoted_fields_hold_separators_quotes_and_line_breaks(tmp_path: Path) -> None:
    keys = ["a;b", 'say "x"', "two\nlines", "plain"]
    path = tmp_path / "q.csv"
    path.write_text('"k";"n"\n"a;b";12\n"say ""x""";3\n"two\nlines";7\nplain;9\n')
    src = DataFile(path, separator=";")
    assert rd.header(src) == ["k", "n"]
    rel = release_table(src, keys="k", count="n", h=5, receiver=RECEIVER)
    assert rel.published.rows() == [(keys[0], 12), (keys[1], None), (keys[2], 7), (keys[3], 9)]
    write_release(rel, tmp_path / "out")
    back = pl.read_csv(tmp_path / "out" / "released.csv", infer_schema=False)
    assert back["k"].to_list() == keys


def test_separator_and_encoding_in_mean_linear_and_margins_commands(tmp_path: Path) -> None:
    path = tmp_path / "y.csv"
    path.write_bytes("grp|y\né|1.5\né|2.5\né|3\nb|6\nb|1\nb|2\n".encode("latin-1"))
    opts = ["--separator", "|", "--encoding", "latin-1", "--quiet"]
    receivers = ["--r1", 1, "--r2", 4]
    mean = run("release", "mean", path, "--column", "y", *receivers, "--out", tmp_path / "m", *opts)
    assert mean.exit_code == 0, mean.output
    assert (tmp_path / "m" / "released.json").exists()
    stat = ["--stat", "all:mean:true", "--stat", "e:mean:grp = 'é'"]
    out = tmp_path / "l"
    linear = run("release", "linear", path, "--value", "y", *receivers, *stat, "--out", out, *opts)
    assert linear.exit_code == 0, linear.output
    released = pl.read_csv(tmp_path / "l" / "released.csv")
    assert released["name"].to_list() == ["all", "e"]  # 'é' matched the decoded key
    assert released["value"].to_list() == pytest.approx([16 / 6, 7 / 3], rel=1e-15)
    grid = tmp_path / "grid.csv"
    grid.write_text("a;b;n\n0;0;1\n0;1;9\n0;2;8\n1;0;7\n1;1;2\n1;2;9\n")
    margins = run(
        "release", "table", grid, "--keys", "a,b", "--count", "n", "--h", 3,
        "--negbin-mean", "1:40", "--negbin-size", 1, "--margins", "rows",
        "--out", tmp_path / "g", "--separator", ";", "--quiet",
    )  # fmt: skip
    assert margins.exit_code in (0, 1), margins.output
    assert (tmp_path / "g" / "certificate.json").exists()


# --------------------------------------------------------------------------------------------
# The output guard knows a DataFile is an input
# --------------------------------------------------------------------------------------------


def test_output_guard_recognises_a_data_file_input(tmp_path: Path) -> None:
    path = semicolon_csv(tmp_path)
    src = DataFile(path, separator=";")
    assert os.fspath(src) == str(path)
    folder = OutputFolder(tmp_path, force=True, inputs=[src])
    with pytest.raises(ValidationError, match="holds the input"):
        folder.check()
    result = release_cli(path, tmp_path, "--separator", ";", "--force")
    assert result.exit_code == 2 and "holds the input" in result.output
    assert path.exists()


def test_parquet_written_by_pyarrow_reads_through_data_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"area": AREAS, "n": COUNTS}), path)
    rel = release_table(DataFile(path), keys="area", count="n", h=5, receiver=RECEIVER)
    assert rel.published.rows() == [("01", None), ("02", 12), ("03", None), ("10", 7)]
