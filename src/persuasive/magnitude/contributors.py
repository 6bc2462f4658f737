r"""The contributors of each cell of a magnitude table, from microdata of contributions.

One row per unit and cell (a unit id, the classification keys, a non-negative value; optionally
the unit's holding). The contributors of a cell are its units, except that the units of one
holding are **one** contributor, whose value is the sum of its rows in the cell
(``docs/magnitude.md`` §1). A contributor of value 0 is dropped: every Receiver of the class
knows it exactly (its prior spread is 0) and it learns nothing.

The result, :class:`Contributions`, holds every contributor of every cell in one flat array,
sorted by cell and, within a cell, by decreasing value (ties by contributor label), so that the
certificate and the rules are vectorised segment sums (no loop over cells).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive._validation import echo
from persuasive.errors import ValidationError

__all__ = ["Contributions", "contributions", "from_cells"]

_CELL = "__cell"
_CID = "__contributor"


@dataclass(frozen=True)
class Contributions:
    """Every positive contributor of every cell, flat and sorted.

    Attributes
    ----------
    cells : polars.DataFrame
        One row per cell (the key columns), in key order; row ``c`` is cell ``c``.
    cell : ndarray of int64
        The cell of each contributor (non-decreasing).
    value : ndarray of float64
        Each contributor's value (> 0), decreasing within a cell.
    label : tuple of str
        Each contributor's name: its unit id, or ``holding <name>`` for a holding.
    units : ndarray of int64
        How many units each contributor sums (1 unless it is a holding).
    size : ndarray of float64 or None
        Each contributor's public size (the sum of its rows' sizes), when a size column was
        given: the Receivers' spreads scale with it instead of the value.
    """

    cells: pl.DataFrame
    cell: NDArray[np.int64]
    value: NDArray[np.float64]
    label: tuple[str, ...]
    units: NDArray[np.int64]
    size: NDArray[np.float64] | None = None
    #: Each cell's exact total as an Int128 mantissa at ``exact_scale`` decimals
    #: (:mod:`persuasive.magnitude.exact`); None: computed from ``value`` when asked.
    exact: pl.Series | None = None
    exact_scale: int = 0
    exact_floats: bool = True

    def exact_totals(self) -> tuple[pl.Series, int, bool]:
        """Each cell's exact total: (Int128 mantissas, decimal scale, whether floats)."""
        if self.exact is not None:
            return self.exact, self.exact_scale, self.exact_floats
        from persuasive.magnitude.exact import exact_values

        e = exact_values(pl.DataFrame({"v": self.value}), "v")
        sums = pl.DataFrame({"c": self.cell, "m": e.mantissa}).group_by("c").agg(pl.col("m").sum())
        full = pl.DataFrame({"c": np.arange(self.n_cells, dtype=np.int64)}).join(
            sums, on="c", how="left"
        )
        return full["m"].fill_null(0).cast(pl.Int128), e.scale, True

    @property
    def scale(self) -> NDArray[np.float64]:
        """What the Receivers' prior spreads scale with: the size if given, else the value."""
        return self.value if self.size is None else self.size

    @property
    def n_cells(self) -> int:
        return int(self.cells.height)

    @property
    def count(self) -> NDArray[np.int64]:
        """The number of contributors of each cell."""
        return np.bincount(self.cell, minlength=self.n_cells).astype(np.int64)

    @property
    def start(self) -> NDArray[np.int64]:
        """The index of each cell's first (largest) contributor."""
        return np.concatenate(([0], np.cumsum(self.count)[:-1])).astype(np.int64)

    @property
    def rank(self) -> NDArray[np.int64]:
        """Each contributor's 0-based rank in its cell (0 the largest)."""
        return np.arange(self.value.size, dtype=np.int64) - self.start[self.cell]

    @property
    def total(self) -> NDArray[np.float64]:
        """Each cell's total."""
        t = np.bincount(self.cell, weights=self.value, minlength=self.n_cells)
        return np.asarray(t, dtype=np.float64)

    def of_cell(self, c: int) -> NDArray[np.float64]:
        """The values of cell ``c``, decreasing."""
        s = int(self.start[c])
        return self.value[s : s + int(self.count[c])]


def _column(frame: pl.LazyFrame, name: str, role: str) -> None:
    names = frame.collect_schema().names()
    if name not in names:
        raise ValidationError(
            f"{role} column {name!r} does not exist; the columns are {', '.join(names)}"
        )


