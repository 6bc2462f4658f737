"""Unit tests of :mod:`persuasive.files.reading` against hand-written expectations.

Every check's message must name the column, the 1-based data row and echo the value as
written; headers are read exactly (BOM stripped, a name given twice refused); encodings,
Parquet types and numeric edge cases are refused or converted exactly.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from persuasive.errors import ValidationError
from persuasive.files import reading as rd

MAX = 2**63 - 1


def validate(path: Path | pl.DataFrame, keys: Sequence[str], count: str) -> pl.DataFrame:
    """Read a count table with the module's public pieces, as a release does."""
    names = rd.header(path)
    rd.require(names, key=list(keys), count=count)
    lf = rd.scan(path, text=[*keys, count]).with_row_index(rd.ROW)
    dtype = lf.collect_schema()[count]
    checks = [*rd.key_checks(keys), *rd.count_checks(count, dtype)]
    stats = rd.first_failures(lf, checks).collect()
    rd.raise_first(stats, lf, checks, where=keys)
    return lf.select(*keys, rd.count_expr(count, dtype)).collect()


def validate_reals(path: Path, column: str) -> pl.DataFrame:
    lf = rd.scan(path, text=[column]).with_row_index(rd.ROW)
    dtype = lf.collect_schema()[column]
    checks = rd.real_checks(column, dtype)
    stats = rd.first_failures(lf, checks).collect()
    rd.raise_first(stats, lf, checks, what="the data")
    return lf.select(rd.real_expr(column, dtype)).collect()


def csv_file(tmp_path: Path, content: str | bytes, name: str = "in.csv") -> Path:
    p = tmp_path / name
    p.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return p


def parquet_file(tmp_path: Path, table: pa.Table, name: str = "in.parquet") -> Path:
    p = tmp_path / name
    pq.write_table(table, p)
    return p


def message(exc: pytest.ExceptionInfo[ValidationError]) -> str:
    text = str(exc.value)
    assert "\n" not in text, f"not one line: {text!r}"
    return text


# --------------------------------------------------------------------------------------------
# Counts in a CSV file: each check names the column, the row and echoes the entry
# --------------------------------------------------------------------------------------------

#: (the entry as written in the count column of row 2, what the message must contain)
BAD_COUNTS = [
    ("3.0", ["'3.0'", "decimal point"]),
    ("7.", ["'7.'", "decimal point"]),
    ("-2", ["-2", "negative"]),
    ("three", ["'three'", "not a count"]),
    ("1e3", ["'1e3'", "not a count"]),
    (" 3", ["' 3'", "not a count"]),
    ("3 ", ["'3 '", "not a count"]),
    ("+3", ["'+3'", "not a count"]),
    ("0x10", ["'0x10'", "not a count"]),
    ("\u0663", ["'\u0663'", "not a count"]),  # ARABIC-INDIC DIGIT THREE
    ("9223372036854775808", ["9223372036854775808", "9223372036854775807"]),
    ("99999999999999999999999", ["99999999999999999999999", "above"]),
    ("", ["missing"]),
]


@pytest.mark.parametrize(("entry", "parts"), BAD_COUNTS, ids=[repr(e) for e, _ in BAD_COUNTS])
def test_count_check_names_column_row_and_value(
    tmp_path: Path, entry: str, parts: list[str]
) -> None:
    quoted = '"' + entry + '"' if entry.strip() != entry else entry
    p = csv_file(tmp_path, f"area,n\n01001,5\n01003,{quoted}\n01005,7\n")
    with pytest.raises(ValidationError) as exc:
        validate(p, ["area"], "n")
    text = message(exc)
    assert text.startswith("column 'n' at row 2 "), text
    assert "area='01003'" in text  # the row's key, as written (leading zero kept)
    for part in parts:
        assert part in text, (part, text)


def test_row_number_counts_records_not_lines(tmp_path: Path) -> None:
    p = csv_file(tmp_path, 'k,n\n"a\nb",1\n"c\r\nd",2\ne,x\n')
    with pytest.raises(ValidationError) as exc:
        validate(p, ["k"], "n")
    assert message(exc).startswith("column 'n' at row 3 (k='e') is 'x'")


