"""The table release on Spark (``engine="spark"``) gives what the polars engine gives.

The oracle is the in-memory polars engine (``engine="polars"``) on the same input: the same
``certificate.json`` byte for byte, the same published rows (both folders read back by
:func:`persuasive.files.table_digest.scan_published`), the same one-line errors naming the same
first offending row, the same command-line exit status and error line. The digest Spark
computes in parallel is checked against :func:`persuasive.files.table_digest.digest_frame` of
the same rows built by numpy, with chunks small enough to cross partitions. One Spark session
(``local[2]``) serves the whole module.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from persuasive.classes.receivers import PoissonReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.files import DataFile
from persuasive.files import table_digest as td
from persuasive.release.tables import release_table
from persuasive.report.verify import verify_certificate

pytest.importorskip("pyspark")

RECEIVER = PoissonReceiver(0.5, 3)
MAX = 2**63 - 1


# ``spark``: the test run's one local[2] session (tests/conftest.py).


def read_back(folder: Path, fmt: str, names: list[str]) -> pl.DataFrame:
    return td.scan_published(folder / f"released.{fmt}", text=names).collect()


def both(
    source: Any, spark: Any, tmp: Path, fmt: str = "csv", *, frame: Any = None, **kw: Any
) -> tuple[Path, Path, Any, Any]:
    """Release ``source`` with each engine (``frame``: what the polars engine reads instead)
    and write both folders."""
    opts = {"keys": "k", "count": "c", "h": 5, "receiver": RECEIVER, **kw}
    mem = release_table(source if frame is None else frame, **opts)
    on_spark = release_table(source, engine="spark", spark=spark, **opts)
    a, b = tmp / "polars", tmp / "spark"
    mem.write(a, format=fmt)
    on_spark.write(b, format=fmt)
    return a, b, mem, on_spark


def assert_same(a: Path, b: Path, fmt: str, mem: Any, on_spark: Any) -> None:
    assert (a / "certificate.json").read_bytes() == (b / "certificate.json").read_bytes()
    assert (b / f"released.{fmt}").is_dir()  # a dataset folder of part files
    names = list(mem.published.columns)
    x, y = read_back(a, fmt, names), read_back(b, fmt, names)
    assert x.schema == y.schema and x.equals(y, null_equal=True)
    assert on_spark.summary() == mem.summary()
    check = verify_certificate(b / "certificate.json", published=b)
    assert check.ok, check.mismatches


def error_of(source: Any, engine: str, spark: Any = None, **kw: Any) -> str:
    opts = {"keys": "k", "count": "c", "h": 5, "receiver": RECEIVER, **kw}
    with pytest.raises(ValidationError) as exc:
        release_table(source, engine=engine, spark=spark, **opts)
    return str(exc.value)


def same_error(source: Any, spark: Any, **kw: Any) -> str:
    mem, on_spark = error_of(source, "polars", **kw), error_of(source, "spark", spark, **kw)
    assert on_spark == mem
    assert "\n" not in on_spark
    return on_spark


# ------------------------------------------------------------------------ random tables
_TEXT = st.text(
    alphabet=st.sampled_from(list("0123456789abAé中,\"'\n\r ;#\\")), min_size=0, max_size=6
)


@st.composite
def tables(draw: Any) -> pl.DataFrame:
    keys = draw(st.lists(_TEXT, min_size=1, max_size=30, unique=True))
    big = st.integers(min_value=MAX - 5, max_value=MAX)
    counts = draw(
        st.lists(st.one_of(st.integers(0, 12), big), min_size=len(keys), max_size=len(keys))
    )
    return pl.DataFrame({"k": keys, "c": counts}, schema={"k": pl.String, "c": pl.Int64})


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    frame=tables(), fmt=st.sampled_from(["csv", "parquet"]), out=st.sampled_from(["csv", "parquet"])
)
def test_random_tables_give_the_same_release(
    spark: Any, frame: pl.DataFrame, fmt: str, out: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("t")
    path = tmp / f"in.{fmt}"
    if fmt == "csv":
        frame.write_csv(path)
    else:
        frame.write_parquet(path)
    a, b, mem, on_spark = both(path, spark, tmp, out)
    assert_same(a, b, out, mem, on_spark)
    # the published rows are the input's keys, in its order, and the counts >= h
    back = read_back(b, out, ["k", "c"])
    assert back.get_column("k").to_list() == frame.get_column("k").to_list()
    want = [c if c >= 5 else None for c in frame.get_column("c").to_list()]
    assert back.get_column("c").cast(pl.Int64).to_list() == want


def test_csv_options_and_line_endings(spark: Any, tmp_path: Path) -> None:
    rows = [
        '"a;1",7',
        '"p\n\nq",3',
        '"r\r\n\r\ns",4',
        "01,2",
        '"q""",9',
        '"l1\r\nl2",12',
        '"",6',
        "NA,5",
        "1.0,8",
        "1,0",
    ]
    for name, text, opts in [
        ("crlf", "k,c\r\n" + "\r\n".join(rows) + "\r\n", {}),
        ("semi", "k;c\n" + "\n".join(r.replace(",", ";", 1) for r in rows), {"separator": ";"}),
        ("latin", "k,c\nbl\xe9,7\n\xe0,1\n", {"encoding": "latin-1"}),
        ("bom", "\ufeffk,c\nx,7\n", {}),
    ]:
        path = tmp_path / f"{name}.csv"
        path.write_bytes(text.encode("latin-1" if name == "latin" else "utf-8"))
        (tmp_path / name).mkdir()
        a, b, mem, on_spark = both(DataFile(path, **opts), spark, tmp_path / name)
        assert_same(a, b, "csv", mem, on_spark)


