r"""The table release out of core on one machine: ``release_table(..., engine="streaming")``.

The table (a CSV or Parquet file, a :class:`~persuasive.files.DataFile` or a polars LazyFrame)
is scanned lazily and never held whole in memory (``docs/out_of_core.md``):

1. **validation** — one streamed pass in batches (:mod:`persuasive.release.stream_scan`): the
   in-memory engine's checks and messages, naming the same first offending row; sorted keys are
   proved unique in the same pass, the summary (cells, suppressed) counted and the published
   rows hashed into the digest of :mod:`persuasive.files.table_digest`;
2. **unsorted keys** — a second look in bounded memory (:mod:`persuasive.release.stream_keys`):
   a bit table over the range of integer keys, else passes over hash parts of the keys;
3. **writing** — when the pipeline asks for ``released.csv`` or ``released.parquet``, the
   published table (keys as read, the count Int64, null where below h, in input order) is sunk
   by polars' streaming engine straight into the path it gives (``sink_csv`` /
   ``sink_parquet``); the pipeline reads it back and compares the digest of its rows with the
   one of step 1 (:meth:`StreamingTableRelease.expected`).

The certificate is the in-memory engine's (data-independent, Prop 8, Bon et al. 2026), so the
same table gives a byte-identical ``certificate.json`` from either engine. Not built (a one-line
error naming the in-memory engine): microdata, zero-filling absent key combinations that are
missing, and the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.files.table_digest import columns_of, combine
from persuasive.release import display
from persuasive.release.stream_keys import check_unique
from persuasive.release.stream_scan import Scan, published_expr, scan_cells, where_of
from persuasive.release.table_base import TableFacts
from persuasive.release.table_request import TableRequest
from persuasive.report.kinds.table import TableParams
from persuasive.results import Certificate

__all__ = ["StreamingTableRelease", "release_table_streaming"]

_IN_MEMORY = "release it in memory (engine='polars', --engine polars)"


@dataclass(frozen=True, eq=False, repr=False)
class StreamingTableRelease(TableFacts):
    """A count table released by suppression out of core, with its certificate (Prop 8, Bon et
    al. 2026): the protocol of :class:`persuasive.release.tables.TableRelease`, with the
    published table left on disk until it is written.

    Attributes
    ----------
    certificate : Certificate
        The data-independent certificate, as the in-memory engine gives it.
    params : TableParams
        The claim.
    published : polars.LazyFrame
        The published table, lazily (keys as read, the count Int64, null where suppressed).
    """

    kind: ClassVar[str] = "table"

    certificate: Certificate
    params: TableParams
    published: pl.LazyFrame = field(repr=False)
    scan: Scan = field(repr=False)
    r_explicit: bool = False
    unique_by: str = "sorted"

    def summary(self) -> dict[str, Any]:
        """The numbers of :meth:`persuasive.release.tables.TableRelease.summary`, from the
        aggregates of the streamed pass (never part of the certificate)."""
        return self.summary_of(self.scan.rows, self.scan.suppressed, self.scan.below_r)

    # ------------------------------------------------------------------ the pipeline protocol
    def published_files(self, table_format: str) -> dict[str, Any]:
        if table_format not in rd.OUTPUT_FORMATS:
            raise ValidationError(f"--format must be csv or parquet; got {table_format!r}")
        name = f"released.{table_format}"
        frame = self.published

        def write(path: Path) -> None:
            try:
                if table_format == "csv":
                    frame.sink_csv(path, engine="streaming")
                else:
                    frame.sink_parquet(path, engine="streaming")
            except pl.exceptions.PolarsError as exc:
                raise ValidationError(f"cannot write {name}: {rd._first_line(exc)}") from None

        return {name: write}

    def expected(self, name: str) -> dict[str, Any] | None:
        """The digest of the published rows (:mod:`persuasive.files.table_digest`) in the types
        the written file reads back as: a CSV key is text, a Parquet key keeps its type."""
        path = Path(name)
        if path.stem != "released":
            return None
        schema = self.scan.schema
        if path.suffix.lower() == ".csv":
            schema = pl.Schema({k: (pl.Int64 if k == self.count else pl.String) for k in schema})
        return combine(columns_of(schema), self.scan.rows, self.scan.chunks)

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any:
        raise ValidationError(
            "--report is not built for --engine streaming (the report previews and plots the "
            f"table in memory); release without --report, or {_IN_MEMORY}"
        )

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        facts = [
            ("cells", f"{self.scan.rows:,}"),
            ("suppressed", f"{self.scan.suppressed:,}"),
            ("threshold h", str(self.h)),
            ("Receiver", display.describe_receiver(self.receiver)),
            ("engine", "streaming"),
        ]
        return "Table release", facts, None, (self.count,)


def _refuse(request: TableRequest) -> None:
    if request.microdata:
        raise ValidationError(
            f"microdata=True (--microdata) is not built for engine 'streaming': tabulate the "
            f"records first, or {_IN_MEMORY}"
        )


def _full_grid(request: TableRequest, raw: pl.LazyFrame, scan: Scan, where: str) -> None:
    """With several keys and absent combinations as zero counts, the table must hold every
    combination of its keys' levels (then the in-memory engine adds none); otherwise zero-filling
    is refused. The levels of each key are counted by the streaming engine (they are held)."""
    keys = request.keys
    if request.absent != "zero" or len(keys) < 2:
        return
    try:
        levels = raw.select(pl.col(k).n_unique() for k in keys).collect(engine="streaming").row(0)
    except pl.exceptions.PolarsError as exc:
        raise ValidationError(f"cannot read {where}: {rd._first_line(exc)}") from None
    grid = math.prod(int(v) for v in levels)
    if grid != scan.rows:
        raise ValidationError(
            f"the table lacks {grid - scan.rows} of the {grid} combinations of its keys' levels; "
            "zero-filling absent combinations (absent='zero') is not built for engine "
            f"'streaming': pass absent='structural' (--absent structural) if they are structural "
            f"zeros, or {_IN_MEMORY}"
        )


def _no_declared_levels(request: TableRequest, schema: pl.Schema) -> None:
    for k in request.keys:
        if isinstance(schema[k], pl.Enum) and request.absent == "zero":
            raise ValidationError(
                f"key column {k!r} declares its levels ({schema[k]}); zero-filling them is not "
                f"built for engine 'streaming': {_IN_MEMORY}"
            )


def release_table_streaming(request: TableRequest) -> StreamingTableRelease:
    """Release a table out of core (see the module docstring).

    Parameters
    ----------
    request : TableRequest
        The checked release (:func:`persuasive.release.tables.release_table`).

    Returns
    -------
    StreamingTableRelease

    Raises
    ------
    ValidationError
        The in-memory engine's message for bad data (naming the first offending row); microdata,
        declared levels or missing combinations to zero-fill, which this engine does not build.
    """
    _refuse(request)
    source = request.source
    scan, raw, schema = scan_cells(source, request.keys, request.count, request.h, request.r)
    where = where_of(rd.as_source(source))
    unique_by = "sorted"
    if not scan.sorted:
        unique_by = check_unique(raw, request.keys, scan.rows, scan.ranges, where)
    _no_declared_levels(request, schema)
    _full_grid(request, raw, scan, where)
    dtype = schema[request.count]
    published = raw.select(*request.keys, rd.count_expr(request.count, dtype)).select(
        *request.keys, published_expr(request.count, request.h)
    )
    rel = StreamingTableRelease(
        request.certificate,
        request.params,
        published,
        scan,
        r_explicit=request.r_explicit,
        unique_by=unique_by,
    )
    return display.read_from(rel, source)
