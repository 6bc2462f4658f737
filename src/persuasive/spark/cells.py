"""The cells of a count table read and checked on Spark, for every release that reads them.

:func:`checked_cells` reads a source (:mod:`persuasive.spark.reading`), refuses what the
engine cannot publish, and checks the cells with the polars engine's rules and one-line
messages (:func:`persuasive.spark.checks.validate`): the table release
(:mod:`persuasive.spark.table`) and the release with margins (:mod:`persuasive.spark.margins`)
read them the same way. An error Spark raises while reading is one line naming the source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.spark import checks
from persuasive.spark.reading import Read, blank_row, read_source

__all__ = ["Checked", "checked_cells", "opened", "refuse_zoned", "spark_error", "spark_errors"]

T = TypeVar("T")


@dataclass(frozen=True)
class Checked:
    """Cells read and checked on Spark.

    Attributes
    ----------
    read : Read
        The source as read.
    cells : pyspark.sql.DataFrame
        The key columns as read and the count as LongType, in input order.
    stats : checks.Stats
        What the checking job counted (rows, counts below h and r, per partition).
    """

    read: Read
    cells: Any
    stats: checks.Stats


def spark_error(exc: BaseException) -> str | None:
    """The first line saying what went wrong in a Spark error (the deepest ``Caused by``),
    or None when ``exc`` is not one."""
    module = type(exc).__module__
    if not (module.startswith("pyspark") or module.startswith("py4j")):
        return None
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    causes = [ln.removeprefix("Caused by: ") for ln in lines if ln.startswith("Caused by: ")]
    text = causes[-1] if causes else next((ln for ln in lines if "Exception" in ln), "")
    text = text or (lines[0] if lines else type(exc).__name__)
    return text.split(": ", 1)[-1] if "Exception" in text.split(": ", 1)[0] else text


def spark_errors(where: str, run: Callable[[], T]) -> T:
    """``run()``, with an error Spark raises made one line: ``cannot read WHERE: ...``."""
    try:
        return run()
    except ValidationError:
        raise
    except Exception as exc:
        text = spark_error(exc)
        if text is None:
            raise
        raise ValidationError(f"cannot read {where}: {text[:300]}") from None


def refuse_zoned(frame: Any, keys: tuple[str, ...]) -> None:
    """A timestamp key with a time zone (Spark's ``TIMESTAMP``) is refused: Spark writes it to
    Parquet as INT96, which reads back as another type than the digest's."""
    from pyspark.sql import types as T

    for k in keys:
        if isinstance(frame.schema[k].dataType, T.TimestampType):
            raise ValidationError(
                f"key column {k!r} is a timestamp with a time zone, which engine spark does not "
                "publish yet; cast it to text (or to a timestamp without a time zone), or use "
                "engine='polars'"
            )


def opened(spark: Any, source: Any, keys: tuple[str, ...], count: str) -> Read:
    """``source`` read by Spark, its header holding the keys and the count, and no row with
    every field missing (the polars engine's checks and messages, before any Spark job)."""
    read = read_source(spark, source)
    rd.require(read.names, key=list(keys), count=count)
    refuse_zoned(read.frame, keys)
    if read.file is not None:
        row = blank_row(read.file)
        if row is not None:  # the polars engine's message: a row with every field missing
            check = rd.key_checks(keys)[0]
            ident = ", ".join(f"{k}={None!r}" for k in keys[1:])
            at = f"row {row}" + (f" ({ident})" if ident else "")
            raise ValidationError(f"column {check.column!r} at {at} {check.message}")
    return read


def checked_cells(read: Read, keys: tuple[str, ...], count: str, h: int, r: int) -> Checked:
    """The cells of ``read`` checked as the polars engine checks them (the first failing row
    named, duplicates by their first two rows); the count as LongType."""

    def run() -> Checked:
        frame = checks.with_ids(read.frame.select(*keys, count))
        stats = checks.validate(frame, keys, count, h, r, read.where)
        dtype = read.frame.schema[count].dataType
        cells = read.frame.select(*keys, checks.count_column(count, dtype).alias(count))
        return Checked(read, cells, stats)

    return spark_errors(read.where, run)