def test_spark_dataframe_and_parquet_folder(spark: Any, tmp_path: Path) -> None:
    frame = pl.DataFrame({"k": [5, 3, 9, 1, 7], "c": [3, 9, 0, 11, 5]})
    df = spark.createDataFrame(frame.to_pandas())
    a, b, mem, on_spark = both(df, spark, tmp_path / "df", "parquet", frame=frame)
    assert_same(a, b, "parquet", mem, on_spark)
    # a folder of Parquet parts is read in the order of the parts' names
    folder = tmp_path / "parts"
    folder.mkdir()
    frame.slice(2).write_parquet(folder / "part-1.parquet")  # the longer part second
    frame.head(2).write_parquet(folder / "part-0.parquet")
    rel = release_table(folder, keys="k", count="c", h=5, receiver=RECEIVER, engine="spark")
    rel.write(tmp_path / "f", format="parquet")
    assert read_back(tmp_path / "f", "parquet", ["k", "c"]).equals(mem.published, null_equal=True)


KEY_TYPES = {
    "int32": pl.Series("k", [5, -3, 9], dtype=pl.Int32),
    "date": pl.Series("k", ["2024-02-29", "1970-01-01", "1900-12-31"]).str.to_date(),
    "boolean": pl.Series("k", [True, False]),
    "decimal": pl.Series("k", ["3.50", "-0.01", "12.00"]).cast(pl.Decimal(8, 2)),
}


@pytest.mark.parametrize("dtype", sorted(KEY_TYPES))
def test_typed_parquet_keys(spark: Any, tmp_path: Path, dtype: str) -> None:
    key = KEY_TYPES[dtype]
    frame = pl.DataFrame([key, pl.Series("c", [7, 2, 11][: key.len()])])
    path = tmp_path / "t.parquet"
    frame.write_parquet(path)
    for out in ("csv", "parquet"):
        (tmp_path / out).mkdir()
        a, b, mem, on_spark = both(path, spark, tmp_path / out, out)
        assert_same(a, b, out, mem, on_spark)


def test_several_keys_zero_filled_as_polars(spark: Any, tmp_path: Path) -> None:
    frame = pl.DataFrame({"a": ["2", "1", "2", "3"], "b": ["x", "y", "y", "x"], "c": [7, 1, 5, 9]})
    path = tmp_path / "t.csv"
    frame.write_csv(path)
    for absent in ("zero", "structural"):
        (tmp_path / absent).mkdir()
        a, b, mem, on_spark = both(path, spark, tmp_path / absent, keys=["a", "b"], absent=absent)
        assert_same(a, b, "csv", mem, on_spark)
    assert mem.published.height == 4 and on_spark.summary()["n_cells"] == 4
    # zero-filled: (1, x) and (3, y) added after the input's rows, in sorted order
    back = read_back(tmp_path / "zero" / "spark", "csv", ["a", "b", "c"])
    assert back.rows()[4:] == [("1", "x", None), ("3", "y", None)]


