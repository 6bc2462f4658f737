"""Published values are exactly the input's: keys as written, shown counts as given (issue 10).

The input files are written here with the ``csv`` module's conventions / a hand-written RFC 4180
writer and with ``pyarrow`` directly (not with polars, which the library reads and writes with),
the real command line is run, and the published file is read back with an independent
RFC 4180 reader (below, which tells a quoted empty field from an empty one) or with
``pyarrow``. Every key and every shown count must equal the input exactly, every suppressed
cell must be missing and every shown count must be at least h.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from persuasive.cli import app

MAX_COUNT = 2**63 - 1
runner = CliRunner()


# --------------------------------------------------------------------------------------------
# An independent CSV writer and reader (RFC 4180), which keep "" (a key) apart from an empty
# field (a missing value)
# --------------------------------------------------------------------------------------------


def csv_field(value: str | int | None, *, quote_all: bool = False) -> str:
    """One CSV field: None is an empty field, "" is a quoted empty string."""
    if value is None:
        return ""
    text = str(value)
    if isinstance(value, int):
        return text
    if quote_all or text == "" or any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def write_csv(
    path: Path,
    header: Sequence[str],
    rows: Sequence[Sequence[str | int | None]],
    *,
    quote_all: bool = False,
    eol: str = "\n",
) -> None:
    lines = [",".join(csv_field(h, quote_all=quote_all) for h in header)]
    lines += [",".join(csv_field(v, quote_all=quote_all) for v in row) for row in rows]
    path.write_bytes((eol.join(lines) + eol).encode("utf-8"))


def read_csv(path: Path) -> list[list[str | None]]:
    """Parse RFC 4180 text: a quoted field is its text (``""`` is the empty string), an
    unquoted empty field is None. Records end at an unquoted CR LF or LF."""
    text = path.read_bytes().decode("utf-8")
    records: list[list[str | None]] = []
    record: list[str | None] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            i += 1
            buf = []
            while True:
                if i >= n:
                    raise AssertionError(f"{path}: unterminated quoted field")
                if text[i] == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        buf.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(text[i])
                i += 1
            value: str | None = "".join(buf)
        else:
            j = i
            while j < n and text[j] not in ",\r\n":
                if text[j] == '"':
                    raise AssertionError(f"{path}: a quote inside an unquoted field at {j}")
                j += 1
            value = text[i:j] if j > i else None
            i = j
        record.append(value)
        if i >= n:
            records.append(record)
            break
        if text[i] == ",":
            i += 1
            if i >= n:  # a trailing separator: one more empty field
                record.append(None)
                records.append(record)
            continue
        if text.startswith("\r\n", i):
            i += 2
        elif text[i] == "\n":
            i += 1
        else:
            raise AssertionError(f"{path}: unexpected {text[i]!r} after a field at {i}")
        records.append(record)
        record = []
    return records


def test_the_oracle_reader() -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.csv"
        p.write_bytes(b'k,c\n"",1\n"a\r\nb,""q""",\nNA,007\r\n,5\n')
        assert read_csv(p) == [
            ["k", "c"],
            ["", "1"],
            ['a\r\nb,"q"', None],
            ["NA", "007"],
            [None, "5"],
        ]
        write_csv(p, ["k", "c"], [["", 1], ['x,"y"\n', None], ["01", 2]])
        assert read_csv(p) == [["k", "c"], ["", "1"], ['x,"y"\n', None], ["01", "2"]]


# --------------------------------------------------------------------------------------------
# Running the command
# --------------------------------------------------------------------------------------------


def release_table(
    data: Path, out: Path, keys: Sequence[str], count: str, h: int, *extra: str
) -> Any:
    args = [
        "release",
        "table",
        str(data),
        "--keys",
        ",".join(keys),
        "--count",
        count,
        "--h",
        str(h),
        "--alpha",
        "0.5",
        "--out",
        str(out),
        "--quiet",
        "--absent",  # the input's cells exactly, no zero cells added (tests/test_sparse.py)
        "structural",
        *extra,
    ]
    return runner.invoke(app, args)


def one_error_line(result: Any) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), result.stderr
    return lines[0]


def parquet_rows(path: Path) -> tuple[pa.Schema, list[dict[str, Any]]]:
    table = pq.read_table(path)
    return table.schema, table.to_pylist()


