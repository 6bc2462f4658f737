"""The digest of a published table computed in Spark, in parallel, on Arrow batches.

The digest (:mod:`persuasive.files.table_digest`) hashes the rows in chunks of
:data:`~persuasive.files.table_digest.CHUNK_ROWS` CSV lines in published order. Given each
partition's first row (its offset, from the partitions' row counts) and its number of rows,
a partition (``mapInArrow``: its Arrow batches, each made a polars frame exactly by
``polars.from_arrow``) hashes the chunks it holds whole and returns the lines of its rows of
the (at most two) chunks it shares with its neighbours; the driver joins those lines in row
order, hashes them, and combines every chunk hash (:func:`persuasive.files.table_digest.combine`).
Only hashes, the lines of shared chunks and the table's column types reach the driver.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from persuasive.files import table_digest as td

__all__ = ["digest_spark", "partition_rows"]

#: What a partition returns, one row each: a chunk hash (``kind`` 0), the lines of a piece of
#: a shared chunk starting at row ``start`` (1), the polars types of the table (2), or that
#: the partition is not the one counted (3).
_OUT = "kind int, chunk long, start long, data binary"


def _count(batches: Iterator[Any]) -> Iterator[Any]:
    """A partition's index and number of rows."""
    import pyarrow as pa
    from pyspark import TaskContext

    ctx = TaskContext.get()
    rows = sum(b.num_rows for b in batches)
    part = ctx.partitionId() if ctx is not None else 0
    schema = pa.schema([("p", pa.int32()), ("n", pa.int64())])
    yield pa.RecordBatch.from_pydict({"p": [part], "n": [rows]}, schema=schema)


def partition_rows(frame: Any) -> dict[int, int]:
    """The number of rows of each partition of ``frame`` (one job, on no column: a Parquet
    scan reads only its footers). The partitions are those a ``mapInArrow`` on ``frame``
    runs on (Spark's ``spark_partition_id()`` is evaluated on the driver for a frame made
    from local data, which is then split in several partitions)."""
    from pyspark.sql import functions as F

    got = frame.select(F.lit(0).alias("z")).mapInArrow(_count, "p int, n long").collect()
    return {int(g["p"]): int(g["n"]) for g in got if g["n"]}


def offsets_of(counts: Mapping[int, int]) -> dict[int, int]:
    """The first row of each partition, from the partitions' row counts."""
    out, at = {}, 0
    for part in sorted(counts):
        out[part] = at
        at += counts[part]
    return out


def _record(kind: int, chunk: int, start: int, data: bytes) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_pydict(
        {"kind": [kind], "chunk": [chunk], "start": [start], "data": [data]},
        schema=pa.schema(
            [("kind", pa.int32()), ("chunk", pa.int64()), ("start", pa.int64()),
             ("data", pa.binary())]
        ),
    )  # fmt: skip


def _hasher(
    offsets: Mapping[int, int], counts: Mapping[int, int], chunk_rows: int
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The function each partition runs (``chunk_rows`` is passed in: an executor is another
    Python process, which a constant patched in the driver does not reach)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import polars as pl
        from pyspark import TaskContext

        ctx = TaskContext.get()
        part = ctx.partitionId() if ctx is not None else 0
        first = pos = end = -1  # the partition's first row, the next row's, its end
        j = -1  # the chunk being read: its index, hasher (whole chunks) or lines (shared)
        whole, piece_start = False, -1
        hasher = hashlib.sha256()
        piece = bytearray()
        for batch in batches:
            if batch.num_rows == 0:
                continue
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            if first < 0:
                if part not in offsets:
                    yield _record(3, part, -1, b"")  # the partitions differ between jobs
                    return
                first = pos = offsets[part]
                end = first + counts[part]
                yield _record(2, -1, -1, json.dumps(td.columns_of(frame.schema)).encode())
            if pos + frame.height > end:
                yield _record(3, part, -1, b"")
                return
            at = 0
            while at < frame.height:
                if pos // chunk_rows != j:
                    j = pos // chunk_rows
                    whole = j * chunk_rows >= first and (j + 1) * chunk_rows <= end
                    hasher, piece, piece_start = hashlib.sha256(), bytearray(), pos
                take = min((j + 1) * chunk_rows - pos, frame.height - at)
                text = td.lines(frame.slice(at, take))
                if whole:
                    hasher.update(text)
                else:
                    piece.extend(text)
                at += take
                pos += take
                if pos == (j + 1) * chunk_rows or pos == end:
                    if whole:
                        yield _record(0, j, j * chunk_rows, hasher.digest())
                    else:
                        yield _record(1, j, piece_start, bytes(piece))
                    j = -1
        if pos != end:
            yield _record(3, part, -1, b"")

    return run


def digest_spark(frame: Any, chunk_rows: int | None = None) -> dict[str, Any]:
    """The digest of ``frame``'s rows in its partitions' order, as
    :func:`persuasive.files.table_digest.digest_frame` gives it on the same rows (the columns
    typed as ``polars.from_arrow`` reads Spark's Arrow batches).

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        The published table (at least one row).
    chunk_rows : int, optional
        Rows per chunk (default :data:`persuasive.files.table_digest.CHUNK_ROWS`, which the
        digest's definition fixes; another value is for tests of the chunking, and is then
        also the value ``td.CHUNK_ROWS`` must have in the driver for :func:`combine`).
    """
    size = td.CHUNK_ROWS if chunk_rows is None else int(chunk_rows)
    counts = partition_rows(frame)
    offsets = offsets_of(counts)
    rows = sum(counts.values())
    got = frame.mapInArrow(_hasher(offsets, counts, size), _OUT).collect()
    if any(g["kind"] == 3 for g in got):
        raise RuntimeError(
            "the table's partitions differ between two Spark jobs (a source whose rows are "
            "not in a deterministic order?); checkpoint it first"
        )
    types = {bytes(g["data"]) for g in got if g["kind"] == 2}
    if len(types) != 1:
        raise RuntimeError(f"the partitions give {len(types)} different column types")
    columns = json.loads(types.pop())
    hashes: dict[int, bytes] = {}
    shared: dict[int, list[tuple[int, bytes]]] = {}
    for g in got:
        if g["kind"] == 0:
            hashes[int(g["chunk"])] = bytes(g["data"])
        elif g["kind"] == 1:
            shared.setdefault(int(g["chunk"]), []).append((int(g["start"]), bytes(g["data"])))
    for j, pieces in shared.items():
        h = hashlib.sha256()
        for _, data in sorted(pieces):
            h.update(data)
        hashes[j] = h.digest()
    chunks = -(-rows // size)
    if sorted(hashes) != list(range(chunks)):
        raise RuntimeError(f"the partitions hashed chunks {sorted(hashes)[:5]}…; want {chunks}")
    return td.combine(columns, rows, (hashes[j] for j in range(chunks)))
