r"""What the Receiver already knows: known cells and a-priori bounds, read from frames or files.

A *known* cell's value is public before the release; an *a-priori bound* states
:math:`a_j \le x_j \le \bar a_j` (the a-priori file of τ-Argus). :class:`~persuasive.margins.table
.MarginTable` holds both (``known``, ``lower``, ``upper``); this module reads them (one row per
cell, its key labels compared as strings) and checks the bounds against the table. How they
enter the posterior and the score is in :mod:`persuasive.margins.apriori`
(``docs/margins_apriori.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.errors import ValidationError

#: "No a-priori upper bound" (the largest int64, as :data:`persuasive.margins.constraints
#: .UNBOUNDED`).
NO_UPPER: int = int(np.iinfo(np.int64).max)
#: The columns of an a-priori file besides the keys.
BOUND_COLUMNS: tuple[str, str] = ("lower", "upper")
#: The largest a-priori bound, 2**53: every bound is then exact as a float and as a JSON number
#: (``claim.apriori``, read back by ``persuasive verify``), and far above any count.
MAX_BOUND: int = 2**53

__all__ = [
    "BOUND_COLUMNS",
    "MAX_BOUND",
    "NO_UPPER",
    "apriori_bounds",
    "check_bounds",
    "claimed_bounds",
    "known_cells",
]


def check_bounds(
    lower: Any, upper: Any, counts: NDArray[np.int64], structural: NDArray[np.bool_]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Validated a-priori bounds (int64, table shape): the true counts must lie inside."""
    out = []
    for name, value, default in (("lower", lower, 0), ("upper", upper, NO_UPPER)):
        if value is None:
            out.append(np.full(counts.shape, default, dtype=np.int64))
            continue
        a = np.asarray(value)
        if a.shape != counts.shape or not np.issubdtype(a.dtype, np.integer) or np.any(a < 0):
            raise ValidationError(
                f"{name} (a-priori bounds) must be a non-negative integer array of the table's "
                f"shape {counts.shape}; got dtype {a.dtype} and shape {a.shape}"
            )
        big = (a > MAX_BOUND) & (a != NO_UPPER) if name == "upper" else a > MAX_BOUND
        if np.any(big):
            idx = tuple(int(b) for b in np.argwhere(big)[0])
            raise ValidationError(
                f"{name} (a-priori bounds): cell {idx} has {name} = {int(a[idx])}; a bound must "
                f"be at most {MAX_BOUND} (2**53)"
                + (" or NO_UPPER for none" if name == "upper" else "")
            )
        out.append(a.astype(np.int64))
    lo, up = out
    for bad, what in (
        (lo > up, "lower > upper"),
        ((counts < lo) | (counts > up), "the true count lies outside them"),
        (structural & ((lo > 0) | (up != NO_UPPER)), "the cell is a structural zero"),
    ):
        if np.any(bad):
            idx = tuple(int(b) for b in np.argwhere(bad)[0])
            shown = "none" if up[idx] == NO_UPPER else str(int(up[idx]))
            raise ValidationError(
                f"apriori: cell {idx} has a-priori bounds [{int(lo[idx])}, {shown}] and count "
                f"{int(counts[idx])}: {what}; a-priori bounds must hold for the true table "
                "(lower <= count <= upper)"
            )
    return lo, up


def pl_boolean() -> Any:
    """The polars Boolean type (imported lazily: this module needs polars only here)."""
    import polars as pl

    return pl.Boolean


