r"""Release a table of counts by cell suppression, with its Prop 8 certificate (Bon et al. 2026).

Every cell with a count below the threshold h is suppressed (published as missing). Under a
Receiver model giving :math:`\alpha = \alpha(h)` (:mod:`persuasive.classes.receivers`), Prop 8
certifies that the release is :math:`(\mathcal L^r_n, \mathcal C^{h,\alpha}_n, -\log\alpha, 0)`-PP
whenever :math:`h \ge r`: a Receiver whose prior puts at least α on small counts cannot raise its
small-cell log score on any cell by more than :math:`-\log\alpha` nats. The per-cell loss under
the worst prior Q (``docs/math.md`` §9) is

.. math:: \Delta_i = \begin{cases} -\log Q(X_i < h) = -\log\alpha & x_i < r \\
          0 & r \le x_i \text{ (suppressed or released)} \end{cases}

The table is read exactly (:mod:`persuasive.files.reading`: keys as written, counts as exact
64-bit integers) and validated in one pass: a single polars query finds the first failing row of
every check and whether the keys are sorted (then they are unique). An in-memory frame with an
integer count column is checked on its buffers instead (null counts from the Arrow metadata, a
min, one comparison pass), and goes through the query only to name a failing row. Unsorted keys
are checked for duplicates by marking a table over a compact integer key range, else by sorting
or hashing (:mod:`persuasive.release.table_keys`). The published count column is a new buffer
(:func:`~persuasive.release.table_cells.published_column`): a suppressed count is 0 under a
null bit, so no true small count is left behind the published column in memory (a raw Arrow
export would show it). Per-cell losses are computed only when a report asks for them.
The certificate depends only on (h, r, the Receiver model, the column names, the target κ),
never on the data (Assumption 1); its publication section binds the published file.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    Receiver,
    SmallCellReceiver,
    check_thresholds,
)
from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.release import display
from persuasive.release.calibrate import calibrate_threshold
from persuasive.release.table_base import TableFacts
from persuasive.release.table_cells import published_column, read_cells, read_published
from persuasive.release.table_request import TableRequest, check_engine
from persuasive.report.kinds.table import KIND as TABLE_KIND
from persuasive.report.kinds.table import TableParams
from persuasive.results import Certificate

__all__ = ["Source", "TableRelease", "calibrate_threshold", "read_cells", "release_table"]

Source = rd.Source

#: Columns a report adds to the custodian's view of the table (no key may be named like them).
_ADDED = ("suppressed", "loss")


#: Certificates by the repr of their claim (:func:`_certificate`), at most :data:`_CACHED`.
_certified: dict[str, Certificate] = {}
_CACHED = 64


def _certificate(params: TableParams) -> Certificate:
    """The certificate of a table's claim: data-independent, so computed once per claim (half
    the fixed cost of a release) when the Receiver model is one of the library's (frozen, its
    repr complete: the cache is keyed on the claim's repr, where 3 and 3.0 differ); each
    release gets its own copy of the certificate's dicts."""
    if type(params.receiver) not in (SmallCellReceiver, PoissonReceiver, NegativeBinomialReceiver):
        return TABLE_KIND.certify(params).certificate
    claim = repr(params)
    cert = _certified.get(claim)
    if cert is None:
        cert = TABLE_KIND.certify(params).certificate
        if len(_certified) < _CACHED:
            _certified[claim] = cert
    return dataclasses.replace(
        cert, mechanism=_copy(cert.mechanism), definition=_copy(cert.definition)
    )