def contributions(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    keys: Sequence[str],
    value: str,
    unit: str,
    holding: str | None = None,
    size: str | None = None,
) -> Contributions:
    """The contributors of each cell (see the module docstring).

    Parameters
    ----------
    frame : polars DataFrame or LazyFrame
        The microdata, one row per unit and cell (a unit may have several rows in a cell:
        they are summed).
    keys : sequence of str
        The classification columns; a cell is one combination of their values.
    value : str
        The non-negative magnitude column.
    unit : str
        The unit id column.
    holding : str, optional
        The holding (enterprise group) of each unit; missing for a unit in no holding.
    size : str, optional
        A public size of each row's contribution (> 0, e.g. its employees): the Receivers'
        spreads scale with a contributor's size (the sum over its rows) instead of its value
        (``docs/magnitude.md`` §5). Contributors of value 0 then count.

    Returns
    -------
    Contributions

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"k": ["a", "a", "a", "b"], "id": [1, 2, 3, 4],
    ...                    "v": [5.0, 1.0, 2.0, 3.0], "h": [None, "G", "G", None]})
    >>> c = contributions(df, keys=["k"], value="v", unit="id", holding="h")
    >>> c.value.tolist(), c.label, c.count.tolist()
    ([5.0, 3.0, 3.0], ('1', 'holding G', '4'), [2, 1])
    """
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    keys = list(keys)
    if not keys:
        raise ValidationError("keys must name at least one classification column; got none")
    used = [*keys, value, unit, *([holding] if holding else []), *([size] if size else [])]
    if len(set(used)) != len(used):
        raise ValidationError(
            f"keys, value, unit, holding and size must be distinct columns; got {used}"
        )
    for name in keys:
        _column(lf, name, "key")
    _column(lf, value, "value")
    _column(lf, unit, "unit")
    if holding:
        _column(lf, holding, "holding")
    if size:
        _column(lf, size, "size")
    df = lf.select(
        *[pl.col(k) for k in keys],
        _parsed(lf, value, "value").alias(value),
        pl.col(unit).cast(pl.String).alias(unit),
        pl.col(value).alias("__raw"),
        (pl.col(holding).cast(pl.String) if holding else pl.lit(None, pl.String)).alias("__h"),
        (_parsed(lf, size, "size") if size else pl.lit(1.0)).alias("__s"),
    ).collect()
    if df.height == 0:
        raise ValidationError(
            "the microdata has no rows; a magnitude table needs one row per unit and cell "
            f"(columns {', '.join(used)})"
        )
    _check_rows(df, keys, value, unit)
    from persuasive.magnitude.exact import exact_values

    exact = exact_values(df, "__raw", value)
    df = df.drop("__raw").with_columns(exact.mantissa.alias("__m"))
    if size:
        _check_size(df, size)
    if holding:
        per_unit = df.group_by(unit).agg(pl.col("__h").n_unique().alias("n"))
        bad = per_unit.filter(pl.col("n") > 1)
        if bad.height:
            raise ValidationError(
                f"holding column {holding!r}: unit {bad[unit][0]!r} belongs to more than one "
                "holding (or to one in some rows and none in others); a unit has one holding"
            )
    df = df.with_columns(
        pl.when(pl.col("__h").is_null())
        .then(pl.col(unit))
        .otherwise(pl.lit("holding ") + pl.col("__h"))
        .alias(_CID)
    )
    cells = df.select(keys).unique().sort(keys, nulls_last=True)
    cells = cells.with_row_index(_CELL)
    joined = df.join(cells, on=keys, how="left", nulls_equal=True, maintain_order="left")
    sums = joined.group_by(_CELL).agg(pl.col("__m").sum()).sort(_CELL)
    grouped = (
        # a unit whose id reads "holding G" is not holding G's units: group by the kind too
        joined.with_columns(pl.col("__h").is_not_null().alias("__is_h"))
        .group_by(_CELL, "__is_h", _CID)
        .agg(
            pl.col(value).sum().alias("v"),
            pl.col(unit).n_unique().alias("u"),
            pl.col("__s").sum().alias("s"),
        )
        .filter(pl.col("v") > 0 if not size else pl.lit(True))
        .sort([_CELL, "v", _CID, "__is_h"], descending=[False, True, False, False])
    )
    return Contributions(
        cells=cells.drop(_CELL),
        cell=grouped[_CELL].to_numpy().astype(np.int64),
        value=grouped["v"].to_numpy().astype(np.float64),
        label=tuple(grouped[_CID].to_list()),
        units=grouped["u"].to_numpy().astype(np.int64),
        size=grouped["s"].to_numpy().astype(np.float64) if size else None,
        exact=sums["__m"],
        exact_scale=exact.scale,
        exact_floats=exact.floats,
    )


