r"""Reading and validating the cells of a count table, and its published count column.

Two paths give the same cells and the same errors:

* **the generic path** — one polars query over the exact reading of
  :mod:`persuasive.files.reading` finds the first failing row of every check and whether the keys
  are sorted (sorted keys are unique); unsorted keys are checked for duplicates afterwards;
* **the in-memory fast path** — for a polars DataFrame with an integer count column, the checks
  run on the column buffers: nulls from the Arrow metadata, negatives by a min, sortedness by one
  comparison pass, duplicates by marking a table over the keys (compact integer keys) or by
  sorting 64-bit row hashes; any failing check hands over to the generic path, which names the
  first failing row. Streaming passes are split across the cores from 2²² rows.

The published count column is a new buffer: a count >= h as it is, a suppressed count **0**
under a null bit, so no true small count is left behind the published column in memory (a raw
Arrow export writes the values under null bits; CSV and Parquet never do).
"""

from __future__ import annotations

import math
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import polars as pl
import pyarrow as pa
from numpy.typing import NDArray

from persuasive.errors import ValidationError
from persuasive.files import reading as rd

__all__ = ["Suppressed", "published_column", "read_cells", "read_cells_for_release"]

Source = rd.Source

#: Integer keys whose range is at most this multiple of the row count are checked for
#: duplicates by marking a table over the range (one scatter pass) rather than by sorting.
_DENSE_KEY_SPAN = 8
#: Integer keys are first marked in a table of n + n // _DIRECT_SLACK + 1 slots for n rows,
#: indexed by the keys as they are (so no min/max pass comes first; keys from 0 or 1, with a
#: few gaps, fit); if that does not prove them distinct, the key range decides
#: (:data:`_DENSE_KEY_SPAN`).
_DIRECT_SLACK = 8

_T = TypeVar("_T")


def _sorted_unique(schema: pl.Schema, keys: tuple[str, ...]) -> pl.Expr:
    """True when every row's key is lexicographically above the previous row's: then the keys are
    unique and the hash-based check (the costly part of validation) is skipped."""
    if not all(_orderable(schema[k]) for k in keys):
        return pl.lit(False)
    above = pl.col(keys[-1]) > pl.col(keys[-1]).shift(1)
    for k in reversed(keys[:-1]):
        prev = pl.col(k).shift(1)
        above = (pl.col(k) > prev) | ((pl.col(k) == prev) & above)
    return above.fill_null(False).slice(1).all()


def _orderable(dtype: pl.DataType) -> bool:
    """Key types whose order :func:`_sorted_unique` uses (others are checked by hashing)."""
    return dtype.is_numeric() or dtype.is_temporal() or dtype in (pl.String, pl.Boolean)


# --------------------------------------------------------------------------------------------
# In-memory fast path: numpy and polars passes over the column buffers (no copy)
# --------------------------------------------------------------------------------------------

#: Rows per block of the key-table passes (512 KiB of int64: a block's index stays in cache
#: while it is scattered), and of the leading sortedness check.
_BLOCK = 1 << 16
#: Streaming passes (min, comparisons) over at least this many rows are split across worker
#: threads, one part per core (below, the data is in cache and a thread costs more than it
#: saves); the key table's scatter (random writes) from :data:`_PARALLEL_SCATTER_ROWS` rows.
_PARALLEL_ROWS = 1 << 22
_PARALLEL_SCATTER_ROWS = 1 << 17
#: Synchronous signals (faults) stay unblocked in the worker threads; every other signal is
#: blocked there, so that SIGINT, SIGTERM and SIGHUP reach the main thread, where the release's
#: handlers run (:mod:`persuasive.files.signals`).
_SYNCHRONOUS = {"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT", "SIGTRAP", "SIGSYS"}

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _block_signals() -> None:
    if hasattr(signal, "pthread_sigmask"):
        asynchronous = {
            s for s in signal.valid_signals() if getattr(s, "name", "") not in _SYNCHRONOUS
        }
        signal.pthread_sigmask(signal.SIG_BLOCK, asynchronous)


def _workers() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, cpus or 1))


def _executor() -> ThreadPoolExecutor | None:
    global _pool
    if _workers() < 2:
        return None
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                _workers() - 1, thread_name_prefix="persuasive-tables", initializer=_block_signals
            )
        return _pool


