r"""Reading and validating the cells of a count table, and its published count column.

Two paths give the same cells and the same errors:

* **the generic path** — one polars query over the exact reading of
  :mod:`persuasive.files.reading` finds the first failing row of every check and whether the keys
  are sorted (sorted keys are unique); unsorted keys are checked for duplicates afterwards;
* **the in-memory fast path** — for a polars DataFrame with an integer count column, the checks
  run on the column buffers: nulls from the Arrow metadata, negatives by a min, sortedness by one
  comparison pass, duplicates by marking a table over the keys (compact integer keys) or by
  sorting 64-bit row hashes (:mod:`persuasive.release.table_keys`); any failing check hands over
  to the generic path, which names the first failing row. Streaming passes are split across the
  cores from 2²² rows (:mod:`persuasive.release.table_threads`);
* **the compiled path** (:func:`read_published`) — a large polars DataFrame with one Int64 key
  and an Int64 count: the same checks and the published column in one pass of the kernels of
  :mod:`persuasive.release.table_kernels` (numba), which hand over to the fast path's checks on
  a duplicate and to the generic path on any other failing check.

The published count column is a new buffer (:func:`published_column`): a count >= h as it is, a
suppressed count **0** under a null bit, so no true small count is left behind the published
column in memory (a raw Arrow export writes the values under null bits; CSV and Parquet never
do).
"""

from __future__ import annotations

import os

import numpy as np
import polars as pl
import pyarrow as pa

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.release.table_keys import _check_unique, _increasing, _orderable, _sorted_unique
from persuasive.release.table_threads import _split

__all__ = ["published_column", "read_cells", "read_published"]

Source = rd.Source

#: Up to this many cells the published column is made by numpy (planning a polars query costs
#: more than the work); above, by two vectorised polars kernels (:func:`published_column`).
_SMALL = 1 << 16


def _no_negative(c: pl.Series) -> bool:
    """No count below 0: a min over the buffer, split across the cores from
    :data:`_PARALLEL_ROWS` rows (:func:`_split`)."""
    if c.n_chunks() > 1:
        return bool(c.min() >= 0)  # type: ignore[operator]
    v = c.to_numpy()
    return all(_split(lambda a, b: bool(v[a:b].min() >= 0), v.size))


def _fast_cells(source: pl.DataFrame, keys: tuple[str, ...], count: str) -> pl.DataFrame | None:
    """The cells of an in-memory frame with an integer count column, validated on the column
    buffers: nulls from the Arrow metadata, negatives by a min, sortedness by one comparison
    pass, uniqueness of unsorted keys by :func:`_check_unique`. None when a check fails or the
    frame is not of this kind: then the generic path decides and names the first failing row."""
    n = source.height
    cols = [source.get_column(k) for k in keys]
    c = source.get_column(count)
    if not 0 < n < 2**32 - 1 or not c.dtype.is_integer():
        return None
    if not all(_orderable(s.dtype) for s in cols):
        return None
    if c.null_count() or any(s.null_count() for s in cols):
        return None
    if c.dtype.is_signed_integer():
        if not _no_negative(c):
            return None
    elif c.dtype == pl.UInt64 and c.max() > rd.MAX_COUNT:  # type: ignore[operator]
        return None
    cells = pl.DataFrame([*cols, c if c.dtype == pl.Int64 else c.cast(pl.Int64)])
    if not _increasing(cols):
        _check_unique(cells, keys)
    return cells


def read_cells(source: Source, keys: tuple[str, ...], count: str) -> pl.DataFrame:
    """The cells of a count table, read exactly and validated in one pass: the key columns as
    written and the count as Int64 (see :mod:`persuasive.files.reading`).

    An in-memory frame whose count column is of an integer type is checked on its buffers (no
    copy); a failing check, and every other source, goes through one polars query that finds
    the first failing row of every check."""
    source = rd.as_source(source)  # a pandas or pyarrow table is converted here, once
    names = rd.header(source)
    rd.require(names, key=list(keys), count=count)
    if isinstance(source, pl.DataFrame):
        fast = _fast_cells(source, keys, count)
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
    return cells


