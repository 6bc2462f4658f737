r"""The digest of a published table: its rows, whatever the files that hold them.

A table's certificate binds its publication by the digest of its **content**, not of the bytes
of one file, so that the same table written as one CSV file by polars or as a folder of part
files by Spark (``released.csv/part-00000-….csv``, …) has the same digest, and the same
certificate (``docs/scale.md``). The digest is a two-level hash over the rows in their
published order:

* each row is its line of CSV as polars writes it (no header, ``,`` between fields, ``\n`` at
  the end, a field quoted only when it must be, a missing value as an empty field and an empty
  string as ``""``): a row's line depends on that row alone, so the lines of a table are the
  lines of its parts one after the other;
* the rows are cut into chunks of :data:`CHUNK_ROWS` rows (row i is in chunk
  ``i // CHUNK_ROWS``), and each chunk is hashed: ``c_j = SHA-256(lines of chunk j)``;
* the digest is ``SHA-256(PREFIX ‖ header ‖ "\n" ‖ rows ‖ "\n" ‖ c_0 ‖ c_1 ‖ …)``, where
  ``header`` is the JSON of the column names and polars types (so that an Int64 key ``1`` and a
  String key ``"1"`` differ) and ``rows`` the number of rows in decimal.

A change of a value, of a type, of the order or of the number of rows changes the digest unless
SHA-256 collides. The chunks let a distributed engine hash its parts in parallel: a partition
hashes the chunks it holds whole and hands the lines of the chunks it shares with its
neighbours to the driver (:func:`combine`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from persuasive.errors import ValidationError

__all__ = [
    "CHUNK_ROWS",
    "PREFIX",
    "Chunks",
    "TableDigest",
    "columns_of",
    "combine",
    "dataset_parts",
    "digest_frame",
    "digest_lazy",
    "lines",
    "scan_published",
]

#: Rows per chunk of the digest.
CHUNK_ROWS = 1 << 16

#: What the digest hashes first: the name and version of this definition.
PREFIX = b"persuasive table digest 1\n"


def lines(frame: pl.DataFrame) -> bytes:
    """The rows of ``frame`` as CSV lines, exactly as the digest hashes them."""
    if frame.height == 0:
        return b""
    text = frame.write_csv(include_header=False, line_terminator="\n", quote_style="necessary")
    return text.encode("utf-8")


def columns_of(schema: Mapping[str, Any]) -> list[list[str]]:
    """The header the digest hashes: ``[[name, polars type], …]``."""
    return [[str(name), str(dtype)] for name, dtype in schema.items()]


def combine(columns: Sequence[Sequence[str]], rows: int, chunks: Iterable[bytes]) -> dict[str, Any]:
    """The digest of a table from its header, its number of rows and its chunk hashes in order.

    Parameters
    ----------
    columns : sequence of [name, type]
        :func:`columns_of` of the table's schema.
    rows : int
        The number of rows.
    chunks : iterable of bytes
        ``SHA-256(lines of chunk j)`` for j = 0, 1, …, ``ceil(rows / CHUNK_ROWS) - 1``.

    Returns
    -------
    dict
        ``{"rows", "chunk_rows", "columns", "sha256"}``: the certificate's description of the
        table.
    """
    h = hashlib.sha256(PREFIX)
    header = json.dumps([list(c) for c in columns], ensure_ascii=False, separators=(",", ":"))
    h.update(header.encode("utf-8") + b"\n" + str(int(rows)).encode("ascii") + b"\n")
    count = 0
    for c in chunks:
        if len(c) != 32:
            raise ValueError("a chunk hash is 32 bytes of SHA-256")
        h.update(c)
        count += 1
    if count != -(-rows // CHUNK_ROWS):
        raise ValueError(f"{rows} rows make {-(-rows // CHUNK_ROWS)} chunks; got {count} hashes")
    return {
        "rows": int(rows),
        "chunk_rows": CHUNK_ROWS,
        "columns": [list(c) for c in columns],
        "sha256": h.hexdigest(),
    }


class Chunks:
    """The chunk hashes of rows given in consecutive parts of any sizes: ``SHA-256(lines of
    chunk j)`` for the chunks of :data:`CHUNK_ROWS` rows (the last may be shorter)."""

    def __init__(self) -> None:
        self.rows = 0
        self._done: list[bytes] = []
        self._open = hashlib.sha256()
        self._in_open = 0  # rows in the chunk being hashed

    def update(self, part: pl.DataFrame) -> None:
        """Add the next rows of the table, in order."""
        start = 0
        while start < part.height:
            take = min(CHUNK_ROWS - self._in_open, part.height - start)
            self._open.update(lines(part.slice(start, take)))
            self._in_open += take
            start += take
            if self._in_open == CHUNK_ROWS:
                self._done.append(self._open.digest())
                self._open, self._in_open = hashlib.sha256(), 0
        self.rows += part.height

    def hashes(self) -> list[bytes]:
        """The hashes of the chunks given so far, the open one included."""
        return [*self._done, self._open.digest()] if self._in_open else list(self._done)


class TableDigest:
    """The digest of a table given in consecutive parts of any sizes (:meth:`update`).

    Parameters
    ----------
    schema : mapping of column name to polars type
        The table's schema; every part must have it.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.columns = columns_of(schema)
        self._chunks = Chunks()

    @property
    def rows(self) -> int:
        """The number of rows given so far."""
        return self._chunks.rows

    def update(self, part: pl.DataFrame) -> None:
        """Add the next rows of the table, in order."""
        if columns_of(part.schema) != self.columns:
            raise ValueError(f"a part has columns {columns_of(part.schema)}; want {self.columns}")
        self._chunks.update(part)

    def result(self) -> dict[str, Any]:
        """The digest of the rows given so far (:func:`combine`)."""
        return combine(self.columns, self.rows, self._chunks.hashes())


