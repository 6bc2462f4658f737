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

from typing import Any

from persuasive import _domains as dm
from persuasive import _validation as v
from persuasive._progress import task
from persuasive.classes.receivers import Receiver, check_thresholds
from persuasive.errors import ValidationError
from persuasive.margins import attacker_intervals, parallel, worst_case_losses
from persuasive.release import display
from persuasive.release.margins_input import (  # re-exported
    BOUNDS,
    OBJECTIVES,
    check_margins_receiver,
    primary_table,
    read_grid,
)
from persuasive.release.margins_plan import METHODS, check_method
from persuasive.release.margins_result import MarginRelease  # re-exported

__all__ = [
    "BOUNDS",
    "METHODS",
    "OBJECTIVES",
    "MarginRelease",
    "check_margins_receiver",
    "release_table_with_margins",
]


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
    hierarchy_file: Any = None,
    hierarchy_lead: str = "@",
    method: str = "greedy",
    apriori: Any = None,
    mip_time_limit: float | None = None,
    engine: str | None = None,
    spark: Any = None,
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
    hierarchy_file : mapping, optional
        ``{"district": "regions.hrc"}``: the coarser levels of the key ``district`` read from
        a τ-Argus ``.hrc`` file (:mod:`persuasive.margins.hrc`), built as key columns
        ``district_1``, … (or named: ``{"region>district": "regions.hrc"}``) and then treated
        as ``hierarchy``; the certificate records the file's SHA-256 and structure.
    hierarchy_lead : str
        The leading string of the ``.hrc`` files (τ-Argus: ``"@"``), one per level.
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
        with ``method="auto"`` or ``"mip"``, which need ``target_kappa``.
    engine : {"polars", "spark"}, optional
        ``"spark"`` reads and checks the cells on Spark, computes the margins' totals there
        and runs each component's posterior and attacker LP, and the planner's runs, on the
        executors (:mod:`persuasive.spark.margins`; ``docs/spark.md``): the same release as
        ``"polars"``. Default: ``"spark"`` for a ``pyspark.sql.DataFrame``, else ``"polars"``.
        ``"streaming"`` is refused: the planner and the audit read the whole grid of cells.
    spark : SparkSession or str, optional
        With engine spark: the session, or a master URL (default ``local[*]``).

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
    if target is None and meth != "greedy":  # as the command line: never silently ignored
        raise ValidationError(
            f"method = {meth!r} needs target_kappa: the method chooses the secondary pattern "
            "planned to it; without a target leave method='greedy' (no secondary cells)"
        )
    if not hierarchy_file:  # the files' key columns, before a Spark session starts
        from persuasive.margins.known import check_files

        check_files(known, apriori, ks)
    on_spark = _engine(engine, spark, frame, microdata, known)
    from persuasive.margins import hrc as hf
    from persuasive.margins.hierarchy import parse_hierarchy
    from persuasive.release.grid import known_rows

    files = hf.load_specs(hierarchy_file, ks, lead=hierarchy_lead)
    chains = parse_hierarchy(hierarchy, ks)
    if files:
        from persuasive.files.reading import as_source, header
        from persuasive.margins.hierarchy import hierarchy_names

        read = tuple(k for k in ks if k not in {lv for f in files for lv in f.levels[:-1]})
        names = header(as_source(frame)) if on_spark is None else on_spark.names(read, count)
        ks = tuple(hf.all_keys(ks, files, names))
        built = [">".join(f.levels) for f in files]
        chains = parse_hierarchy([*hierarchy_names(chains), *built], ks)
    if isinstance(known, str):
        if microdata:
            raise ValidationError(
                f"known = {known!r:.60}: a column of known cells needs a table of cells; with "
                "microdata pass a frame or file with the key columns of the known cells"
            )
        known = known_rows(frame, ks, known)
    if on_spark is not None:
        on_spark.h, on_spark.r = h_, r_
    data = read_grid(frame, ks, count, bool(microdata), absent, chains, files, on_spark)
    primary = primary_table(data, ks, count, h_, margins, known, chains, apriori)
    if not primary.margins:
        raise ValidationError(
            "margins: no margin given; a table without published totals is Prop 8's "
            "(persuasive release table without --margins)"
        )
    with parallel.using(None if on_spark is None else _spark_checks(on_spark, primary, ks)):
        return _analyse(
            frame, primary, rec, data, (target, obj, bnd, meth, limit, r_),
            (ks, count, absent, chains, files),
        )  # fmt: skip


def _engine(engine: Any, spark: Any, frame: Any, microdata: Any, known: Any) -> Any:
    """For engine spark the reader of the cells (:class:`persuasive.spark.margins.SparkCells`),
    for engine polars None."""
    from persuasive.release.table_request import check_engine

    eng = check_engine(engine, frame)
    if eng == "streaming":
        raise ValidationError(
            "engine = 'streaming' releases a table without margins: the planner and the audit "
            "of a table with margins read its whole grid of cells; use engine='polars' or "
            "engine='spark'"
        )
    if eng == "polars":
        if spark is not None:
            raise ValidationError(f"spark = {spark!r:.60} needs engine='spark'")
        return None
    from persuasive.spark import session
    from persuasive.spark.margins import SparkCells, refuse

    session.pyspark()
    if microdata:
        raise refuse(
            "microdata=True (--microdata): tabulate the records on Spark first "
            "(df.groupBy(keys).count()); it"
        )
    if isinstance(known, str):
        raise refuse(
            f"known = {known!r:.60}, a column of the table: pass a frame or file with the key "
            "columns of the known cells; a column of known cells"
        )
    return SparkCells(session.session_of(spark), frame, 1, 1)


def _spark_checks(on_spark: Any, primary: Any, ks: tuple[str, ...]) -> Any:
    """Spark's totals checked against the cells received; the mapper running the pieces on
    the executors (:mod:`persuasive.spark.margins`)."""
    from persuasive.spark.margins import check_totals, spark_mapper

    assert on_spark.checked is not None
    check_totals(on_spark.checked, on_spark.collected, ks, primary.margins)
    return spark_mapper(on_spark.spark)


def _analyse(
    frame: Any,
    primary: Any,
    rec: Receiver,
    data: Any,
    plan_args: tuple[Any, ...],
    grid_args: tuple[Any, ...],
) -> MarginRelease:
    """Audit the primary pattern, plan to the target, audit the final pattern and compare."""
    from persuasive.margins.classical import classical_pattern, compare
    from persuasive.margins.planner import InfeasiblePlanError

    target, obj, bnd, meth, limit, r_ = plan_args
    ks, count, absent, chains, files = grid_args
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
            hierarchy_files=files,
            method=meth,
            mip_time_limit=limit,
        ),
        frame,
    )
