r"""Exact parsing and validation of release inputs, as polars expressions.

Each rule is a :class:`Check` (a message and a failing-row condition). :func:`first_failures`
builds one aggregation that finds, for every check, the first failing row, so a table is scanned
once however many checks it has; :func:`raise_first` turns the first failure into one
``ValidationError`` naming the column and the row, with the entry as written. Counts are exact
64-bit integers parsed from their text (see :mod:`persuasive.files.reading`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from persuasive.errors import ValidationError

__all__ = [
    "MAX_COUNT",
    "ROW",
    "Check",
    "count_checks",
    "count_expr",
    "first_failures",
    "key_checks",
    "raise_first",
    "real_checks",
    "real_expr",
    "require",
]

#: The largest count a release accepts: the largest 64-bit signed integer.
MAX_COUNT = 2**63 - 1

#: The name of the 0-based row-number column added while validating (never published).
ROW = "__persuasive_row__"


@dataclass(frozen=True)
class Check:
    """One validation rule: rows where ``fails`` is true are reported with ``message``.

    ``message`` is formatted with ``value`` (the offending entry, as written).
    """

    column: str
    message: str
    fails: pl.Expr


#: The messages of the count rules every count type shares.
_NEGATIVE_COUNT = "is negative ({value}): counts must be >= 0"
_TOO_LARGE = f"is {{value}}, above the largest count {MAX_COUNT} (2^63 - 1)"

_DIGITS = r"^[0-9]+$"
_NEGATIVE = r"^-[0-9]+$"
_DECIMAL_WHOLE = r"^[+-]?[0-9]+\.0*$"


def count_expr(column: str, dtype: pl.DataType) -> pl.Expr:
    """The count column as exact Int64 (null where the entry is not a count: see
    :func:`count_checks`)."""
    c = pl.col(column)
    if dtype == pl.String:
        return pl.when(c.str.contains(_DIGITS)).then(c.str.to_integer(strict=False)).alias(column)
    if dtype.is_integer():
        if dtype == pl.UInt64:
            return pl.when(c <= MAX_COUNT).then(c.cast(pl.Int64)).alias(column)
        return c.cast(pl.Int64).alias(column)
    if dtype.is_decimal():  # exact: through the decimal's own text, never through a float
        t = _decimal_text(c)
        return pl.when(t.str.contains(_DIGITS)).then(t.str.to_integer(strict=False)).alias(column)
    if dtype.is_float():
        f = c.cast(pl.Float64)
        whole = f.is_finite() & (f == f.floor()) & (f >= 0) & (f < float(MAX_COUNT))
        return pl.when(whole).then(f.cast(pl.Int64, strict=False)).alias(column)
    raise ValidationError(
        f"count column {column!r} has type {dtype}; counts must be integers (or text of integers)"
    )


def _decimal_text(c: pl.Expr) -> pl.Expr:
    """A decimal's exact text with a zero fraction removed (``3.000`` -> ``3``)."""
    return c.cast(pl.String).str.replace(r"\.0*$", "")


def count_checks(column: str, dtype: pl.DataType) -> list[Check]:
    """The rules a count column must meet, in the order they are reported."""
    c = pl.col(column)
    missing = Check(
        column, "is missing (empty): a count table needs every count; fill it", c.is_null()
    )
    if dtype == pl.String:
        return [
            missing,
            Check(
                column,
                "is {value!r}, written with a decimal point: counts are read as exact integers; "
                "write whole numbers without a decimal point",
                c.str.contains(_DECIMAL_WHOLE),
            ),
            Check(column, _NEGATIVE_COUNT, c.str.contains(_NEGATIVE)),
            Check(
                column,
                "is {value!r}, not a count: counts are whole numbers written with digits only",
                ~c.str.contains(_DIGITS),
            ),
            Check(
                column,
                _TOO_LARGE,
                c.str.to_integer(strict=False).is_null(),
            ),
        ]
    if dtype.is_decimal():
        t = _decimal_text(c)
        return [
            missing,
            Check(column, _NEGATIVE_COUNT, t.str.starts_with("-")),
            Check(
                column,
                "is fractional ({value}): counts must be whole numbers",
                ~t.str.contains(_DIGITS),
            ),
            Check(
                column,
                _TOO_LARGE,
                t.str.to_integer(strict=False).is_null(),
            ),
        ]
    if dtype.is_integer():
        out = [missing]
        if dtype.is_signed_integer():
            out.append(Check(column, _NEGATIVE_COUNT, c < 0))
        if dtype == pl.UInt64:
            out.append(Check(column, _TOO_LARGE, c > MAX_COUNT))
        return out
    f = c.cast(pl.Float64)
    return [
        missing,
        Check(column, "is NaN: a count must be a number; fill it", f.is_nan()),
        Check(column, "is infinite ({value}): a count must be finite", f.is_infinite()),
        Check(column, _NEGATIVE_COUNT, f < 0),
        Check(
            column,
            "is fractional ({value!r}): counts must be whole numbers",
            f.is_finite() & (f != f.floor()),
        ),
        Check(
            column,
            _TOO_LARGE,
            f >= float(MAX_COUNT),
        ),
    ]


