r"""Reading release inputs exactly: keys as written, counts as exact integers.

Every release reads its input here, so that no release can change a published value on the way
in:

* **Keys are text, exactly as written.** A CSV key column is read as a string column with no
  type inference: ``01001`` keeps its leading zero, ``1`` and ``1.0`` are different keys, and
  ``NA`` is a key (Namibia), not a missing value. A Parquet (or in-memory) key column keeps its
  declared type.
* **Counts are exact 64-bit integers.** A CSV count is parsed from its text: only whole numbers
  written with digits are counts (``3.0``, ``1e3``, `` 3`` and ``three`` are errors naming the
  row), and a count above :math:`2^{63}-1` is an error, never rounded. A Parquet count column
  may be of an integer type, or of a float type holding integral values (each converted
  exactly); a fractional or non-finite value is an error naming the row.
* **Real values** (a mean's column) are parsed from text once (the decimal-to-binary rounding of
  the file format itself) and must be finite.
* **Headers** naming a column twice are refused (a CSV reader would otherwise rename the second
  ``k`` to ``k_duplicated_0`` and silently drop it from the release).

Validation happens in one pass: :func:`first_failures` builds one aggregation that finds, for
every check, the first failing row, so a table is scanned once however many checks it has.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from persuasive.errors import ValidationError

__all__ = [
    "FORMATS",
    "Check",
    "Source",
    "count_checks",
    "count_expr",
    "first_failures",
    "format_of",
    "header",
    "raise_first",
    "real_checks",
    "real_expr",
    "scan",
]

#: File suffixes a release reads and writes, and the format of each.
FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}

#: The largest count a release accepts: the largest 64-bit signed integer.
MAX_COUNT = 2**63 - 1

#: The name of the 0-based row-number column added while validating (never published).
ROW = "__persuasive_row__"

Source = str | os.PathLike[str] | pl.DataFrame | pl.LazyFrame


def format_of(path: str | os.PathLike[str], *, role: str = "data file") -> str:
    """``"csv"`` or ``"parquet"`` from a file's suffix; a ValidationError naming it otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValidationError(
            f"{role} '{path}' must end in .csv, .parquet or .pq; got suffix {suffix or '(none)'!r}"
        )
    return FORMATS[suffix]


def _check_file(path: Path, role: str) -> None:
    if not path.exists():
        raise ValidationError(f"{role} '{path}' not found; pass an existing CSV or Parquet file")
    if path.is_dir():
        raise ValidationError(f"{role} '{path}' is a folder; pass a CSV or Parquet file")
    if not os.access(path, os.R_OK):
        raise ValidationError(f"{role} '{path}' cannot be read (permission denied)")


def _csv_header(path: Path) -> list[str]:
    with open(path, "rb") as fh:
        raw = fh.read(1 << 20)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(raw) - 4:  # not just a character cut by the 1 MiB window
            raise ValidationError(
                f"data file '{path}' is not UTF-8 text (byte {exc.start}); save it as UTF-8"
            ) from None
        text = raw[: exc.start].decode("utf-8")
    row = next(csv.reader(io.StringIO(text, newline="")), None)
    if row is None:
        raise ValidationError(f"data file '{path}' is empty: it has no header line")
    return row


def header(source: Source, *, role: str = "data file") -> list[str]:
    """The column names of a source, exactly as written; duplicated names are refused.

    Examples
    --------
    >>> import polars as pl
    >>> header(pl.DataFrame({"k": ["a"], "c": [1]}))
    ['k', 'c']
    """
    if isinstance(source, pl.DataFrame):
        names = list(source.columns)
    elif isinstance(source, pl.LazyFrame):
        names = list(source.collect_schema().names())
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        fmt = format_of(path, role=role)
        _check_file(path, role)
        if fmt == "csv":
            names = _csv_header(path)
        else:
            import pyarrow.parquet as pq

            try:
                names = list(pq.read_schema(path).names)
            except Exception as exc:  # pyarrow raises several types for a broken file
                raise ValidationError(
                    f"{role} '{path}' is not a readable Parquet file: {_first_line(exc)}"
                ) from None
    else:
        raise ValidationError(
            "data must be a CSV/Parquet path or a polars DataFrame/LazyFrame; "
            f"got {type(source).__name__}"
        )
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise ValidationError(
                f"the header names column {name!r} twice (columns {seen[name] + 1} and {i + 1}); "
                "rename one: a release must know which column it reads"
            )
        seen[name] = i
    return names


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def scan(
    source: Source, *, text: Sequence[str] = (), infer: bool = False, role: str = "data file"
) -> pl.LazyFrame:
    """A lazy frame of ``source`` whose ``text`` columns are read as strings, exactly.

    Parameters
    ----------
    source : path, polars DataFrame or LazyFrame
        A ``.csv`` / ``.parquet`` / ``.pq`` file or a frame.
    text : sequence of str
        Columns a CSV file must give as written (keys, counts and values parsed by this
        module). Ignored for Parquet and frames, whose columns keep their declared types.
    infer : bool
        Infer the types of the *other* CSV columns from the whole file (for SQL conditions
        over covariates); otherwise every CSV column is read as text.
    """
    names = header(source, role=role)
    if isinstance(source, pl.DataFrame):
        return source.lazy()
    if isinstance(source, pl.LazyFrame):
        return source
    path = Path(source)
    try:
        if format_of(path, role=role) == "parquet":
            return pl.scan_parquet(path)
        if not infer:
            return pl.scan_csv(path, infer_schema=False)
        overrides = {c: pl.String for c in text if c in names}
        return pl.scan_csv(path, schema_overrides=overrides, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise ValidationError(f"cannot read {role} '{path}': {_first_line(exc)}") from None


# --------------------------------------------------------------------------------------------
# Exact parsing, as polars expressions; each check is (message, failing-row condition)
# --------------------------------------------------------------------------------------------


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