def _copy(value: Any) -> Any:
    """A copy of the dicts and lists of a JSON-like value (their leaves are immutable); 4x
    faster than :func:`copy.deepcopy`, which keeps a memo."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _names(keys: Any, count: Any) -> tuple[tuple[str, ...], str]:
    ks = (keys,) if isinstance(keys, str) else keys
    try:
        ks = tuple(ks)
    except TypeError:
        raise ValidationError(
            f"keys must be a column name or a list of them; got {keys!r:.60}"
        ) from None
    if not ks or not all(isinstance(k, str) and k for k in ks) or len(set(ks)) != len(ks):
        raise ValidationError(f"keys must be one or more distinct column names; got {keys!r:.60}")
    if not isinstance(count, str) or not count:
        raise ValidationError(f"count must be a column name; got {count!r:.60}")
    if count in ks:
        raise ValidationError(f"count column {count!r} is also a key; a cell's count is not a key")
    for name in (*ks, count):
        if name in _ADDED or name == rd.ROW:
            raise ValidationError(
                f"column {name!r} clashes with a column the report adds ({', '.join(_ADDED)}); "
                "rename it"
            )
    return ks, count


@dataclass(frozen=True, eq=False, repr=False)
class TableRelease(TableFacts):
    """A count table released by suppression, with its certificate (Prop 8, Bon et al. 2026).

    ``rel.write(folder)`` writes the release folder (the table, ``certificate.json``, optionally
    the report); ``rel.published`` is the table alone, a polars DataFrame. In a notebook ``rel``
    shows the guarantee, κ and the first rows of the published table.

    Attributes
    ----------
    published : polars.DataFrame
        What is published: the key columns exactly as read and the count (Int64, null where
        suppressed, so that a spreadsheet does not sum it).
    certificate : Certificate
        ``certify(CellSuppression(h), PersuasivePrivacy(SmallCellLogScore(r),
        SmallCellClass(h, alpha), K, 0))`` with κ = −log α: data-independent.
    params : TableParams
        h, r, the Receiver model, the column names and the target κ: the certificate's claim.
    """

    kind: ClassVar[str] = "table"

    published: pl.DataFrame
    certificate: Certificate
    params: TableParams
    cells: pl.DataFrame = field(repr=False)
    r_explicit: bool = False

    @functools.cached_property
    def table(self) -> pl.DataFrame:
        """The custodian's view: the published columns, ``suppressed`` and the per-cell
        ``loss`` under the worst prior of the class (computed on first use: the loss tells,
        when r < h, whether a suppressed count is below r, so it is never published)."""
        c = self.cells.get_column(self.count)
        return self.published.with_columns(
            (c < self.h).alias("suppressed"),
            pl.when(c < self.r).then(pl.lit(self.kappa)).otherwise(pl.lit(0.0)).alias("loss"),
        )

    def summary(self) -> dict[str, Any]:
        """Data-dependent numbers for the custodian's report (never part of the certificate)."""
        n_sup = self.published.get_column(self.count).null_count()
        below_r = int((self.cells.get_column(self.count) < self.r).sum())
        return self.summary_of(self.published.height, n_sup, below_r)

    # ------------------------------------------------------------------ the pipeline protocol
    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        return frame_files({"released": self.published}, table_format)

    def expected(self, name: str) -> pl.DataFrame | None:
        return self.published if Path(name).stem == "released" else None

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any:
        from persuasive.release.table_report import table_report

        return table_report(self, document, target_kappa)

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        n, n_sup = self.published.height, self.published.get_column(self.count).null_count()
        facts = [
            ("cells", f"{n:,}"),
            ("suppressed", f"{n_sup:,}"),
            ("threshold h", str(self.h)),
            ("Receiver", display.describe_receiver(self.receiver)),
        ]
        return "Table release", facts, self.published, (self.count,)


