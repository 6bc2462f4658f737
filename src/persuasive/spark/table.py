"""The table release on Spark: :func:`release_table_spark` and :class:`SparkTableRelease`.

:func:`persuasive.release.tables.release_table` checks the parameters, computes the
data-independent certificate (Prop 8, Bon et al. 2026) and hands a
:class:`~persuasive.release.table_request.TableRequest` here. The cells are read
(:mod:`persuasive.spark.reading`), checked with the polars engine's rules and messages in one
aggregation job and one grouping on the keys (:mod:`persuasive.spark.checks`), zero-filled when
several keys have absent combinations (:mod:`persuasive.spark.grid`) and suppressed by one
projection: the keys as read and the count as LongType, null where it is below h, in input
order. Nothing of the table is collected to the driver: only aggregates, the entries of a
failing row for its message, and the digest's hashes (:mod:`persuasive.spark.digest`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from persuasive.errors import ValidationError
from persuasive.release import display
from persuasive.release.table_base import TableFacts
from persuasive.release.table_request import TableRequest
from persuasive.report.kinds.table import TableParams
from persuasive.results import Certificate
from persuasive.spark import session
from persuasive.spark.cells import Checked, checked_cells, opened, spark_errors
from persuasive.spark.reading import _uri

__all__ = ["SparkTableRelease", "release_table_spark"]

#: What :meth:`SparkTableRelease.report` says.
NO_REPORT = (
    "a report (--report, write(report=True)) is not built for engine spark yet; release "
    "without it, or with engine='polars'"
)


class _Head:
    """The first rows of a Spark table for the notebook view (``display.frame_html``): only
    those rows are collected."""

    def __init__(self, frame: Any, height: int) -> None:
        self._frame, self.height = frame, height
        self.columns = list(frame.columns)

    def head(self, n: int) -> Any:
        import polars as pl

        return pl.from_arrow(self._frame.limit(n).toArrow())


@dataclass(frozen=True, eq=False, repr=False)
class SparkTableRelease(TableFacts):
    """A count table released by suppression on Spark, with its certificate (Prop 8, Bon et
    al. 2026): the protocol of :class:`persuasive.release.tables.TableRelease`.

    ``rel.write(folder)`` writes the release folder, the table as a dataset folder of part
    files written by Spark (``released.csv/`` or ``released.parquet/``); ``rel.published`` is
    the published table, a Spark DataFrame (the keys as read, the count LongType, null where
    suppressed), computed anew by each job on it.

    Attributes
    ----------
    published : pyspark.sql.DataFrame
    certificate : Certificate
    params : TableParams
    cells : pyspark.sql.DataFrame
        The custodian's cells (true counts): never published.
    counts : dict
        ``n_cells``, ``n_suppressed``, ``below_r``: from the checking job.
    """

    kind: ClassVar[str] = "table"

    published: Any
    certificate: Certificate
    params: TableParams
    cells: Any = field(repr=False)
    counts: Mapping[str, int] = field(repr=False)
    r_explicit: bool = False

    @property
    def table(self) -> Any:
        """The custodian's view, a Spark DataFrame: the published columns, ``suppressed`` and
        the per-cell ``loss`` under the worst prior of the class (never published)."""
        from pyspark.sql import functions as F

        c = F.col(self.count)
        return self.cells.select(
            *self.keys,
            F.when(c >= self.h, c).alias(self.count),
            (c < self.h).alias("suppressed"),
            F.when(c < self.r, F.lit(self.kappa)).otherwise(F.lit(0.0)).alias("loss"),
        )

    def summary(self) -> dict[str, Any]:
        """Data-dependent numbers for the custodian (never part of the certificate): the keys
        of :meth:`persuasive.release.tables.TableRelease.summary`."""
        c = self.counts
        return self.summary_of(c["n_cells"], c["n_suppressed"], c["below_r"])

    # ------------------------------------------------------------------ the pipeline protocol
    def _frame(self, table_format: str) -> Any:
        """The table as written: for CSV every key as text (Spark's cast, so that the digest
        is of the text written), for Parquet as read."""
        if table_format != "csv":
            return self.published
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        schema = self.published.schema
        return self.published.select(
            *(
                F.col(k)
                if isinstance(schema[k].dataType, T.StringType)
                else F.col(k).cast("string")
                for k in self.keys
            ),
            self.count,
        )

    def published_files(self, table_format: str) -> dict[str, Any]:
        """``{"released.csv" or "released.parquet": writer}``: the writer has Spark write a
        dataset folder of part files at the path (CSV: a header in each part, ``"`` quotes,
        ``""`` a quote, an empty string as ``""`` and a missing count as an empty field)."""
        if table_format not in ("csv", "parquet"):
            raise ValidationError(f"--format must be csv or parquet; got {table_format!r}")
        frame = self._frame(table_format)

        def write(path: Path) -> None:
            out = frame.write.mode("errorifexists")
            if table_format == "parquet":
                out.parquet(_uri(Path(path)))
                return
            out.options(
                header=True,
                sep=",",
                quote='"',
                escape='"',
                escapeQuotes=True,
                quoteAll=False,
                emptyValue='""',
                nullValue="",
                ignoreLeadingWhiteSpace=False,
                ignoreTrailingWhiteSpace=False,
                lineSep="\n",
                encoding="UTF-8",
            ).csv(_uri(Path(path)))

        return {f"released.{table_format}": write}

    def expected(self, name: str) -> dict[str, Any] | None:
        """The digest of the published table's rows, computed in Spark
        (:func:`persuasive.spark.digest.digest_spark`)."""
        if Path(name).stem != "released":
            return None
        return self._digest(Path(name).suffix.lstrip(".").lower())

    @functools.cache  # noqa: B019 - one digest per release and format
    def _digest(self, table_format: str) -> dict[str, Any]:
        from persuasive.spark.digest import digest_spark

        return digest_spark(self._frame("csv" if table_format == "csv" else "parquet"))

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any:
        raise ValidationError(NO_REPORT)

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        n, n_sup = self.counts["n_cells"], self.counts["n_suppressed"]
        facts = [
            ("cells", f"{n:,}"),
            ("suppressed", f"{n_sup:,}"),
            ("threshold h", str(self.h)),
            ("Receiver", display.describe_receiver(self.receiver)),
            ("engine", "spark"),
        ]
        return "Table release", facts, _Head(self.published, n), (self.count,)


def release_table_spark(request: TableRequest, *, spark: Any = None) -> SparkTableRelease:
    """Read, check and suppress a table on Spark (see the module docstring).

    Parameters
    ----------
    request : TableRequest
        The checked release (:func:`persuasive.release.tables.release_table`).
    spark : SparkSession, str or None
        The session, a master URL, or None (:func:`persuasive.spark.session.session_of`).

    Returns
    -------
    SparkTableRelease
    """
    session.pyspark()
    if request.microdata:
        raise ValidationError(
            "microdata=True (--microdata) is not built for engine spark yet: tabulate the "
            "records on Spark first (df.groupBy(keys).count()), or use engine='polars'"
        )
    spark_ = session.session_of(spark)
    read = opened(spark_, request.source, request.keys, request.count)
    checked = checked_cells(read, request.keys, request.count, request.h, request.r)
    return spark_errors(read.where, lambda: _release(checked, request))


def _release(checked: Checked, request: TableRequest) -> SparkTableRelease:
    from pyspark.sql import functions as F

    from persuasive.spark.grid import zero_fill

    keys, count, h = request.keys, request.count, request.h
    cells, stats = checked.cells, checked.stats
    added = 0
    if request.absent == "zero" and len(keys) > 1:
        cells, added = zero_fill(cells, keys, count, stats.n)
    c = F.col(count)
    published = cells.select(*keys, F.when(c >= h, c).alias(count))
    counts = {
        "n_cells": stats.n + added,
        "n_suppressed": sum(stats.suppressed) + added,  # a zero is below every h (h >= 2)
        "below_r": sum(stats.below_r) + added,
    }
    rel = SparkTableRelease(
        published, request.certificate, request.params, cells, counts, request.r_explicit
    )
    return display.read_from(rel, request.source)
