"""The sources the Spark engine reads, as Spark DataFrames in their input order.

* **CSV** (a path or a :class:`persuasive.files.DataFile`, its separator and encoding honoured):
  every column read as text (``StringType``, no inference: ``01`` keeps its zero, ``1`` and
  ``1.0`` differ, ``NA`` is a key), the header names taken from the first line exactly as the
  polars engine takes them (:func:`persuasive.files.reading.header`: a name twice is refused),
  an unquoted empty field missing and ``""`` the empty string, a row with another number of
  fields an error, an empty line a row of missing fields (:func:`blank_row`), as polars reads
  it; the line break is the header line's (``\\n`` or ``\\r\\n``) throughout. The file is
  read by one task (``multiLine``: a quoted field may hold a line break, which a split of the
  file cannot find), so its rows keep the file's order.
* **Parquet** (a file, or a folder of part files read in the order of their names): typed.
* **a** ``pyspark.sql.DataFrame``: as it is, in its partitions' order.

Other formats (Stata, SPSS, SAS, an in-memory polars or pandas frame) are refused in one line
naming what this engine reads.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.files.sources import DataFile
from persuasive.release.table_request import is_spark_frame

__all__ = ["READS", "Read", "blank_row", "read_source"]

#: What the Spark engine reads, as its messages say.
READS = (
    "engine spark reads a CSV or Parquet file, a folder of Parquet part files, or a "
    "pyspark.sql.DataFrame"
)

#: The text Spark is told marks a missing CSV field: an unquoted empty field reads as it and
#: so as missing, while ``""`` reads as the empty string (Spark's own default treats both as
#: missing). A field holding exactly this text would read as missing too (an error naming it).
_NULL = "\x00persuasive\x00missing\x00"


@dataclass(frozen=True)
class Read:
    """A source read by Spark.

    Attributes
    ----------
    frame : pyspark.sql.DataFrame
        The table, in input order.
    names : list of str
        Its column names as written.
    fmt : str
        ``"csv"``, ``"parquet"`` or ``"frame"``.
    where : str
        How messages name the source (``'t.csv'`` or ``the table``).
    file : DataFile or None
        The CSV file read.
    """

    frame: Any
    names: list[str]
    fmt: str
    where: str
    file: DataFile | None = None


def _refuse(what: str) -> ValidationError:
    return ValidationError(f"{READS}; got {what}: use engine='polars' for it")


def _check_names(names: list[str], what: str) -> None:
    """A column named twice is refused, as :func:`persuasive.files.reading.header` refuses it."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise ValidationError(
                f"the header names column {name!r} twice (columns {seen[name] + 1} and {i + 1}); "
                f"rename one: a release must know which column it reads ({what})"
            )
        seen[name] = i


def read_source(spark: Any, source: Any) -> Read:
    """``source`` as a Spark DataFrame in input order (see the module docstring)."""
    if is_spark_frame(source):
        names = list(source.columns)
        _check_names(names, "the Spark DataFrame")
        return Read(source, names, "frame", "the table")
    if not isinstance(source, (str, os.PathLike, DataFile)):
        return _refuse_frame(source)
    src = source if isinstance(source, DataFile) else DataFile(Path(os.fspath(source)))
    path = src.path
    if path.is_dir():
        return _parquet_folder(spark, src)
    fmt = rd.format_of(path)
    if fmt not in ("csv", "parquet"):
        raise _refuse(f"a {fmt.upper() if fmt == 'spss' else fmt.capitalize()} file '{path}'")
    if fmt == "csv":
        _encoding(src)
    names = rd.header(src)  # the polars engine's checks and messages: missing file, BOM, names
    where = f"'{path}'"
    if fmt == "parquet":
        return Read(spark.read.parquet(_uri(path)), names, fmt, where)
    return Read(_csv(spark, src, names), names, fmt, where, src)


def _refuse_frame(source: Any) -> Read:
    module = type(source).__module__.split(".")[0]
    kind = {"polars": "polars", "pandas": "pandas", "pyarrow": "pyarrow"}.get(module)
    what = f"a {kind} {type(source).__name__}" if kind else f"a {type(source).__name__}"
    if kind:
        raise ValidationError(
            f"{READS}; got {what}: use engine='polars' for an in-memory table, or make it a "
            "Spark DataFrame (spark.createDataFrame)"
        )
    raise _refuse(what)