def _parsed(lf: pl.LazyFrame, column: str, role: str) -> pl.Expr:
    """A numeric column as Float64; a CSV file's text parsed once, a non-number named."""
    dtype = lf.collect_schema()[column]
    if dtype == pl.String:
        parsed = pl.col(column).str.strip_chars().cast(pl.Float64, strict=False)
        bad = (
            lf.with_row_index("__row")
            .filter(pl.col(column).is_not_null() & parsed.is_null())
            .head(1)
            .collect()
        )
        if bad.height:
            raise ValidationError(
                f"column {column!r}, row {int(bad['__row'][0]) + 1}: {echo(bad[column][0])} is "
                f"not a number; a {role} must be a number"
            )
        return parsed
    if not dtype.is_numeric():
        raise ValidationError(f"{role} column {column!r} must be numeric; got type {dtype}")
    return pl.col(column).cast(pl.Float64)


def _check_size(df: pl.DataFrame, size: str) -> None:
    s = pl.col("__s")
    bad = df.with_row_index("__row").filter(s.is_null() | ~s.is_finite() | (s <= 0))
    if bad.height:
        raise ValidationError(
            f"column {size!r}, row {int(bad['__row'][0]) + 1}: {echo(bad['__s'][0])} is not a "
            "size; a public size must be a finite number > 0"
        )


def _check_rows(df: pl.DataFrame, keys: list[str], value: str, unit: str) -> None:
    """One line naming the first bad row (1-based data row) and column."""
    v = pl.col(value)
    checks = [
        (v.is_null(), value, "is missing; a contribution must be a number ≥ 0"),
        (v.is_nan() | v.is_infinite(), value, "is not finite; a contribution must be ≥ 0"),
        (v < 0, value, "is negative; a magnitude table sums non-negative contributions"),
        (pl.col(unit).is_null(), unit, "is missing; every row needs its unit id"),
    ]
    checks += [
        (pl.col(k).is_null(), k, "is missing; every row needs its cell's keys") for k in keys
    ]
    for cond, col, why in checks:
        bad = df.with_row_index("__row").filter(cond)
        if bad.height:
            row = int(bad["__row"][0]) + 1
            shown = "the value" if bad[col][0] is None else echo(bad[col][0])
            raise ValidationError(f"column {col!r}, row {row}: {shown} {why}")


def from_cells(
    values: Sequence[Sequence[float]], sizes: Sequence[Sequence[float]] | None = None
) -> Contributions:
    """Contributions of cells given directly as lists of contributor values (and public sizes)
    (tests, examples); cell ``c`` is keyed ``cell = c``.

    >>> from_cells([[1.0, 4.0], [2.0]]).value.tolist()
    [4.0, 1.0, 2.0]
    """
    cell, val, lab, siz = [], [], [], []
    for c, vs in enumerate(values):
        arr = np.asarray(vs, dtype=float)
        if np.any(~np.isfinite(arr)) or np.any(arr < 0):
            raise ValidationError(f"values of cell {c} must be finite and ≥ 0; got {echo(vs)}")
        sz = None if sizes is None else np.asarray(sizes[c], dtype=float)
        if sz is not None and (
            sz.shape != arr.shape or np.any(~(sz > 0)) or np.any(~np.isfinite(sz))
        ):
            raise ValidationError(f"sizes of cell {c} must be finite, > 0, one per value")
        order = np.argsort(-arr, kind="stable")
        keep = [int(j) for j in order if arr[j] > 0 or sz is not None]
        cell += [c] * len(keep)
        val += [float(arr[j]) for j in keep]
        lab += [f"c{c}u{j}" for j in keep]
        siz += [] if sz is None else [float(sz[j]) for j in keep]
    return Contributions(
        cells=pl.DataFrame({"cell": list(range(len(values)))}),
        cell=np.asarray(cell, dtype=np.int64),
        value=np.asarray(val, dtype=np.float64),
        label=tuple(lab),
        units=np.ones(len(val), dtype=np.int64),
        size=None if sizes is None else np.asarray(siz, dtype=np.float64),
    )
