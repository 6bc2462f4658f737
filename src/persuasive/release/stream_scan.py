r"""The first pass of a streamed table release: validation, the summary and the digest.

:func:`scan_cells` reads the table once, in batches of :data:`BATCH_ROWS` rows in file order
(``collect_batches`` of polars' streaming engine: a batch is all that is in memory), and for
every batch

* evaluates the checks of the in-memory engine (:func:`persuasive.files.reading.key_checks`,
  :func:`~persuasive.files.reading.count_checks`) and keeps the first failing row of each (the
  row as written, to name it);
* tells whether the keys increase strictly, within the batch and from the previous batch's last
  row (the comparison of :func:`persuasive.release.table_keys._sorted_unique`): then they are
  unique;
* keeps the number of rows, of suppressed cells (count < h) and of counts below r, and the
  range of each integer key (for :mod:`persuasive.release.stream_keys`);
* hashes the published rows (keys as read, the count null where below h) into the chunks of
  :mod:`persuasive.files.table_digest`, so that the pipeline can check the written file.

The error raised is the in-memory engine's, with the same first offending row
(:func:`persuasive.files.reading.raise_first`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.files.table_digest import Chunks
from persuasive.release.table_keys import _orderable, _sorted_unique, _unused

__all__ = ["BATCH_ROWS", "Scan", "batches", "published_expr", "scan_cells"]

#: Rows per batch of a streamed pass (a multiple of the digest's chunk).
BATCH_ROWS = 1 << 20


def published_expr(count: str, h: int) -> pl.Expr:
    """The published count: the parsed count where it is >= h, null (suppressed) otherwise."""
    c = pl.col(count)
    return pl.when(c >= h).then(c).otherwise(None).cast(pl.Int64).alias(count)


def batches(frame: pl.LazyFrame, where: str) -> Iterator[pl.DataFrame]:
    """The batches of ``frame`` in order (streaming engine); a read error is a one-line
    ValidationError (``cannot read WHERE: ...``), as the in-memory engine says it."""
    try:
        yield from frame.collect_batches(chunk_size=BATCH_ROWS, maintain_order=True)
    except pl.exceptions.PolarsError as exc:
        raise ValidationError(f"cannot read {where}: {rd._first_line(exc)}") from None


@dataclass
class Scan:
    """What the first pass found.

    Attributes
    ----------
    rows, suppressed, below_r : int
        The number of cells, of cells with count < h, of cells with count < r.
    sorted : bool
        Every row's key is lexicographically above the previous row's (so the keys are unique).
    ranges : list of (int, int) or None
        The (min, max) of each key when every key is of an integer type.
    schema : polars.Schema
        The published columns and their types (keys as read, the count Int64).
    chunks : list of bytes
        The digest's chunk hashes of the published rows.
    """

    rows: int = 0
    suppressed: int = 0
    below_r: int = 0
    sorted: bool = True
    ranges: list[tuple[int, int]] | None = None
    schema: pl.Schema = field(default_factory=pl.Schema)
    chunks: list[bytes] = field(default_factory=list)


def where_of(source: Any) -> str:
    """How a read error names the source (as :func:`persuasive.release.table_cells.read_cells`)."""
    return f"'{source}'" if isinstance(source, (str, os.PathLike)) else "the table"


def raw_frame(source: Any, keys: tuple[str, ...], count: str) -> tuple[pl.LazyFrame, pl.Schema]:
    """The key and count columns of ``source`` as written (CSV: text), lazily, after the header
    checks of the in-memory engine (a duplicated or missing column)."""
    names = rd.header(source)
    rd.require(names, key=list(keys), count=count)
    raw = rd.scan(source, text=[*keys, count])
    try:
        schema = raw.collect_schema()
    except pl.exceptions.PolarsError as exc:
        raise ValidationError(f"cannot read {where_of(source)}: {rd._first_line(exc)}") from None
    return raw.select(*keys, count), schema


def scan_cells(
    source: Any, keys: tuple[str, ...], count: str, h: int, r: int
) -> tuple[Scan, pl.LazyFrame, pl.Schema]:
    """Validate a table in one streamed pass (see the module docstring).

    Returns
    -------
    scan : Scan
        The aggregates.
    raw : polars.LazyFrame
        The key and count columns as written (for the later passes).
    schema : polars.Schema
        The schema of ``raw``'s source.

    Raises
    ------
    ValidationError
        The in-memory engine's message for the first failed check, naming its first row.
    """
    source = rd.as_source(source)
    raw, schema = raw_frame(source, keys, count)
    dtype = schema[count]
    checks = [*rd.key_checks(keys), *rd.count_checks(count, dtype)]
    parsed_count = rd.count_expr(count, dtype)
    orderable = all(_orderable(schema[k]) for k in keys)
    integer = all(schema[k].is_integer() for k in keys)
    fails = [ch.fails.arg_true().first().alias(f"check{i}") for i, ch in enumerate(checks)]
    sorted_expr = _sorted_unique(schema, keys).alias("sorted")
    out = Scan(sorted=orderable)
    first: list[int | None] = [None] * len(checks)
    bad_rows: list[pl.DataFrame] = []
    chunks = Chunks()
    below = _unused((*keys, count), "below")
    last: pl.DataFrame | None = None
    ranges: list[tuple[int, int]] | None = None
    for batch in batches(raw, where_of(source)):
        if batch.height == 0:
            continue
        offset = out.rows
        found = batch.select(fails).row(0)
        for i, at in enumerate(found):
            if at is not None and first[i] is None:
                first[i] = offset + at
                bad_rows.append(
                    batch.slice(at, 1).with_columns(pl.lit(offset + at, pl.UInt32).alias(rd.ROW))
                )
        out.rows += batch.height
        if any(f is not None for f in first):
            continue  # the table fails: only the first failing row of each check matters now
        published = batch.select(*keys, parsed_count).select(
            *keys, published_expr(count, h), (pl.col(count) < r).sum().alias(below)
        )
        c = published.get_column(count)
        out.suppressed += c.null_count()
        out.below_r += int(published.get_column(below)[0] or 0)
        published = published.drop(below)
        chunks.update(published)
        if out.sorted:
            keyed = batch.select(keys) if last is None else pl.concat([last, batch.select(keys)])
            if keyed.height > 1 and not keyed.select(sorted_expr).item():
                out.sorted = False
            last = batch.select(keys).tail(1)
        if integer:
            stats = batch.select(
                *(pl.col(k).min().alias(f"lo{j}") for j, k in enumerate(keys)),
                *(pl.col(k).max().alias(f"hi{j}") for j, k in enumerate(keys)),
            ).row(0)
            m = len(keys)
            got = [(int(a), int(b)) for a, b in zip(stats[:m], stats[m:], strict=True)]
            ranges = got if ranges is None else _widen(ranges, got)
        out.schema = published.schema
    _raise(out.rows, first, bad_rows, checks, keys, raw)
    out.ranges = ranges if integer else None
    out.chunks = chunks.hashes()
    return out, raw, schema


def _widen(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [(min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(a, b, strict=True)]


def _raise(
    rows: int,
    first: list[int | None],
    bad_rows: list[pl.DataFrame],
    checks: list[rd.Check],
    keys: tuple[str, ...],
    raw: pl.LazyFrame,
) -> None:
    """The in-memory engine's error for the first failed check (:func:`rd.raise_first`), from
    the rows kept."""
    stats = pl.DataFrame(
        {"n": [rows], **{f"check{i}": [f] for i, f in enumerate(first)}},
        schema={"n": pl.Int64, **{f"check{i}": pl.Int64 for i in range(len(first))}},
    )
    frame = pl.concat(bad_rows).lazy() if bad_rows else raw.with_row_index(rd.ROW).head(0)
    rd.raise_first(stats, frame, checks, where=keys, what="the table")
