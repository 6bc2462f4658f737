r"""Release a table of counts by cell suppression, with its Prop 8 certificate (Bon et al. 2026).

Every cell with a count below the threshold h is suppressed (published as missing). Under a
Receiver model giving :math:`\alpha = \alpha(h)` (:mod:`persuasive.classes.receivers`), Prop 8
certifies that the release is :math:`(\mathcal L^r_n, \mathcal C^{h,\alpha}_n, -\log\alpha, 0)`-PP
whenever :math:`h \ge r`: a Receiver whose prior puts at least α on small counts cannot raise its
small-cell log score on any cell by more than :math:`-\log\alpha` nats. The per-cell loss under the
worst prior Q (docs/math.md §9) is

.. math:: \Delta_i = \begin{cases} -\log Q(X_i < h) = -\log\alpha & x_i < r \\
          0 & r \le x_i \text{ (suppressed or released)} \end{cases}

The table is read with polars (lazy scans of CSV/Parquet), and validation, suppression and the
losses are columnar expressions: no Python loop over cells. The certificate and the spec depend
only on (h, r, the Receiver model, the key and count column names), never on the data
(Assumption 1).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from persuasive._io import atomic_write
from persuasive.certify import certify
from persuasive.classes import SmallCellClass
from persuasive.classes.receivers import R_MIN, Receiver, check_thresholds, kappa_of
from persuasive.definitions import PersuasivePrivacy
from persuasive.errors import ValidationError
from persuasive.mechanisms import CellSuppression
from persuasive.release.calibrate import calibrate_threshold
from persuasive.results import Certificate
from persuasive.scores import SmallCellLogScore

__all__ = ["Source", "TableRelease", "calibrate_threshold", "release_table"]

Source = str | os.PathLike[str] | pl.DataFrame | pl.LazyFrame

_ROW = "__persuasive_row__"
_PARQUET = (".parquet", ".pq")
_ADDED = ("suppressed", "loss")


def _scan(source: Source) -> pl.LazyFrame:
    if isinstance(source, pl.DataFrame):
        return source.lazy()
    if isinstance(source, pl.LazyFrame):
        return source
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        suffix = p.suffix.lower()
        if suffix != ".csv" and suffix not in _PARQUET:
            raise ValidationError(
                f"table file '{p}' must end in .csv, .parquet or .pq; got suffix '{suffix}'"
            )
        if not p.is_file():
            raise ValidationError(
                f"table file '{p}' not found; pass an existing CSV or Parquet file"
            )
        if suffix == ".csv":
            return pl.scan_csv(p, null_values=["NA"], infer_schema_length=10_000)
        return pl.scan_parquet(p)
    raise ValidationError(
        "source must be a CSV/Parquet path or a polars DataFrame/LazyFrame; "
        f"got {type(source).__name__}"
    )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _names(keys: Any, count: Any) -> tuple[tuple[str, ...], str]:
    ks = (keys,) if isinstance(keys, str) else keys
    try:
        ks = tuple(ks)
    except TypeError:
        raise ValidationError(
            f"keys must be a column name or a list of them; got {keys!r}"
        ) from None
    if not ks or not all(isinstance(k, str) for k in ks) or len(set(ks)) != len(ks):
        raise ValidationError(f"keys must be one or more distinct column names; got {keys!r}")
    if not isinstance(count, str):
        raise ValidationError(f"count must be a column name; got {count!r}")
    if count in ks:
        raise ValidationError(f"count column '{count}' is also a key; a cell's count is not a key")
    for name in (*ks, count):
        if name in _ADDED or name == _ROW:
            raise ValidationError(
                f"column '{name}' clashes with a column the release adds ({', '.join(_ADDED)}); "
                "rename it"
            )
    return ks, count


def _check_schema(schema: pl.Schema, keys: tuple[str, ...], count: str) -> pl.DataType:
    available = list(schema.names())
    for name in (*keys, count):
        if name not in schema:
            role = "count" if name == count else "key"
            raise ValidationError(
                f"{role} column '{name}' does not exist; available columns: "
                f"{', '.join(available) or '(none)'}"
            )
    dtype = schema[count]
    if dtype == pl.String:
        raise ValidationError(
            f"count column '{count}' is text (String), not numbers; remove non-numeric entries "
            "(e.g. '<5', 'n/a') or choose the right count column"
        )
    if not (dtype.is_integer() or dtype.is_float()):
        raise ValidationError(
            f"count column '{count}' must hold integer counts; got dtype {dtype}; cast it"
        )
    return dtype


def _sorted_unique(schema: pl.Schema, keys: tuple[str, ...]) -> pl.Expr:
    """True when every row's key is lexicographically above the previous row's: then the keys are
    unique and the hash-based check (the costly part of validation) is skipped."""
    if not all(
        schema[k].is_numeric() or schema[k].is_temporal() or schema[k] in (pl.String, pl.Boolean)
        for k in keys
    ):
        return pl.lit(False)
    above = pl.col(keys[-1]) > pl.col(keys[-1]).shift(1)
    for k in reversed(keys[:-1]):
        prev = pl.col(k).shift(1)
        above = (pl.col(k) > prev) | ((pl.col(k) == prev) & above)
    return above.fill_null(False).slice(1).all()


def _checks(keys: tuple[str, ...], count: str, dtype: pl.DataType) -> list[tuple[str, pl.Expr]]:
    """``(message, failing-row condition)`` pairs, in the order they are reported."""
    c = pl.col(count)
    checks = [("is missing (null): a count table needs every count; fill it", c.is_null())]
    if dtype.is_float():
        checks += [
            ("is NaN: a count must be a number; fill it", c.is_nan()),
            ("is infinite: a count must be finite", c.is_infinite()),
        ]
    checks.append(("is negative ({value}): counts must be >= 0", c < 0))
    if dtype.is_float():
        checks.append(
            ("is fractional ({value}): counts must be integers", c.is_finite() & (c != c.floor()))
        )
    return checks + [(f"key:{k}", pl.col(k).is_null()) for k in keys]


def _stats_query(
    lf: pl.LazyFrame, keys: tuple[str, ...], checks: list[tuple[str, pl.Expr]]
) -> pl.LazyFrame:
    """One aggregation: the row count, whether the keys are sorted, the first failing row of
    every check (null if none)."""
    row = pl.col(_ROW)
    return lf.select(
        pl.len().alias("n"),
        _sorted_unique(lf.collect_schema(), keys).alias("sorted"),
        *(row.filter(cond).first().alias(f"check{i}") for i, (_, cond) in enumerate(checks)),
    )


def _raise_first_problem(
    stats: pl.DataFrame, lf: pl.LazyFrame, keys: tuple[str, ...], count: str, checks: list[Any]
) -> None:
    if stats["n"][0] == 0:
        raise ValidationError("the table is empty (no rows); a release needs at least one cell")
    for i, (message, _) in enumerate(checks):
        bad = stats[f"check{i}"][0]
        if bad is None:
            continue
        if message.startswith("key:"):
            raise ValidationError(
                f"key column '{message[4:]}' is missing (null) at row {bad + 1}; every cell "
                "needs its key: fill or drop that row"
            )
        found = lf.filter(pl.col(_ROW) == bad).select(*keys, count).collect().row(0, named=True)
        where = f"row {bad + 1} ({', '.join(f'{k}={found[k]!r}' for k in keys)})"
        what = message.format(value=found[count])
        raise ValidationError(f"count column '{count}' at {where} {what}")


#: Integer keys whose range is below this multiple of the row count are checked for duplicates
#: with a bitmap (one scatter pass) rather than by hashing.
_DENSE_KEY_SPAN = 8


def _check_unique(table: pl.DataFrame, keys: tuple[str, ...]) -> None:
    """Hash-based uniqueness of the keys (the released table keeps them, in input order)."""
    if len(keys) == 1 and table.schema[keys[0]].is_integer() and table.height:
        # Integer key over a compact range: one counting pass instead of hashing.
        k = table.get_column(keys[0]).to_numpy()
        lo, hi = int(k.min()), int(k.max())
        if hi - lo < _DENSE_KEY_SPAN * table.height:
            seen = np.zeros(hi - lo + 1, dtype=np.bool_)
            seen[k if lo == 0 else k - lo] = True
            if np.count_nonzero(seen) == table.height:
                return  # every row set its own slot: no duplicates
    key_struct = pl.col(keys[0]) if len(keys) == 1 else pl.struct(list(keys))
    if table.select(key_struct.n_unique()).item() == table.height:
        return
    row = pl.col(_ROW)
    dup = (
        table.select(*keys)
        .with_row_index(_ROW)
        .group_by(*keys)
        .agg(row.min().alias("a"), row.filter(row > row.min()).min().alias("b"))
        .filter(pl.col("b").is_not_null())
        .sort("a")
        .row(0, named=True)
    )
    key_text = ", ".join(f"{k}={dup[k]!r}" for k in keys)
    raise ValidationError(
        f"duplicated key ({key_text}) at rows {dup['a'] + 1} and {dup['b'] + 1}; each cell "
        "must appear once: aggregate (sum) or drop the duplicates"
    )


def _spec(h: int, r: int, alpha: float, kappa: float, receiver: Receiver) -> dict[str, Any]:
    return {
        "description": f"cell suppression below h = {h} of a count table; Receiver model "
        f"{json.dumps(receiver.describe(), sort_keys=True)} gives alpha = {alpha!r}",
        "mechanism": {"type": "cell_suppression", "h": h},
        "definition": {
            "kind": "pp",
            "kappa": kappa,
            "delta": 0.0,
            "scores": [{"type": "small_cell_log", "r": r}],
            "priors": {"class": "small_cell", "h": h, "alpha": alpha},
        },
    }


@dataclass(frozen=True, eq=False)
class TableRelease:
    """A released count table with its certificate (Prop 8, Bon et al. 2026).

    Attributes
    ----------
    table : polars.DataFrame
        The key columns, the count column (null where suppressed, so that a spreadsheet does not
        sum it), ``suppressed`` (bool) and ``loss`` (per-cell relative loss under the worst prior).
    certificate : Certificate
        ``certify(CellSuppression(h), PersuasivePrivacy(SmallCellLogScore(r=r),
        SmallCellClass(h, alpha), kappa, 0))`` with κ = −log α: data-independent.
    receiver : Receiver
        The Receiver model α was derived from.
    h, r : int
        Suppression threshold and score threshold (r <= h).
    keys : tuple of str
        Key column names; ``count`` is the count column name.
    """

    kind: ClassVar[str] = "table"

    table: pl.DataFrame
    certificate: Certificate
    receiver: Receiver
    h: int
    r: int
    keys: tuple[str, ...]
    count: str
    r_explicit: bool = False

    @property
    def alpha(self) -> float:
        """The α of the class 𝒞^{h,α}: the Receiver model's α(h)."""
        return self.receiver.alpha(self.h)

    @property
    def kappa(self) -> float:
        """The certified κ = −log α."""
        return self.certificate.kappa

    @property
    def spec(self) -> dict[str, Any]:
        """The spec document (TOML schema of ``docs/cli.md``): ``spec_from_dict`` rebuilds the
        mechanism and definition. A fresh dict on each access; data-independent."""
        return _spec(self.h, self.r, self.alpha, self.kappa, self.receiver)

    @property
    def metadata(self) -> dict[str, Any]:
        """Data-independent metadata kept beside the spec (the spec format rejects unknown
        top-level keys): ``{"receiver": ..., "release": {"keys": [...], "count": name}}``."""
        return {
            "receiver": self.receiver.describe(),
            "release": {"keys": list(self.keys), "count": self.count},
        }

    def summary(self) -> dict[str, Any]:
        """Data-dependent numbers for the report (never part of the certificate)."""
        n, n_sup, max_loss = self.table.select(
            pl.len(), pl.col("suppressed").sum(), pl.col("loss").max()
        ).row(0)
        return {
            "n_cells": int(n),
            "n_suppressed": int(n_sup),
            "n_released": int(n - n_sup),
            "share_suppressed": float(n_sup / n),
            "max_loss": float(max_loss),
            "h": self.h,
            "r": self.r,
            "alpha": self.alpha,
            "kappa": self.kappa,
        }

    def calibration_curve(
        self, hs: ArrayLike | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """κ(h) = −log α(h) of the Receiver model on thresholds ``hs``; κ = inf where α(h) = 0
        and where h is not an allowed threshold (h < R_MIN, or h < r for an explicitly given r:
        Prop 8 gives no guarantee). Default ``hs``: R_MIN, ..., 2h."""
        grid = np.arange(R_MIN, 2 * self.h + 1) if hs is None else np.asarray(hs)
        if grid.ndim != 1 or grid.size == 0 or not np.all(grid == np.round(grid)):
            raise ValidationError(f"hs must be a 1-d list of integer thresholds; got {hs!r}")
        grid = grid.astype(np.int64)
        low = max(R_MIN, self.r) if self.r_explicit else R_MIN
        kappas = np.array(
            [np.inf if h < low else self.receiver.kappa(int(h)) for h in grid],
            dtype=np.float64,
        )
        return grid, kappas

    @property
    def published(self) -> pl.DataFrame:
        """What may be published: the key columns and the count column (null where suppressed).

        The ``loss`` column is *not* in it: when r < h it tells whether a suppressed count is
        below r, which the release itself does not reveal. It stays in :attr:`table` for the
        custodian's report only.
        """
        return self.table.select(*self.keys, self.count)

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the publishable table (:attr:`published`) to ``path`` (``.csv``, ``.parquet``
        or ``.pq``), atomically: suppressed cells are empty (CSV) or null (Parquet); on error
        nothing is left behind."""
        p = Path(path)
        suffix = p.suffix.lower()
        out = self.published
        if suffix == ".csv":
            return atomic_write(p, lambda tmp: out.write_csv(tmp))
        if suffix in _PARQUET:
            return atomic_write(p, lambda tmp: out.lazy().sink_parquet(tmp))
        raise ValidationError(
            f"output file '{p}' must end in .csv, .parquet or .pq; got suffix '{suffix}'"
        )


def release_table(
    source: Source,
    *,
    keys: str | list[str] | tuple[str, ...],
    count: str,
    h: int,
    receiver: Receiver,
    r: int | None = None,
) -> TableRelease:
    r"""Suppress every cell below h and certify the release by Prop 8 (Bon et al. 2026).

    .. math:: T_i = x_i \ \text{if}\ x_i \ge h, \ \text{missing otherwise};\qquad
              \kappa = -\log\alpha(h) \ \text{for}\ (\mathcal L^r_n, \mathcal C^{h,\alpha(h)}_n).

    Parameters
    ----------
    source : path or polars DataFrame / LazyFrame
        A CSV or Parquet file (read lazily), or a frame: one row per cell.
    keys : str or list of str
        Key columns identifying a cell (no nulls, no duplicates).
    count : str
        The count column: non-negative integers (integer-valued floats accepted).
    h : int
        Suppression threshold: cells with count < h are suppressed.
    receiver : Receiver
        The Receiver model: α = ``receiver.alpha(h)``.
    r : int, optional
        Score threshold of :math:`L^r` (counts >= r are inherently private), ``r <= h``;
        default h.

    Returns
    -------
    TableRelease

    Raises
    ------
    ValidationError
        Bad parameters, or bad data: an empty table, a missing column, a text count column,
        null/NaN/negative/fractional counts, null or duplicated keys (naming column and row).

    Examples
    --------
    >>> import polars as pl
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> df = pl.DataFrame({"area": ["a", "b", "c"], "n": [0, 4, 12]})
    >>> rel = release_table(df, keys="area", count="n", h=5, receiver=PoissonReceiver(0, 3))
    >>> rel.table.select("n", "suppressed").rows()
    [(None, True), (None, True), (12, False)]
    >>> round(rel.certificate.kappa, 6), rel.certificate.basis
    (0.204244, 'Prop 8 (Bon et al. 2026)')
    """
    ks, cnt = _names(keys, count)
    h_, r_ = check_thresholds(h, r)
    if not isinstance(receiver, Receiver):
        raise ValidationError(
            "receiver must be a Receiver model (SmallCellReceiver, PoissonReceiver or "
            f"NegativeBinomialReceiver); got {type(receiver).__name__}"
        )
    alpha = receiver.alpha(h_)
    if not alpha > 0.0:
        raise ValidationError(
            f"the Receiver model {receiver!r} puts no prior mass below h = {h_} (alpha = 0), so "
            "Prop 8 gives no guarantee; raise h or widen the model"
        )
    kappa = kappa_of(alpha)
    lf = _scan(source)
    try:
        schema = lf.collect_schema()
        if schema.get(cnt) == pl.String and lf.select(pl.len()).collect().item() == 0:
            # a header-only CSV reads as text columns: say what is really wrong
            raise ValidationError("the table is empty (no rows); a release needs at least one cell")
        dtype = _check_schema(schema, ks, cnt)
        lf = lf.select(*ks, cnt).with_row_index(_ROW)
        checks = _checks(ks, cnt, dtype)
        c = pl.col(cnt)
        released = lf.select(
            *ks,
            pl.when(c < h_).then(None).otherwise(c).alias(cnt),
            (c < h_).alias("suppressed"),
            pl.when(c < r_).then(pl.lit(kappa)).otherwise(pl.lit(0.0)).alias("loss"),
        )
        # one scan of the source feeds both the checks and the release
        stats, table = pl.collect_all([_stats_query(lf, ks, checks), released])
        _raise_first_problem(stats, lf, ks, cnt, checks)
    except pl.exceptions.PolarsError as exc:
        raise ValidationError(f"cannot read the table: {_first_line(exc)}") from None
    if not stats["sorted"][0]:
        _check_unique(table, ks)
    if dtype.is_float():  # integer-valued (checked): publish integers; overflow is an error
        try:
            table = table.with_columns(pl.col(cnt).cast(pl.Int64, strict=True))
        except pl.exceptions.PolarsError:
            raise ValidationError(
                f"count column '{cnt}' holds a count too large for a 64-bit integer; check it"
            ) from None
    definition = PersuasivePrivacy(SmallCellLogScore(r=r_), SmallCellClass(h_, alpha), kappa, 0.0)
    cert = certify(CellSuppression(h_), definition)
    return TableRelease(table, cert, receiver, h_, r_, ks, cnt, r_explicit=r is not None)
