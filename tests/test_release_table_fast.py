"""The in-memory fast path of ``release_table`` gives what the generic polars path gives.

A polars DataFrame whose count column is of an integer type is validated by numpy and polars
passes over its buffers (:func:`persuasive.release.table_cells._fast_cells`); the same frame
given as a LazyFrame takes the generic path (one polars query, first failing row of each check). On
random frames — nulls, negatives, counts above 2^63 - 1, duplicates in sorted and shuffled
order, compact / offset / sparse integer keys of every width, String keys, two-column keys,
frames in several chunks — both must publish identical frames (and cells, losses, summaries) or
raise identical errors: with the default settings, with tiny blocks that split every pass
across the worker threads, and as on one CPU (no worker threads: bit-sum key tables).
"""

from __future__ import annotations

import contextlib
import itertools
import signal
import zlib
from collections.abc import Iterator
from datetime import date
from unittest import mock

import numpy as np
import polars as pl
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from persuasive.classes.receivers import PoissonReceiver
from persuasive.errors import ValidationError
from persuasive.release import table_cells as T
from persuasive.release import table_keys as K
from persuasive.release import table_threads as P
from persuasive.release.tables import TableRelease, read_cells, release_table

RECEIVER = PoissonReceiver(0.5, 3.0)
INT_TYPES = [pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64]


def _fits(dtype: pl.DataType, values: list[int]) -> bool:
    info = np.iinfo(np.dtype(str(dtype).lower()))
    return all(info.min <= v <= info.max for v in values)


#: Settings: the defaults; tiny blocks that split every pass across threads; tiny blocks on one
#: CPU (no worker threads), where every key table is of bit sums.
BLOCKS: list[dict[str, object]] = [
    {"_BLOCK": P._BLOCK},
    {"_BLOCK": 8, "_PARALLEL_ROWS": 16, "_PARALLEL_SCATTER_ROWS": 16},
    {"_BLOCK": 8, "_PARALLEL_ROWS": 16, "_BOOL_SLOTS": 0, "_executor": lambda: None},
]


@contextlib.contextmanager
def _patched(patches: dict[str, object]) -> Iterator[None]:
    """The settings patched in every module of the fast path that reads them (the cells, the
    keys and the thread pool: each reads its own binding of a shared name)."""
    with contextlib.ExitStack() as stack:
        for name, value in patches.items():
            found = [m for m in (T, K, P) if hasattr(m, name)]
            assert found, name
            for module in found:
                stack.enter_context(mock.patch.object(module, name, value))
        yield


def _outcome(
    source: pl.DataFrame | pl.LazyFrame, keys: list[str], h: int
) -> tuple[str | None, TableRelease | None]:
    try:  # structural: the input's cells exactly, no zero cells added (tests/test_sparse.py)
        rel = release_table(
            source, keys=keys, count="n", h=h, receiver=RECEIVER, absent="structural"
        )
    except ValidationError as exc:
        return str(exc), None
    return None, rel


def _compare(
    df: pl.DataFrame, keys: list[str], h: int, blocks: list[dict[str, object]] = BLOCKS
) -> tuple[str | None, TableRelease | None]:
    """Run the fast path (the frame) and the generic path (its LazyFrame); they must agree."""
    gen_err, gen = _outcome(df.lazy(), keys, h)
    for patches in blocks:
        with _patched(patches):
            fast_err, fast = _outcome(df, keys, h)
        assert fast_err == gen_err
        if gen is not None:
            assert fast is not None
            assert_frame_equal(fast.published, gen.published)
            assert fast.published.schema == gen.published.schema
            assert_frame_equal(fast.cells, gen.cells)
            assert_frame_equal(fast.table, gen.table)
            assert fast.summary() == gen.summary()
            # ... and the fast path was taken (not a silent fall-back).
            with _patched(patches):
                got = T._fast_cells(df, tuple(keys), "n")
            assert got is not None
            assert_frame_equal(
                read_cells(df, tuple(keys), "n"), read_cells(df.lazy(), tuple(keys), "n")
            )
    return gen_err, gen


def _first(values: list[object], bad: object) -> int | None:
    return next((i for i, v in enumerate(values) if bad(v)), None)  # type: ignore[operator]