def _uri(path: Path) -> str:
    """The ``file://`` URI of a local path: persuasive reads and writes the local (or a shared,
    mounted) filesystem itself, so Spark must too, whatever its default filesystem (HDFS on
    most YARN clusters, where a path without a scheme names an HDFS path)."""
    return path.resolve().as_uri()


def _parquet_folder(spark: Any, src: DataFile) -> Read:
    """A folder of Parquet part files, each read whole in the order of the parts' names (Spark
    reading them together would order its splits by size, not by name)."""
    folder = src.path
    if src.separator is not None or src.encoding is not None:
        raise ValidationError(
            f"data folder '{folder}' is read as Parquet part files: leave the separator and the "
            "encoding out"
        )
    parts = sorted(
        (
            p
            for p in folder.iterdir()
            if p.is_file()
            and not p.name.startswith(("_", "."))
            and p.suffix.lower() in (".parquet", ".pq")
        ),
        key=lambda p: p.name,
    )
    if not parts:
        raise ValidationError(
            f"data folder '{folder}' holds no Parquet part file (*.parquet); {READS}"
        )
    first = spark.read.parquet(_uri(parts[0]))
    frames = [first, *(spark.read.schema(first.schema).parquet(_uri(p)) for p in parts[1:])]
    names = list(first.columns)
    _check_names(names, f"data folder '{folder}'")
    frame = functools.reduce(lambda a, b: a.union(b), frames)
    return Read(frame, names, "parquet", f"'{folder}'")


def _line_separator(path: Path) -> str:
    """``\\r\\n`` when the header line ends so, else ``\\n`` (Spark's own detection would turn
    a quoted ``\\r\\n`` into ``\\n``)."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 20)
    at = head.find(b"\n")
    return "\r\n" if at > 0 and head[at - 1 : at] == b"\r" else "\n"


#: The text encodings Spark's CSV reader decodes (by their Python names), with Spark's names.
_ENCODINGS = {
    "utf-8": "utf-8",
    "utf-8-sig": "utf-8",
    "iso8859-1": "iso-8859-1",
    "ascii": "us-ascii",
}


def _encoding(src: DataFile) -> str:
    """Spark's name of the file's encoding; another encoding is refused in one line."""
    got = _ENCODINGS.get(src.encoding or "utf-8")
    if got is None:
        raise ValidationError(
            f"engine spark reads CSV files in UTF-8, latin-1 or ASCII; got encoding "
            f"{src.encoding!r} for '{src.path}': save it as UTF-8, or use engine='polars'"
        )
    return got


def _csv(spark: Any, src: DataFile, names: list[str]) -> Any:
    """A CSV file read by Spark with every column as text, exactly as the polars engine reads
    it (see the module docstring)."""
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField(n, T.StringType(), True) for n in names])
    options = {
        "header": True,
        "enforceSchema": True,  # the names are the header's, read above
        "sep": src.separator or ",",
        "quote": '"',
        "escape": '"',
        "multiLine": True,
        "mode": "FAILFAST",
        "nullValue": _NULL,
        "emptyValue": "",
        "ignoreLeadingWhiteSpace": False,
        "ignoreTrailingWhiteSpace": False,
        "encoding": _encoding(src),
        "lineSep": _line_separator(src.path),
        "unescapedQuoteHandling": "RAISE_ERROR",  # polars refuses a stray quote too
    }
    return spark.read.schema(schema).options(**options).csv(_uri(src.path))


#: Bytes of a CSV file searched at a time for an empty line.
_BLOCK = 1 << 24


def blank_row(src: DataFile) -> int | None:
    """The 1-based row of the first empty line of a CSV file outside quotes, or None.

    The polars engine reads an empty line as a row whose fields are all missing (an error
    naming that row); Spark's reader skips it. A byte search finds whether the file has an
    empty line at all; only then is the file parsed by Python's csv module (the quoting rules
    of polars) for the row of the first one that is not inside a quoted field."""
    import codecs
    import csv

    found, tail = False, b""
    with open(src.path, "rb") as fh:
        while block := fh.read(_BLOCK):
            text = tail + block
            if b"\n\n" in text or b"\n\r\n" in text:
                found = True
                break
            tail = text[-2:]
    if not found:
        return None
    encoding = codecs.lookup(src.encoding or "utf-8").name
    if encoding == "utf-8":
        encoding = "utf-8-sig"  # a byte-order mark skipped, as the readers skip it
    with open(src.path, encoding=encoding, newline="") as fh:
        for i, record in enumerate(csv.reader(fh, delimiter=src.separator or ",")):
            if i and not record:
                return i
    return None