def digest_frame(frame: pl.DataFrame) -> dict[str, Any]:
    """The digest of an in-memory table (:class:`TableDigest`)."""
    d = TableDigest(frame.schema)
    d.update(frame)
    return d.result()


def digest_lazy(frame: pl.LazyFrame) -> dict[str, Any]:
    """The digest of a lazy table, computed on its batches as the streaming engine gives them
    (bounded memory: a table larger than memory is read once, in order)."""
    d = TableDigest(frame.collect_schema())
    for batch in _batches(frame):
        d.update(batch)
    return d.result()


def _batches(frame: pl.LazyFrame) -> Iterator[pl.DataFrame]:
    collect_batches = getattr(frame, "collect_batches", None)
    if collect_batches is None:  # pragma: no cover - polars before collect_batches
        yield frame.collect()
        return
    yield from collect_batches(maintain_order=True)


#: Files of a dataset folder that are not parts (Spark's ``_SUCCESS``, checksums, hidden files).
def _is_part(p: Path, suffix: str) -> bool:
    return p.is_file() and not p.name.startswith(("_", ".")) and p.name.lower().endswith(suffix)


def dataset_parts(folder: Path) -> list[Path]:
    """The part files of a dataset folder (``released.csv/``, ``released.parquet/``), in the
    order of their names, which is the order of the rows (Spark numbers its parts in partition
    order: ``part-00000-…``, ``part-00001-…``)."""
    suffix = ".parquet" if folder.suffix.lower() in (".parquet", ".pq") else ".csv"
    parts = sorted((p for p in folder.iterdir() if _is_part(p, suffix)), key=lambda p: p.name)
    if not parts:
        raise ValidationError(f"published folder '{folder}' holds no part file (*{suffix})")
    return parts


def scan_published(
    path: Path, *, text: Sequence[str] = (), role: str = "published table"
) -> pl.LazyFrame:
    """A published table, from one file or from a dataset folder of part files, with the
    ``text`` columns of CSV read as strings exactly (:func:`persuasive.files.reading.scan`)."""
    from persuasive.files import reading as rd

    path = Path(path)
    if not path.is_dir():
        return rd.scan(path, text=text, role=role)
    parts = dataset_parts(path)
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return pl.scan_parquet(parts)
        return pl.scan_csv(parts, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise ValidationError(f"cannot read {role} '{path}': {rd._first_line(exc)}") from None