def known_cells(
    frame: Any,
    keys: Sequence[str],
    levels: Mapping[str, Sequence[Any]],
    structural: NDArray[np.bool_] | None = None,
) -> NDArray[np.bool_]:
    """The mask of the cells listed in ``frame`` (one row per known cell: its key values).

    Labels are compared as strings (``"1"`` and ``1`` name the same level, as in a CSV file). A
    row that names no cell of the table (a level not in it, or a structural zero) or a cell
    twice is an error naming it.

    Examples
    --------
    >>> import polars as pl
    >>> known_cells(pl.DataFrame({"a": ["x"], "b": [2]}), ["a", "b"],
    ...             {"a": ["x", "y"], "b": [1, 2]}).astype(int).tolist()
    [[0, 1], [0, 0]]
    """
    import polars as pl

    from persuasive.files import reading as rd
    from persuasive.files.sources import as_source

    src: Any = as_source(frame, name="known")
    if not isinstance(src, (pl.DataFrame, pl.LazyFrame)):  # a file: keys as written
        _require_keys("known", "known cells", rd.header(src, role="file of known cells"), keys)
        src = rd.scan(src, text=list(keys))
    if isinstance(src, pl.LazyFrame):
        src = src.collect()
    if not isinstance(src, pl.DataFrame):
        raise ValidationError(
            "known must be a frame of key values (one row per known cell), or the name of a "
            f"boolean column of the table; got {type(frame).__name__}"
        )
    keys = list(keys)
    _require_keys("known", "known cells", src.columns, keys)
    shape = tuple(len(levels[k]) for k in keys)
    where = [{str(lab): i for i, lab in enumerate(levels[k])} for k in keys]
    mask = np.zeros(shape, dtype=bool)
    for row, values in enumerate(src.select(keys).iter_rows()):
        idx = []
        for k, w, val in zip(keys, where, values, strict=True):
            if val is None or str(val) not in w:
                raise ValidationError(
                    f"known: row {row} names {k} = {val!r}, not a level of the table "
                    f"(levels {list(w)[:8]}{'...' if len(w) > 8 else ''})"
                )
            idx.append(w[str(val)])
        cell = tuple(idx)
        shown = ", ".join(f"{k}={v!r}" for k, v in zip(keys, values, strict=True))
        if structural is not None and structural[cell]:
            raise ValidationError(
                f"known: row {row} ({shown}) is a structural zero, not a cell of the table"
            )
        if mask[cell]:
            raise ValidationError(f"known: row {row} ({shown}) lists a cell twice")
        mask[cell] = True
    return mask


