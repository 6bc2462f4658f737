"""The checks of a count table in Spark SQL: the polars engine's rules, messages and rows.

Each rule of :mod:`persuasive.files.parsing` (:func:`~persuasive.files.parsing.key_checks`,
:func:`~persuasive.files.parsing.count_checks`) is paired here with a Spark condition failing on
the same rows, and the count is parsed by the same rule (:func:`count_column`): CSV text of
digits only, through ``try_cast`` (never a float); an integer type as it is; a decimal or a
float only where it is a whole number in [0, 2^63 − 1]. One aggregation job
(:func:`validate`), grouped by Spark partition, finds the first failing row of every rule and
each partition's number of rows, suppressed cells and cells below r; the global row number of a
failing row (1-based, in input order) is its partition's offset plus its place in the partition
(``monotonically_increasing_id``). The message is the polars engine's
(:func:`persuasive.files.parsing.raise_first`), with the entries read back for that one row.
A duplicated key is found by grouping on the keys (one shuffle), named by its first two rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.files.parsing import Check

__all__ = ["ID", "PART", "Stats", "count_column", "polars_type", "rules", "validate"]

#: The row id column added while checking (``monotonically_increasing_id``: the partition
#: index in the upper 31 bits, the place in the partition in the lower 33).
ID = "__persuasive_id__"
#: The Spark partition of a row.
PART = "__persuasive_part__"
_LOW = (1 << 33) - 1

_DIGITS = r"^[0-9]+\z"  # Java regex: \z is the end of the text (``$`` also matches before a
_NEGATIVE = r"^-[0-9]+\z"  # final line break)
_DECIMAL_WHOLE = r"^[+-]?[0-9]+\.0*\z"


def polars_type(dtype: Any) -> pl.DataType:
    """The polars type a Spark type reads as (the types of counts and keys a release meets)."""
    from pyspark.sql import types as T

    simple: list[tuple[type, pl.DataType]] = [
        (T.StringType, pl.String()),
        (T.ByteType, pl.Int8()),
        (T.ShortType, pl.Int16()),
        (T.IntegerType, pl.Int32()),
        (T.LongType, pl.Int64()),
        (T.FloatType, pl.Float32()),
        (T.DoubleType, pl.Float64()),
        (T.BooleanType, pl.Boolean()),
        (T.DateType, pl.Date()),
        (T.BinaryType, pl.Binary()),
        (T.TimestampType, pl.Datetime("us", "UTC")),
        (T.TimestampNTZType, pl.Datetime("us")),
    ]
    for cls, out in simple:
        if isinstance(dtype, cls):
            return out
    if isinstance(dtype, T.DecimalType):
        return pl.Decimal(dtype.precision, dtype.scale)
    return pl.Object()


def count_column(name: str, dtype: Any) -> Any:
    """The count as exact LongType, null where the entry is not a count (the rule of
    :func:`persuasive.files.parsing.count_expr`)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    c = F.col(name)
    if isinstance(dtype, T.StringType):
        return F.when(c.rlike(_DIGITS), c.try_cast("bigint"))
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return c.cast("bigint")
    if isinstance(dtype, T.DecimalType):
        whole = (c >= 0) & (c == F.floor(c)) & (c <= F.lit(rd.MAX_COUNT))
        return F.when(whole, c.cast("bigint"))
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        f = c.cast("double")
        whole = _finite(f) & (f % 1.0 == 0) & (f >= 0) & (f < float(rd.MAX_COUNT))
        return F.when(whole, f.cast("bigint"))
    rd.count_expr(name, polars_type(dtype))  # raises the polars engine's message
    raise ValidationError(  # pragma: no cover - a type polars would read as a count
        f"count column {name!r} has type {dtype.simpleString()}; counts must be integers (or "
        "text of integers)"
    )


def _finite(f: Any) -> Any:
    from pyspark.sql import functions as F

    return ~F.isnan(f) & (F.abs(f) != float("inf"))


