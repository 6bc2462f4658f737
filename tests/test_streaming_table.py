"""The table release out of core (``engine="streaming"``) gives what the in-memory engine gives.

The oracle is the in-memory polars engine (``engine="polars"``) on the same input: the same
``certificate.json`` byte for byte, the same published table, the same one-line errors naming the
same first offending row, the same command-line exit status and error line. The streaming
engine's own digest of the published rows is checked against
:func:`persuasive.files.table_digest.digest_frame` of the in-memory engine's published frame.
Duplicate keys are checked through each of the streaming engine's paths: sorted keys, the bit
table over integer keys and the hash-partitioned passes (forced by a small memory budget).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from datetime import date
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
from persuasive.files.table_digest import digest_frame
from persuasive.release import stream_keys
from persuasive.release.streaming import StreamingTableRelease
from persuasive.release.tables import release_table

RECEIVER = PoissonReceiver(0.5, 3)
MAX = 2**63 - 1


def both(source: Any, tmp: Path, fmt: str = "csv", **kw: Any) -> tuple[Path, Path, Any, Any]:
    """Release ``source`` with each engine and write both folders."""
    opts = {"keys": "k", "count": "c", "h": 5, "receiver": RECEIVER, **kw}
    mem = release_table(source, **opts)
    stream = release_table(source, engine="streaming", **opts)
    assert isinstance(stream, StreamingTableRelease)
    a, b = tmp / "mem", tmp / "stream"
    mem.write(a, format=fmt)
    stream.write(b, format=fmt)
    return a, b, mem, stream


def assert_same(a: Path, b: Path, fmt: str, mem: Any, stream: Any) -> None:
    assert (a / "certificate.json").read_bytes() == (b / "certificate.json").read_bytes()
    name = f"released.{fmt}"
    if fmt == "csv":
        assert (a / name).read_bytes() == (b / name).read_bytes()
    else:
        x, y = pl.read_parquet(a / name), pl.read_parquet(b / name)
        assert x.schema == y.schema and x.equals(y, null_equal=True)
    assert stream.summary() == mem.summary()
    assert stream.published.collect().equals(mem.published, null_equal=True)
    if fmt == "parquet":  # the digest the streaming engine computed, by another route
        assert stream.expected(name) == digest_frame(mem.published)


def error_of(source: Any, engine: str, **kw: Any) -> str:
    opts = {"keys": "k", "count": "c", "h": 5, "receiver": RECEIVER, **kw}
    with pytest.raises(ValidationError) as exc:
        release_table(source, engine=engine, **opts)
    return str(exc.value)


def same_error(source: Any, **kw: Any) -> str:
    mem, stream = error_of(source, "polars", **kw), error_of(source, "streaming", **kw)
    assert stream == mem
    assert "\n" not in stream
    return stream


# ------------------------------------------------------------------------ random tables
_TEXT = st.text(alphabet=st.sampled_from(list("0123456789abAé中,\"'\n ;")), min_size=0, max_size=6)


@st.composite
def tables(draw: Any) -> pl.DataFrame:
    keys = draw(st.lists(_TEXT, min_size=1, max_size=40, unique=True))
    order = draw(st.sampled_from(["sorted", "given"]))
    if order == "sorted":
        keys = sorted(keys)  # Python's order of str is the code-point order, as polars'
    big = st.integers(min_value=MAX - 5, max_value=MAX)
    counts = draw(
        st.lists(st.one_of(st.integers(0, 12), big), min_size=len(keys), max_size=len(keys))
    )
    return pl.DataFrame({"k": keys, "c": counts}, schema={"k": pl.String, "c": pl.Int64})


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    frame=tables(), fmt=st.sampled_from(["csv", "parquet"]), out=st.sampled_from(["csv", "parquet"])
)
def test_random_tables_give_the_same_release(
    frame: pl.DataFrame, fmt: str, out: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("t")
    path = tmp / f"in.{fmt}"
    if fmt == "csv":
        frame.write_csv(path)
    else:
        frame.write_parquet(path)
    a, b, mem, stream = both(path, tmp, out)
    assert_same(a, b, out, mem, stream)


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
@pytest.mark.parametrize("keys", ["int", "text"])
def test_large_tables_over_several_batches(
    tmp_path: Path, order: str, keys: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from persuasive.release import stream_scan

    monkeypatch.setattr(stream_scan, "BATCH_ROWS", 1 << 14)  # many batches
    rng = np.random.default_rng(7)
    n = 100_000
    k = np.arange(n) * 3 + 1 if order == "sorted" else rng.permutation(n) * 3 + 1
    key = pl.Series("k", k) if keys == "int" else pl.Series("k", k).cast(pl.String).str.zfill(9)
    frame = pl.DataFrame([key, pl.Series("c", rng.integers(0, 10, n))])
    path = tmp_path / "in.parquet"
    frame.write_parquet(path)
    a, b, mem, stream = both(path, tmp_path, "parquet")
    assert_same(a, b, "parquet", mem, stream)
    want = "sorted" if order == "sorted" else ("bits" if keys == "int" else "parts")
    assert stream.unique_by == want


def test_lazy_frame_and_data_file_sources(tmp_path: Path) -> None:
    frame = pl.DataFrame({"k": ["b", "a", "c"], "c": [3, 9, 0]})
    path = tmp_path / "in.csv"
    frame.write_csv(path, separator=";")
    (tmp_path / "x").mkdir()
    a, b, mem, stream = both(DataFile(path, separator=";"), tmp_path / "x")
    assert_same(a, b, "csv", mem, stream)
    (tmp_path / "y").mkdir()
    a, b, mem, stream = both(frame.lazy(), tmp_path / "y")
    assert_same(a, b, "csv", mem, stream)


def test_several_keys(tmp_path: Path) -> None:
    frame = pl.DataFrame({"a": [2, 1, 2, 1], "b": ["x", "y", "y", "x"], "c": [7, 1, 5, 0]})
    opts = {"keys": ["a", "b"], "count": "c", "h": 5, "receiver": RECEIVER}
    mem = release_table(frame, **opts)
    stream = release_table(frame.lazy(), engine="streaming", **opts)
    mem.write(tmp_path / "m")
    stream.write(tmp_path / "s")
    for f in ("certificate.json", "released.csv"):
        assert (tmp_path / "m" / f).read_bytes() == (tmp_path / "s" / f).read_bytes()
    # a missing combination is refused for zero-filling, accepted as a structural zero
    part = frame.head(3)
    msg = error_of(part, "streaming", keys=["a", "b"])
    assert "absent='structural'" in msg and "engine='polars'" in msg
    opts["absent"] = "structural"
    mem = release_table(part, **opts)
    stream = release_table(part, engine="streaming", **opts)
    mem.write(tmp_path / "m2")
    stream.write(tmp_path / "s2")
    for f in ("certificate.json", "released.csv"):
        assert (tmp_path / "m2" / f).read_bytes() == (tmp_path / "s2" / f).read_bytes()


# ------------------------------------------------------------------------ bad inputs
BAD_CSV = {
    "missing column": "k,x\na,1\n",
    "decimal point": "k,c\na,1\nb,3.0\nc,2\n",
    "negative": "k,c\na,1\nb,2\nc,-4\n",
    "not a count": "k,c\na,1\nb,three\n",
    "too large": f"k,c\na,1\nb,{2**63}\n",
    "missing count": "k,c\na,1\nb,\n",
    "missing key": "k,c\na,1\n,2\n",
    "duplicated header": "k,c,k\na,1,b\n",
    "empty": "k,c\n",
    "duplicate key": "k,c\nb,1\na,2\nc,3\na,4\nb,5\n",
    "two failures": "k,c\n,1\nb,-2\n",
}


@pytest.mark.parametrize("case", sorted(BAD_CSV))
def test_bad_csv_same_message(tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(BAD_CSV[case], encoding="utf-8")
    same_error(path)


def test_bad_rows_named_in_a_later_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from persuasive.release import stream_scan

    monkeypatch.setattr(stream_scan, "BATCH_ROWS", 1000)
    n = 10_000
    c = np.arange(n) % 9
    for where, bad in ((7_321, -3), (9_999, -1)):
        v = c.copy()
        v[where] = bad
        v[where + 1 :: 500] = -7  # later failures of the same check
        path = tmp_path / f"bad{where}.parquet"
        pl.DataFrame({"k": np.arange(n), "c": v}).write_parquet(path)
        msg = same_error(path)
        assert f"row {where + 1} " in msg


@pytest.mark.parametrize("budget", [None, 4096])
@pytest.mark.parametrize("keys", ["int", "text", "pair"])
def test_first_duplicate_named_as_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int | None, keys: str
) -> None:
    if budget is not None:  # force the hash-partitioned passes
        monkeypatch.setattr(stream_keys, "MEMORY_BUDGET", budget)
    rng = np.random.default_rng(3)
    n = 5_000
    k = rng.permutation(n)
    # two duplicated keys: the one whose first row is earlier is named, at its first two rows
    k[4000], k[4500], k[4900] = k[10], k[20], k[20]
    frame = pl.DataFrame({"k": k, "c": np.arange(n) % 9})
    if keys == "text":
        frame = frame.with_columns(pl.col("k").cast(pl.String))
    if keys == "pair":
        frame = frame.with_columns(pl.col("k") // 100, (pl.col("k") % 100).alias("k2"))
    path = tmp_path / "dup.parquet"
    frame.write_parquet(path)
    kw = {"keys": ["k", "k2"]} if keys == "pair" else {}
    msg = same_error(path, **kw)
    assert "rows 11 and 4001" in msg


def test_unique_through_partitions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_keys, "MEMORY_BUDGET", 4096)
    frame = pl.DataFrame({"k": [str(x) for x in np.random.default_rng(1).permutation(3000)]})
    frame = frame.with_columns(pl.Series("c", np.arange(3000) % 7))
    rel = release_table(
        frame.lazy(), keys="k", count="c", h=5, receiver=RECEIVER, engine="streaming"
    )
    assert rel.unique_by == "parts"
    assert stream_keys.partition_count(3000, 8.0, 4096) > 1


def test_refusals_name_the_in_memory_engine(tmp_path: Path) -> None:
    frame = pl.DataFrame({"k": ["a", "b"], "c": [1, 2]})
    msg = error_of(frame, "streaming", microdata=True)
    assert "engine='polars'" in msg
    rel = release_table(frame, keys="k", count="c", h=5, receiver=RECEIVER, engine="streaming")
    with pytest.raises(ValidationError, match="--report"):
        rel.write(tmp_path / "r", report=True)
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------------ command line
runner = CliRunner()


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


@pytest.mark.parametrize("case", ["negative", "duplicate key", "missing column"])
def test_cli_same_exit_and_error_line(tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(BAD_CSV[case], encoding="utf-8")
    common = ["release", "table", str(path), "--keys", "k", "--count", "c", "--h", "5"]
    common += ["--poisson-mean", "0.5:3"]
    runs = [
        cli(*common, "--out", str(tmp_path / e), *([] if e == "polars" else ["--engine", e]))
        for e in ("polars", "streaming")
    ]
    for r in runs:
        assert r.exit_code == 2, r.stderr
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("error: ")
    assert runs[0].stderr == runs[1].stderr
    assert not (tmp_path / "polars").exists() and not (tmp_path / "streaming").exists()


def test_cli_streaming_release_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('k,c\n"a,1",7\n01,2\n"q""",9\n', encoding="utf-8")
    out = tmp_path / "rel"
    args = ["release", "table", str(path), "--keys", "k", "--count", "c", "--h", "5"]
    r = cli(*args, "--poisson-mean", "0.5:3", "--out", str(out), "--engine", "streaming")
    assert r.exit_code == 0, r.stderr
    assert cli("verify", str(out / "certificate.json")).exit_code == 0
    assert pl.read_csv(out / "released.csv", infer_schema=False).rows() == [
        ("a,1", "7"),
        ("01", None),
        ('q"', "9"),
    ]


