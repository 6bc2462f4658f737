r"""Linear statistics of one column: means and sums over subsets of rows selected by SQL.

A statistic is a triple ``(name, kind, where)``: ``kind`` is ``"mean"`` or ``"sum"`` of the
value column over the rows selected by ``where``, a polars SQL boolean expression
(``"true"``, ``"religious = 4"``, ``"row_id != 17"``; ``row_id`` is the 0-based row number).
Stacking k statistics of n rows gives :math:`T = A x` with A (k × n) holding :math:`1/n_s` (a
mean over :math:`n_s` rows) or 1 (a sum) on the selected rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive.errors import ValidationError

#: The kinds of statistic, and the 0-based row-number column added for ``where`` clauses.
STAT_KINDS = ("mean", "sum")
ROW_ID = "row_id"
#: Coefficients of a revealing combination below this (relative to the largest) are not shown.
COMBINATION_RTOL = 1e-9


@dataclass(frozen=True)
class Statistic:
    """One linear statistic: the ``kind`` ("mean" or "sum") of the value column over ``where``.

    Examples
    --------
    >>> Statistic("religious_4", "mean", "religious = 4").to_dict()
    {'name': 'religious_4', 'kind': 'mean', 'where': 'religious = 4'}
    """

    name: str
    kind: str
    where: str = "true"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValidationError(f"statistic name must be a non-empty string; got {self.name!r}")
        if self.kind not in STAT_KINDS:
            raise ValidationError(
                f"statistic {self.name!r}: kind must be 'mean' or 'sum'; got {self.kind!r}"
            )
        if not isinstance(self.where, str) or not self.where.strip():
            raise ValidationError(
                f"statistic {self.name!r}: where must be a SQL condition such as 'true' or "
                f"'religious = 4'; got {self.where!r}"
            )

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "kind": self.kind, "where": self.where}


def as_statistics(statistics: Iterable[Any]) -> tuple[Statistic, ...]:
    """Statistics from :class:`Statistic` objects or ``(name, kind, where)`` triples."""
    out = []
    for s in statistics:
        if isinstance(s, Statistic):
            out.append(s)
        elif isinstance(s, (tuple, list)) and len(s) == 3:
            out.append(Statistic(*s))
        else:
            raise ValidationError(
                f"a statistic must be a (name, kind, where) triple; got {s!r} "
                "(e.g. ('overall', 'mean', 'true'))"
            )
    if not out:
        raise ValidationError("statistics must name at least one statistic")
    names = [s.name for s in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValidationError(f"statistic names must be unique; {dup} appear more than once")
    return tuple(out)


def _indexed(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if not isinstance(frame, pl.DataFrame):
        raise ValidationError(f"frame must be a polars DataFrame or LazyFrame; got {frame!r:.60}")
    if ROW_ID in frame.columns:
        raise ValidationError(
            f"the data already have a column {ROW_ID!r}; rename it: the release adds {ROW_ID!r} "
            "(the 0-based row number) for WHERE clauses"
        )
    if frame.height == 0:
        raise ValidationError("the data have no rows: there is nothing to release")
    return frame.with_row_index(ROW_ID)


def _mask(df: pl.DataFrame, stat: Statistic) -> NDArray[np.bool_]:
    head = f"statistic {stat.name!r}: WHERE {stat.where!r}"
    try:
        col = df.select(pl.sql_expr(stat.where).alias("__where")).get_column("__where")
    except pl.exceptions.ColumnNotFoundError:
        raise ValidationError(
            f"{head} names a column that does not exist; the columns are {df.columns}"
        ) from None
    except (pl.exceptions.PolarsError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValidationError(
            f"{head} is not a valid SQL condition ({first}); write e.g. 'religious = 4'"
        ) from None
    if col.dtype != pl.Boolean:
        raise ValidationError(
            f"{head} is {col.dtype}, not a true/false condition; write e.g. 'religious = 4'"
        )
    mask = col.fill_null(False).to_numpy().astype(bool)
    return np.broadcast_to(mask, (df.height,)) if mask.size == 1 else mask


def _column(df: pl.DataFrame, value: str) -> NDArray[np.float64]:
    if value not in df.columns or value == ROW_ID:
        raise ValidationError(
            f"value column {value!r} does not exist; the columns are {df.columns}"
        )
    col = df.get_column(value)
    if col.dtype == pl.String:  # a CSV value column is read as text and parsed once
        from persuasive.files.reading import real_expr

        parsed = df.select(real_expr(value, pl.String())).get_column(value)
        bad = (parsed.is_null() & col.is_not_null()).arg_true()
        if bad.len():
            i = int(bad[0])
            raise ValidationError(
                f"value column {value!r} at row_id {i} is {col[i]!r}, not a number"
            )
        col = parsed
    if not col.dtype.is_numeric():
        raise ValidationError(f"value column {value!r} is {col.dtype}, not numbers")
    return col.cast(pl.Float64).fill_null(math.nan).to_numpy()


def _all_masks(df: pl.DataFrame, stats: tuple[Statistic, ...]) -> list[Any] | None:
    """Every statistic's selection by one polars select (its expressions run in parallel), or
    None if any condition fails or is not boolean (then each is evaluated alone, for the
    error naming it)."""
    try:
        out = df.select(pl.sql_expr(s.where).alias(f"__where{j}") for j, s in enumerate(stats))
    except Exception:  # re-raised, naming the statistic, by _mask
        return None
    if any(dtype != pl.Boolean for dtype in out.dtypes):
        return None
    masks = []
    for col in out.get_columns():
        mask = col.fill_null(False).to_numpy().astype(bool)
        masks.append(np.broadcast_to(mask, (df.height,)) if mask.size == 1 else mask)
    return masks


def build_rows(
    frame: pl.DataFrame | pl.LazyFrame, statistics: Iterable[Any], value: str
) -> tuple[tuple[Statistic, ...], NDArray[np.float64], NDArray[np.float64]]:
    """Validated statistics, A (k, n) and the value column x (NaN only outside every selection)."""
    stats = as_statistics(statistics)
    df = _indexed(frame)
    x = _column(df, value)
    masks = _all_masks(df, stats)
    bare = ~np.isfinite(x)
    any_bare = bool(bare.any())
    a = np.zeros((len(stats), df.height))
    for j, stat in enumerate(stats):
        mask = _mask(df, stat) if masks is None else masks[j]
        count = int(np.count_nonzero(mask))
        if count == 0:
            raise ValidationError(
                f"statistic {stat.name!r}: WHERE {stat.where!r} selects no rows; a {stat.kind} "
                "over nobody is undefined: fix the condition or drop the statistic"
            )
        bad = np.flatnonzero(mask & bare) if any_bare else np.zeros(0, dtype=np.intp)
        if bad.size:
            raise ValidationError(
                f"statistic {stat.name!r}: value column {value!r} is missing, NaN or infinite "
                f"at row_id {int(bad[0])} ({bad.size} such row(s) selected); drop or impute "
                "them, or exclude them in WHERE"
            )
        np.multiply(mask, 1.0 / count if stat.kind == "mean" else 1.0, out=a[j])
    return stats, a, x


def statistics_matrix(
    frame: pl.DataFrame | pl.LazyFrame, statistics: Iterable[Any], *, value: str
) -> tuple[list[str], NDArray[np.float64]]:
    r"""The names and the matrix A (k × n) of a list of linear statistics of ``value``.

    Parameters
    ----------
    frame : polars.DataFrame or LazyFrame
        One row per individual (n rows); a column ``row_id`` (0-based) is added for ``where``.
    statistics : iterable of (name, kind, where) or Statistic
        ``kind`` is "mean" (row of :math:`1/n_s` on the :math:`n_s` selected rows) or "sum"
        (row of ones); ``where`` is a polars SQL boolean expression.
    value : str
        The numeric column; it must be finite on every selected row.

    Returns
    -------
    names : list of str
    A : numpy.ndarray, shape (k, n)

    Raises
    ------
    ValidationError
        Naming the statistic: an unknown column in ``where``, a condition that is not boolean,
        an empty selection, a bad kind, a missing or NaN value in a selected row.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"y": [1.0, 2.0, 6.0], "g": [1, 1, 2]})
    >>> names, A = statistics_matrix(df, [("all", "mean", "true"), ("g1", "sum", "g = 1"),
    ...                                   ("no0", "mean", "row_id != 0")], value="y")
    >>> names, A.tolist()
    (['all', 'g1', 'no0'], [[0.333333, 0.333333, 0.333333], [1.0, 1.0, 0.0], [0.0, 0.5, 0.5]])
    """
    stats, a, _ = build_rows(frame, statistics, value)
    return [s.name for s in stats], a