def _expected_error(columns: dict[str, list[object]], keys: list[str]) -> str | None:
    """An independent oracle for the start of the error message (the generic path's order:
    missing keys, missing counts, negative counts, counts above 2^63 - 1, duplicates)."""
    counts = columns["n"]
    for k in keys:
        i = _first(columns[k], lambda v: v is None)
        if i is not None:
            return f"column {k!r} at row {i + 1}"
    for bad in (
        lambda v: v is None,
        lambda v: v is not None and v < 0,
        lambda v: v is not None and v > 2**63 - 1,
    ):
        i = _first(counts, bad)
        if i is not None:
            return f"column 'n' at row {i + 1}"
    rows = list(zip(*(columns[k] for k in keys), strict=True))
    first: dict[object, int] = {}
    second: dict[object, int] = {}
    for i, key in enumerate(rows):
        if key not in first:
            first[key] = i
        elif key not in second:
            second[key] = i
    if not second:
        return None
    key = min(second, key=first.__getitem__)  # the duplicated key seen first
    text = ", ".join(f"{k}={v!r}" for k, v in zip(keys, key, strict=True))  # type: ignore[call-overload]
    return f"duplicated key ({text}) at rows {first[key] + 1} and {second[key] + 1}"


@st.composite
def tables(draw: st.DrawFn) -> tuple[dict[str, list[object]], dict[str, pl.DataType], list[str]]:
    n = draw(st.integers(1, 70))
    kind = draw(st.sampled_from(["int", "int", "string", "two", "two-mixed"]))
    span = draw(st.sampled_from(["compact", "offset", "sparse"]))
    if span == "sparse":
        base = draw(st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n, unique=True))
    else:
        spread = draw(st.sampled_from([n, 2 * n, 9 * n]))
        base = draw(st.lists(st.integers(0, spread), min_size=n, max_size=n, unique=True))
        if span == "offset":
            shift = draw(st.sampled_from([-(10**12), -7, 5 * n, 10**12, 2**63 - 20 * n - 1]))
            base = [b + shift for b in base]
    if draw(st.booleans()):
        base = sorted(base)
    else:
        base = draw(st.permutations(base))
    if n >= 2 and draw(st.integers(0, 3)) == 0:  # a duplicate: adjacent or anywhere
        i = draw(st.integers(0, n - 2))
        j = i + 1 if draw(st.booleans()) else draw(st.integers(0, n - 1))
        base = list(base)
        base[j] = base[i]
    columns: dict[str, list[object]] = {}
    dtypes: dict[str, pl.DataType] = {}
    if kind == "int":
        keys = ["k"]
        columns["k"] = list(base)
        dtypes["k"] = draw(st.sampled_from([d for d in INT_TYPES if _fits(d, base)] or [pl.Int64]))
    elif kind == "string":
        keys = ["k"]
        text = [f"{b:+021d}" if draw(st.booleans()) else str(b) for b in base]
        columns["k"] = sorted(text) if base == sorted(base) else text
        dtypes["k"] = pl.String
    else:
        width = draw(st.sampled_from([1, 3, 1000, 2**40]))
        keys = ["k", "k2"]
        high = [b // width for b in base]
        columns["k"] = [f"r{v}" for v in high] if kind == "two-mixed" else high
        columns["k2"] = [b % width for b in base]
        dtypes["k"] = pl.String if kind == "two-mixed" else pl.Int64
        dtypes["k2"] = draw(
            st.sampled_from([d for d in INT_TYPES if _fits(d, columns["k2"])])  # type: ignore[arg-type]
        )
    counts: list[object] = draw(
        st.lists(st.integers(0, 12) | st.integers(0, 2**63 - 1), min_size=n, max_size=n)
    )
    if draw(st.integers(0, 3)) == 0:
        counts[draw(st.integers(0, n - 1))] = draw(st.sampled_from([-1, -(2**63), 2**63]))
    columns["n"] = counts
    for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 3)) == 0 else 0):
        column = draw(st.sampled_from([*keys, "n"]))
        columns[column] = list(columns[column])
        columns[column][draw(st.integers(0, n - 1))] = None
    ints = [c for c in columns["n"] if c is not None]
    dtypes["n"] = draw(st.sampled_from([d for d in INT_TYPES if _fits(d, ints)]))  # type: ignore[arg-type]
    return columns, dtypes, keys


def _frame(
    columns: dict[str, list[object]], dtypes: dict[str, pl.DataType], chunks: int
) -> pl.DataFrame:
    df = pl.DataFrame(
        [pl.Series(name, values, dtype=dtypes[name]) for name, values in columns.items()]
    )
    if chunks > 1 and df.height >= chunks:
        cuts = np.linspace(0, df.height, chunks + 1).astype(int)
        df = pl.concat([df[a:b] for a, b in itertools.pairwise(cuts)], rechunk=False)
    return df


