r"""Release a table of counts by cell suppression, with its Prop 8 certificate (Bon et al. 2026).

Every cell with a count below the threshold h is suppressed (published as missing). Under a
Receiver model giving :math:`\alpha = \alpha(h)` (:mod:`persuasive.classes.receivers`), Prop 8
certifies that the release is :math:`(\mathcal L^r_n, \mathcal C^{h,\alpha}_n, -\log\alpha, 0)`-PP
whenever :math:`h \ge r`: a Receiver whose prior puts at least α on small counts cannot raise its
small-cell log score on any cell by more than :math:`-\log\alpha` nats. The per-cell loss under
the worst prior Q (``docs/math.md`` §9) is

.. math:: \Delta_i = \begin{cases} -\log Q(X_i < h) = -\log\alpha & x_i < r \\
          0 & r \le x_i \text{ (suppressed or released)} \end{cases}

The table is read exactly (:mod:`persuasive.files.reading`: keys as written, counts as exact
64-bit integers) and validated in one pass: a single polars query finds the first failing row of
every check and whether the keys are sorted (then they are unique). An in-memory frame with an
integer count column is checked on its buffers instead (null counts from the Arrow metadata, a
min, one comparison pass), and goes through the query only to name a failing row. Unsorted keys
are checked for duplicates by marking a table over a compact integer key range, else by sorting
or hashing. The published count column is built in one pass: a suppressed count is 0 under a
null bit, so no true small count is left behind the published column in memory (a raw Arrow
export would show it). Per-cell losses are computed only when a report asks for them.
The certificate depends only on (h, r, the Receiver model, the column names, the target κ),
never on the data (Assumption 1); its publication section binds the published file.
"""

from __future__ import annotations

import functools
import math
import os
import signal
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
import polars as pl
import pyarrow as pa
from numpy.typing import ArrayLike, NDArray

from persuasive.classes.receivers import R_MIN, Receiver, check_thresholds
from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.release.calibrate import calibrate_threshold
from persuasive.report.kinds.table import KIND as TABLE_KIND
from persuasive.report.kinds.table import TableParams
from persuasive.results import Certificate

__all__ = ["Source", "TableRelease", "calibrate_threshold", "release_table"]

Source = rd.Source

#: Columns a report adds to the custodian's view of the table (no key may be named like them).
_ADDED = ("suppressed", "loss")
#: Integer keys whose range is at most this multiple of the row count are checked for
#: duplicates by marking a table over the range (one scatter pass) rather than by sorting.
_DENSE_KEY_SPAN = 8
#: Integer keys are first marked in a table of n + n // _DIRECT_SLACK + 1 slots for n rows,
#: indexed by the keys as they are (so no min/max pass comes first; keys from 0 or 1, with a
#: few gaps, fit); if that does not prove them distinct, the key range decides
#: (:data:`_DENSE_KEY_SPAN`).
_DIRECT_SLACK = 8

_T = TypeVar("_T")


def _names(keys: Any, count: Any) -> tuple[tuple[str, ...], str]:
    ks = (keys,) if isinstance(keys, str) else keys
    try:
        ks = tuple(ks)
    except TypeError:
        raise ValidationError(
            f"keys must be a column name or a list of them; got {keys!r:.60}"
        ) from None
    if not ks or not all(isinstance(k, str) and k for k in ks) or len(set(ks)) != len(ks):
        raise ValidationError(f"keys must be one or more distinct column names; got {keys!r:.60}")
    if not isinstance(count, str) or not count:
        raise ValidationError(f"count must be a column name; got {count!r:.60}")
    if count in ks:
        raise ValidationError(f"count column {count!r} is also a key; a cell's count is not a key")
    for name in (*ks, count):
        if name in _ADDED or name == rd.ROW:
            raise ValidationError(
                f"column {name!r} clashes with a column the report adds ({', '.join(_ADDED)}); "
                "rename it"
            )
    return ks, count


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
#: Signals the worker threads never take: the main thread may block them while it writes
#: (:mod:`persuasive.files.output`), and a worker must not receive them in its place.
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