def release_table(
    source: Source,
    *,
    keys: str | list[str] | tuple[str, ...],
    count: str | None = None,
    h: int,
    receiver: Receiver,
    r: int | None = None,
    target_kappa: float | None = None,
    microdata: bool = False,
    absent: str = "zero",
    weight: str | None = None,
    engine: str | None = None,
    spark: Any = None,
) -> Any:
    r"""Suppress every cell below h and certify the release by Prop 8 (Bon et al. 2026).

    .. math:: T_i = x_i \ \text{if}\ x_i \ge h, \ \text{missing otherwise};\qquad
              \kappa = -\log\alpha(h) \ \text{for}\ (\mathcal L^r_n, \mathcal C^{h,\alpha(h)}_n).

    Parameters
    ----------
    source : path or polars DataFrame / LazyFrame
        A CSV or Parquet file, or a frame: one row per cell (one row per record with
        ``microdata``).
    keys : str or list of str
        Key columns identifying a cell (no missing key, no duplicate). CSV keys are text
        exactly as written.
    count : str
        The count column: whole numbers >= 0 (CSV: digits only; Parquet: an integer type, or a
        float type holding integral values), at most 2^63 − 1. With ``microdata``, optional:
        the name of the published count column (default ``"n"``; not a key).
    h : int
        Suppression threshold: cells with count < h are suppressed.
    receiver : Receiver
        The Receiver model: α = ``receiver.alpha(h)``.
    r : int, optional
        Score threshold of :math:`L^r` (counts >= r are inherently private), ``r <= h``;
        default h.
    target_kappa : float, optional
        The κ the Sender asked for: the certificate holds only if κ is at most it.
    microdata : bool
        ``source`` holds one record per unit: the counts are tabulated first, each record
        counted once in the cell of its keys (:func:`persuasive.release.grid.tabulate`); a
        record with a missing key is an error naming its row.
    absent : {"zero", "structural"}
        The key combinations absent from the input (the grid is the product of the keys'
        levels: observed values, or the categories of an Enum / categorical column): counts of
        zero, published and suppressed like any cell (default), or declared structural zeros,
        known to everyone and not published. The certificate states which
        (``docs/release.md``, "Sparse tables and structural zeros").
    weight : str, optional
        Refused: Prop 8 certifies counts of records, and a weighted total is not one
        (:func:`persuasive.release.grid.refuse_weight`).
    engine : {"polars", "streaming", "spark"}, optional
        Where the cells are read and suppressed (:mod:`persuasive.release.table_request`):
        in memory (default), streamed out of core on one machine, or on Apache Spark (the
        default for a ``pyspark.sql.DataFrame``). The same published rows, errors and
        certificate from each (``docs/scale.md``).
    spark : SparkSession or str, optional
        With ``engine="spark"``: the session to use, or the master URL of one to start
        (default ``local[*]``, or the session already active).

    Returns
    -------
    TableRelease
        (with ``engine="streaming"`` or ``"spark"``, a release of the same protocol whose
        published table stays on disk or in Spark)

    Raises
    ------
    ValidationError
        Bad parameters, or bad data, naming the column and row: an empty table, a missing
        column, a column named twice, a count that is not a whole number (e.g. ``3.0``), is
        negative, missing or above 2^63 − 1, a missing or duplicated key; a weight; a
        zero-filled grid above :data:`persuasive.release.grid.MAX_GRID_CELLS` cells.

    Examples
    --------
    >>> import polars as pl
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> df = pl.DataFrame({"area": ["01", "02", "03"], "n": [0, 4, 12]})
    >>> rel = release_table(df, keys="area", count="n", h=5, receiver=PoissonReceiver(0, 3))
    >>> rel.published.rows()
    [('01', None), ('02', None), ('03', 12)]
    >>> round(rel.certificate.kappa, 6), rel.certificate.basis
    (0.204244, 'Prop 8 (Bon et al. 2026)')

    Records are tabulated with ``microdata``; an absent combination is a zero cell:

    >>> records = pl.DataFrame({"a": ["x", "x", "y"], "b": ["1", "2", "1"]})
    >>> rel = release_table(records, keys=["a", "b"], microdata=True, h=2,
    ...                     receiver=PoissonReceiver(0, 3))
    >>> rel.published.rows()
    [('x', '1', None), ('x', '2', None), ('y', '1', None), ('y', '2', None)]
    """
    from persuasive.release import grid

    grid.refuse_weight(weight)
    absent_ = grid.check_absent(absent)
    if not isinstance(microdata, bool):
        raise ValidationError(f"microdata must be True or False; got {microdata!r:.60}")
    if count is None and not microdata:
        raise ValidationError(
            "count must name the count column of a table of cells; got None (pass "
            "microdata=True to tabulate records into counts)"
        )
    ks, cnt = _names(keys, "n" if count is None else count)
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
    params = TableParams(h_, r_, receiver, ks, cnt, target_kappa, absent_)
    cert = _certificate(params)
    engine_ = check_engine(engine, source)
    if engine_ != "polars":
        request = TableRequest(
            source, ks, cnt, h_, r_, r is not None, receiver, target_kappa, absent_,
            microdata, params, cert,
        )  # fmt: skip
        if engine_ == "spark":
            from persuasive.spark.table import release_table_spark

            return release_table_spark(request, spark=spark)
        if spark is not None:
            raise ValidationError(
                f"spark={spark!r:.60} is for engine='spark' (a session or a master URL); got "
                f"engine={engine_!r}"
            )
        from persuasive.release.streaming import release_table_streaming

        return release_table_streaming(request)
    if spark is not None:
        raise ValidationError(
            f"spark={spark!r:.60} is for engine='spark' (a session or a master URL); got "
            "engine='polars'"
        )
    made: pl.DataFrame | None = None
    if microdata:
        cells = grid.tabulate(source, ks, cnt)
    else:  # a large in-memory Int64 table: cells and published column in one compiled pass
        cells, made = read_published(source, ks, cnt, h_)
    if made is None:
        declared = grid.declared_levels(source, ks, cells.schema)
        # Only zero-filling changes the cells, and the grid of one key without declared levels
        # is its observed (unique) values, the cells themselves: fill_grid would return them as
        # they are after counting the distinct keys (a hash pass costing more than the release).
        if absent_ == "zero" and (declared or len(ks) > 1):
            cells, added = grid.fill_grid(cells, ks, cnt, absent_, declared)
            if added and microdata:
                cells = cells.sort(list(ks))
    published = published_column(cells, ks, cnt, h_) if made is None else made
    return display.read_from(
        TableRelease(published, cert, params, cells, r_explicit=r is not None), source
    )