DRIVER = """
import os, signal, sys
from persuasive.release import stream_scan, streaming

at = sys.argv[1]
stream_scan.BATCH_ROWS = 1 << 16  # several batches
fire = lambda: os.kill(os.getpid(), signal.SIGTERM)
if at == "validate":  # between two batches of the first pass
    real = stream_scan.Chunks.update
    calls = []

    def update(self, part):
        calls.append(1)
        if len(calls) == 2:
            fire()
        return real(self, part)

    stream_scan.Chunks.update = update
else:  # once the published table is sunk into the private folder
    real_files = streaming.StreamingTableRelease.published_files

    def published_files(self, fmt):
        def wrap(w):
            def write(path):
                w(path)
                assert path.exists()
                fire()
            return write
        return {name: wrap(w) for name, w in real_files(self, fmt).items()}

    streaming.StreamingTableRelease.published_files = published_files
from persuasive.cli import app

app(args=sys.argv[2:], prog_name="persuasive")
"""


@pytest.mark.parametrize("at", ["validate", "write"])
def test_sigterm_leaves_no_temporary_folder(tmp_path: Path, at: str) -> None:
    n = 200_000
    src = tmp_path / "in" / "t.csv"
    src.parent.mkdir()
    frame = pl.DataFrame({"k": np.random.default_rng(0).permutation(n), "c": np.arange(n) % 9})
    frame.write_csv(src)
    parent = tmp_path / "out"
    parent.mkdir()
    args = ["release", "table", str(src), "--keys", "k", "--count", "c", "--h", "5"]
    args += ["--poisson-mean", "0.5:3", "--out", str(parent / "rel"), "--engine", "streaming"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, at, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: interrupted"), proc.stderr
    assert list(parent.iterdir()) == []


TYPED = {
    "negative int keys": pl.DataFrame({"k": [-5, 3, -1], "c": [1, 7, 9]}),
    "date keys": pl.DataFrame({"k": [date(2020, 1, 3), date(2019, 1, 1)], "c": [1, 7]}),
    "float keys": pl.DataFrame({"k": [1.5, 0.1, 1e20], "c": [1, 7, 9]}),
    "float counts": pl.DataFrame({"k": ["a", "b"], "c": [3.0, 9.0]}),
    "uint64 counts": pl.DataFrame(
        {"k": ["a", "b"], "c": [3, MAX]}, schema={"k": pl.String, "c": pl.UInt64}
    ),
}


@pytest.mark.parametrize("out", ["csv", "parquet"])
@pytest.mark.parametrize("case", sorted(TYPED))
def test_typed_parquet_columns(tmp_path: Path, case: str, out: str) -> None:
    path = tmp_path / "in.parquet"
    TYPED[case].write_parquet(path)
    a, b, mem, stream = both(path, tmp_path, out)
    assert_same(a, b, out, mem, stream)


BAD_PARQUET = {
    "fractional": pl.DataFrame({"k": ["a", "b", "c"], "c": [1.0, 2.5, 3.5]}),
    "nan": pl.DataFrame({"k": ["a", "b"], "c": [1.0, float("nan")]}),
    "infinite": pl.DataFrame({"k": ["a", "b"], "c": [1.0, float("inf")]}),
    "above 2^63-1": pl.DataFrame(
        {"k": ["a", "b"], "c": [1, 2**63]}, schema={"k": pl.String, "c": pl.UInt64}
    ),
    "negative int32": pl.DataFrame(
        {"k": [1, 2], "c": [4, -2]}, schema={"k": pl.Int64, "c": pl.Int32}
    ),
    "null key": pl.DataFrame({"k": [1, None], "c": [4, 2]}),
    "text counts": pl.DataFrame({"k": [1, 2], "c": ["4", "x"]}),
}


@pytest.mark.parametrize("case", sorted(BAD_PARQUET))
def test_bad_parquet_same_message(tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.parquet"
    BAD_PARQUET[case].write_parquet(path)
    same_error(path)


# ------------------------------------------------------------------------ publication statistics
def _in_memory_stats(frame: pl.LazyFrame, keys: list[str], count: str, h: int) -> dict[str, Any]:
    """The statistics query of ``TableKind.read_publication`` (the oracle), in memory."""
    from persuasive.files.reading import ROW, count_checks, count_expr

    dtype = frame.collect_schema()[count]
    checks = [c for c in count_checks(count, dtype) if "missing" not in c.message]
    counts = count_expr(count, dtype)
    raw = frame.with_row_index(ROW)
    key = pl.struct(keys) if len(keys) > 1 else pl.col(keys[0])
    return (
        raw.select(
            pl.len().alias("n"),
            pl.col(count).is_null().sum().alias("suppressed"),
            key.n_unique().alias("unique"),
            *(pl.col(k).n_unique().alias(f"levels{i}") for i, k in enumerate(keys)),
            pl.col(ROW).filter(counts.is_not_null() & (counts < h)).first().alias("below"),
            *(
                pl.col(ROW).filter(c.fails & pl.col(count).is_not_null()).first().alias(f"bad{i}")
                for i, c in enumerate(checks)
            ),
        )
        .collect()
        .row(0, named=True)
    )


PUBLISHED = {
    "good text": "k,c\nb,\na,7\nc,9\n",
    "shown below h": "k,c\na,7\nb,3\nc,2\n",
    "bad counts": "k,c\na,7\nb,x\nc,-1\nd,4.0\n",
    "duplicates": "k,c\na,7\nb,\na,\nb,8\nc,9\n",
    "sorted": "k,c\na,7\nb,\nc,9\n",
    "two keys": "k,j,c\na,1,7\na,2,\nb,1,9\n",
}


@pytest.mark.parametrize("case", sorted(PUBLISHED))
@pytest.mark.parametrize("budget", [None, 64])
def test_publication_stats_as_read_publication(
    tmp_path: Path, case: str, budget: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from persuasive.files.reading import count_checks, scan
    from persuasive.release.stream_publication import publication_stats

    if budget is not None:
        monkeypatch.setattr(stream_keys, "MEMORY_BUDGET", budget)
    path = tmp_path / "released.csv"
    path.write_text(PUBLISHED[case], encoding="utf-8")
    keys = ["k", "j"] if case == "two keys" else ["k"]
    frame = scan(path, text=[*keys, "c"])
    checks = [ch for ch in count_checks("c", pl.String()) if "missing" not in ch.message]
    assert publication_stats(frame, keys, "c", 5, checks) == _in_memory_stats(frame, keys, "c", 5)


def test_publication_stats_of_a_streamed_release(tmp_path: Path) -> None:
    from persuasive.files.reading import count_checks, scan
    from persuasive.release.stream_publication import publication_stats

    rng = np.random.default_rng(5)
    n = 50_000
    pl.DataFrame({"k": rng.permutation(n), "c": rng.integers(0, 9, n)}).write_parquet(
        tmp_path / "in.parquet"
    )
    rel = release_table(
        tmp_path / "in.parquet", keys="k", count="c", h=5, receiver=RECEIVER, engine="streaming"
    )
    rel.write(tmp_path / "rel", format="parquet")
    frame = scan(tmp_path / "rel" / "released.parquet")
    checks = [ch for ch in count_checks("c", pl.Int64()) if "missing" not in ch.message]
    got = publication_stats(frame, ["k"], "c", 5, checks)
    assert got == _in_memory_stats(frame, ["k"], "c", 5)
    assert got["n"] == n and got["below"] is None


#: What the table kind finds in each publication of PUBLISHED (absent="zero").
FOUND = {
    "good text": [],
    "shown below h": ["(k='b') shows 3, below h = 5"],  # the first such cell
    "bad counts": ["at row 2", "at row 3", "at row 4"],
    "duplicates": ["2 key(s) appear more than once"],
    "sorted": [],
    "two keys": ["lacks 1 of the 4 combinations"],
}


@pytest.mark.parametrize("case", sorted(PUBLISHED))
def test_the_table_kind_reads_a_publication_in_bounded_memory(tmp_path: Path, case: str) -> None:
    """The table kind's reading of a publication (publication_stats in one streamed pass):
    the facts of the in-memory query (the oracle) and a problem for each defect."""
    from persuasive.files.reading import scan
    from persuasive.report.kinds.table import KIND, TableParams

    path = tmp_path / "released.csv"
    path.write_text(PUBLISHED[case], encoding="utf-8")
    keys = ("k", "j") if case == "two keys" else ("k",)
    oracle = _in_memory_stats(scan(path, text=[*keys, "c"]), list(keys), "c", 5)
    for absent in ("zero", "structural"):
        got = KIND.read_publication(
            TableParams(5, 5, RECEIVER, keys, "c", None, absent), {"released.csv": path}
        )
        assert (got.facts["cells"], got.facts["suppressed"]) == (oracle["n"], oracle["suppressed"])
        want = [w for w in FOUND[case] if absent == "zero" or "combinations" not in w]
        assert len(got.problems) == len(want), got.problems
        assert all(any(w in m for m in got.problems) for w in want), got.problems
        if absent == "structural" and oracle["unique"] == oracle["n"]:
            levels = math.prod(oracle[f"levels{i}"] for i in range(len(keys)))
            assert got.facts["structural_cells"] == levels - oracle["n"]


@pytest.mark.parametrize("budget", [None, 4096])
def test_keys_named_like_the_checks_own_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int | None
) -> None:
    if budget is not None:
        monkeypatch.setattr(stream_keys, "MEMORY_BUDGET", budget)
    frame = pl.DataFrame({"a": ["x", "y", "x", "y"], "b": [2, 1, 2, 1], "c": [1, 2, 3, 4]})
    path = tmp_path / "dup.csv"
    frame.write_csv(path)
    msg = same_error(path, keys=["a", "b"])
    assert "rows 1 and 3" in msg
    good = pl.DataFrame({"__below": ["x", "y"], "__persuasive_row__below": ["p", "q"], "c": [7, 1]})
    (tmp_path / "g").mkdir()
    keys = ["__below", "__persuasive_row__below"]
    a, b, mem, stream = both(good.lazy(), tmp_path / "g", keys=keys, absent="structural")
    assert_same(a, b, "csv", mem, stream)