# ------------------------------------------------------------------------ the digest
@pytest.mark.parametrize(("n", "parts", "chunk"), [(1, 1, 3), (50, 7, 4), (97, 3, 10), (64, 4, 16)])
def test_digest_in_spark_is_the_digest_of_the_rows(
    spark: Any, monkeypatch: pytest.MonkeyPatch, n: int, parts: int, chunk: int
) -> None:
    from pyspark.sql import functions as F

    from persuasive.spark.digest import digest_spark

    monkeypatch.setattr(td, "CHUNK_ROWS", chunk)  # the driver's combine; executors get `chunk`
    i = F.col("id")
    df = spark.range(0, n, numPartitions=parts).select(
        F.concat(F.lit('k,"\n'), F.lpad(i.cast("string"), 4, "0")).alias("k"),
        (i * 7 % 3).cast("int").alias("j"),
        F.when(i % 5 != 0, i * 1_000_003).alias("c"),
    )
    ids = np.arange(n)
    want = pl.DataFrame(
        {
            "k": [f'k,"\n{x:04d}' for x in ids],
            "j": pl.Series(ids * 7 % 3, dtype=pl.Int32),
            "c": pl.Series([int(x) * 1_000_003 if x % 5 else None for x in ids], dtype=pl.Int64),
        }
    )
    got = digest_spark(df, chunk_rows=chunk)
    assert got == td.digest_frame(want)
    assert got["rows"] == n and got["chunk_rows"] == chunk


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.lists(_TEXT, min_size=1, max_size=60),
    parts=st.integers(1, 6),
    chunk=st.integers(1, 9),
    seed=st.integers(0, 2**16),
)
def test_digest_of_random_rows_in_random_partitions(
    spark: Any, monkeypatch: pytest.MonkeyPatch, keys: list[str], parts: int, chunk: int, seed: int
) -> None:
    from pyspark.sql import types as T

    from persuasive.spark.digest import digest_spark

    monkeypatch.setattr(td, "CHUNK_ROWS", chunk)
    rng = np.random.default_rng(seed)
    small, big = rng.integers(-3, 12, len(keys)), rng.integers(MAX - 9, MAX, len(keys))
    pick = rng.random(len(keys)) < 0.3
    counts = [
        int(b) if p else (None if x < 0 else int(x))
        for x, b, p in zip(small, big, pick, strict=True)
    ]
    schema = T.StructType([T.StructField("k", T.StringType()), T.StructField("c", T.LongType())])
    rows = list(zip(keys, counts, strict=True))
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, parts), schema)
    want = pl.DataFrame({"k": keys, "c": counts}, schema={"k": pl.String, "c": pl.Int64})
    assert digest_spark(df, chunk_rows=chunk) == td.digest_frame(want)


# ------------------------------------------------------------------------ bad inputs
BAD_CSV = {
    "missing column": "k,x\na,1\n",
    "decimal point": "k,c\na,1\nb,3.0\nc,2\n",
    "negative": "k,c\na,1\nb,2\nc,-4\n",
    "not a count": "k,c\na,1\nb,abc\n",
    "quoted empty count": 'k,c\na,1\nb,""\n',
    "too large": f"k,c\na,1\nb,{2**63}\n",
    "largest": f"k,c\na,1\nb,{2**63 - 1}\nc,{2**64}\n",
    "missing count": "k,c\na,1\nb,\n",
    "missing key": "k,c\na,1\n,2\n",
    "duplicated header": "k,c,k\na,1,b\n",
    "empty": "k,c\n",
    "duplicate key": "k,c\nb,1\na,2\nc,3\na,4\nb,5\n",
    "two failures": "k,c\n,1\nb,-2\n",
    "wrong separator": "k;c\na;1\n",
    "space": "k,c\na, 1\n",
    "plus sign": "k,c\na,+5\n",
    "arabic digit": "k,c\na,\u0661\n",
    "exponent": "k,c\na,1e3\n",
    "minus zero": "k,c\na,-0\n",
    "zeros then too large": "k,c\na,0009223372036854775808\n",
    "empty line": "k,c\na,7\n\nb,9\n",
    "empty line at the end": "k,c\na,7\nb,9\n\n",
    "empty line after crlf": "k,c\r\na,7\r\n\r\nb,9\r\n",
}