def _after_fork() -> None:  # the pool's threads do not survive a fork
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _split(fn: Callable[[int, int], _T], n: int, min_rows: int | None = None) -> list[_T]:
    """``fn(start, stop)`` over contiguous parts of ``range(n)`` (starts are multiples of
    :data:`_BLOCK`), the first part in this thread and the others in the worker pool."""
    pool = _executor() if n >= (_PARALLEL_ROWS if min_rows is None else min_rows) else None
    parts = _workers() if pool is not None else 1
    step = -(-n // parts // _BLOCK) * _BLOCK
    bounds = [(a, min(a + step, n)) for a in range(0, n, step)] if n else [(0, 0)]
    if pool is None or len(bounds) == 1:
        return [fn(a, b) for a, b in bounds]
    futures = [pool.submit(fn, a, b) for a, b in bounds[1:]]
    first = fn(*bounds[0])
    return [first, *(f.result() for f in futures)]


def _offset(block: NDArray[Any], lo: int) -> NDArray[np.int64]:
    """``block - lo`` as int64, for entries known to be in [lo, lo + 2^62)."""
    if block.dtype == np.uint64:
        return (block - np.uint64(lo)).astype(np.int64)
    return block.astype(np.int64, copy=False) - lo


def _dense_distinct(cols: list[NDArray[Any]]) -> bool | None:
    """Whether the rows' integer keys are distinct, by marking each key's slot in a table over
    the key range (:func:`_marks`). None when the range is not compact (above
    :data:`_DENSE_KEY_SPAN` times the row count): then sorting or hashing decides."""
    n = cols[0].size
    direct = n + n // _DIRECT_SLACK + 1
    if len(cols) == 1 and _marks(lambda i, j: _as_index(cols[0][i:j]), n, direct):
        return True
    ranges = [_min_max(k) for k in cols]
    spans = [hi - lo + 1 for lo, hi in ranges]
    size = math.prod(spans)
    if size > _DENSE_KEY_SPAN * n:
        return None
    strides = [math.prod(spans[j + 1 :]) for j in range(len(cols))]

    def composite(i: int, j: int) -> NDArray[np.int64]:
        index = _offset(cols[-1][i:j], ranges[-1][0])
        for k, (lo, _), stride in zip(cols[:-1], ranges[:-1], strides[:-1], strict=True):
            index += _offset(k[i:j], lo) * stride
        return index

    return _marks(composite, n, size)


def _as_index(block: NDArray[Any]) -> NDArray[np.int64]:
    return block if block.dtype == np.int64 else block.astype(np.int64)


#: Without worker threads, tables for more rows than this use one bit per slot (a byte per slot
#: would not stay in cache); with them, the byte table split across threads is faster.
_BOOL_SLOTS = 1 << 25
_ONE = np.uint8(1)
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _popcount(b: NDArray[np.uint8]) -> int:
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return int(np.bitwise_count(b).sum(dtype=np.int64))
    return int(_POPCOUNT[b].sum(dtype=np.int64))


def _marks(index: Callable[[int, int], NDArray[np.int64]], n: int, size: int) -> bool:
    """True when the slots ``index(i, j)`` of rows i..j-1 are n distinct slots of a table of
    ``size`` slots, numpy's indexing rules applied (a negative slot wraps once from the end; a
    slot out of bounds stops the marking: False). Where a row lands is a function of its key,
    so n distinct slots prove n distinct keys; False proves nothing unless the slots are a
    bijection of the keys.

    A byte per slot, set by a scatter split across the worker threads (every write stores
    True, so the parts may share the table). Without worker threads and above
    :data:`_BOOL_SLOTS` rows: a byte per 8 slots, to which each row adds 2^(slot mod 8)
    (``np.add.at``); the sums' popcounts total n iff no slot is added twice (adding a bit
    already set carries, which never raises the popcount; nor does the wrap mod 256)."""
    if n > _BOOL_SLOTS and _executor() is None:
        sums = np.zeros(-(-size // 8), dtype=np.uint8)
        try:
            for i in range(0, n, _BLOCK):
                slots = index(i, min(i + _BLOCK, n))
                np.add.at(sums, slots >> 3, np.left_shift(_ONE, (slots & 7).astype(np.uint8)))
        except IndexError:
            return False
        return _popcount(sums) == n
    seen = np.zeros(size, dtype=np.bool_)

    def part(start: int, stop: int) -> bool:
        try:
            for i in range(start, stop, _BLOCK):
                seen[index(i, min(i + _BLOCK, stop))] = True
        except IndexError:
            return False
        return True

    return all(_split(part, n, _PARALLEL_SCATTER_ROWS)) and int(np.count_nonzero(seen)) == n


def _min_max(k: NDArray[Any]) -> tuple[int, int]:
    def part(start: int, stop: int) -> tuple[int, int]:
        lo, hi = None, None
        for i in range(start, stop, _BLOCK):
            block = k[i : min(i + _BLOCK, stop)]
            a, b = int(block.min()), int(block.max())
            lo, hi = (a, b) if lo is None or hi is None else (min(lo, a), max(hi, b))
        assert lo is not None and hi is not None
        return lo, hi

    found = _split(part, k.size)
    return min(lo for lo, _ in found), max(hi for _, hi in found)


def _exact_hash(dtype: pl.DataType) -> bool:
    """Types whose equal values have equal bits, so equal keys have equal row hashes."""
    return dtype.is_integer() or dtype.is_temporal() or dtype in (pl.String, pl.Binary, pl.Boolean)


def _sorted_distinct(table: pl.DataFrame, keys: tuple[str, ...]) -> bool | None:
    """True when the keys are distinct, proved by sorting: the values of one integer key, else
    the 64-bit row hashes (equal keys hash equally, so distinct hashes are distinct keys).
    None when two hashes are equal (a duplicate, or a collision: hashing decides)."""
    if len(keys) == 1 and table.schema[keys[0]].is_integer():
        values = np.sort(table.get_column(keys[0]).to_numpy())
        return not bool((values[1:] == values[:-1]).any())
    hashes = np.sort(table.select(*keys).hash_rows().to_numpy())
    return None if bool((hashes[1:] == hashes[:-1]).any()) else True


def _check_unique(table: pl.DataFrame, keys: tuple[str, ...]) -> None:
    """Keys are unique: a bitmap for compact integer keys, sorting (the values, or the row
    hashes) for other integer, text and temporal keys, hashing otherwise; a duplicate is named
    by its first two rows."""
    distinct: bool | None = None
    if table.height and all(table.schema[k].is_integer() for k in keys):
        distinct = _dense_distinct([table.get_column(k).to_numpy() for k in keys])
    if distinct is None and all(_exact_hash(table.schema[k]) for k in keys):
        distinct = _sorted_distinct(table, keys)
    if distinct is None:
        key_struct = pl.col(keys[0]) if len(keys) == 1 else pl.struct(list(keys))
        distinct = table.select(key_struct.n_unique()).item() == table.height
    if distinct:
        return
    row = pl.col(rd.ROW)
    dup = (
        table.select(*keys)
        .with_row_index(rd.ROW)
        .group_by(*keys)
        .agg(row.min().alias("a"), row.filter(row > row.min()).min().alias("b"))
        .filter(pl.col("b").is_not_null())
        .sort("a")
        .row(0, named=True)
    )
    key_text = ", ".join(f"{k}={dup[k]!r}" for k in keys)
    raise ValidationError(
        f"duplicated key ({key_text}) at rows {dup['a'] + 1} and {dup['b'] + 1}; each cell "
        "must appear once: aggregate (sum) or drop the duplicates"
    )


def _increasing(cols: list[pl.Series]) -> bool:
    """Every row's key is lexicographically above the previous row's (the comparison of
    :func:`_sorted_unique`, on the Series): first on the leading block alone, so that
    unsorted keys are found at once."""
    pairs = cols[0].len() - 1

    def above(start: int, length: int) -> bool:
        later = [s.slice(start + 1, length) for s in cols]
        earlier = [s.slice(start, length) for s in cols]
        out = later[-1] > earlier[-1]
        for a, b in zip(reversed(later[:-1]), reversed(earlier[:-1]), strict=True):
            out = (a > b) | ((a == b) & out)
        return bool(out.all())

    head = min(pairs, _BLOCK)
    if not above(0, head):
        return False
    return head == pairs or all(_split(lambda a, b: above(head + a, b - a), pairs - head))


def _no_negative(c: pl.Series) -> bool:
    if c.n_chunks() > 1:
        return bool(c.min() >= 0)  # type: ignore[operator]
    v = c.to_numpy()
    return all(_split(lambda a, b: bool(v[a:b].min() >= 0), v.size))


#: The published count column made in the checks' own pass: (validity bits of ``count >= h``,
#: the counts with every suppressed entry set to 0).
Suppressed = tuple[pa.Buffer, NDArray[np.int64]]


def _no_negative_and_at_least(c: pl.Series, h: int) -> tuple[bool, Suppressed | None]:
    """:func:`_no_negative` and, when it holds, the published column (the bits of
    ``count >= h`` and the counts zeroed below h) in one read of the counts (block by block,
    each block's min, comparison and product in cache) for a single-chunk Int64 column of at
    least :data:`_PARALLEL_ROWS` rows; below, or otherwise, the separate passes."""
    if c.dtype != pl.Int64 or c.n_chunks() > 1 or c.len() < _PARALLEL_ROWS:
        return (True, None) if _no_negative(c) else (False, None)
    v = c.to_numpy()
    valid = np.empty(-(-v.size // 8), dtype=np.uint8)
    zeroed = np.empty_like(v)

    def part(start: int, stop: int) -> bool:
        for i in range(start, stop, _BLOCK):
            block = v[i : min(i + _BLOCK, stop)]
            if block.min() < 0:
                return False
            keep = block >= h
            np.multiply(block, keep, out=zeroed[i : i + block.size])
            valid[i // 8 : (i + block.size + 7) // 8] = np.packbits(keep, bitorder="little")
        return True

    if not all(_split(part, v.size)):
        return False, None
    return True, (pa.py_buffer(valid), zeroed)


def _fast_cells(
    source: pl.DataFrame, keys: tuple[str, ...], count: str, h: int | None = None
) -> tuple[pl.DataFrame, Suppressed | None] | None:
    """The cells of an in-memory frame with an integer count column, validated on the column
    buffers: nulls from the Arrow metadata, negatives by a min, sortedness by one comparison
    pass, uniqueness of unsorted keys by :func:`_check_unique`. None when a check fails or the
    frame is not of this kind: then the generic path decides and names the first failing row.
    With ``h``, the published count column when the negatives check made it
    (:func:`_no_negative_and_at_least`)."""
    n = source.height
    cols = [source.get_column(k) for k in keys]
    c = source.get_column(count)
    if not 0 < n < 2**32 - 1 or not c.dtype.is_integer():
        return None
    if not all(_orderable(s.dtype) for s in cols):
        return None
    if c.null_count() or any(s.null_count() for s in cols):
        return None
    valid = None
    if c.dtype.is_signed_integer():
        ok, valid = (_no_negative(c), None) if h is None else _no_negative_and_at_least(c, h)
        if not ok:
            return None
    elif c.dtype == pl.UInt64 and c.max() > rd.MAX_COUNT:  # type: ignore[operator]
        return None
    cells = pl.DataFrame([*cols, c if c.dtype == pl.Int64 else c.cast(pl.Int64)])
    if not _increasing(cols):
        _check_unique(cells, keys)
    return cells, valid


def read_cells(source: Source, keys: tuple[str, ...], count: str) -> pl.DataFrame:
    """The cells of a count table, read exactly and validated in one pass: the key columns as
    written and the count as Int64 (see :mod:`persuasive.files.reading`).

    An in-memory frame whose count column is of an integer type is checked on its buffers (no
    copy); a failing check, and every other source, goes through one polars query that finds
    the first failing row of every check."""
    return read_cells_for_release(source, keys, count, None)[0]


def read_cells_for_release(
    source: Source, keys: tuple[str, ...], count: str, h: int | None
) -> tuple[pl.DataFrame, Suppressed | None]:
    """The cells (:func:`read_cells`), and the published count column when the checks made it
    (with ``h``; see :func:`_fast_cells`)."""
    source = rd.as_source(source)  # a pandas or pyarrow table is converted here, once
    names = rd.header(source)
    rd.require(names, key=list(keys), count=count)
    if isinstance(source, pl.DataFrame):
        fast = _fast_cells(source, keys, count, h)
        if fast is not None:
            return fast
    raw = rd.scan(source, text=[*keys, count])
    try:
        schema = raw.collect_schema()
        dtype = schema[count]
        lf = raw.select(*keys, count).with_row_index(rd.ROW)
        checks = [*rd.key_checks(keys), *rd.count_checks(count, dtype)]
        parsed = lf.select(*keys, rd.count_expr(count, dtype))
        sorted_flag = _sorted_unique(schema, keys).alias("sorted")
        stats, cells = pl.collect_all([rd.first_failures(lf, checks, sorted_flag), parsed])
    except pl.exceptions.PolarsError as exc:
        where = f"'{source}'" if isinstance(source, (str, os.PathLike)) else "the table"
        raise ValidationError(f"cannot read {where}: {rd._first_line(exc)}") from None
    rd.raise_first(stats, lf, checks, where=keys, what="the table")
    if not stats["sorted"][0]:
        _check_unique(cells, keys)
    return cells, None


def published_column(
    cells: pl.DataFrame, keys: tuple[str, ...], count: str, h: int, made: Suppressed | None = None
) -> pl.DataFrame:
    """The keys as read and the count, null where below h.

    The count column is a new buffer in which every suppressed entry is 0 under a null bit:
    nothing of a true small count is left in memory behind the published column (polars'
    ``when(...).then(None)`` keeps the old values under the null bits, and a raw Arrow export
    writes them). ``made`` is that column when the checks' own pass made it."""
    if made is None:
        col = pl.col(count)
        keep = col >= h
        frame = cells.select(
            pl.when(keep).then(col).otherwise(0).alias(count), keep.alias("__keep__")
        ).rechunk()
        zeroed = frame.get_column(count).to_numpy()
        bits = frame.get_column("__keep__").to_arrow()
        if bits.offset == 0 and not bits.null_count:
            made = (bits.buffers()[1], zeroed)
        else:  # pragma: no cover - not the layout of a new boolean column
            made = (pa.py_buffer(np.packbits(zeroed >= h, bitorder="little")), zeroed)
    valid, zeroed = made
    arr = pa.Array.from_buffers(pa.int64(), len(zeroed), [valid, pa.py_buffer(zeroed)])
    return pl.DataFrame([*(cells.get_column(k) for k in keys), pl.Series(count, arr)])