def is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def expected_shown(count: int, h: int) -> int | None:
    return count if count >= h else None


def check_csv_publication(
    path: Path,
    header: Sequence[str],
    rows: Sequence[tuple[tuple[Any, ...], int]],
    h: int,
) -> None:
    """``released.csv`` holds exactly the header, the keys as text and the counts (empty where
    suppressed), row by row as the input."""
    got = read_csv(path)
    assert got[0] == list(header)
    assert len(got) - 1 == len(rows)
    for (keys, count), line in zip(rows, got[1:], strict=True):
        assert line[:-1] == [str(k) for k in keys]
        want = expected_shown(count, h)
        assert line[-1] == (None if want is None else str(want))
        if line[-1] is not None:
            assert int(line[-1]) >= h


def check_parquet_publication(
    path: Path,
    header: Sequence[str],
    rows: Sequence[tuple[tuple[Any, ...], int]],
    h: int,
    key_types: Sequence[pa.DataType],
) -> None:
    schema, got = parquet_rows(path)
    assert schema.names == list(header)
    for name, want_type in zip(header[:-1], key_types, strict=True):
        t = schema.field(name).type
        assert (is_text(t) and is_text(want_type)) or t == want_type, (name, t, want_type)
    assert schema.field(header[-1]).type == pa.int64()
    assert len(got) == len(rows)
    for (keys, count), rec in zip(rows, got, strict=True):
        assert [rec[k] for k in header[:-1]] == list(keys)
        assert rec[header[-1]] == expected_shown(count, h)
        if rec[header[-1]] is not None:
            assert rec[header[-1]] >= h


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------

#: Key texts the property test must keep exactly.
TRICKY = [
    "01001",
    "1",
    "1.0",
    "1e3",
    "NA",
    "N/A",
    "null",
    "NaN",
    "",
    " ",
    " padded ",
    "a,b",
    'say "hi"',
    "line\nbreak",
    "cr\r\nlf",
    "tab\there",
    "Zürich",
    "東京",
    "😀",
    "-0",
    "+1",
    "0x1F",
    "TRUE",
    "#",
    "nul\x00byte",
    "\ufeffbom",
]
key_text = st.one_of(
    st.sampled_from(TRICKY),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",)),
        max_size=8,
    ),
)
counts = st.one_of(
    st.integers(0, 12),
    st.integers(0, MAX_COUNT),
    st.sampled_from([MAX_COUNT, MAX_COUNT - 1, 2**53, 2**53 + 1, 2**63 - 2**10 + 1]),
)
KEY_NAMES = ["code", "région", "年", "k2"]


@st.composite
def tables(draw: Any, max_keys: int = 2) -> tuple[list[str], list[tuple[tuple[str, ...], int]]]:
    nkeys = draw(st.integers(1, max_keys))
    names = KEY_NAMES[:nkeys]
    keys = draw(st.lists(st.tuples(*[key_text] * nkeys), min_size=1, max_size=12, unique=True))
    return names, [(k, draw(counts)) for k in keys]


PROPERTY = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --------------------------------------------------------------------------------------------
# The property tests
# --------------------------------------------------------------------------------------------


@PROPERTY
@given(
    table=tables(),
    h=st.integers(2, 15),
    quote_all=st.booleans(),
    eol=st.sampled_from(["\n", "\r\n"]),
    to_parquet=st.booleans(),
)
def test_csv_release_publishes_every_key_and_count_exactly(
    table: tuple[list[str], list[tuple[tuple[str, ...], int]]],
    h: int,
    quote_all: bool,
    eol: str,
    to_parquet: bool,
) -> None:
    names, rows = table
    header = [*names, "n"]
    with tempfile.TemporaryDirectory() as d:
        data = Path(d) / "in.csv"
        write_csv(data, header, [[*k, c] for k, c in rows], quote_all=quote_all, eol=eol)
        out = Path(d) / "out"
        extra = ["--format", "parquet"] if to_parquet else []
        result = release_table(data, out, names, "n", h, *extra)
        assert result.exit_code == 0, result.stderr
        if to_parquet:
            assert not (out / "released.csv").exists()
            check_parquet_publication(
                out / "released.parquet", header, rows, h, [pa.string()] * len(names)
            )
        else:
            check_csv_publication(out / "released.csv", header, rows, h)
        cert = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
        assert cert["publication"]["cells"] == len(rows)
        assert cert["publication"]["suppressed"] == sum(c < h for _, c in rows)