@settings(max_examples=50, deadline=None)
@given(table=tables(), h=st.integers(2, 12), chunks=st.sampled_from([1, 1, 3]))
def test_fast_and_generic_paths_agree(
    table: tuple[dict[str, list[object]], dict[str, pl.DataType], list[str]], h: int, chunks: int
) -> None:
    columns, dtypes, keys = table
    df = _frame(columns, dtypes, chunks)
    err, rel = _compare(df, keys, h)
    expected = _expected_error(columns, keys)
    event(f"{dtypes[keys[-1]]} keys x{len(keys)}, {df.n_chunks()} chunk(s)")
    event("published" if err is None else err.split(" at ")[0].split(" (")[0])
    if expected is None:
        assert err is None and rel is not None
        counts = columns["n"]
        assert rel.published.get_column("n").to_list() == [None if c < h else c for c in counts]  # type: ignore[operator]
        for k in keys:
            assert rel.published.get_column(k).to_list() == columns[k]
    else:
        assert err is not None and err.startswith(expected), (err, expected)


@settings(max_examples=50, deadline=None)
@given(
    values=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=50),
    compact=st.booleans(),
    unsigned=st.booleans(),
    two=st.booleans(),
)
def test_bitmap_check_matches_a_set(
    values: list[int], compact: bool, unsigned: bool, two: bool
) -> None:
    n = len(values)
    if compact:
        lo = values[0]
        values = [lo + (v % (3 * n)) for v in values]
        values = [v if v < 2**63 else v - 3 * n for v in values]
    arr = np.array(values, dtype=np.int64)
    if unsigned:
        arr = arr.view(np.uint64)
    cols = [arr // 7, arr % 7] if two else [arr]
    truth = len({tuple(int(c[i]) for c in cols) for i in range(n)}) == n
    for patches in BLOCKS:
        with _patched(patches):
            got = K._dense_distinct(cols)
        assert got is None or got == truth
    span = int(arr.max()) - int(arr.min()) + 1
    if not two and span <= K._DENSE_KEY_SPAN * n:
        assert got == truth  # compact keys never go to hashing


@pytest.mark.parametrize("layout", ["sorted", "shuffled", "direct"])
def test_large_frame_split_across_threads_names_the_first_failing_row(layout: str) -> None:
    n = (1 << 20) + 12_345
    with _patched({"_PARALLEL_ROWS": 1 << 20}):
        _check_large_frame(n, layout)


def _check_large_frame(n: int, layout: str) -> None:
    rng = np.random.default_rng(7)
    keys = np.arange(n, dtype=np.int64) * (1 if layout == "direct" else 3) - 1000
    if layout != "sorted":
        keys = rng.permutation(keys)
    counts = rng.poisson(6.0, n).astype(np.int64)
    ok = pl.DataFrame({"k": keys, "n": counts})
    default = BLOCKS[:1]
    _compare(ok, ["k"], 5, default)
    rel = release_table(ok, keys="k", count="n", h=5, receiver=RECEIVER)
    # No true value behind the null bits: every suppressed entry of the values buffer is 0.
    published = rel.published["n"].to_arrow()
    values = np.frombuffer(published.buffers()[1], dtype=np.int64)[: len(published)]
    assert np.array_equal(values, np.where(counts >= 5, counts, 0))
    assert published.null_count == int(np.count_nonzero(counts < 5))
    assert rel.published["n"].null_count() == int((counts < 5).sum())
    for bad_row in (n - 3, n // 2 + 7):
        neg = counts.copy()
        neg[bad_row] = -2
        neg[n - 1] = -5
        err, _ = _compare(pl.DataFrame({"k": keys, "n": neg}), ["k"], 5, default)
        assert err is not None and err.startswith(f"column 'n' at row {bad_row + 1} ")
        dup = keys.copy()
        twin = bad_row - 1 if layout == "sorted" else 11
        dup[bad_row] = dup[twin]
        err, _ = _compare(pl.DataFrame({"k": dup, "n": counts}), ["k"], 5, default)
        assert err is not None
        assert err.startswith(f"duplicated key (k={int(dup[twin])}) at rows {twin + 1} and ")
        assert f" and {bad_row + 1};" in err


def test_worker_threads_leave_the_interrupting_signals_to_the_main_thread() -> None:
    pool = P._executor()
    if pool is None:
        pytest.skip("one CPU: no worker threads")
    mask = pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, []).result()
    assert {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} <= set(mask)


KEY_KINDS = [
    "int-compact",
    "int-offset",
    "int-sparse",
    "uint64-high",
    "string",
    "two-int",
    "two-mixed",
]
DEFECTS = [
    "none",
    "null-key",
    "null-count",
    "negative",
    "above-max",
    "duplicate-adjacent",
    "duplicate-far",
]


def _grid_frame(kind: str, layout: str, defect: str, n: int = 200) -> pl.DataFrame:
    rng = np.random.default_rng(zlib.crc32(f"{kind} {layout} {defect}".encode()))
    base = {
        "int-compact": np.arange(n),
        "int-offset": np.arange(n) * 2 - 10**15,
        "int-sparse": rng.choice(2**62, n, replace=False) - 2**61,
        "uint64-high": np.arange(n, dtype=np.uint64) + np.uint64(2**64 - 10 * n),
        "string": np.arange(n),
        "two-int": np.arange(n),
        "two-mixed": np.arange(n),
    }[kind]
    order = np.arange(n) if layout == "sorted" else rng.permutation(n)
    base = base[order]
    if defect == "duplicate-adjacent":
        base[n // 2] = base[n // 2 - 1]
    elif defect == "duplicate-far":
        base[n - 3] = base[5]
    if kind == "string":
        cols = {"k": pl.Series([f"c{int(b):05d}" for b in base])}
    elif kind.startswith("two"):
        hi, lo = base // 10, base % 10
        cols = {
            "k": pl.Series([f"r{int(v):03d}" for v in hi])
            if kind == "two-mixed"
            else pl.Series(hi),
            "k2": pl.Series(lo.astype(np.int32)),
        }
    else:
        cols = {"k": pl.Series(base)}
    counts = rng.poisson(5.0, n).astype(np.int64)
    df = pl.DataFrame({**cols, "n": counts})
    if defect == "null-key":
        df = df.with_columns(
            pl.when(pl.int_range(n) == 17).then(None).otherwise(pl.col("k")).alias("k")
        )
    elif defect == "null-count":
        df = df.with_columns(
            pl.when(pl.int_range(n) == 33).then(None).otherwise(pl.col("n")).alias("n")
        )
    elif defect == "negative":
        df = df.with_columns(
            pl.when(pl.int_range(n) >= 150).then(-1).otherwise(pl.col("n")).alias("n")
        )
    elif defect == "above-max":
        df = df.with_columns(pl.col("n").cast(pl.UInt64)).with_columns(
            pl.when(pl.int_range(n) == 99)
            .then(pl.lit(2**63, pl.UInt64))
            .otherwise(pl.col("n"))
            .alias("n")
        )
    return df


@pytest.mark.parametrize("defect", DEFECTS)
@pytest.mark.parametrize("layout", ["sorted", "shuffled"])
@pytest.mark.parametrize("kind", KEY_KINDS)
def test_every_key_kind_and_defect(kind: str, layout: str, defect: str) -> None:
    df = _grid_frame(kind, layout, defect)
    keys = ["k", "k2"] if kind.startswith("two") else ["k"]
    err, rel = _compare(df, keys, 5)
    columns = {name: df.get_column(name).to_list() for name in df.columns}
    expected = _expected_error(columns, keys)
    if defect == "none":
        assert err is None and expected is None and rel is not None
    else:
        assert expected is not None and err is not None and err.startswith(expected), (
            err,
            expected,
        )


@pytest.mark.parametrize(
    "column",
    [
        pl.Series("k", [0.5, -0.0, 0.0, 2.0]),
        pl.Series("k", [-0.0, 0.0, 1.0]),
        pl.Series("k", [1.0, float("nan"), float("nan")]),
        pl.Series("k", [1.0, 2.0, float("nan")]),
        pl.Series("k", [float("nan"), 1.0]),
        pl.Series("k", [False, True]),
        pl.Series("k", [True, False, True]),
        pl.Series("k", [date(2020, 1, 2), date(2020, 1, 1), date(2020, 1, 3)]),
        pl.Series("k", [date(2020, 1, 1), date(2020, 1, 1)]),
        pl.Series("k", [b"a", b"b", b"a"]),
        pl.Series("k", ["b", "a", "c"]).cast(pl.Categorical),
        pl.Series("k", [[1], [2]]),
    ],
    ids=repr,
)
def test_other_key_types_agree(column: pl.Series) -> None:
    df = pl.DataFrame([column, pl.Series("n", list(range(3, 3 + column.len())))])
    gen_err, gen = _outcome(df.lazy(), ["k"], 4)
    fast_err, fast = _outcome(df, ["k"], 4)
    assert fast_err == gen_err
    if gen is not None:
        assert fast is not None
        assert_frame_equal(fast.published, gen.published)


@pytest.mark.parametrize("keys", [["k"], ["k", "k2"]])
def test_hash_collisions_fall_back_to_exact_hashing(keys: list[str]) -> None:
    df = pl.DataFrame({"k": ["x", "y", "z", "w"], "k2": [1, 1, 2, 2], "n": [1, 5, 7, 9]})
    assert K._sorted_distinct(df, tuple(keys)) is True
    assert K._sorted_distinct(df.with_columns(k=pl.lit("x")), ("k",)) is None
    constant = pl.Series("hash", [7] * 4, dtype=pl.UInt64)
    with mock.patch.object(pl.DataFrame, "hash_rows", lambda *_a, **_k: constant):
        assert K._sorted_distinct(df, tuple(keys)) is None  # every hash collides
        rel = release_table(df, keys=keys, count="n", h=4, receiver=RECEIVER, absent="structural")
        assert rel.published["n"].to_list() == [None, 5, 7, 9]
        with pytest.raises(ValidationError, match=r"duplicated key \(k='x'"):
            release_table(
                df.with_columns(k=pl.lit("x"), k2=pl.lit(1)),
                keys=keys,
                count="n",
                h=4,
                receiver=RECEIVER,
            )


def test_sparse_integer_keys_are_sorted_exactly() -> None:
    keys = np.array([10**15, -(2**63), 2**63 - 1, 5, -3], dtype=np.int64)
    df = pl.DataFrame({"k": keys, "n": np.arange(5)})
    assert K._dense_distinct([keys]) is None and K._sorted_distinct(df, ("k",)) is True
    keys[3] = 2**63 - 1
    assert K._sorted_distinct(df.with_columns(k=pl.Series(keys)), ("k",)) is False
    _compare(df.with_columns(k=pl.Series(keys)), ["k"], 3)


@pytest.mark.parametrize(
    "df",
    [
        pl.DataFrame({"k": [], "n": []}, schema={"k": pl.Int64, "n": pl.Int64}),
        pl.DataFrame({"k": [1, 2, 3], "n": [1.0, 7.0, 12.0]}),
        pl.DataFrame({"k": [1, 2, 3], "n": [1.0, 7.5, 12.0]}),
        pl.DataFrame({"k": [1, 2, 3], "n": ["1", "7", "12"]}),
        pl.DataFrame({"k": [1, 2, 3], "n": ["1", "x", "12"]}),
        pl.DataFrame({"k": [1, 2, 3], "n": [True, False, True]}),
    ],
    ids=lambda df: f"{df.height} rows of {df.schema['n']}",
)
def test_other_count_types_and_empty_frames_take_the_generic_path(df: pl.DataFrame) -> None:
    assert T._fast_cells(df, ("k",), "n") is None
    gen_err, gen = _outcome(df.lazy(), ["k"], 4)
    fast_err, fast = _outcome(df, ["k"], 4)
    assert fast_err == gen_err
    if gen is not None:
        assert fast is not None
        assert_frame_equal(fast.published, gen.published)


@pytest.mark.parametrize(
    ("keys", "dtype"),
    [
        ([1, -4, 2, 3], pl.Int64),  # -4 wraps onto slot 1 of the 5-slot direct table
        ([1, -4, 2, -4], pl.Int64),
        ([0, -1, 2, 3], pl.Int64),  # -1 wraps onto slot 4: distinct slots
        ([2**64 - 4, 1, 2, 3], pl.UInt64),  # as int64: -4, wraps onto slot 1
        ([2**64 - 4, 1, 2, 2**64 - 4], pl.UInt64),
        ([4, 1, 2, 3], pl.Int64),  # from 1: the last slot
        ([-128, 0, 127, -1], pl.Int8),
        ([9, 17, 1, 25], pl.Int32),  # out of the direct table, compact range
    ],
)
def test_direct_table_collisions_are_resolved_exactly(keys: list[int], dtype: pl.DataType) -> None:
    df = pl.DataFrame([pl.Series("k", keys, dtype=dtype), pl.Series("n", [5, 6, 7, 8])])
    truth = len(set(keys)) == len(keys)
    compact = max(keys) - min(keys) < K._DENSE_KEY_SPAN * len(keys)
    for patches in BLOCKS:
        with _patched(patches):
            got = K._dense_distinct([df["k"].to_numpy()])
        assert got == truth if compact else got in (None, truth)
    _compare(df, ["k"], 5)
