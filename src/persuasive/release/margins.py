r"""Release a count table with its margins: exact audit, planned secondary suppression, certificate.

Prop 8 (Bon et al. 2026) assumes the suppressed cells are all that is hidden and nothing else
is published. With exact row / column (or any k-D) totals a Receiver subtracts: a suppressed
cell alone in a published row is recovered. :func:`release_table_with_margins`

1. suppresses every cell below h (*primary*) and publishes the margins exactly;
2. with a target κ, plans *secondary* suppressions
   (:func:`persuasive.margins.planner.plan_suppression`) until every suppressed cell's exact
   worst case over the Receiver model is at most κ — at the true table (``bound="table"``,
   ``kappa_upper``) or for every table consistent with the publication
   (``bound="publication"``, ``kappa_published``, the default: what the certificate states);
3. audits the final pattern exactly (:func:`persuasive.margins.worst_case_losses`: one
   posterior for the whole class by sufficiency), computes the attacker's LP intervals, and sets
   the classical partner rule beside it (:func:`persuasive.margins.classical.compare`).

The Receiver model must be parametric (:class:`~persuasive.classes.receivers.PoissonReceiver`
or :class:`~persuasive.classes.receivers.NegativeBinomialReceiver`): for the small-cell class
:math:`\mathcal C^{h,\alpha}` the supremum is ∞ for every suppressed cell once a margin is
published, and it is refused. The published table says which suppressed cells are primary
(< h) and which secondary (>= h): the model assumes the Receiver knows it.

The certificate (:mod:`persuasive.report.margins_certificate`) states only what follows from
the publication; the per-cell audit at the true table is the custodian's (``custodian_*``
files), never published.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive._progress import task
from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    Receiver,
    SmallCellReceiver,
    check_thresholds,
)
from persuasive.errors import ValidationError
from persuasive.margins import (
    AttackIntervals,
    MarginTable,
    WorstCaseLosses,
    attacker_intervals,
    worst_case_losses,
)
from persuasive.release import display
from persuasive.release.margins_plan import METHODS, check_method

__all__ = ["METHODS", "MarginRelease", "check_margins_receiver", "release_table_with_margins"]

BOUNDS = ("publication", "table")
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


@dataclass(frozen=True, eq=False, repr=False)
class MarginRelease(display.ReleaseResult):
    """A count table released with exact margins, its pattern, audit and comparison.

    ``rel.published`` and ``rel.published_margins`` are the published tables (polars
    DataFrames); ``rel.write(folder)`` writes the release folder (both tables,
    ``certificate.json``, the custodian's files, optionally the report).

    Attributes
    ----------
    table, primary : MarginTable
        The final pattern (primary and secondary) and the primary pattern alone.
    worst, primary_worst : WorstCaseLosses
        The exact audit of the final and of the primary pattern.
    intervals : AttackIntervals
        The attacker's LP intervals of the final pattern.
    plan : SuppressionPlan or None
        The planner's result (None without a target).
    comparison : Comparison or None
        The classical rule and the planner at the target (None without a target).
    classical, classical_worst
        The classical partner-rule pattern and its exact audit (always computed).
    """

    kind: ClassVar[str] = "margins"

    table: MarginTable
    primary: MarginTable
    worst: WorstCaseLosses
    primary_worst: WorstCaseLosses
    intervals: AttackIntervals
    plan: Any
    comparison: Any
    classical: Any
    classical_worst: WorstCaseLosses
    receiver: Receiver
    keys: tuple[str, ...]
    count: str
    levels: dict[str, list[Any]]
    dtypes: dict[str, Any]
    r: int
    target_kappa: float | None
    objective: str
    bound: str
    absent: str = "zero"
    hierarchy: tuple[tuple[str, ...], ...] = ()
    #: The planner's method asked for, and the MIP's time limit (seconds; None: greedy).
    method: str = "greedy"
    mip_time_limit: float | None = None

    @property
    def h(self) -> int:
        return self.table.h

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        sup, sec = int(self.table.suppressed.sum()), int(self.table.secondary.sum())
        facts = [
            ("cells", f"{self.table.counts.size:,}"),
            ("suppressed", f"{sup:,} ({sec:,} secondary)"),
            ("margins", ", ".join(self.table.margin_names())),
            ("threshold h", str(self.h)),
            ("Receiver", display.describe_receiver(self.receiver)),
        ]
        return "Table release with margins", facts, self.published, (self.count,)

    # ------------------------------------------------------------------ published
    def _labels(self, flat: NDArray[np.intp]) -> dict[str, pl.Series]:
        coords = np.unravel_index(flat, self.table.shape)
        return {
            k: pl.Series(k, [self.levels[k][i] for i in coords[a]], dtype=self.dtypes[k])
            for a, k in enumerate(self.keys)
        }

    @functools.cached_property
    def published(self) -> pl.DataFrame:
        """The publishable table (C order): keys, the count (null where suppressed) and
        ``suppressed`` ("primary" / "secondary", null where released)."""
        from persuasive.report.margins_certificate import STATUS

        cells = np.flatnonzero(~self.table.structural.ravel())  # structural zeros: no cell
        x, sup = self.table.counts.ravel()[cells], self.table.suppressed.ravel()[cells]
        sec = self.table.secondary.ravel()[cells]
        status = np.where(sec, "secondary", np.where(sup, "primary", ""))
        return pl.DataFrame(
            [
                *self._labels(cells).values(),
                pl.Series(
                    self.count,
                    [None if s else int(c) for s, c in zip(sup, x, strict=True)],
                    dtype=pl.Int64,
                ),
                pl.Series(STATUS, [s or None for s in status], dtype=pl.String),
            ]
        )

    @functools.cached_property
    def published_margins(self) -> pl.DataFrame:
        """One row per published total: ``margin`` (name), the keys (null where summed over),
        ``total``."""
        frames = []
        for m, name in zip(self.table.margins, self.table.margin_names(), strict=True):
            tot = self.table.totals[m]
            idx = np.indices(tot.shape).reshape(len(m), -1) if m else np.zeros((0, 1), int)
            cols = [pl.Series("margin", [name] * tot.size, dtype=pl.String)]
            for a, k in enumerate(self.keys):
                labels = (
                    [self.levels[k][i] for i in idx[m.index(a)]] if a in m else [None] * tot.size
                )
                cols.append(pl.Series(k, labels, dtype=self.dtypes[k]))
            cols.append(pl.Series("total", tot.ravel().tolist(), dtype=pl.Int64))
            frames.append(pl.DataFrame(cols))
        return pl.concat(frames, how="vertical")

    @property
    def params(self) -> Any:
        """The certificate's claim (:class:`persuasive.report.kinds.margins.MarginsParams`)."""
        from persuasive.report.kinds.margins import MarginsParams

        return MarginsParams(
            receiver=self.receiver,
            h=self.h,
            r=self.r,
            margins=tuple(self.table.margin_names()),
            keys=self.keys,
            count=self.count,
            target_kappa=self.target_kappa,
            absent=self.absent,
            known=self.known_keys,
            hierarchy=tuple(">".join(c) for c in self.hierarchy),
            plan=tuple((self.verdict.plan_claim() or {}).items()),
            apriori=self.apriori_bounds,
        )

    @property
    def apriori_bounds(self) -> tuple[tuple[tuple[str, ...], int, int | None], ...]:
        """The a-priori bounds ``(key labels, lower, upper or None)`` of every cell that has
        one, sorted by labels: the certificate's ``claim.apriori``."""
        from persuasive.margins.known import NO_UPPER

        t = self.table
        lw, up = t.lower.ravel(), t.upper.ravel()
        flat = np.flatnonzero((lw > 0) | (up != NO_UPPER))
        labels = self._labels(flat)
        rows = zip(*(labels[k].cast(pl.String).to_list() for k in self.keys), strict=True)
        out = [
            (tuple(r), int(lw[i]), None if up[i] == NO_UPPER else int(up[i]))
            for r, i in zip(rows, flat, strict=True)
        ]
        return tuple(sorted(out, key=lambda b: b[0]))

    @property
    def known_keys(self) -> tuple[tuple[str, ...], ...]:
        """The key labels (strings, as published) of the cells declared known a priori (the
        structural zeros aside), sorted: the certificate's ``claim.known``."""
        t = self.table
        flat = np.flatnonzero((t.known & ~t.structural).ravel())
        labels = self._labels(flat)
        rows = zip(*(labels[k].cast(pl.String).to_list() for k in self.keys), strict=True)
        return tuple(sorted(tuple(r) for r in rows))

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        if self.refused:
            raise ValidationError(f"nothing to publish: {self.verdict.statement()}")
        return frame_files(
            {"released": self.published, "margins": self.published_margins}, table_format
        )

    def custodian(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files, write_json
        from persuasive.report.certificate import canonical

        return {
            **frame_files({"custodian_cells": self.cells}, table_format),
            "custodian_comparison.json": write_json(canonical(self.comparison_document())),
        }

    def expected(self, name: str) -> pl.DataFrame | None:
        stem = Path(name).stem
        if stem == "released":
            return self.published
        return self.published_margins if stem == "margins" else None

    def report(self, document: Any, target_kappa: float | None) -> Any:
        from persuasive.report.margins import margins_report

        return margins_report(self, document)

    # ------------------------------------------------------------------ custodian
    @property
    def losses(self) -> NDArray[np.float64]:
        """The planned-against bound per cell (table shape): ``kappa_published`` or
        ``kappa_upper`` as ``bound`` says."""
        w = self.worst
        return w.kappa_published if self.bound == "publication" else w.kappa_upper

    @functools.cached_property
    def cells(self) -> pl.DataFrame:
        """One row per cell (C order) for the custodian: never publish it."""
        from persuasive.release.margins_output import custodian_cells

        return custodian_cells(self)

    @functools.cached_property
    def verdict(self) -> Any:
        """The one outcome of the release (:class:`persuasive.release.margins_output.Verdict`):
        certified or refused, and every count the summary, the table and the report show."""
        from persuasive.release.margins_output import verdict

        return verdict(self)

    def failing(self) -> NDArray[np.bool_]:
        """Suppressed cells (table shape) that fail. With a target: a proven bound over every
        table consistent with the publication (``kappa_published``, what the certificate
        states) above it; without one: not computed exactly, or disclosed below r.

        With a target a disclosed cell passes when its loss :math:`B(x_i)` is at most κ (the
        Receiver's prior already put that much mass on its value: Persuasive Privacy promises
        κ, not secrecy); it is listed in the report either way.
        """
        return np.asarray(self.verdict.failing)

    @property
    def ok(self) -> bool:
        """Released, its certificate holds and no cell fails (:meth:`failing`): exit 0."""
        return bool(self.verdict.ok)

    @property
    def refused(self) -> bool:
        """With a target, no pattern found is certified: nothing is published."""
        return bool(self.verdict.refused)

    def above(self) -> pl.DataFrame:
        """The custodian rows of the failing cells."""
        return self.cells.filter(pl.Series(self.failing().ravel()))

    def summary(self) -> dict[str, Any]:
        from persuasive.release.margins_output import summary

        return {**summary(self), **self.verdict.plan_summary()}

    def comparison_document(self) -> dict[str, Any]:
        from persuasive.release.margins_output import comparison_document

        return comparison_document(self)


def _grid(
    source: Any,
    keys: tuple[str, ...],
    count: str,
    microdata: bool = False,
    absent: str = "zero",
    hierarchy: Any = (),
) -> pl.DataFrame:
    """The cells: read (or, with ``microdata``, tabulated), then the absent combinations of the
    keys' levels added as counts of zero, except the structural zeros
    (:func:`persuasive.release.grid.margins_grid`: with ``absent="structural"``, and the
    combinations a hierarchy does not nest)."""
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
    cells = grid.tabulate(source, keys, count) if microdata else read_cells(source, keys, count)
    declared = grid.declared_levels(source, keys, cells.schema)
    return grid.margins_grid(cells, keys, count, absent, declared, hierarchy)[0]


def _primary(
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
    table = _primary(data, ks, count, h, names, known, hierarchy, apriori)
    levels = [[str(x) for x in table.levels[k]] for k in ks]
    totals = margin_totals(given, ks, table.margins, table.margin_names(), levels)
    MarginTable(
        table.counts, h=h, margins=table.margins, dims=ks, totals=totals, known=table.known
    )  # add up?
    return table


def release_table_with_margins(
    frame: Any,
    *,
    keys: str | list[str] | tuple[str, ...],
    count: str | None = None,
    h: int,
    receiver: Receiver,
    margins: Any,
    target_kappa: float | None = None,
    objective: str = "count",
    bound: str = "publication",
    r: int | None = None,
    microdata: bool = False,
    absent: str = "zero",
    weight: str | None = None,
    known: Any = None,
    hierarchy: Any = None,
    method: str = "greedy",
    apriori: Any = None,
    mip_time_limit: float | None = None,
) -> MarginRelease:
    r"""Suppress the cells below h, publish the margins exactly, plan, audit and compare.

    .. math:: \kappa_i = \sup_{Q \in \mathcal Q_{\mathcal M}} \Delta_i^r
              = \log \Pi^0_i(x_i) + B(x_i) \quad (\text{exact; } \texttt{docs/margins.md}),

    and with a target the planner makes :math:`\kappa_i \le \kappa` (``bound="table"``) or its
    maximum over every table consistent with the publication (``bound="publication"``) hold
    for every suppressed cell.

    Parameters
    ----------
    frame : polars DataFrame or path
        Long table, one row per cell over ``keys`` (one row per record with ``microdata``);
        an absent combination of the keys' levels is a count of zero.
    keys, count : column names
        The dimensions (levels sorted) and the count column (non-negative integers); with
        ``microdata``, ``count`` names the count column made (default ``"n"``).
    h : int
        Primary threshold: cells below h are suppressed.
    receiver : PoissonReceiver or NegativeBinomialReceiver
        The Receiver model (a :class:`SmallCellReceiver` is refused: κ = ∞ with margins).
    margins : str, sequence or polars DataFrame
        Published margins, ``"rows,cols,total"`` or ``"a+b,c"`` (:func:`persuasive.margins
        .parse_margins`), or the totals to publish as a frame (``margin``, keys, ``total``, as
        ``margins.csv`` is written): they must add up to the table.
    target_kappa : float, optional
        Per-cell target; secondary cells are planned until it holds.
    objective : {"count", "total"}
        Minimise the number of secondary cells or their total count.
    bound : {"publication", "table"}
        What the planner bounds (see above).
    r : int, optional
        Score threshold of :math:`L^r`, ``r <= h`` (default h).
    microdata : bool
        Tabulate records into counts first (:func:`persuasive.release.grid.tabulate`).
    absent : {"zero", "structural"}
        Absent combinations are counts of zero, ordinary cells (``"zero"``), or structural
        zeros (``"structural"``): known cells of count 0, never suppressed nor published.
    known : str, frame or path, optional
        Cells the Receiver knows a priori (never suppressed; published with their values and
        listed in the certificate): a boolean column of ``frame``, or a frame / file with the
        key columns, one row per known cell.
    apriori : frame or path, optional
        A-priori bounds the Receiver knows (the a-priori file of τ-Argus): the key columns and
        ``lower`` and/or ``upper`` (inclusive non-negative integers; empty: no bound), one row
        per cell. The posterior, κ, the attacker and the planner condition on them, a cell
        with ``lower == upper`` is a known cell, and the certificate lists them
        (``claim.apriori``; ``docs/margins_apriori.md``).
    hierarchy : str, optional
        ``"region>district"``: district nested in region (:mod:`persuasive.margins.hierarchy`);
        the combinations that do not nest are structural zeros.
    weight : str, optional
        Refused (:func:`persuasive.release.grid.refuse_weight`): Prop 8 certifies counts.
    method : {"greedy", "auto", "mip"}
        How the secondary pattern is chosen (with a target): the greedy, the mixed-integer
        program of :mod:`persuasive.margins.optimal` (HiGHS; its pattern when the exact audit
        certifies it, else the greedy's), or ``"auto"``: the program on tables of at most
        ``optimal.AUTO_MAX_CELLS`` cells, the greedy beyond. ``rel.verdict`` says which
        produced the pattern and whether optimality was proven (``docs/margins_release.md``).
    mip_time_limit : float, optional
        Seconds for the program's whole loop (> 0; default ``optimal.TIME_LIMIT``); only
        with ``method="auto"`` or ``"mip"``.

    Raises
    ------
    ValidationError
        Bad parameters or data, naming the field.
    InfeasiblePlanError
        No suppression pattern the planner reaches meets ``target_kappa`` (a ValidationError).

    With a target, the result is certified (``rel.verdict``: every suppressed cell's proven
    bound ``kappa_published`` at most the target) or *refused*: ``rel.refused`` is True,
    ``rel.verdict.statement()`` says why and what would make a certified release possible, and
    writing it (``rel.write``, :func:`~persuasive.release.pipeline.publish`) raises "nothing
    to publish" and leaves nothing on disk.

    Examples
    --------
    >>> import polars as pl
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> df = pl.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1], "n": [2, 30, 40, 50]})
    >>> rel = release_table_with_margins(df, keys=["a", "b"], count="n", h=5,
    ...     receiver=PoissonReceiver(1, 40), margins="rows")
    >>> rel.published["suppressed"].to_list(), bool(rel.worst.disclosed[0, 0]), rel.ok
    (['primary', None, None, None], True, False)
    """
    from persuasive.margins.classical import classical_pattern, compare
    from persuasive.margins.planner import InfeasiblePlanError
    from persuasive.release.grid import refuse_weight

    refuse_weight(weight)
    if count is None and not microdata:
        raise ValidationError(
            "count must name the count column of a table of cells; got None (pass "
            "microdata=True to tabulate records into counts)"
        )
    count = "n" if count is None else count
    ks = (keys,) if isinstance(keys, str) else tuple(keys)
    h_, r_ = check_thresholds(h, r)
    rec = check_margins_receiver(receiver)
    target = None if target_kappa is None else dm.check("target_kappa", target_kappa)
    obj = v.choice("objective", objective, OBJECTIVES)
    bnd = v.choice("bound", bound, BOUNDS)
    meth, limit = check_method(method, mip_time_limit)
    from persuasive.margins.hierarchy import parse_hierarchy
    from persuasive.release.grid import known_rows

    chains = parse_hierarchy(hierarchy, ks)
    if isinstance(known, str):
        if microdata:
            raise ValidationError(
                f"known = {known!r:.60}: a column of known cells needs a table of cells; with "
                "microdata pass a frame or file with the key columns of the known cells"
            )
        known = known_rows(frame, ks, known)
    data = _grid(frame, ks, count, bool(microdata), absent, chains)
    primary = _primary(data, ks, count, h_, margins, known, chains, apriori)
    if not primary.margins:
        raise ValidationError(
            "margins: no margin given; a table without published totals is Prop 8's "
            "(persuasive release table without --margins)"
        )
    with task("margins: audit of the primary pattern", total=1) as advance:
        primary_worst = worst_case_losses(primary, rec, r=r_)
        advance()
    plan = comparison = None
    if target is None:
        final, worst = primary, primary_worst
        with task("margins: the classical rule and its audit", total=1) as advance:
            classical = classical_pattern(primary)
            classical_worst = worst_case_losses(classical.table, rec, r=r_)
            advance()
    else:
        comparison = compare(
            primary, rec, target, r=r_, objective=obj, bound=bnd, method=meth, time_limit=limit
        )
        if comparison.ours is None:
            raise InfeasiblePlanError(
                f"target_kappa = {target:g}: no suppression pattern meets it "
                f"({comparison.ours_error})"
            )
        plan = comparison.ours
        final, worst = plan.table, plan.worst
        classical, classical_worst = comparison.classical, comparison.classical_worst
    with task("margins: attacker intervals of the final pattern", total=1) as advance:
        intervals = attacker_intervals(final)
        advance()
    return display.read_from(
        MarginRelease(
            table=final,
            primary=primary,
            worst=worst,
            primary_worst=primary_worst,
            intervals=intervals,
            plan=plan,
            comparison=comparison,
            classical=classical,
            classical_worst=classical_worst,
            receiver=rec,
            keys=ks,
            count=count,
            levels=dict(primary.levels),
            dtypes={k: data.schema[k] for k in ks},
            r=r_,
            target_kappa=target,
            objective=obj,
            bound=bnd,
            absent=absent,
            hierarchy=chains,
            method=meth,
            mip_time_limit=limit,
        ),
        frame,
    )
