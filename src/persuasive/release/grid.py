r"""Microdata to count tables, and the grid of a sparse table (Prop 8, Bon et al. 2026).

**Microdata.** One record is one unit, counted once: the count of cell :math:`i` is

.. math:: x_i = \#\{\text{records } j : \text{key}(j) = i\},

``group_by(keys).len()`` over the records as :func:`persuasive.files.reading.scan` reads them
(CSV keys as text exactly as written; other formats keep their types), so whatever format the
readers learn, the tabulation gets. A record with a missing key is an error naming its row,
never silently dropped.

**Survey weights are refused.** Prop 8's Receiver has a prior over the *count of records* in a
cell, and its guarantee bounds what it learns about that count. A weighted total is not a count
of units: its small values do not correspond to small counts, so suppressing them certifies
nothing the theorem covers (:func:`refuse_weight`).

**Sparse tables.** The grid of a table is the product of each key's levels: its observed
distinct values, or every declared category when the key column is a polars ``Enum`` or a
pandas categorical (a category nobody has is a level). A combination absent from the input is

* ``"zero"`` (the default) a count of zero: an ordinary cell, suppressed like any cell below h
  (leaving it out of the publication would reveal that it is zero);
* ``"structural"`` a structural zero known to everyone: never a cell, not published. Their
  number is counted over the observed levels, so that ``verify --published`` recomputes it from
  the published file alone.

A grid of more than :data:`MAX_GRID_CELLS` cells is refused before it is built.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from persuasive.errors import ValidationError
from persuasive.files import reading as rd

__all__ = [
    "ABSENT",
    "MAX_GRID_CELLS",
    "absent_cells",
    "check_absent",
    "declared_levels",
    "fill_grid",
    "known_rows",
    "margins_grid",
    "refuse_weight",
    "tabulate",
]

#: How absent combinations are treated: counts of zero (default) or declared structural zeros.
ABSENT = ("zero", "structural")

#: The largest grid (product of the keys' numbers of levels) a zero-filled table may have.
MAX_GRID_CELLS = 10**8


def check_absent(absent: Any, *, option: str = "absent") -> str:
    """``absent`` if it is ``"zero"`` or ``"structural"``; a ValidationError naming it otherwise."""
    if absent not in ABSENT:
        raise ValidationError(
            f"{option} must be 'zero' (absent combinations are counts of zero, shown or "
            f"suppressed like any cell) or 'structural' (declared structural zeros, not "
            f"published); got {absent!r:.60}"
        )
    return str(absent)


def refuse_weight(weight: Any, *, option: str = "weight") -> None:
    """Refuse survey weights (a ValidationError when ``weight`` is given): Prop 8 certifies
    counts of records, and a weighted total is not one (see the module docstring)."""
    if weight is None:
        return
    raise ValidationError(
        f"{option} {weight!r:.60}: survey weights are refused. Prop 8 (Bon et al. 2026) bounds "
        "what a Receiver learns about the count of records in a cell (its prior is over that "
        "count); a weighted total is not a count of units, and its small values do not "
        "correspond to small counts, so suppressing them certifies nothing. The release "
        f"certifies unweighted counts: release the unweighted table (drop {option}), or apply "
        "the weights after suppression"
    )


def _missing_key_checks(keys: tuple[str, ...], schema: pl.Schema) -> list[rd.Check]:
    out = []
    for k in keys:
        c = pl.col(k)
        fails = c.is_null() | c.is_nan() if schema[k].is_float() else c.is_null()
        out.append(
            rd.Check(
                k,
                "is missing: every record is counted once, in the cell of its keys, and a "
                "missing key has no cell; recode missing values as a category of their own "
                "(e.g. 'missing') or drop the record before the release",
                fails,
            )
        )
    return out


def tabulate(source: rd.Source, keys: tuple[str, ...], count: str) -> pl.DataFrame:
    """Count the records of ``source`` per combination of ``keys`` (one record, one unit).

    Parameters
    ----------
    source : path or frame
        Microdata, read by :func:`persuasive.files.reading.scan` (CSV keys as text).
    keys : tuple of str
        The key columns; no record may miss one (an error names the first such row).
    count : str
        The name of the count column made (Int64).

    Returns
    -------
    polars.DataFrame
        The observed cells, sorted by their keys: the key columns (types as read) and
        ``count`` >= 1.

    Examples
    --------
    >>> import polars as pl
    >>> tabulate(pl.DataFrame({"a": ["x", "y", "x"]}), ("a",), "n").rows()
    [('x', 2), ('y', 1)]
    """
    names = rd.header(source)
    rd.require(names, key=list(keys))
    raw = rd.scan(source, text=list(keys))
    try:
        schema = raw.collect_schema()
        lf = raw.select(*keys).with_row_index(rd.ROW)
        checks = _missing_key_checks(keys, schema)
        counts = (
            raw.select(*keys)
            .group_by(*keys)
            .agg(pl.len().cast(pl.Int64).alias(count))
            .sort(list(keys))
        )
        stats, cells = pl.collect_all([rd.first_failures(lf, checks), counts])
    except pl.exceptions.PolarsError as exc:
        where = f"'{source}'" if isinstance(source, (str, os.PathLike)) else "the microdata"
        raise ValidationError(f"cannot read {where}: {rd._first_line(exc)}") from None
    rd.raise_first(stats, lf, checks, what="the microdata")
    return cells


def declared_levels(source: Any, keys: tuple[str, ...], schema: pl.Schema) -> dict[str, pl.Series]:
    """The declared levels of the key columns that declare them: a polars ``Enum`` (its
    categories), a pandas categorical or an Arrow dictionary column (its categories, converted
    to the column's type as read). Keys without declared levels are left out."""
    out: dict[str, pl.Series] = {}
    for k in keys:
        dtype = schema[k]
        if isinstance(dtype, pl.Enum):
            out[k] = pl.Series(k, dtype.categories.to_list(), dtype=dtype)
            continue
        cats = _foreign_categories(source, k)
        if cats is None:
            continue
        try:
            series = cats if cats.dtype == dtype else cats.cast(dtype, strict=True)
        except pl.exceptions.PolarsError:
            raise ValidationError(
                f"key column {k!r}: its declared categories cannot be read as the column's "
                f"type {dtype}; recode the column"
            ) from None
        out[k] = series.alias(k)
    return out


def _foreign_categories(source: Any, key: str) -> pl.Series | None:
    """The categories of a pandas categorical or Arrow dictionary column, as polars reads them."""
    module = type(source).__module__.split(".")[0]
    if module == "pandas":
        column = source[key]
        cats = getattr(getattr(column, "cat", None), "categories", None)
        if cats is None or getattr(column.dtype, "name", "") != "category":
            return None
        import pandas as pd

        every = pd.Series(pd.Categorical(list(cats), categories=cats), name=key)
        return pl.from_pandas(every.to_frame()).to_series()
    if module == "pyarrow" and hasattr(source, "column"):
        import pyarrow as pa

        column = source.column(key)
        if not pa.types.is_dictionary(column.type) or column.num_chunks == 0:
            return None
        dictionary = column.unify_dictionaries().chunk(0).dictionary
        every = pa.DictionaryArray.from_arrays(pa.array(range(len(dictionary))), dictionary)
        return pl.Series(key, every)
    return None


def _levels(
    cells: pl.DataFrame, keys: tuple[str, ...], declared: Mapping[str, pl.Series]
) -> list[pl.Series]:
    out = []
    for k in keys:
        observed = cells.get_column(k).unique()
        lv = observed if k not in declared else pl.concat([declared[k], observed]).unique()
        out.append(lv.sort())
    return out


def n_levels(column: pl.Series) -> int:
    """The number of distinct values of a key column.

    An integer column without nulls whose range is at most four times its length is counted
    by one scatter into a table of flags (numpy, no hashing: about 10x faster than
    ``n_unique`` on 10^7 values); any other column by ``n_unique``.

    Examples
    --------
    >>> import polars as pl
    >>> n_levels(pl.Series([5, 3, 5, 9])), n_levels(pl.Series(["a", "b", "a"]))
    (3, 2)
    """
    if column.dtype.is_integer() and column.len() > 0 and column.null_count() == 0:
        lo, hi = column.min(), column.max()
        assert isinstance(lo, int) and isinstance(hi, int)
        if hi - lo < 4 * column.len() + 64 and hi < 2**63:
            seen = np.zeros(hi - lo + 1, dtype=np.bool_)
            seen[column.cast(pl.Int64).to_numpy() - lo] = True  # Int64: no copy, no overflow
            return int(np.count_nonzero(seen))
    return int(column.n_unique())


def _box_size(cells: pl.DataFrame, keys: tuple[str, ...]) -> int | None:
    """The number of integer points in the box of the keys' ranges (None: a key is not an
    integer column without nulls)."""
    size = 1
    for k in keys:
        col = cells.get_column(k)
        if not col.dtype.is_integer() or col.null_count() or col.len() == 0:
            return None
        lo, hi = col.min(), col.max()
        assert isinstance(lo, int) and isinstance(hi, int)
        size *= hi - lo + 1
    return size


def absent_cells(cells: pl.DataFrame, keys: tuple[str, ...]) -> int:
    """The number of combinations of the observed levels that are not cells (keys unique).

    Integer keys whose cells fill the box of their ranges (as many unique cells as integer
    points in it) have every value of each range observed, so no combination is absent: one
    min/max pass per key instead of counting the levels."""
    if _box_size(cells, keys) == cells.height:
        return 0
    return math.prod(n_levels(cells.get_column(k)) for k in keys) - cells.height


def fill_grid(
    cells: pl.DataFrame,
    keys: tuple[str, ...],
    count: str,
    absent: str,
    declared: Mapping[str, pl.Series] | None = None,
) -> tuple[pl.DataFrame, int]:
    """The cells of the grid and the number of absent combinations.

    With ``absent="zero"`` every combination of the levels (observed, or declared) that is not
    a cell is appended with count 0, in the grid's sorted order, after the input's rows (a
    complete table is returned as it is); with ``"structural"`` the cells are returned as they
    are and the number counts the absent combinations of the observed levels. ``cells`` must
    have unique keys.

    Raises
    ------
    ValidationError
        A zero-filled grid of more than :data:`MAX_GRID_CELLS` cells.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"a": ["x", "y"], "b": ["1", "2"], "n": [3, 4]})
    >>> full, added = fill_grid(t, ("a", "b"), "n", "zero")
    >>> added, full.rows()
    (2, [('x', '1', 3), ('y', '2', 4), ('x', '2', 0), ('y', '1', 0)])
    >>> fill_grid(t, ("a", "b"), "n", "structural")[1]
    2
    """
    absent = check_absent(absent)
    if absent == "structural" or (len(keys) == 1 and not declared):
        return cells, absent_cells(cells, keys)
    if not declared and absent_cells(cells, keys) == 0:
        return cells, 0
    levels = _levels(cells, keys, declared or {})
    size = math.prod(lv.len() for lv in levels)
    if size > MAX_GRID_CELLS:
        shown = " x ".join(f"{k} ({lv.len()} levels)" for k, lv in zip(keys, levels, strict=True))
        raise ValidationError(
            f"the grid of the keys {list(keys)} has {size:,} combinations ({shown}), above the "
            f"limit of {MAX_GRID_CELLS:,} cells: absent combinations are zero-filled, so every "
            "combination would be a published cell; use fewer or coarser keys, or declare the "
            "absent combinations structural zeros (absent='structural', --absent structural)"
        )
    if size == cells.height:
        return cells, 0
    grid = levels[0].to_frame()
    for lv in levels[1:]:
        grid = grid.join(lv.to_frame(), how="cross")
    missing = grid.join(cells.select(keys), on=list(keys), how="anti", maintain_order="left")
    zeros = missing.with_columns(pl.lit(0, dtype=pl.Int64).alias(count))
    filled = pl.concat([cells.select(*keys, count), zeros], how="vertical")
    return filled, missing.height


def margins_grid(
    cells: pl.DataFrame,
    keys: tuple[str, ...],
    count: str,
    absent: str,
    declared: Mapping[str, pl.Series] | None = None,
    hierarchy: Any = (),
) -> tuple[pl.DataFrame, int]:
    """The cells of a table released with margins, and its number of structural zeros.

    Every combination of the observed levels that is not returned is a structural zero (a
    known cell of count 0, never published). Without a hierarchy: ``absent="zero"`` fills the
    grid (:func:`fill_grid`, none structural), ``"structural"`` keeps the cells as given. With
    one (:mod:`persuasive.margins.hierarchy`), the combinations that do not nest are structural
    and the nesting ones absent from the input are counts of zero (or structural with
    ``"structural"``); declared categories of a key are then not added.
    """
    from persuasive.margins.hierarchy import fill_hierarchy

    absent = check_absent(absent)
    if hierarchy:
        return fill_hierarchy(cells, keys, count, hierarchy, absent)
    if absent == "structural":
        return cells.select(*keys, count), absent_cells(cells, keys)
    return fill_grid(cells, keys, count, "zero", declared)[0], 0


def known_rows(source: rd.Source, keys: tuple[str, ...], column: str) -> pl.DataFrame:
    """The key values of the rows of a table of cells whose boolean ``column`` is true (cells
    the Receiver knows a priori). The column holds true / false (or 1 / 0, yes / no)."""
    rd.require(rd.header(source), key=list(keys), known=column)
    raw = rd.scan(source, text=[*keys, column])
    try:
        frame = raw.select(*keys, pl.col(column).cast(pl.String).str.to_lowercase()).collect()
    except pl.exceptions.PolarsError as exc:
        raise ValidationError(
            f"cannot read the known column {column!r}: {rd._first_line(exc)}"
        ) from None
    flag = frame.get_column(column)
    truth = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
    bad = flag.is_null() | ~flag.is_in(list(truth))
    if bad.any():
        i = int(bad.arg_true()[0])
        raise ValidationError(
            f"known: column {column!r} row {i} holds {flag[i]!r}; it must be true or false "
            "(true for a cell whose value the Receiver knows already)"
        )
    return frame.filter(flag.is_in(["true", "1", "yes"])).select(*keys)