def real_expr(column: str, dtype: pl.DataType) -> pl.Expr:
    """A numeric column as Float64 (text parsed once; null where it is not a number)."""
    c = pl.col(column)
    if dtype == pl.String:
        return c.str.strip_chars().cast(pl.Float64, strict=False).alias(column)
    if dtype.is_numeric():
        return c.cast(pl.Float64).alias(column)
    raise ValidationError(
        f"column {column!r} has type {dtype}, not numbers; choose a numeric column"
    )


def real_checks(column: str, dtype: pl.DataType) -> list[Check]:
    """The rules a real-valued column must meet (present, a number, finite)."""
    parsed = real_expr(column, dtype)
    c = pl.col(column)
    return [
        Check(column, "is missing (empty); remove the row or fill the value", c.is_null()),
        Check(column, "is {value!r}, not a number", parsed.is_null()),
        Check(
            column,
            "is {value!r}, not a finite number; remove NaN and infinite values",
            ~parsed.is_finite(),
        ),
    ]


def key_checks(keys: Sequence[str]) -> list[Check]:
    """Every key must be present (a CSV empty field is missing; ``""`` quoted is a key)."""
    return [
        Check(
            k,
            "is missing (empty): every row needs its key; fill or drop that row",
            pl.col(k).is_null(),
        )
        for k in keys
    ]


def first_failures(frame: pl.LazyFrame, checks: Sequence[Check], *extra: pl.Expr) -> pl.LazyFrame:
    """One aggregation: the row count ``n``, the first failing row of each check (``check{i}``,
    null if none) and any ``extra`` aggregate expressions. ``frame`` must carry :data:`ROW`."""
    row = pl.col(ROW)
    return frame.select(
        pl.len().alias("n"),
        *(row.filter(ch.fails).first().alias(f"check{i}") for i, ch in enumerate(checks)),
        *extra,
    )


def raise_first(
    stats: pl.DataFrame,
    frame: pl.LazyFrame,
    checks: Sequence[Check],
    *,
    where: Sequence[str] = (),
    what: str = "the table",
) -> None:
    """Raise the first failed check as a one-line ValidationError naming column, row and keys.

    ``frame`` is the *unparsed* frame (the entries as written) with :data:`ROW`; ``where`` names
    the columns that identify a row in the message (the keys of a table).
    """
    if int(stats["n"][0]) == 0:
        raise ValidationError(f"{what} is empty (no rows); a release needs at least one row")
    for i, check in enumerate(checks):
        bad = stats[f"check{i}"][0]
        if bad is None:
            continue
        cols = list(dict.fromkeys([*where, check.column]))
        found = frame.filter(pl.col(ROW) == bad).select(cols).collect().row(0, named=True)
        ident = ", ".join(f"{k}={found[k]!r}" for k in where if k != check.column)
        at = f"row {bad + 1}" + (f" ({ident})" if ident else "")
        text = check.message.format(value=found[check.column])
        raise ValidationError(f"column {check.column!r} at {at} {text}")


def require(names: Sequence[str], **columns: Any) -> None:
    """Each named column must exist: ``require(header, key="k", count="c")``.

    A ValidationError names the role, the column and the columns there are.
    """
    for role, column in columns.items():
        for name in [column] if isinstance(column, str) else list(column or ()):
            if name not in names:
                raise ValidationError(
                    f"{role.replace('_', ' ')} column {name!r} does not exist; available columns: "
                    f"{', '.join(names) or '(none)'}"
                )
