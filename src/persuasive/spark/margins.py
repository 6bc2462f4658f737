r"""The release with margins on Spark: what runs on the executors, and what on the driver.

:func:`persuasive.release.margins.release_table_with_margins` with ``engine="spark"``:

1. **Reading and checking** run on Spark: the cells are read and checked with the polars
   engine's rules and messages (:func:`persuasive.spark.cells.checked_cells`), and only the
   checked cells — the key columns and the count, one row per cell — are collected to the
   driver (as Arrow), which builds the grid of cells (zero-filling, structural zeros,
   hierarchies) with the in-memory engine's code.
2. **The totals** of every published margin over keys that were read are computed by Spark,
   one grouping per margin, and the driver checks that the cells it received add up to
   them (:func:`check_totals`): a cell lost or changed on the way would stop the release.
3. **The independent pieces** run on the executors (:func:`spark_mapper`, installed with
   :func:`persuasive.margins.parallel.using`): each component's exact posterior and attacker
   LP, and the planner's four greedy runs. The driver finds the components (the constraint
   system of the suppressed cells, :mod:`persuasive.margins.constraints`), hands out the
   pieces, and assembles the results in component order; the Markov chains of components
   too large for the exact DP run on the driver, in component order, from one generator.

The pieces and their results are the same wherever they run, so the release — its
certificate, published table and margins — is byte for byte the polars engine's. The driver
holds the grid of cells (the planner and the audit read the whole grid): the release with
margins scales with the number of cells the driver can hold, and its work with the executors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from persuasive.errors import PersuasiveError, ValidationError
from persuasive.margins.parallel import Mapper, capture
from persuasive.spark.cells import Checked, checked_cells, opened, spark_errors

__all__ = ["SparkCells", "check_totals", "spark_mapper"]

#: Tasks per core in one job of pieces: a little over one, so that a long piece does not
#: leave the other cores idle.
TASKS_PER_CORE = 4


def spark_mapper(spark: Any) -> Mapper:
    """A mapper (:mod:`persuasive.margins.parallel`) running the pieces as the tasks of one
    Spark job on ``spark``'s executors, results in the pieces' order."""
    sc = spark.sparkContext

    def mapper(fn: Callable[[Any], Any], items: list[Any]) -> list[tuple[bool, Any]]:
        slices = min(len(items), max(1, sc.defaultParallelism) * TASKS_PER_CORE)
        rdd = sc.parallelize(list(enumerate(items)), slices)
        got = rdd.map(lambda pair: (pair[0], capture(fn, pair[1]))).collect()
        return [res for _, res in sorted(got, key=lambda pair: pair[0])]

    return mapper


class SparkCells:
    """Reads the cells on Spark, as :func:`persuasive.release.margins_input.read_grid`'s
    reader: ``reader(source, keys, count)`` is the polars frame of the checked cells; the
    Spark frame it was collected from (``checked``) and the frame (``collected``) are kept
    for :func:`check_totals`."""

    def __init__(self, spark: Any, source: Any, h: int, r: int) -> None:
        self.spark, self.source, self.h, self.r = spark, source, h, r
        self.checked: Checked | None = None
        self.collected: pl.DataFrame | None = None

    def names(self, keys: Sequence[str], count: str) -> list[str]:
        """The source's column names (the header), checked to hold ``keys`` and ``count``."""
        return opened(self.spark, self.source, tuple(keys), count).names

    def __call__(self, source: Any, keys: tuple[str, ...], count: str) -> pl.DataFrame:
        read = opened(self.spark, source, keys, count)
        self.checked = checked_cells(read, keys, count, self.h, self.r)
        cells = self.checked.cells
        out = spark_errors(read.where, lambda: pl.from_arrow(cells.toArrow()))
        assert isinstance(out, pl.DataFrame)
        self.collected = out
        return out


def check_totals(
    checked: Checked, cells: pl.DataFrame, keys: Sequence[str], margins: Sequence[Sequence[int]]
) -> int:
    """Spark's total of every margin over keys it read, against the totals of the cells the
    driver received (``cells``: the collected frame, before any zero-filling); the number of
    margins checked. An internal error names the first that differs."""
    from pyspark.sql import functions as F

    count = cells.columns[-1]
    read = set(checked.cells.columns)
    n = 0
    for m in margins:
        by = [keys[a] for a in m]
        if not set(by) <= read:
            continue  # a level a hierarchy file built: not in Spark's frame
        total = F.sum(F.col(count)).cast("long").alias(count)
        spark_side = checked.cells.groupBy(*by).agg(total) if by else checked.cells.agg(total)
        theirs = pl.from_arrow(spark_side.toArrow())
        assert isinstance(theirs, pl.DataFrame)
        ours = cells.group_by(by).agg(pl.col(count).sum()) if by else cells.select(count).sum()
        if by:
            theirs, ours = theirs.sort(by, nulls_last=True), ours.sort(by, nulls_last=True)
        as_long = pl.col(count).cast(pl.Int64)
        if not ours.with_columns(as_long).equals(theirs.with_columns(as_long)):
            raise PersuasiveError(
                f"internal error: the cells collected from Spark do not add up to Spark's totals "
                f"of margin {'+'.join(by) or 'total'}; nothing was released"
            )
        n += 1
    return n


def refuse(what: str) -> ValidationError:
    """What engine spark does not take in a release with margins."""
    return ValidationError(f"{what} is not built for engine spark yet; use engine='polars'")
