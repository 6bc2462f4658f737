r"""Exact cell totals: the published totals of a magnitude table are sums computed without
rounding, or the release is refused.

A published total is a number a user reads and re-adds; a total rounded by floating-point
summation (``1235.0430000000001`` for values of three decimals) or silently rounded to the
nearest 64-bit float (``27021597764222980`` published as ``2.7021597764222976e16``) changes a
published value. Each value is therefore read as the decimal its user wrote or sees (a file's
text; an integer; a float's shortest round-trip representation) and written exactly as an
integer mantissa at the column's finest decimal scale :math:`S`,

.. math::

    x = M \cdot 10^{-S},\qquad T_c = \Big(\sum_{j \in c} M_j\Big) 10^{-S},

summed in 128-bit integers (every mantissa and every sum is bounded first, so the sums cannot
wrap). A total is published as an integer (``Int64``) when every value is an integer, otherwise
as the 64-bit float whose shortest representation is the exact decimal total; a total with
neither form is refused with a message naming the cell. A floating-point column (Parquet,
pandas) holds each value only to float64 precision: its totals are the float64 nearest the
exact sum (correctly rounded, not the drift of summing floats one by one), which is the exact
decimal whenever a float can hold it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import polars as pl

from persuasive._validation import echo
from persuasive.errors import ValidationError

__all__ = ["DIGITS", "Exact", "exact_values", "publishable"]

#: The digits a 128-bit integer holds with room to spare (2^127 ≈ 1.7·10^38).
DIGITS = 38
_INT64 = 2**63 - 1
_NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"


class Exact:
    """Per-row mantissas (``Int128``) of a value column at the common decimal ``scale``;
    ``floats``: whether the column was floating-point (its totals are published as floats)."""

    def __init__(self, mantissa: pl.Series, scale: int, floats: bool = False) -> None:
        self.mantissa = mantissa
        self.scale = scale
        self.floats = floats


def _text(df: pl.DataFrame, column: str) -> pl.Expr:
    dtype = df.schema[column]
    if dtype == pl.String:
        return pl.col(column).str.strip_chars()
    return pl.col(column).cast(pl.String)


def exact_values(df: pl.DataFrame, column: str, name: str | None = None) -> Exact:
    """The exact mantissas of a checked (finite, non-negative) value column (``name``: how
    messages call it, by default ``column``).

    Raises
    ------
    ValidationError
        When a value is not a plain decimal, or the column's values need more than
        :data:`DIGITS` digits (with the room its sums need) to be summed exactly.

    Examples
    --------
    >>> import polars as pl
    >>> e = exact_values(pl.DataFrame({"v": ["1.5", "2", "3e-1"]}), "v")
    >>> e.mantissa.to_list(), e.scale
    ([15, 20, 3], 1)
    """
    dtype = df.schema[column]
    if dtype.is_integer():  # exact already: no text
        return Exact(df[column].cast(pl.Int128), 0, False)
    if dtype.is_float():
        fast = _float_parts(df[column].to_numpy())
        if fast is not None:
            return fast
    t = _text(df, column)
    shown = column if name is None else name
    parts = df.select(
        t.alias("t"),
        t.str.contains(_NUMBER).alias("ok"),
    )
    bad = parts.with_row_index("__row").filter(~pl.col("ok"))
    if bad.height:
        raise ValidationError(
            f"column {shown!r}, row {int(bad['__row'][0]) + 1}: {echo(bad['t'][0])} is not a "
            "plain decimal number; a contribution must be written like 12, 12.5 or 1.25e3"
        )
    body = pl.col("t").str.replace(r"[eE].*$", "").str.replace(r"^[+-]", "")
    body = pl.when(body.str.contains(r"\.")).then(body.str.strip_chars_end("0")).otherwise(body)
    expo = (
        pl.when(pl.col("t").str.contains("[eE]"))
        .then(pl.col("t").str.replace(r"^.*[eE]", "").cast(pl.Int64))
        .otherwise(0)
    )
    frac = (
        pl.when(body.str.contains(r"\.")).then(body.str.replace(r"^.*\.", "")).otherwise(pl.lit(""))
    )
    digits = body.str.replace(r"\.", "").str.strip_chars_start("0")
    p = parts.select(
        digits.alias("d"),
        (frac.str.len_chars().cast(pl.Int64) - expo).alias("s"),
    )
    scale = max(0, int(p["s"].max() or 0))  # type: ignore[arg-type]
    pad = pl.lit(scale, pl.Int64) - pl.col("s")  # ≥ 0
    width = pl.col("d").str.len_chars().cast(pl.Int64) + pad
    room = DIGITS - math.ceil(math.log10(max(df.height, 1) + 1))
    q = p.with_columns(width.alias("w"), pad.alias("pad"))
    worst = q.with_row_index("__row").filter(pl.col("w") > room)
    if worst.height:
        row = int(worst.sort("w", descending=True)["__row"][0])
        raise ValidationError(
            f"column {shown!r}, row {row + 1}: {echo(parts['t'][row])} cannot be summed exactly "
            f"with the other values: written to their finest decimal place it has "
            f"{int(worst['w'].max())} digits, more than the {room} an exact sum holds; a "  # type: ignore[arg-type]
            "published total must be exact: round the values or rescale the column (e.g. to "
            "thousands)"
        )
    digits_int = pl.when(pl.col("d") == "").then(pl.lit("0")).otherwise(pl.col("d"))
    base = q.select(digits_int.cast(pl.Int128).alias("d"))["d"]
    top = int(q["pad"].max() or 0)  # type: ignore[arg-type]  # > scale for 1e3-like values
    return Exact(base * _pow10(q["pad"], top), scale, dtype.is_float())


def _pow10(pad: pl.Series, top: int) -> pl.Series:
    """10^pad as Int128 for 0 ≤ pad ≤ top (a lookup: Int128 has no power)."""
    table = pl.Series([str(10**k) for k in range(top + 1)]).cast(pl.Int128)
    return table.gather(pad.cast(pl.Int64))


def _float_parts(x: np.ndarray) -> Exact | None:
    r"""Floats below :math:`2^{53}`: each as the fewest decimals k ≤ 17 with
    :math:`\mathrm{round}(x 10^k)/10^k = x` (the division is correctly rounded, so the decimal
    round-trips to x, as its shortest representation does), without text. None when some value
    needs the text path (too large, or no such k)."""
    n = x.size
    k = np.full(n, -1, dtype=np.int64)
    m = np.zeros(n, dtype=np.float64)
    for j in range(18):
        if not (k < 0).any():
            break
        p = 10.0**j
        with np.errstate(over="ignore", invalid="ignore"):
            cand = np.rint(x * p)
            ok = (k < 0) & (cand < 2.0**53) & (cand / p == x)
        k[ok] = j
        m[ok] = cand[ok]
    if (k < 0).any():
        return None
    scale = int(k.max(initial=0))
    # the same bound as the text path: no sum of these mantissas can wrap 128 bits (else the
    # text path names the value)
    room = DIGITS - math.ceil(math.log10(max(n, 1) + 1))
    width = np.where(m > 0, np.floor(np.log10(np.maximum(m, 1.0))) + 1, 0) + (scale - k)
    if (width > room).any():
        return None
    mant = pl.Series(m.astype(np.int64)).cast(pl.Int128) * _pow10(pl.Series(scale - k), scale)
    return Exact(mant, scale, True)


def publishable(
    sums: pl.Series,
    scale: int,
    label: Callable[[int], str],
    what: str = "total",
    floats: bool = False,
) -> pl.Series:
    """The exact totals ``sums · 10^-scale`` as ``Int64`` (scale 0, not ``floats``) or as the
    float64 whose shortest representation is the exact decimal; otherwise a ValidationError
    naming the first total (by ``label`` of its index) that cannot be published exactly.
    With ``floats`` (a floating-point value column, whose values carry only float64 precision)
    each total is the float64 nearest its exact sum (correctly rounded, never refused).

    >>> publishable(pl.Series([1235043, 7], dtype=pl.Int128), 3, str).to_list()
    [1235.043, 0.007]
    """
    sums = sums.cast(pl.Int128)
    if scale == 0 and not floats:
        over = np.flatnonzero((sums > _INT64).to_numpy())
        if over.size:
            j = int(over[0])
            raise ValidationError(
                f"the {what} of {label(j)} is {sums[j]}, beyond the 64-bit integers a table "
                f"file holds ({_INT64}); a published total must be exact: rescale the column "
                "(e.g. thousands)"
            )
        return sums.cast(pl.Int64)
    text = pl.DataFrame({"t": sums.cast(pl.String).str.zfill(scale + 1)})
    dec = text.select(
        pl.concat_str(pl.col("t").str.head(-scale), pl.lit("."), pl.col("t").str.tail(scale))
        if scale
        else pl.col("t")
    ).to_series()
    out = dec.cast(pl.Float64).alias(sums.name)
    if floats:  # the column's own precision: the float nearest the exact sum
        return out
    same = np.zeros(len(sums), dtype=bool)
    try:
        back = exact_values(pl.DataFrame({"f": out}), "f")
    except ValidationError:  # a float needing more digits than we can compare: not exact
        back = None
    if back is not None and back.scale <= scale:
        shifted = pl.select(back.mantissa * pl.lit(10 ** (scale - back.scale), pl.Int128))
        same = (shifted.to_series() == sums).to_numpy()
    off = np.flatnonzero(~same)
    if off.size:
        j = int(off[0])
        raise ValidationError(
            f"the {what} of {label(j)} is {dec[j]} exactly, which a 64-bit float cannot hold "
            f"(it would be published as {out[j]!r}); a published total must be exact: round "
            "the values to fewer significant digits"
        )
    return out
