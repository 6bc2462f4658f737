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

import os

import numpy as np
import polars as pl
import pyarrow as pa
from numpy.typing import NDArray

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.release.table_keys import _check_unique, _increasing, _orderable, _sorted_unique
from persuasive.release.table_threads import _BLOCK, _PARALLEL_ROWS, _split

__all__ = ["Suppressed", "published_column", "read_cells", "read_cells_for_release"]

Source = rd.Source


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