def test_exact_counts_from_text(tmp_path: Path) -> None:
    p = csv_file(
        tmp_path,
        f"k,n\na,0\nb,007\nc,9007199254740993\nd,{MAX}\ne,0000000000000000000000000001\n",
    )
    got = validate(p, ["k"], "n")
    assert got.schema == pl.Schema({"k": pl.String, "n": pl.Int64})
    assert got.rows() == [("a", 0), ("b", 7), ("c", 9007199254740993), ("d", MAX), ("e", 1)]


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(0, MAX), min_size=1, max_size=20), zeros=st.integers(0, 3))
def test_count_text_parses_exactly(values: list[int], zeros: int) -> None:
    frame = pl.DataFrame({"n": ["0" * zeros + str(v) for v in values]})
    got = frame.select(rd.count_expr("n", pl.String)).get_column("n").to_list()
    assert got == values


# --------------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------------


def test_keys_are_text_exactly_as_written(tmp_path: Path) -> None:
    p = csv_file(tmp_path, 'k,n\n01001,1\n1,2\n1.0,3\nNA,4\n"",5\n" x ",6\nnull,7\n')
    got = validate(p, ["k"], "n")
    assert got.get_column("k").to_list() == ["01001", "1", "1.0", "NA", "", " x ", "null"]


def test_empty_unquoted_key_is_missing(tmp_path: Path) -> None:
    p = csv_file(tmp_path, 'k,j,n\na,b,1\n"",,2\n')
    with pytest.raises(ValidationError) as exc:
        validate(p, ["k", "j"], "n")
    text = message(exc)
    assert text.startswith("column 'j' at row 2 (k='') is missing"), text


def test_parquet_null_key_is_missing(tmp_path: Path) -> None:
    p = parquet_file(tmp_path, pa.table({"k": pa.array([1, None, 3]), "n": [1, 2, 3]}))
    with pytest.raises(ValidationError) as exc:
        validate(p, ["k"], "n")
    assert message(exc).startswith("column 'k' at row 2 is missing")


# --------------------------------------------------------------------------------------------
# Real values
# --------------------------------------------------------------------------------------------

BAD_REALS = [
    ("abc", "'abc'"),
    ("1,5", "'1,5'"),
    ("0x10", "'0x10'"),
    ("nan", "nan"),
    ("inf", "inf"),
    ("-inf", "-inf"),
    ("1e309", "1e309"),
    ("", "missing"),
]


@pytest.mark.parametrize(("entry", "echo"), BAD_REALS, ids=[repr(e) for e, _ in BAD_REALS])
def test_real_check_names_column_row_and_value(tmp_path: Path, entry: str, echo: str) -> None:
    field = f'"{entry}"' if "," in entry else entry
    p = csv_file(tmp_path, f"v\n1.5\n2.5\n{field}\n4.5\n")
    with pytest.raises(ValidationError) as exc:
        validate_reals(p, "v")
    text = message(exc)
    assert text.startswith("column 'v' at row 3 "), text
    assert echo in text


def test_real_check_message_is_one_line_for_a_value_with_a_line_break(tmp_path: Path) -> None:
    p = csv_file(tmp_path, 'v\n1.5\n"1e999\n"\n')
    with pytest.raises(ValidationError) as exc:
        validate_reals(p, "v")
    text = message(exc)
    assert text.startswith("column 'v' at row 2 ")


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1))
def test_real_text_is_parsed_once_exactly(values: list[float]) -> None:
    texts = [repr(v) for v in values] + [f"{v:.17e}" for v in values]
    frame = pl.DataFrame({"v": texts})
    got = frame.select(rd.real_expr("v", pl.String)).get_column("v").to_list()
    want = [float(t) for t in texts]
    assert [math.copysign(1, g) for g in got] == [math.copysign(1, w) for w in want]
    assert got == want


# --------------------------------------------------------------------------------------------
# Headers and encodings
# --------------------------------------------------------------------------------------------


def test_bom_header(tmp_path: Path) -> None:
    p = csv_file(tmp_path, b'\xef\xbb\xbf"k",n\r\na,1\r\n')
    assert rd.header(p) == ["k", "n"]
    assert validate(p, ["k"], "n").rows() == [("a", 1)]


def test_header_exact_names(tmp_path: Path) -> None:
    p = csv_file(tmp_path, '"code, INSEE",n\u00b2,"say ""x"""\n1,2,3\n')
    assert rd.header(p) == ["code, INSEE", "n\u00b2", 'say "x"']


def test_csv_header_naming_a_column_twice(tmp_path: Path) -> None:
    p = csv_file(tmp_path, "k,n,k\na,1,b\n")
    with pytest.raises(ValidationError) as exc:
        rd.header(p)
    text = message(exc)
    assert "'k'" in text and "twice" in text and "columns 1 and 3" in text