def apriori_bounds(
    frame: Any,
    keys: Sequence[str],
    levels: Mapping[str, Sequence[Any]],
    structural: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The a-priori bounds listed in ``frame`` (one row per cell: its key values, ``lower``
    and/or ``upper``, inclusive whole counts; an empty field is no bound), as
    ``(lower, upper)`` arrays of the table's shape (0 and :data:`NO_UPPER` where none).

    Labels are compared as strings. A row naming no cell of the table, a structural zero or a
    cell twice, a bound that is not a whole count from 0 to :data:`MAX_BOUND` (ASCII digits in
    a CSV file; an integer, or a whole float as pandas writes a column with empty fields, in a
    frame), or ``lower > upper`` is an error naming the row and echoing the value.

    Examples
    --------
    >>> import polars as pl
    >>> lo, up = apriori_bounds(pl.DataFrame({"a": ["x"], "b": [2], "lower": [1],
    ...                                       "upper": [None]}), ["a", "b"],
    ...                         {"a": ["x", "y"], "b": [1, 2]})
    >>> lo.tolist(), (up == NO_UPPER).tolist()
    ([[0, 1], [0, 0]], [[True, True], [True, True]])
    """
    import polars as pl

    from persuasive.files import reading as rd
    from persuasive.files.sources import as_source

    keys = list(keys)
    src: Any = as_source(frame, name="apriori")
    if not isinstance(src, (pl.DataFrame, pl.LazyFrame)):  # a file: keys and bounds as written
        header = rd.header(src, role="file of a-priori bounds")
        _require_keys("apriori", "a-priori bounds", header, keys)
        src = rd.scan(src, text=[*keys, *BOUND_COLUMNS])
    if isinstance(src, pl.LazyFrame):
        src = src.collect()
    if not isinstance(src, pl.DataFrame):
        raise ValidationError(
            "apriori must be a frame or a CSV/Parquet file with the key columns and 'lower' "
            f"and/or 'upper' (one row per cell with public bounds); got {type(frame).__name__}"
        )
    _require_keys("apriori", "a-priori bounds", src.columns, keys)
    extra = [c for c in src.columns if c not in (*keys, *BOUND_COLUMNS)]
    if extra:
        raise ValidationError(
            f"apriori: unexpected column {extra[0]!r}; allowed: the keys {keys}, 'lower', 'upper'"
        )
    shape = tuple(len(levels[k]) for k in keys)
    where = [{str(lab): i for i, lab in enumerate(levels[k])} for k in keys]
    lower = np.zeros(shape, dtype=np.int64)
    upper = np.full(shape, NO_UPPER, dtype=np.int64)
    seen = np.zeros(shape, dtype=bool)
    cols = [c for c in BOUND_COLUMNS if c in src.columns]
    for row, rec in enumerate(src.select(*keys, *cols).iter_rows(named=True)):
        idx = []
        for k, w in zip(keys, where, strict=True):
            val = rec[k]
            if val is None or str(val) not in w:
                raise ValidationError(
                    f"apriori: row {row} names {k} = {val!r}, not a level of the table "
                    f"(levels {list(w)[:8]}{'...' if len(w) > 8 else ''})"
                )
            idx.append(w[str(val)])
        cell = tuple(idx)
        shown = ", ".join(f"{k}={rec[k]!r}" for k in keys)
        if structural is not None and structural[cell]:
            raise ValidationError(
                f"apriori: row {row} ({shown}) is a structural zero, not a cell of the table"
            )
        if seen[cell]:
            raise ValidationError(f"apriori: row {row} ({shown}) lists a cell twice")
        seen[cell] = True
        got = {c: _bound(row, shown, c, rec[c]) for c in cols}
        if all(g is None for g in got.values()):
            raise ValidationError(
                f"apriori: row {row} ({shown}) gives neither 'lower' nor 'upper'; give at least one"
            )
        lo, up = got.get("lower"), got.get("upper")
        if lo is not None and up is not None and lo > up:
            raise ValidationError(
                f"apriori: row {row} ({shown}) has lower = {lo} > upper = {up}; bounds are "
                "inclusive, lower <= upper"
            )
        lower[cell] = 0 if lo is None else lo
        upper[cell] = NO_UPPER if up is None else up
    return lower, upper


def check_files(known: Any, apriori: Any, keys: Sequence[str]) -> None:
    """A file of known cells or of a-priori bounds can be read and has the key columns (and
    ``lower``/``upper``): checked before an engine starts (a Spark session takes seconds), with
    the messages of :func:`known_cells` and :func:`apriori_bounds`. Frames, a column name and
    None pass; the cells they name are checked against the table's levels later."""
    import polars as pl

    from persuasive.files import reading as rd
    from persuasive.files.sources import as_source

    for name, what, given in (
        ("known", "known cells", known),
        ("apriori", "a-priori bounds", apriori),
    ):
        if given is None or (isinstance(given, str) and name == "known"):
            continue
        src: Any = as_source(given, name=name)
        if not isinstance(src, (pl.DataFrame, pl.LazyFrame)):
            _require_keys(name, what, rd.header(src, role=f"file of {what}"), keys)


def _require_keys(name: str, what: str, columns: Sequence[str], keys: Sequence[str]) -> None:
    """Every key column (and, for a-priori bounds, 'lower' or 'upper') is in ``columns``: else
    one line naming the option (``known``, ``apriori``), the column and the columns there are."""
    missing = [k for k in keys if k not in columns]
    if name == "apriori" and not missing and not set(BOUND_COLUMNS) & set(columns):
        missing = ["'lower' or 'upper'"]
    elif missing:
        missing = [repr(missing[0])]
    if missing:
        bounds = ""
        if name == "apriori":
            bounds = " and 'lower' and/or 'upper' (inclusive integer bounds)"
        raise ValidationError(
            f"{name}: no column {missing[0]}; a file of {what} has the key columns "
            f"{list(keys)}{bounds}, one row per cell; it has {list(columns)}"
        )


def _bound(row: int, shown: str, column: str, value: Any) -> int | None:
    """One bound: None (empty), or a whole count from 0 to :data:`MAX_BOUND`: an integer, a
    whole float of a typed column (pandas stores an integer column with empty fields as
    floats), or ASCII digits as written in a CSV file."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    n: int | None = None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        n = int(value)
    elif isinstance(value, (float, np.floating)) and np.isfinite(value) and value == int(value):
        n = int(value)
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        n = int(value.strip())
    if n is None or not 0 <= n <= MAX_BOUND:
        raise ValidationError(
            f"apriori: row {row} ({shown}) has {column} = {value!r:.40}; a bound must be a whole "
            f"count from 0 to {MAX_BOUND} (2**53; in a CSV file digits only, no decimal point), "
            "or empty for none"
        )
    return n


def claimed_bounds(
    apriori: Sequence[tuple[Sequence[str], int, int | None]],
    keys: Sequence[str],
    where: list[dict[str, int]],
    shape: tuple[int, ...],
    structural: NDArray[np.bool_],
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Flat a-priori bounds from a certificate's ``claim.apriori`` (``(labels, lower, upper or
    None)``; ``where`` maps each key's labels to positions): lower (int, 0 where none) and
    upper (float, inf where none). A cell that is not a published cell is an error."""
    n = int(np.prod(shape))
    lower, upper = np.zeros(n, np.int64), np.full(n, np.inf)
    for labels, lo, up in apriori:
        pos = [w.get(str(lab)) for w, lab in zip(where, labels, strict=True)]
        shown = ", ".join(f"{k}={lab!r}" for k, lab in zip(keys, labels, strict=True))
        i = (
            None
            if any(q is None for q in pos)
            else int(np.ravel_multi_index(tuple(int(q or 0) for q in pos), shape))
        )
        if i is None or structural[i]:
            raise ValidationError(
                f"published table: the a-priori bounds of ({shown}) in the claim name no published "
                "cell"
            )
        lower[i], upper[i] = lo, np.inf if up is None else float(up)
    return lower, upper