@pytest.mark.parametrize("case", sorted(BAD_CSV))
def test_bad_csv_same_message(spark: Any, tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(BAD_CSV[case], encoding="utf-8")
    same_error(path, spark)


BAD_PARQUET = {
    "fractional": pl.Series("c", [1.0, 2.5, 3.0]),
    "nan": pl.Series("c", [1.0, float("nan"), 3.0]),
    "infinite": pl.Series("c", [1.0, float("inf"), 3.0]),
    "negative float": pl.Series("c", [1.0, -2.0, 3.0]),
    "too large float": pl.Series("c", [1.0, 2.0**63, 3.0]),
    "negative int": pl.Series("c", [1, -2, 3], dtype=pl.Int32),
    "missing int": pl.Series("c", [1, None, 3], dtype=pl.Int16),
    "boolean": pl.Series("c", [True, False, True]),
    "decimal fractional": pl.Series("c", ["1.00", "2.50", "3.00"]).cast(pl.Decimal(10, 2)),
    "decimal too large": pl.Series("c", ["1", str(2**63), "3"]).cast(pl.Decimal(25, 0)),
}


@pytest.mark.parametrize("case", sorted(BAD_PARQUET))
def test_bad_parquet_same_message(spark: Any, tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.parquet"
    pl.DataFrame([pl.Series("k", [3, 1, 2]), BAD_PARQUET[case]]).write_parquet(path)
    same_error(path, spark)


def test_good_float_and_decimal_counts(spark: Any, tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {"k": ["a", "b", "c"], "c": pl.Series(["7", "2", "9.000"]).cast(pl.Decimal(12, 3))}
    )
    frame.write_parquet(tmp_path / "d.parquet")
    (tmp_path / "d").mkdir()
    a, b, mem, on_spark = both(tmp_path / "d.parquet", spark, tmp_path / "d", "parquet")
    assert_same(a, b, "parquet", mem, on_spark)
    frame.with_columns(pl.Series("c", [7.0, 2.0, 2.0**62])).write_parquet(tmp_path / "f.parquet")
    (tmp_path / "f").mkdir()
    a, b, mem, on_spark = both(tmp_path / "f.parquet", spark, tmp_path / "f", "parquet")
    assert_same(a, b, "parquet", mem, on_spark)


def test_bad_rows_named_across_partitions(spark: Any, tmp_path: Path) -> None:
    n = 60_000
    c = np.arange(n) % 9
    k = np.random.default_rng(5).permutation(n)
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "65536")  # several splits of a file
    try:
        for where, bad in ((41_321, -3), (59_999, -1)):
            v = c.copy()
            v[where] = bad
            v[where + 1 :: 500] = -7  # later failures of the same check
            path = tmp_path / f"bad{where}.parquet"
            pl.DataFrame({"k": k, "c": v}).write_parquet(path, row_group_size=5000)
            df = spark.read.parquet(str(path))
            assert df.rdd.getNumPartitions() > 1
            msg = same_error(path, spark)
            assert f"row {where + 1} " in msg
        dup = k.copy()
        dup[50_000], dup[55_000] = dup[30_000], dup[30_000]
        path = tmp_path / "dup.parquet"
        pl.DataFrame({"k": dup, "c": c}).write_parquet(path, row_group_size=5000)
        assert "rows 30001 and 50001" in same_error(path, spark)
        # keys named like the columns the checks add, a duplicated pair
        pair = pl.DataFrame({"x": [2, 1, 2, 1], "count": ["x", "y", "y", "y"], "c": [1, 2, 3, 2]})
        pair.write_parquet(path)
        assert "rows 2 and 4" in same_error(path, spark, keys=["x", "count"])
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)


@pytest.mark.parametrize("out", ["csv", "parquet"])
def test_many_partitions_and_chunks_through_the_pipeline(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str
) -> None:
    monkeypatch.setattr(td, "CHUNK_ROWS", 7_000)  # chunks that straddle the partitions
    n = 60_000
    rng = np.random.default_rng(11)
    keys = pl.Series("k", rng.permutation(n)).cast(pl.String).str.zfill(6)
    frame = pl.DataFrame([keys, pl.Series("c", rng.integers(0, 12, n))])
    path = tmp_path / "t.parquet"
    frame.write_parquet(path, row_group_size=4000)
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "32768")
    try:
        assert spark.read.parquet(str(path)).rdd.getNumPartitions() > 2
        a, b, mem, on_spark = both(path, spark, tmp_path, out)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    assert len(td.dataset_parts(b / f"released.{out}")) > 2
    assert_same(a, b, out, mem, on_spark)
    doc = (b / "certificate.json").read_text(encoding="utf-8")
    assert '"chunk_rows": 7000' in doc