def test_parquet_duplicate_field_names_refused(tmp_path: Path) -> None:
    table = pa.Table.from_arrays(
        [pa.array(["a", "b"]), pa.array([1, 2]), pa.array(["c", "d"])], names=["k", "n", "k"]
    )
    p = parquet_file(tmp_path, table)
    assert pq.read_schema(p).names == ["k", "n", "k"]  # the file really has them
    with pytest.raises(ValidationError) as exc:
        rd.header(p)
    text = message(exc)
    assert "'k'" in text and "twice" in text


def test_frame_header() -> None:
    assert rd.header(pl.DataFrame({"b": [1], "a": [2]})) == ["b", "a"]
    assert rd.header(pl.LazyFrame({"x": [1]})) == ["x"]


def test_non_utf8_header(tmp_path: Path) -> None:
    p = csv_file(tmp_path, "r\u00e9gion,n\nx,1\n".encode("latin-1"))
    with pytest.raises(ValidationError) as exc:
        rd.header(p)
    text = message(exc)
    assert str(p) in text and "UTF-8" in text and "byte 1" in text


@pytest.mark.parametrize(
    "content",
    [
        "k,n\nZ\u00fcrich,1\n".encode("latin-1"),  # a small file: the bad byte near its end
        b"k,n\n" + b"".join(b"k%07d,1\n" % i for i in range(150_000)) + b"\xe9,2\n",
    ],
    ids=["small", "beyond-the-header-window"],
)
def test_non_utf8_body_is_one_clear_error(tmp_path: Path, content: bytes) -> None:
    from persuasive.release.tables import read_cells

    p = csv_file(tmp_path, content)
    with pytest.raises(ValidationError) as exc:
        read_cells(p, ("k",), "n")
    assert "utf-8" in message(exc).lower()


