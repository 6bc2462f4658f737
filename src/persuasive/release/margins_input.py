"""The inputs of a release with margins: the Receiver model, the grid of cells, the primary pattern.

Split from :mod:`persuasive.release.margins` (which re-exports :data:`BOUNDS`,
:data:`OBJECTIVES` and :func:`check_margins_receiver`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    Receiver,
    SmallCellReceiver,
)
from persuasive.errors import ValidationError
from persuasive.margins import MarginTable, margin_sums

__all__ = ["BOUNDS", "OBJECTIVES", "check_margins_receiver", "primary_table", "read_grid"]

#: What the planner bounds: every table consistent with the publication, or the true table.
BOUNDS = ("publication", "table")
#: What the planner minimises: the number of secondary cells or their total count.
OBJECTIVES = ("count", "total")


def check_margins_receiver(receiver: Any) -> Receiver:
    """The Receiver model of a release with margins: Poisson or negative binomial only."""
    if isinstance(receiver, SmallCellReceiver):
        raise ValidationError(
            "the small-cell class (--alpha) has kappa = inf once a margin is published: "
            "point-mass priors on the partners of a suppressed cell are in the class and "
            "disclose it by subtraction. State a parametric model instead (--poisson-mean LO:HI "
            "or --negbin-mean LO:HI --negbin-size S)"
        )
    if not isinstance(receiver, (PoissonReceiver, NegativeBinomialReceiver)):
        raise ValidationError(
            "receiver must be a PoissonReceiver or NegativeBinomialReceiver; got "
            f"{type(receiver).__name__}"
        )
    return receiver


def read_grid(
    source: Any,
    keys: tuple[str, ...],
    count: str,
    microdata: bool = False,
    absent: str = "zero",
    hierarchy: Any = (),
    hrc: Any = (),
    reader: Any = None,
) -> pl.DataFrame:
    """The cells: read (or, with ``microdata``, tabulated), then the absent combinations of the
    keys' levels added as counts of zero, except the structural zeros
    (:func:`persuasive.release.grid.margins_grid`: with ``absent="structural"``, and the
    combinations a hierarchy does not nest). ``hrc`` are hierarchy files
    (:class:`persuasive.margins.hrc.HrcFile`): the keys they build are not read but made from
    them (:func:`persuasive.margins.hrc.add_levels`). ``reader(source, keys, count)`` reads
    and checks the cells in place of :func:`persuasive.release.tables.read_cells` (engine
    spark: :class:`persuasive.spark.margins.SparkCells`)."""
    from persuasive.release import grid
    from persuasive.release.margins_output import CUSTODIAN_COLUMNS
    from persuasive.release.tables import read_cells
    from persuasive.report.margins_certificate import STATUS

    grid.check_absent(absent)
    reserved = {STATUS, "margin", "total"}
    clash = sorted((set(keys) & (reserved | set(CUSTODIAN_COLUMNS))) | ({count} & reserved))
    if clash or count in keys:
        raise ValidationError(
            f"column {(clash or [count])[0]!r} cannot be a key (or the count) of a release with "
            f"margins: the output files use the names {sorted(reserved | set(CUSTODIAN_COLUMNS))}"
            "; rename it"
        )
    built = {lv for f in hrc for lv in f.levels[:-1]}
    read = tuple(k for k in keys if k not in built)
    if microdata:
        cells = grid.tabulate(source, read, count)
    else:
        cells = (read_cells if reader is None else reader)(source, read, count)
    declared = grid.declared_levels(source, read, cells.schema)
    if hrc:
        from persuasive.margins.hrc import add_levels

        cells = add_levels(cells, hrc, keys, count, absent)
    return grid.margins_grid(cells, keys, count, absent, declared, hierarchy)[0]


def primary_table(
    data: pl.DataFrame,
    ks: tuple[str, ...],
    count: str,
    h: int,
    margins: Any,
    known: Any = None,
    hierarchy: Any = (),
    apriori: Any = None,
) -> Any:
    """The primary pattern; ``margins`` may be a frame of published totals, checked to add up.
    Combinations absent from ``data`` are structural zeros; ``known`` lists known cells,
    ``apriori`` the a-priori bounds."""
    if not isinstance(margins, pl.DataFrame):
        from persuasive.margins.hierarchy import check_margins

        table = MarginTable.from_frame(
            data,
            keys=ks,
            count=count,
            h=h,
            margins=margins,
            absent="structural",
            known=known,
            apriori=apriori,
        )
        check_margins(table.margins, ks, hierarchy)
        return table
    from persuasive.report.margins_certificate import margin_totals, normalise_margins

    given = normalise_margins(margins, ks)
    names = sorted(set(given["margin"].drop_nulls().to_list()))
    table = primary_table(data, ks, count, h, names, known, hierarchy, apriori)
    levels = [[str(x) for x in table.levels[k]] for k in ks]
    totals = margin_totals(given, ks, table.margins, table.margin_names(), levels)
    for m, name in zip(table.margins, table.margin_names(), strict=True):
        stated, own = np.asarray(totals[m]), margin_sums(table.counts, m)
        if stated.shape == own.shape and np.any(stated != own):  # named as the file names it
            at = tuple(int(i) for i in np.argwhere(stated != own)[0])
            where = ", ".join(
                f"{ks[a]}={table.levels[ks[a]][i]!r}" for a, i in zip(m, at, strict=True)
            )
            raise ValidationError(
                f"margins: the total of margin {name!r} at ({where or 'the grand total'}) is "
                f"{int(stated[at])} in the totals given, but the cells add up to {int(own[at])}: "
                "published totals that do not add up to the table cannot be published"
            )
    MarginTable(
        table.counts, h=h, margins=table.margins, dims=ks, totals=totals, known=table.known
    )  # any other check of the totals
    return table
