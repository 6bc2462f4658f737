"""The values of a mean release: read exactly, checked, and averaged without overflow.

:func:`read_values` reads a value column (and a group column) in one pass, naming the first
bad row; :func:`as_values` checks an array; :func:`check_n` refuses too few values for the
class of Prop 7 (Bon et al. 2026) to be non-empty (:func:`n_min`); :func:`mean_of` averages
finite values so that the sum cannot overflow (:func:`sum_scale`: scaling by a power of two is
exact); :func:`finite` refuses a mean that is not finite (never published).
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive.errors import ValidationError
from persuasive.files import reading as rd

__all__ = ["as_values", "check_n", "finite", "mean_of", "n_min", "read_values", "sum_scale"]


def n_min(r2: float) -> int:
    """The smallest n for which 𝒢^r is non-empty: r2 >= n/(n-1), and n >= 2."""
    return max(2, math.ceil(r2 / (r2 - 1.0) - 1e-12))


def sum_scale(values: NDArray[np.float64], n: int) -> float:
    """A power of two s such that summing ``n`` values of ``s * values`` cannot overflow."""
    top = float(np.max(np.abs(values))) if values.size else 0.0
    if top * n < sys.float_info.max / 4:
        return 1.0
    return 2.0 ** -(math.frexp(float(n))[1] + 2)


def mean_of(values: NDArray[np.float64]) -> float:
    """The mean of finite values, computed so that the sum cannot overflow (scaling by a power
    of two is exact)."""
    s = sum_scale(values, values.size)
    return float(np.mean(values * s) / s) if s != 1.0 else float(np.mean(values))


def finite(what: str, value: float) -> float:
    """``value`` when it is finite; a ValidationError naming ``what`` otherwise."""
    if not math.isfinite(value):
        raise ValidationError(
            f"{what} is {value}: a published number must be finite; nothing is released"
        )
    return value


def as_values(values: Any) -> NDArray[np.float64]:
    """``values`` as a non-empty 1-d float64 array of finite numbers, else a ValidationError
    naming the first bad entry."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf" or arr.dtype.kind == "b":
        raise ValidationError(
            f"values must be a 1-d array of real numbers; got dtype {arr.dtype} ({values!r:.60})"
        )
    arr = arr.astype(np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValidationError(f"values must be a non-empty 1-d array; got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValidationError(f"values[{i}] = {arr[i]} is not finite; remove NaN/inf first")
    return arr


def check_n(n: int, r2: float, where: str) -> None:
    """Refuse ``n`` values (of ``where``) below :func:`n_min`: the class is then empty."""
    if n < n_min(r2):
        raise ValidationError(
            f"{where} has n = {n} value(s), but no Receiver of the class (Prop 7) exists unless "
            f"r2 >= n/(n-1) (r2 = {r2:g} needs n >= {n_min(r2)}); a vacuous guarantee is not "
            "certified (the mean of one person is that person's value)"
        )


def read_values(source: rd.Source, column: str, group: str | None = None) -> pl.DataFrame:
    """The value column (Float64, parsed once from text in a CSV) and the group column (text as
    written), validated in one pass: every value present and finite, every group present."""
    source = rd.as_source(source)  # a pandas or pyarrow table is converted here, once
    names = rd.header(source)
    rd.require(names, value=column, group=[group] if group else [])
    if group == column:
        raise ValidationError(f"--group {group!r} is also the value column; choose another")
    cols = [column] if group is None else [group, column]
    raw = rd.scan(source, text=cols).select(cols)
    try:
        schema = raw.collect_schema()
        dtype = schema[column]
        lf = raw.with_row_index(rd.ROW)
        checks = [*(rd.key_checks([group]) if group else []), *rd.real_checks(column, dtype)]
        parsed = lf.select(*([group] if group else []), rd.real_expr(column, dtype))
        stats, frame = pl.collect_all([rd.first_failures(lf, checks), parsed])
    except pl.exceptions.PolarsError as exc:
        where = f"'{source}'" if isinstance(source, (str, os.PathLike)) else "the data"
        raise ValidationError(f"cannot read {where}: {rd._first_line(exc)}") from None
    rd.raise_first(stats, lf, checks, where=[group] if group else [], what="the data")
    return frame