INT_KEY_TYPES = [pa.int64(), pa.int32(), pa.string(), pa.large_string()]


@st.composite
def parquet_tables(draw: Any) -> tuple[list[str], list[pa.DataType], list[Any]]:
    nkeys = draw(st.integers(1, 2))
    names = KEY_NAMES[:nkeys]
    types = [draw(st.sampled_from(INT_KEY_TYPES)) for _ in names]
    elems = [
        key_text
        if is_text(t)
        else st.integers(-(2**31), 2**31 - 1)
        if t == pa.int32()
        else st.integers(-(2**63), 2**63 - 1)
        for t in types
    ]
    keys = draw(st.lists(st.tuples(*elems), min_size=1, max_size=12, unique=True))
    return names, types, [(k, draw(counts)) for k in keys]


@PROPERTY
@given(
    table=parquet_tables(),
    h=st.integers(2, 15),
    count_type=st.sampled_from([pa.int64(), pa.uint64()]),
    to_csv=st.booleans(),
)
def test_parquet_release_publishes_every_key_and_count_exactly(
    table: tuple[list[str], list[pa.DataType], list[Any]],
    h: int,
    count_type: pa.DataType,
    to_csv: bool,
) -> None:
    names, types, rows = table
    header = [*names, "n"]
    columns = [pa.array([k[i] for k, _ in rows], type=t) for i, t in enumerate(types)] + [
        pa.array([c for _, c in rows], type=count_type)
    ]
    with tempfile.TemporaryDirectory() as d:
        data = Path(d) / "in.parquet"
        pq.write_table(pa.table(columns, names=header), data)
        out = Path(d) / "out"
        extra = ["--format", "csv"] if to_csv else []
        result = release_table(data, out, names, "n", h, *extra)
        assert result.exit_code == 0, result.stderr
        if to_csv:
            assert not (out / "released.parquet").exists()
            check_csv_publication(out / "released.csv", header, rows, h)
        else:
            check_parquet_publication(out / "released.parquet", header, rows, h, types)


# --------------------------------------------------------------------------------------------
# The quoted cases
# --------------------------------------------------------------------------------------------


def test_tricky_keys_are_distinct_and_kept(tmp_path: Path) -> None:
    rows = [(("01001",), 20), (("1",), 21), (("1.0",), 22), (("NA",), 1), (("",), 23)]
    data = tmp_path / "in.csv"
    write_csv(data, ["k", "n"], [[*k, c] for k, c in rows])
    result = release_table(data, tmp_path / "out", ["k"], "n", 5)
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / "out" / "released.csv").read_bytes()
    assert b'\n"",23\n' in text  # the empty key stays a quoted empty string
    assert b"\nNA,\n" in text  # 'NA' is a key; its count 1 < h is suppressed
    check_csv_publication(tmp_path / "out" / "released.csv", ["k", "n"], rows, 5)


def test_multi_column_keys(tmp_path: Path) -> None:
    rows = [(("01", "001"), 7), (("0", "1001"), 8), (("01", "1.0"), 2), (("01", "1"), 9)]
    data = tmp_path / "in.csv"
    write_csv(data, ["state", "county", "n"], [[*k, c] for k, c in rows])
    result = release_table(data, tmp_path / "out", ["state", "county"], "n", 3)
    assert result.exit_code == 0, result.stderr
    check_csv_publication(tmp_path / "out" / "released.csv", ["state", "county", "n"], rows, 3)