def _kernel_cells(
    source: pl.DataFrame, keys: tuple[str, ...], count: str, h: int
) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """The cells and the published frame of an in-memory frame with one Int64 key and an Int64
    count, by the compiled kernels of :mod:`persuasive.release.table_kernels` (one pass: the
    negatives, the key order and the published column; unsorted keys by a bit table). None
    when the frame is not of this kind, the kernels are unavailable or a count is negative:
    then the other paths decide and name the first failing row."""
    from persuasive.release import table_kernels as tk

    n = source.height
    if len(keys) != 1 or not tk.MIN_ROWS <= n < 2**32 - 1:
        return None
    key, c = source.get_column(keys[0]), source.get_column(count)
    if key.dtype != pl.Int64 or c.dtype != pl.Int64 or key.n_chunks() > 1 or c.n_chunks() > 1:
        return None
    if key.null_count() or c.null_count():
        return None
    k, v = key.to_numpy(), c.to_numpy()
    # Keys that are not sorted are most often so from the first rows: then they are marked in
    # the pass of the published column (up to FUSED_ROWS), else after it.
    leading = tk.kernels() is not None and tk.descends(k[: min(n, 1 << 16)])
    fused = leading and n <= tk.FUSED_ROWS
    out = tk.publish_distinct(k, v, h) if fused else tk.publish(k, v, h)
    if out is None:
        return None
    negative, ordered, bits, values = out  # ordered: distinct (fused), increasing (else)
    if negative:
        return None
    cells = pl.DataFrame([key, c])
    if not ordered and (fused or not tk.distinct(k)):
        _check_unique(cells, keys)  # proves the keys distinct, or names the first duplicate
    arr = pa.Array.from_buffers(pa.int64(), n, [bits, values])
    return cells, pl.DataFrame([key, pl.Series(count, arr)])


def read_published(
    source: Source, keys: tuple[str, ...], count: str, h: int
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The cells of a count table and, when the compiled kernels made it in the same pass, its
    published frame.

    The kernels serve a polars DataFrame of at least
    :data:`persuasive.release.table_kernels.MIN_ROWS` rows with one Int64 key and an Int64
    count: such cells are never changed by the grid (one key, no declared levels), so the
    published frame of the cells as read is the one published.

    Parameters
    ----------
    source : Source
        As for :func:`read_cells`.
    keys : tuple of str
        The key columns.
    count : str
        The count column.
    h : int
        The suppression threshold.

    Returns
    -------
    cells : polars.DataFrame
        What :func:`read_cells` returns.
    published : polars.DataFrame or None
        ``published_column(cells, keys, count, h)``, or None when the kernels did not serve
        the source: then the caller makes it (after the grid, if any).
    """
    if isinstance(source, pl.DataFrame):  # given as polars (a converted pandas or Arrow
        # column may have declared levels, which the grid adds as cells)
        rd.require(rd.header(source), key=list(keys), count=count)
        fused = _kernel_cells(source, keys, count, h)
        if fused is not None:
            return fused
    return read_cells(source, keys, count), None


def published_column(
    cells: pl.DataFrame, keys: tuple[str, ...], count: str, h: int
) -> pl.DataFrame:
    """The keys as read and the count, null where below h.

    The count column is a new buffer in which every suppressed entry is 0 under a null bit:
    nothing of a true small count is left in memory behind the published column (polars'
    ``when(...).then(None)`` keeps the old values under the null bits, and a raw Arrow export
    writes them). Two polars kernels make it: the comparison ``count >= h``, whose bits are the
    validity, and the counts with 0 where it fails (each a vectorised pass, faster than one
    numpy pass doing both: numpy multiplies by a boolean through a cast)."""
    c = cells.get_column(count)
    if c.n_chunks() > 1:
        c = c.rechunk()
    if c.len() <= _SMALL:  # numpy: no query to plan (a fixed cost of tens of microseconds)
        v = c.to_numpy()
        keep_np = v >= h
        valid, values = pa.py_buffer(np.packbits(keep_np, bitorder="little")), v * keep_np
        arr = pa.Array.from_buffers(pa.int64(), len(v), [valid, pa.py_buffer(values)])
    else:
        keep = c >= h
        zeroed = pl.select(pl.when(keep).then(c).otherwise(0)).to_series().to_arrow()
        bits = keep.to_arrow()
        if bits.offset == 0 and not bits.null_count and zeroed.offset == 0:
            valid = bits.buffers()[1]
        else:  # pragma: no cover - not the layout of a new boolean column
            valid = pa.py_buffer(np.packbits(c.to_numpy() >= h, bitorder="little"))
        arr = pa.Array.from_buffers(pa.int64(), len(c), [valid, zeroed.buffers()[1]])
    return pl.DataFrame([*(cells.get_column(k) for k in keys), pl.Series(count, arr)])