def test_refusals(spark: Any, tmp_path: Path) -> None:
    frame = pl.DataFrame({"k": ["a", "b"], "c": [1, 2]})
    assert "engine='polars'" in error_of(frame, "spark", spark)
    path = tmp_path / "t.csv"
    frame.write_csv(path)
    msg = error_of(path, "spark", spark, microdata=True)
    assert "engine='polars'" in msg and "\n" not in msg
    frame.to_pandas().to_stata(tmp_path / "t.dta", write_index=False)
    msg = error_of(tmp_path / "t.dta", "spark", spark)
    assert "Stata" in msg and "engine='polars'" in msg
    import datetime as dt

    zoned = pl.DataFrame({"k": [dt.datetime(2024, 1, 1)], "c": [3]})
    zoned.with_columns(pl.col("k").dt.replace_time_zone("UTC")).write_parquet(tmp_path / "z.pq")
    msg = error_of(tmp_path / "z.pq", "spark", spark)
    assert "time zone" in msg and "engine='polars'" in msg
    rel = release_table(path, keys="k", count="c", h=5, receiver=RECEIVER, engine="spark")
    with pytest.raises(ValidationError, match="--report"):
        rel.write(tmp_path / "r", report=True)
    assert not (tmp_path / "r").exists()
    with pytest.raises(ValidationError, match="spark must be a SparkSession"):
        release_table(path, keys="k", count="c", h=5, receiver=RECEIVER, engine="spark", spark=3)


def test_without_pyspark_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    path = tmp_path / "t.csv"
    path.write_text("k,c\na,1\n", encoding="utf-8")
    msg = error_of(path, "spark")
    assert "pip install 'persuasive-privacy[spark]'" in msg and "\n" not in msg


def test_release_object(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("k,c\nb,7\na,2\n", encoding="utf-8")
    rel = release_table(path, keys="k", count="c", h=5, receiver=RECEIVER, spark="local[2]",
                        engine="spark")  # fmt: skip
    mem = release_table(path, keys="k", count="c", h=5, receiver=RECEIVER)
    assert rel.kind == "table" and rel.params == mem.params
    assert rel.certificate == mem.certificate and rel.kappa == mem.kappa
    assert (rel.h, rel.r, rel.keys, rel.count, rel.alpha) == (5, 5, ("k",), "c", mem.alpha)
    assert rel.custodian("csv") == {} and rel.expected("other.csv") is None
    assert list(rel.published_files("parquet")) == ["released.parquet"]
    assert rel.published.collect() == [("b", 7), ("a", None)]
    assert "cells: 2, suppressed: 1" in repr(rel)
    html = rel._repr_html_()
    assert "suppressed" in html and ">2<" not in html  # the suppressed count is not shown


# ------------------------------------------------------------------------ command line
runner = CliRunner()


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


def table_args(path: Path, out: Path, *extra: str) -> list[str]:
    args = ["release", "table", str(path), "--keys", "k", "--count", "c", "--h", "5"]
    return [*args, "--poisson-mean", "0.5:3", "--out", str(out), *extra]


@pytest.mark.parametrize("case", ["negative", "duplicate key", "missing column", "not a count"])
def test_cli_same_exit_and_error_line(spark: Any, tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(BAD_CSV[case], encoding="utf-8")
    runs = [
        cli(*table_args(path, tmp_path / "polars")),
        cli(*table_args(path, tmp_path / "spark", "--engine", "spark")),
    ]
    for r in runs:
        assert r.exit_code == 2, r.stderr
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("error: ")
    assert runs[0].stderr == runs[1].stderr
    assert not (tmp_path / "polars").exists() and not (tmp_path / "spark").exists()


def test_cli_report_refused(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("k,c\na,7\nb,2\n", encoding="utf-8")
    r = cli(*table_args(path, tmp_path / "rel", "--engine", "spark", "--report"))
    assert r.exit_code == 2, r.stderr
    assert r.stderr.startswith("error: ") and "--report" in r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert not (tmp_path / "rel").exists()


def test_cli_release_verifies_and_tampering_fails(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('k,c\n"a,1",7\n01,2\n"q""",9\n', encoding="utf-8")
    out = tmp_path / "rel"
    r = cli(*table_args(path, out, "--engine", "spark", "--spark-master", "local[2]"))
    assert r.exit_code == 0, r.stderr
    assert cli("verify", str(out / "certificate.json")).exit_code == 0
    mem = tmp_path / "mem"
    assert cli(*table_args(path, mem)).exit_code == 0
    assert (mem / "certificate.json").read_bytes() == (out / "certificate.json").read_bytes()
    assert read_back(out, "csv", ["k", "c"]).rows() == [("a,1", "7"), ("01", None), ('q"', "9")]
    # a suppressed cell filled back in, in a part file, fails verification
    part = td.dataset_parts(out / "released.csv")[0]
    part.write_text(part.read_text(encoding="utf-8").replace("01,\n", "01,2\n"), encoding="utf-8")
    r = cli("verify", str(out / "certificate.json"))
    assert r.exit_code != 0
    assert not verify_certificate(out / "certificate.json", published=out).consistent