def test_empty_file_and_empty_table(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as exc:
        rd.header(csv_file(tmp_path, b"", "e.csv"))
    assert "no header" in message(exc)
    with pytest.raises(ValidationError) as exc:
        validate(csv_file(tmp_path, "k,n\n", "h.csv"), ["k"], "n")
    assert "empty" in message(exc)


def test_missing_column_lists_the_columns(tmp_path: Path) -> None:
    p = csv_file(tmp_path, "k,n\na,1\n")
    with pytest.raises(ValidationError) as exc:
        validate(p, ["k"], "count")
    text = message(exc)
    assert "'count'" in text and "k, n" in text


def test_file_checks(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as exc:
        rd.header(tmp_path / "nope.csv")
    assert "not found" in message(exc)
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(ValidationError) as exc:
        rd.header(tmp_path / "dir.csv")
    assert "folder" in message(exc)
    with pytest.raises(ValidationError) as exc:
        rd.format_of(tmp_path / "data.txt")
    assert "'.txt'" in message(exc)
    with pytest.raises(ValidationError) as exc:
        rd.format_of(tmp_path / "data")
    assert "(none)" in message(exc)
    assert rd.format_of("x.PQ") == "parquet" and rd.format_of("x.Csv") == "csv"
    bad = csv_file(tmp_path, b"not parquet", "broken.parquet")
    with pytest.raises(ValidationError) as exc:
        rd.header(bad)
    assert "Parquet" in message(exc)


def test_scan_reads_csv_as_text_without_inference(tmp_path: Path) -> None:
    p = csv_file(tmp_path, "k,n,x\n01,1,2.50\n1.0,2,3\n")
    lf = rd.scan(p, text=["k", "n"])
    assert lf.collect_schema() == pl.Schema({"k": pl.String, "n": pl.String, "x": pl.String})
    assert lf.collect().rows() == [("01", "1", "2.50"), ("1.0", "2", "3")]
    inferred = rd.scan(p, text=["k", "n"], infer=True).collect_schema()
    assert inferred["k"] == pl.String and inferred["n"] == pl.String
    assert inferred["x"] == pl.Float64


# --------------------------------------------------------------------------------------------
# Parquet counts
# --------------------------------------------------------------------------------------------


def test_uint64_counts(tmp_path: Path) -> None:
    ok = parquet_file(
        tmp_path, pa.table({"k": ["a", "b"], "n": pa.array([0, MAX], type=pa.uint64())}), "ok.pq"
    )
    assert validate(ok, ["k"], "n").rows() == [("a", 0), ("b", MAX)]
    bad = parquet_file(
        tmp_path, pa.table({"k": ["a", "b"], "n": pa.array([1, 2**63], type=pa.uint64())})
    )
    with pytest.raises(ValidationError) as exc:
        validate(bad, ["k"], "n")
    text = message(exc)
    assert text.startswith("column 'n' at row 2 (k='b')") and "9223372036854775808" in text


@pytest.mark.parametrize(
    ("value", "parts"),
    [
        (float("nan"), ["NaN"]),
        (float("inf"), ["inf", "finite"]),
        (float("-inf"), ["-inf"]),
        (-2.0, ["-2.0", "negative"]),
        (3.5, ["3.5", "fractional"]),
        (2.0**63, ["above"]),
        (1e300, ["above"]),
    ],
)
def test_float_count_refused(tmp_path: Path, value: float, parts: list[str]) -> None:
    p = parquet_file(tmp_path, pa.table({"k": ["a", "b", "c"], "n": [1.0, value, 2.0]}))
    with pytest.raises(ValidationError) as exc:
        validate(p, ["k"], "n")
    text = message(exc)
    assert text.startswith("column 'n' at row 2 (k='b')"), text
    for part in parts:
        assert part in text


def test_integral_floats_become_exact_int64(tmp_path: Path) -> None:
    values = [0.0, 3.0, 2.0**53, 2.0**62, 2.0**63 - 1024]
    p = parquet_file(tmp_path, pa.table({"k": list("abcde"), "n": values}))
    got = validate(p, ["k"], "n")
    assert got.schema["n"] == pl.Int64
    assert got.get_column("n").to_list() == [0, 3, 2**53, 2**62, 2**63 - 1024]
    p32 = parquet_file(
        tmp_path, pa.table({"k": ["a"], "n": pa.array([16777216.0], type=pa.float32())}), "f.pq"
    )
    assert validate(p32, ["k"], "n").rows() == [("a", 16777216)]


def test_signed_negative_and_text_counts_in_parquet(tmp_path: Path) -> None:
    p = parquet_file(tmp_path, pa.table({"k": ["a", "b"], "n": pa.array([1, -3], pa.int8())}))
    with pytest.raises(ValidationError) as exc:
        validate(p, ["k"], "n")
    assert message(exc).startswith("column 'n' at row 2 (k='b') is negative (-3)")
    p = parquet_file(tmp_path, pa.table({"k": ["a", "b"], "n": ["1", "3.0"]}), "s.pq")
    with pytest.raises(ValidationError) as exc:
        validate(p, ["k"], "n")
    assert "'3.0'" in message(exc)
    p = parquet_file(tmp_path, pa.table({"k": ["a"], "n": [True]}), "b.pq")
    with pytest.raises(ValidationError) as exc:
        validate(p, ["k"], "n")
    assert "'n'" in message(exc)


D = decimal.Decimal


def test_decimal_count_above_2_53_is_exact(tmp_path: Path) -> None:
    p = parquet_file(
        tmp_path,
        pa.table({"k": ["a", "b"], "n": pa.array([D(1), D(2**53 + 1)], pa.decimal128(20, 0))}),
    )
    assert validate(p, ["k"], "n").rows() == [("a", 1), ("b", 2**53 + 1)]


def test_fractional_decimal_count_is_refused(tmp_path: Path) -> None:
    p = parquet_file(
        tmp_path,
        pa.table(
            {
                "k": ["a", "b"],
                "n": pa.array([D(1), D("3.0000000000000000001")], pa.decimal128(38, 19)),
            }
        ),
    )
    with pytest.raises(ValidationError) as exc:
        validate(p, ["k"], "n")
    assert message(exc).startswith("column 'n' at row 2 (k='b')")


def test_decimal_largest_count_is_accepted(tmp_path: Path) -> None:
    p = parquet_file(
        tmp_path, pa.table({"k": ["a"], "n": pa.array([D(MAX)], pa.decimal128(25, 0))})
    )
    assert validate(p, ["k"], "n").rows() == [("a", MAX)]


def test_frames_keep_their_types() -> None:
    frame = pl.DataFrame({"k": [1, 2], "n": pl.Series([3, 4], dtype=pl.UInt32)})
    got = validate(frame, ["k"], "n")  # type: ignore[arg-type]
    assert got.schema == pl.Schema({"k": pl.Int64, "n": pl.Int64})
    assert got.rows() == [(1, 3), (2, 4)]


def test_one_pass_reports_each_checks_first_row() -> None:
    frame = pl.DataFrame({"n": ["1", "x", "-1", "y", None]}).lazy().with_row_index(rd.ROW)
    checks = rd.count_checks("n", pl.String)
    stats = rd.first_failures(frame, checks).collect().row(0, named=True)
    # missing, decimal point, negative, not digits, above 2^63 - 1 (0-based rows)
    assert stats == {
        "n": 5,
        "check0": 4,
        "check1": None,
        "check2": 2,
        "check3": 1,
        "check4": 1,
    }