def _at_least(c: pl.Series, h: int) -> pa.Buffer | None:
    """The bits (LSB first) of ``c >= h``: one comparison pass, split across threads; None when
    the comparison's bitmap is not byte-aligned."""

    def part(a: int, b: int) -> NDArray[np.uint8] | None:
        bits = (c.slice(a, b - a) >= h).to_arrow()
        if bits.offset or bits.null_count:
            return None
        return np.frombuffer(bits.buffers()[1], dtype=np.uint8, count=-(-(b - a) // 8))

    parts = _split(part, c.len())
    if any(p is None for p in parts):
        return None
    return pa.py_buffer(parts[0] if len(parts) == 1 else np.concatenate(parts))  # type: ignore[arg-type]


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
    return _read_cells(source, keys, count, None)[0]


def _read_cells(
    source: Source, keys: tuple[str, ...], count: str, h: int | None
) -> tuple[pl.DataFrame, Suppressed | None]:
    """:func:`read_cells`, and the validity bits of the published counts if they came with
    the checks (with ``h``; see :func:`_fast_cells`)."""
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


def _published(
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


@dataclass(frozen=True, eq=False)
class TableRelease:
    """A count table released by suppression, with its certificate (Prop 8, Bon et al. 2026).

    Attributes
    ----------
    published : polars.DataFrame
        What is published: the key columns exactly as read and the count (Int64, null where
        suppressed, so that a spreadsheet does not sum it).
    certificate : Certificate
        ``certify(CellSuppression(h), PersuasivePrivacy(SmallCellLogScore(r),
        SmallCellClass(h, alpha), K, 0))`` with κ = −log α: data-independent.
    params : TableParams
        h, r, the Receiver model, the column names and the target κ: the certificate's claim.
    """

    kind: ClassVar[str] = "table"

    published: pl.DataFrame
    certificate: Certificate
    params: TableParams
    cells: pl.DataFrame = field(repr=False)
    r_explicit: bool = False

    @property
    def receiver(self) -> Receiver:
        return self.params.receiver

    @property
    def h(self) -> int:
        return self.params.h

    @property
    def r(self) -> int:
        return self.params.r

    @property
    def keys(self) -> tuple[str, ...]:
        return self.params.keys

    @property
    def count(self) -> str:
        return self.params.count

    @property
    def alpha(self) -> float:
        """The α of the class 𝒞^{h,α}: the Receiver model's α(h)."""
        return self.receiver.alpha(self.h)

    @property
    def kappa(self) -> float:
        """The certified κ = −log α."""
        return self.certificate.kappa

    @property
    def claim(self) -> dict[str, Any]:
        """The certificate's claim (:mod:`persuasive.report.kinds.table`)."""
        return TABLE_KIND.claim(self.params)

    @property
    def spec(self) -> dict[str, Any]:
        """The spec of the claim (TOML schema of ``docs/cli.md``; ``spec_from_dict`` reads it)."""
        return dict(self.claim["spec"])

    @functools.cached_property
    def table(self) -> pl.DataFrame:
        """The custodian's view: the published columns, ``suppressed`` and the per-cell
        ``loss`` under the worst prior of the class (computed on first use: the loss tells,
        when r < h, whether a suppressed count is below r, so it is never published)."""
        c = self.cells.get_column(self.count)
        return self.published.with_columns(
            (c < self.h).alias("suppressed"),
            pl.when(c < self.r).then(pl.lit(self.kappa)).otherwise(pl.lit(0.0)).alias("loss"),
        )

    def summary(self) -> dict[str, Any]:
        """Data-dependent numbers for the custodian's report (never part of the certificate)."""
        n = self.published.height
        n_sup = self.published.get_column(self.count).null_count()
        below_r = int((self.cells.get_column(self.count) < self.r).sum())
        return {
            "n_cells": n,
            "n_suppressed": n_sup,
            "n_released": n - n_sup,
            "share_suppressed": n_sup / n,
            "max_loss": self.kappa if below_r else 0.0,
            "h": self.h,
            "r": self.r,
            "alpha": self.alpha,
            "kappa": self.kappa,
        }

    def calibration_curve(
        self, hs: ArrayLike | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """κ(h) = −log α(h) of the Receiver model on thresholds ``hs``; κ = inf where α(h) = 0
        and where h is not an allowed threshold (h < R_MIN, or h < r for an explicitly given r:
        Prop 8 gives no guarantee). Default ``hs``: R_MIN, ..., 2h."""
        grid = np.arange(R_MIN, 2 * self.h + 1) if hs is None else np.asarray(hs)
        if grid.ndim != 1 or grid.size == 0 or not np.all(grid == np.round(grid)):
            raise ValidationError(f"hs must be a 1-d list of integer thresholds; got {hs!r:.60}")
        grid = grid.astype(np.int64)
        low = max(R_MIN, self.r) if self.r_explicit else R_MIN
        kappas = np.array(
            [np.inf if h < low else self.receiver.kappa(int(h)) for h in grid], dtype=np.float64
        )
        return grid, kappas

    # ------------------------------------------------------------------ the pipeline protocol
    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        return frame_files({"released": self.published}, table_format)

    def custodian(self, table_format: str) -> dict[str, Any]:
        return {}

    def expected(self, name: str) -> pl.DataFrame | None:
        return self.published if Path(name).stem == "released" else None

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any:
        from persuasive.release.table_report import table_report

        return table_report(self, document, target_kappa)

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the publishable table to ``path`` (``.csv``, ``.parquet`` or ``.pq``),
        atomically: suppressed cells are empty (CSV) or null (Parquet)."""
        from persuasive._io import atomic_write
        from persuasive.release.pipeline import write_frame

        p = Path(path)
        rd.format_of(p, role="output file")
        return atomic_write(p, write_frame(self.published)(p.name))


def release_table(
    source: Source,
    *,
    keys: str | list[str] | tuple[str, ...],
    count: str,
    h: int,
    receiver: Receiver,
    r: int | None = None,
    target_kappa: float | None = None,
) -> TableRelease:
    r"""Suppress every cell below h and certify the release by Prop 8 (Bon et al. 2026).

    .. math:: T_i = x_i \ \text{if}\ x_i \ge h, \ \text{missing otherwise};\qquad
              \kappa = -\log\alpha(h) \ \text{for}\ (\mathcal L^r_n, \mathcal C^{h,\alpha(h)}_n).

    Parameters
    ----------
    source : path or polars DataFrame / LazyFrame
        A CSV or Parquet file, or a frame: one row per cell.
    keys : str or list of str
        Key columns identifying a cell (no missing key, no duplicate). CSV keys are text
        exactly as written.
    count : str
        The count column: whole numbers >= 0 (CSV: digits only; Parquet: an integer type, or a
        float type holding integral values), at most 2^63 − 1.
    h : int
        Suppression threshold: cells with count < h are suppressed.
    receiver : Receiver
        The Receiver model: α = ``receiver.alpha(h)``.
    r : int, optional
        Score threshold of :math:`L^r` (counts >= r are inherently private), ``r <= h``;
        default h.
    target_kappa : float, optional
        The κ the Sender asked for: the certificate holds only if κ is at most it.

    Returns
    -------
    TableRelease

    Raises
    ------
    ValidationError
        Bad parameters, or bad data, naming the column and row: an empty table, a missing
        column, a column named twice, a count that is not a whole number (e.g. ``3.0``), is
        negative, missing or above 2^63 − 1, a missing or duplicated key.

    Examples
    --------
    >>> import polars as pl
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> df = pl.DataFrame({"area": ["01", "02", "03"], "n": [0, 4, 12]})
    >>> rel = release_table(df, keys="area", count="n", h=5, receiver=PoissonReceiver(0, 3))
    >>> rel.published.rows()
    [('01', None), ('02', None), ('03', 12)]
    >>> round(rel.certificate.kappa, 6), rel.certificate.basis
    (0.204244, 'Prop 8 (Bon et al. 2026)')
    """
    ks, cnt = _names(keys, count)
    h_, r_ = check_thresholds(h, r)
    if not isinstance(receiver, Receiver):
        raise ValidationError(
            "receiver must be a Receiver model (SmallCellReceiver, PoissonReceiver or "
            f"NegativeBinomialReceiver); got {type(receiver).__name__}"
        )
    alpha = receiver.alpha(h_)
    if not alpha > 0.0:
        raise ValidationError(
            f"the Receiver model {receiver!r} puts no prior mass below h = {h_} (alpha = 0), so "
            "Prop 8 gives no guarantee; raise h or widen the model"
        )
    params = TableParams(h_, r_, receiver, ks, cnt, target_kappa)
    body = TABLE_KIND.certify(params)
    cells, made = _read_cells(source, ks, cnt, h_)
    published = _published(cells, ks, cnt, h_, made)
    cert = body.certificate
    return TableRelease(published, cert, params, cells, r_explicit=r is not None)