def rules(keys: Sequence[str], count: str, dtype: Any) -> list[tuple[Check, Any]]:
    """The polars engine's checks (:func:`~persuasive.files.parsing.key_checks` and
    :func:`~persuasive.files.parsing.count_checks`, in their order), each with the Spark
    condition failing on the rows its polars condition fails on."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    pdtype = polars_type(dtype)
    count_column(count, dtype)  # an unreadable type is refused first, as polars does
    checks = [*rd.key_checks(keys), *rd.count_checks(count, pdtype)]
    c = F.col(count)
    conds = [F.col(k).isNull() for k in keys]
    if isinstance(dtype, T.StringType):
        conds += [
            c.isNull(),
            c.rlike(_DECIMAL_WHOLE),
            c.rlike(_NEGATIVE),
            ~c.rlike(_DIGITS),
            c.try_cast("bigint").isNull(),  # only reported when every entry is digits
        ]
    elif isinstance(dtype, T.DecimalType):
        conds += [c.isNull(), c < 0, c != F.floor(c), c > F.lit(rd.MAX_COUNT)]
    elif isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        conds += [c.isNull(), c < 0]
    else:
        f = c.cast("double")
        conds += [
            c.isNull(),
            F.isnan(f),
            ~F.isnan(f) & (F.abs(f) == float("inf")),
            ~F.isnan(f) & (f < 0),
            _finite(f) & (f % 1.0 != 0),
            ~F.isnan(f) & (f >= float(rd.MAX_COUNT)),
        ]
    if len(conds) != len(checks):  # pragma: no cover - the two lists are kept in step
        raise AssertionError("the Spark conditions do not match the polars checks")
    # a null condition (a null entry) is not a failure, as in polars' filter
    return [(ch, F.coalesce(cond, F.lit(False))) for ch, cond in zip(checks, conds, strict=True)]


@dataclass(frozen=True)
class Stats:
    """What the checking job found, per Spark partition (in partition order).

    Attributes
    ----------
    parts : list of int
        The partition indices holding rows.
    rows, suppressed, below_r : list of int
        Per partition: rows, counts below h, counts below r.
    """

    parts: list[int]
    rows: list[int]
    suppressed: list[int]
    below_r: list[int]

    @property
    def n(self) -> int:
        return sum(self.rows)

    def row_of(self, row_id: int) -> int:
        """The 0-based input row of a ``monotonically_increasing_id``."""
        part, place = row_id >> 33, row_id & _LOW
        return sum(r for p, r in zip(self.parts, self.rows, strict=True) if p < part) + place


def with_ids(frame: Any) -> Any:
    """``frame`` with :data:`ID` and :data:`PART`."""
    from pyspark.sql import functions as F

    return frame.withColumns({ID: F.monotonically_increasing_id(), PART: F.spark_partition_id()})


def validate(
    frame: Any, keys: Sequence[str], count: str, h: int, r: int, where: str = "the table"
) -> Stats:
    """Check the cells of ``frame`` (with :func:`with_ids`) as the polars engine does; raise
    its one-line message for the first failing rule, else return the partitions' numbers."""
    from pyspark.sql import functions as F

    dtype = frame.schema[count].dataType
    pairs = rules(keys, count, dtype)
    parsed = count_column(count, dtype)
    aggs = [F.count(F.lit(1)).alias("rows")]
    aggs += [F.min(F.when(cond, F.col(ID))).alias(f"check{i}") for i, (_, cond) in enumerate(pairs)]
    aggs += [
        F.sum((parsed < h).cast("long")).alias("suppressed"),
        F.sum((parsed < r).cast("long")).alias("below_r"),
    ]
    got = sorted(frame.groupBy(PART).agg(*aggs).collect(), key=lambda row: row[PART])
    stats = Stats(
        [int(g[PART]) for g in got],
        [int(g["rows"]) for g in got],
        [int(g["suppressed"] or 0) for g in got],
        [int(g["below_r"] or 0) for g in got],
    )
    if stats.n == 0:
        raise ValidationError("the table is empty (no rows); a release needs at least one row")
    for i, (check, _) in enumerate(pairs):
        found = [g[f"check{i}"] for g in got if g[f"check{i}"] is not None]
        if found:
            _raise(frame, stats, check, min(found), keys)
    _unique(frame, stats, keys)
    return stats


def _raise(frame: Any, stats: Stats, check: Check, row_id: int, keys: Sequence[str]) -> None:
    """The polars engine's message for ``check`` failing at ``row_id``
    (:func:`persuasive.files.parsing.raise_first`)."""
    from pyspark.sql import functions as F

    cols = list(dict.fromkeys([*keys, check.column]))
    found = frame.filter(F.col(ID) == row_id).select(cols).collect()[0].asDict()
    ident = ", ".join(f"{k}={found[k]!r}" for k in keys if k != check.column)
    at = f"row {stats.row_of(row_id) + 1}" + (f" ({ident})" if ident else "")
    text = check.message.format(value=found[check.column])
    raise ValidationError(f"column {check.column!r} at {at} {text}")


def _unique(frame: Any, stats: Stats, keys: Sequence[str]) -> None:
    """No key twice (one grouping on the keys); a duplicate is named by its first two rows,
    as :func:`persuasive.release.table_keys._check_unique` names it."""
    from pyspark.sql import functions as F

    n, a = "__persuasive_n__", "__persuasive_first__"  # never a key's name: ROW's prefix
    most = frame.groupBy(*keys).agg(F.count(F.lit(1)).alias(n)).agg(F.max(n)).collect()[0][0]
    if most is None or most <= 1:  # one job; the rows of a duplicate only when there is one
        return
    dup = (
        frame.groupBy(*keys)
        .agg(F.count(F.lit(1)).alias(n), F.min(ID).alias(a))
        .filter(F.col(n) > 1)
        .orderBy(a)
        .limit(1)
        .collect()
    )
    first = dup[0].asDict()
    same = [F.col(k).eqNullSafe(first[k]) for k in keys]
    cond = same[0]
    for s in same[1:]:
        cond = cond & s
    b = frame.filter(cond & (F.col(ID) > first[a])).agg(F.min(ID)).collect()[0][0]
    key_text = ", ".join(f"{k}={first[k]!r}" for k in keys)
    raise ValidationError(
        f"duplicated key ({key_text}) at rows {stats.row_of(first[a]) + 1} and "
        f"{stats.row_of(b) + 1}; each cell must appear once: aggregate (sum) or drop the "
        "duplicates"
    )