def test_empty_unquoted_key_is_missing(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_bytes(b'k,n\na,5\n,6\n"",7\n')
    before = sorted(os.listdir(tmp_path))
    result = release_table(data, tmp_path / "out", ["k"], "n", 3)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "'k'" in line and "row 2" in line and "missing" in line
    assert sorted(os.listdir(tmp_path)) == before


def test_count_above_2_53_is_exact_through_the_console_script(tmp_path: Path) -> None:
    big = 2**53 + 1  # 9007199254740993: not a float64
    data = tmp_path / "in.csv"
    write_csv(data, ["k", "n"], [["a", big], ["b", 2], ["c", MAX_COUNT]])
    out = tmp_path / "out"
    exe = Path(sys.executable).with_name("persuasive")
    proc = subprocess.run(
        [str(exe), "release", "table", str(data), "--keys", "k", "--count", "n", "--h", "3",
         "--alpha", "0.5", "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = read_csv(out / "released.csv")
    assert got == [["k", "n"], ["a", "9007199254740993"], ["b", None], ["c", str(MAX_COUNT)]]
    # and to Parquet: int64, exact
    proc = subprocess.run(
        [str(exe), "release", "table", str(data), "--keys", "k", "--count", "n", "--h", "3",
         "--alpha", "0.5", "--out", str(tmp_path / "pq"), "--quiet", "--format", "parquet"],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    schema, recs = parquet_rows(tmp_path / "pq" / "released.parquet")
    assert schema.field("n").type == pa.int64()
    assert [r["n"] for r in recs] == [big, None, MAX_COUNT]


def test_decimal_count_is_one_line_error_naming_the_row(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text("k,n\na,5\nb,3.0\nc,4\n", encoding="utf-8")
    before = sorted(os.listdir(tmp_path))
    result = release_table(data, tmp_path / "out", ["k"], "n", 3)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "row 2" in line and "'3.0'" in line and "'n'" in line and "k='b'" in line
    assert sorted(os.listdir(tmp_path)) == before
    assert result.stdout == ""


@pytest.mark.parametrize("text", [str(2**63), str(10**30), "0" + str(2**64)])
def test_count_above_int64_is_an_error(tmp_path: Path, text: str) -> None:
    data = tmp_path / "in.csv"
    data.write_text(f"k,n\na,5\nb,{text}\n", encoding="utf-8")
    before = sorted(os.listdir(tmp_path))
    result = release_table(data, tmp_path / "out", ["k"], "n", 3)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "row 2" in line and str(MAX_COUNT) in line
    assert sorted(os.listdir(tmp_path)) == before


def test_largest_count_is_accepted(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text(f"k,n\na,{MAX_COUNT}\nb,0{MAX_COUNT}\n", encoding="utf-8")
    result = release_table(data, tmp_path / "out", ["k"], "n", 3)
    assert result.exit_code == 0, result.stderr
    assert read_csv(tmp_path / "out" / "released.csv")[1:] == [
        ["a", str(MAX_COUNT)],
        ["b", str(MAX_COUNT)],
    ]


def test_parquet_float_counts(tmp_path: Path) -> None:
    good = tmp_path / "good.parquet"
    pq.write_table(
        pa.table({"k": ["a", "b", "c"], "n": pa.array([3.0, 1.0, 2.0**52], type=pa.float64())}),
        good,
    )
    result = release_table(good, tmp_path / "out", ["k"], "n", 2)
    assert result.exit_code == 0, result.stderr
    schema, recs = parquet_rows(tmp_path / "out" / "released.parquet")
    assert schema.field("n").type == pa.int64()
    assert [(r["k"], r["n"]) for r in recs] == [("a", 3), ("b", None), ("c", 2**52)]
    assert all(type(r["n"]) is int for r in recs if r["n"] is not None)

    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"k": ["a", "b"], "n": pa.array([3.0, 3.5])}), bad)
    before = sorted(os.listdir(tmp_path))
    result = release_table(bad, tmp_path / "out2", ["k"], "n", 2)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "row 2" in line and "3.5" in line
    assert sorted(os.listdir(tmp_path)) == before


def test_mean_of_huge_values_is_exact_strict_json(tmp_path: Path) -> None:
    data = tmp_path / "v.csv"
    data.write_text("v\n1e308\n1e308\n1e308\n", encoding="utf-8")
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["release", "mean", str(data), "--column", "v", "--r1", "1", "--r2", "4",
         "--out", str(out), "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr

    def refuse(name: str) -> Any:
        raise AssertionError(f"non-strict JSON constant {name}")

    doc = json.loads((out / "released.json").read_text(encoding="utf-8"), parse_constant=refuse)
    assert doc == {"mean": 1e308}
    assert type(doc["mean"]) is float and math.isfinite(doc["mean"])
    json.loads((out / "certificate.json").read_text(encoding="utf-8"), parse_constant=refuse)


def test_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text("k,k,c\na,b,5\nc,d,6\n", encoding="utf-8")
    before = sorted(os.listdir(tmp_path))
    result = release_table(data, tmp_path / "out", ["k"], "c", 3)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "'k'" in line and "twice" in line
    assert sorted(os.listdir(tmp_path)) == before


def test_parquet_decimal_count_is_published_exactly_or_refused(tmp_path: Path) -> None:
    import decimal

    data = tmp_path / "in.parquet"
    n = pa.array([decimal.Decimal(2**53 + 1), decimal.Decimal(1)], type=pa.decimal128(20, 0))
    pq.write_table(pa.table({"k": ["a", "b"], "n": n}), data)
    result = release_table(data, tmp_path / "out", ["k"], "n", 3)
    if result.exit_code == 2:  # refusing a decimal count would be fine too
        one_error_line(result)
        return
    assert result.exit_code == 0, result.stderr
    _, recs = parquet_rows(tmp_path / "out" / "released.parquet")
    assert [r["n"] for r in recs] == [2**53 + 1, None]


def _big_rows(n: int, seed: int) -> list[tuple[str, int]]:
    import random

    rng = random.Random(seed)
    counts = [rng.choice([rng.randrange(0, 10), rng.randrange(0, MAX_COUNT)]) for _ in range(n)]
    counts[-1] = MAX_COUNT
    return [(f"{i:06d}", c) for i, c in enumerate(counts)]


def test_large_csv_release_is_exact(tmp_path: Path) -> None:
    """More rows than one block of the table code (2^16) and not a multiple of 8."""
    rows = _big_rows(70_001, seed=7)
    data = tmp_path / "big.csv"
    write_csv(data, ["k", "n"], [[k, c] for k, c in rows])
    result = release_table(data, tmp_path / "out", ["k"], "n", 5)
    assert result.exit_code == 0, result.stderr
    check_csv_publication(
        tmp_path / "out" / "released.csv", ["k", "n"], [((k,), c) for k, c in rows], 5
    )


@pytest.mark.parametrize("dtype", ["Int64", "UInt64", "Int32", "UInt16"])
@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_in_memory_frame_release_is_exact(dtype: str, order: str) -> None:
    """The Python API on a polars frame (the in-memory path over the column buffers)."""
    import random

    import polars as pl

    from persuasive.classes.receivers import SmallCellReceiver
    from persuasive.release.tables import release_table as api_release

    limit = {"Int64": MAX_COUNT, "UInt64": MAX_COUNT, "Int32": 2**31 - 1, "UInt16": 2**16 - 1}
    rng = random.Random(11)
    n = 70_003
    keys = list(range(0, 3 * n, 3))
    if order == "shuffled":
        rng.shuffle(keys)
    counts = [rng.choice([rng.randrange(0, 10), rng.randrange(0, limit[dtype] + 1)]) for _ in keys]
    frame = pl.DataFrame(
        [pl.Series("k", keys, dtype=pl.Int64), pl.Series("n", counts, dtype=getattr(pl, dtype))]
    )
    rel = api_release(frame, keys="k", count="n", h=5, receiver=SmallCellReceiver(0.5))
    assert rel.published.schema["n"] == pl.Int64
    assert rel.published.get_column("k").to_list() == keys
    assert rel.published.get_column("n").to_list() == [c if c >= 5 else None for c in counts]


def test_in_memory_frame_errors_name_the_row() -> None:
    import polars as pl

    from persuasive.classes.receivers import SmallCellReceiver
    from persuasive.errors import ValidationError
    from persuasive.release.tables import release_table as api_release

    n = 70_000
    keys = list(range(n, 0, -1))  # unsorted: the uniqueness check runs
    keys[60_000] = keys[10]  # rows 11 and 60001 share a key
    frame = pl.DataFrame({"k": keys, "n": [7] * n})
    with pytest.raises(ValidationError, match=r"k=69990\) at rows 11 and 60001"):
        api_release(frame, keys="k", count="n", h=5, receiver=SmallCellReceiver(0.5))
    counts = [7] * n
    counts[65_537] = -1
    frame = pl.DataFrame({"k": list(range(n)), "n": counts})
    with pytest.raises(ValidationError, match=r"row 65538 \(k=65537\) is negative \(-1\)"):
        api_release(frame, keys="k", count="n", h=5, receiver=SmallCellReceiver(0.5))
