"""Zero-filling a table of several keys on Spark: the absent combinations as cells of count 0.

The polars engine's rule (:func:`persuasive.release.grid.fill_grid`): with ``absent="zero"``
and several keys, every combination of the keys' observed levels that is not a cell is a cell
of count 0, appended after the input's rows in the grid's sorted order (the first key slowest);
a complete table is left as it is, and a grid above
:data:`persuasive.release.grid.MAX_GRID_CELLS` cells is refused. Here the levels are counted
in one aggregation; only when some combination is absent is the grid built (a cross join of
the distinct levels, an anti join with the cells, a sort), and appended by a union, which keeps
the partitions of the cells first (the added cells are materialised once, so that every job
sees them in the same partitions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from persuasive.errors import ValidationError
from persuasive.release.grid import MAX_GRID_CELLS

__all__ = ["zero_fill"]


def zero_fill(cells: Any, keys: Sequence[str], count: str, n: int) -> tuple[Any, int]:
    """The cells with the absent combinations added as counts of 0, and their number.

    Parameters
    ----------
    cells : pyspark.sql.DataFrame
        The checked cells (unique keys, the count as LongType), in input order.
    keys : sequence of str
        Two or more key columns.
    count : str
        The count column.
    n : int
        The number of cells.
    """
    from pyspark.sql import functions as F

    levels = cells.agg(*(F.count_distinct(k).alias(f"k{i}") for i, k in enumerate(keys)))
    sizes = [int(v) for v in levels.collect()[0]]
    size = math.prod(sizes)
    if size == n:
        return cells, 0
    if size > MAX_GRID_CELLS:
        shown = " x ".join(f"{k} ({s} levels)" for k, s in zip(keys, sizes, strict=True))
        raise ValidationError(
            f"the grid of the keys {list(keys)} has {size:,} combinations ({shown}), above the "
            f"limit of {MAX_GRID_CELLS:,} cells: absent combinations are zero-filled, so every "
            "combination would be a published cell; use fewer or coarser keys, or declare the "
            "absent combinations structural zeros (absent='structural', --absent structural)"
        )
    grid = cells.select(keys[0]).distinct()
    for k in keys[1:]:
        grid = grid.crossJoin(cells.select(k).distinct())
    missing = grid.join(cells.select(*keys), on=list(keys), how="left_anti").orderBy(*keys)
    # made once (keys and zeros only, nothing of a count): every later job sees the same
    # partitions, which the digest's offsets need
    zeros = missing.select(*keys, F.lit(0).cast("bigint").alias(count)).localCheckpoint()
    return cells.select(*keys, count).unionByName(zeros), size - n
