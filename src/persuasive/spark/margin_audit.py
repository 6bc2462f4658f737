r"""The exact audit of a suppressed table with margins on Spark, without the grid on the driver.

:func:`audit_margins_spark` answers, for a table too large for one machine, what the in-memory
:func:`persuasive.margins.worst_case_losses` answers for the primary pattern of
:func:`persuasive.release.margins.release_table_with_margins`: for every cell below h,
suppressed while the margins are published exactly, the supremum of its loss over the Receiver
model (``kappa_upper``), the bound over every table consistent with the publication
(``kappa_published``) and whether the publication discloses it.

1. The cells are read and checked on Spark with the polars engine's messages
   (:mod:`persuasive.spark.cells`) and, with several keys, zero-filled (:mod:`persuasive.spark
   .grid`); the suppressed cells are those below h.
2. Their connected components are found on Spark (:mod:`persuasive.spark.components`).
3. Each component is audited by one executor task (``applyInPandas``), as the small table of
   the component's *box* — every combination of the levels its cells take — whose other cells
   are published: their values are known and the box's margins are then exactly the
   constraints the full table puts on the component, in the same order (the levels keep their
   sorted order). Its posterior depends on nothing else, so the values are those of the
   in-memory audit of the whole table, bit for bit, on every component the exact DP computes.
   On a component too large for it the Markov chain starts from its own seed (0): the
   estimates differ from the in-memory engine's one chain, the proven bounds do not.

Only the counts of the aggregation and of the components reach the driver; the per-cell
result is a Spark DataFrame (custodian-only: it holds the true counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from persuasive.classes.receivers import Receiver, check_thresholds
from persuasive.errors import ValidationError
from persuasive.spark.components import CELL, LABEL, components

__all__ = ["MAX_BOX_CELLS", "SparkMarginAudit", "audit_margins_spark"]

#: Most cells of one component's box (its levels' product) audited by one task.
MAX_BOX_CELLS = 1_000_000
#: Tasks per core of the audit step.
TASKS_PER_CORE = 4

#: The columns of :attr:`SparkMarginAudit.cells` after the keys and the count.
RESULT = (
    ("component", "long"),
    ("kappa_lower", "double"),
    ("kappa_upper", "double"),
    ("kappa_published", "double"),
    ("disclosed", "boolean"),
    ("exact", "boolean"),
)
_IN = "__persuasive_in__"


@dataclass(frozen=True, eq=False)
class SparkMarginAudit:
    """The audit of a table's primary pattern with margins, on Spark.

    Attributes
    ----------
    cells : pyspark.sql.DataFrame
        One row per suppressed cell: the keys, the true count, ``component`` (its label) and
        ``kappa_lower``, ``kappa_upper``, ``kappa_published``, ``disclosed``, ``exact`` (of
        :class:`persuasive.margins.WorstCaseLosses`). Custodian-only.
    n_cells, n_suppressed, n_components : int
    max_kappa_upper, max_kappa_published : float
        Over the suppressed cells (0 when none).
    n_disclosed : int
        Suppressed cells the publication determines.
    """

    cells: Any = field(repr=False)
    n_cells: int
    n_suppressed: int
    n_components: int
    max_kappa_upper: float
    max_kappa_published: float
    n_disclosed: int


def _audit_box(pdf: Any, keys: list[str], count: str, plan: tuple[Any, ...]) -> Any:
    """One component: the box's cells (``_IN`` marks the component's) as a MarginTable whose
    other cells are known, audited by :func:`persuasive.margins.worst_case_losses`."""
    import pandas as pd

    from persuasive.margins import MarginTable, worst_case_losses

    h, r, receiver, margins = plan
    levels = [sorted(pdf[k].unique().tolist()) for k in keys]
    shape = tuple(len(lv) for lv in levels)
    at = tuple(
        np.searchsorted(np.array(lv, dtype=object), pdf[k].to_numpy(dtype=object))
        for lv, k in zip(levels, keys, strict=True)
    )
    counts = np.zeros(shape, dtype=np.int64)
    counts[at] = pdf[count].to_numpy(dtype=np.int64)
    inside = np.zeros(shape, dtype=bool)
    inside[at] = pdf[_IN].to_numpy(dtype=bool)
    if int(np.prod(shape)) != len(pdf):
        raise RuntimeError("a component's box misses cells of the zero-filled grid")
    table = MarginTable(
        counts, h=h, margins=margins, dims=tuple(keys), suppressed=inside, known=~inside
    )
    worst = worst_case_losses(table, receiver, r=r)
    mine = pdf[pdf[_IN].to_numpy(dtype=bool)]
    idx = tuple(a[pdf[_IN].to_numpy(dtype=bool)] for a in at)
    out = {k: mine[k].to_numpy() for k in keys}
    out[count] = mine[count].to_numpy(dtype=np.int64)
    out["component"] = mine[LABEL].to_numpy(dtype=np.int64)
    for name in ("kappa_lower", "kappa_upper", "kappa_published"):
        out[name] = getattr(worst, name)[idx].astype(np.float64)
    out["disclosed"] = worst.disclosed[idx]
    out["exact"] = worst.computed_exactly[idx]
    return pd.DataFrame(out)


def audit_margins_spark(
    source: Any,
    *,
    keys: str | list[str] | tuple[str, ...],
    count: str,
    h: int,
    receiver: Receiver,
    margins: Any,
    r: int | None = None,
    spark: Any = None,
) -> SparkMarginAudit:
    r"""Audit, on Spark, every cell below h of a table whose margins are published exactly.

    .. math:: \kappa_i = \sup_{Q \in \mathcal Q_{\mathcal M}} \Delta_i^r
              = \log \Pi^0_i(x_i) + B(x_i) \quad (\texttt{docs/margins.md}),

    per component of the suppressed cells, on the executors (see the module docstring).

    Parameters
    ----------
    source : path or pyspark.sql.DataFrame
        CSV or Parquet file or folder, or a Spark DataFrame: one row per cell.
    keys, count : column names
    h : int
        Cells below h are suppressed.
    receiver : PoissonReceiver or NegativeBinomialReceiver
    margins : str or sequence
        The published margins (``"rows,cols"``, ``"a+b,c"``; :func:`persuasive.margins
        .parse_margins`).
    r : int, optional
        Score threshold, ``r <= h`` (default h).
    spark : SparkSession or str, optional
        The session or a master URL (default ``local[*]``).

    Returns
    -------
    SparkMarginAudit
    """
    from pyspark.sql import functions as F

    from persuasive.margins import parse_margins
    from persuasive.release.margins_input import check_margins_receiver
    from persuasive.spark import session
    from persuasive.spark.cells import checked_cells, opened, spark_errors
    from persuasive.spark.grid import zero_fill

    session.pyspark()
    ks = (keys,) if isinstance(keys, str) else tuple(keys)
    h_, r_ = check_thresholds(h, r)
    rec = check_margins_receiver(receiver)
    dims = parse_margins(margins, ks)
    if not dims:
        raise ValidationError(
            f"margins: no margin given ({margins!r:.60}); a table without published totals is "
            "Prop 8's (release_table)"
        )
    sess = session.session_of(spark)
    read = opened(sess, source, ks, count)
    checked = checked_cells(read, ks, count, h_, r_)

    def run() -> SparkMarginAudit:
        cells, n = checked.cells, checked.stats.n
        if len(ks) > 1:
            cells, added = zero_fill(cells, ks, count, n)
            n += added
        sup = cells.filter(F.col(count) < h_).withColumn(CELL, F.monotonically_increasing_id())
        sup = sup.localCheckpoint()
        labelled = components(sup, ks, dims).localCheckpoint()
        box = labelled.select(LABEL, ks[0]).distinct()
        for k in ks[1:]:
            box = box.join(labelled.select(LABEL, k).distinct(), LABEL)
        sizes = box.groupBy(LABEL).count()
        big = sizes.orderBy(F.desc("count")).limit(1).collect()
        if big and big[0]["count"] > MAX_BOX_CELLS:
            raise ValidationError(
                f"a component of the suppressed cells spans {big[0]['count']:,} cells of the "
                f"table (its levels' product), above MAX_BOX_CELLS = {MAX_BOX_CELLS:,}: audit "
                "it in memory (engine='polars') or publish fewer margins"
            )
        marked = labelled.select(*ks, F.lit(True).alias(_IN))
        work = (
            box.join(cells, list(ks))
            .join(marked, list(ks), "left")
            .withColumn(_IN, F.coalesce(F.col(_IN), F.lit(False)))
        )
        schema = [f"`{f.name}` {f.dataType.simpleString()}" for f in cells.schema.fields]
        schema += [f"{name} {kind}" for name, kind in RESULT]
        plan = (h_, r_, rec, dims)
        # one task per few components: an explicit repartition on the label, which adaptive
        # execution keeps (the shuffle is small, and AQE would merge it into one task)
        parts = max(1, sess.sparkContext.defaultParallelism) * TASKS_PER_CORE
        out = (
            work.repartition(parts, LABEL)
            .groupBy(LABEL)
            .applyInPandas(lambda pdf: _audit_box(pdf, list(ks), count, plan), ", ".join(schema))
        )
        out = out.localCheckpoint()
        agg = out.agg(
            F.count(F.lit(1)).alias("n"),
            F.count_distinct("component").alias("c"),
            F.max("kappa_upper").alias("up"),
            F.max("kappa_published").alias("pub"),
            F.sum(F.col("disclosed").cast("long")).alias("d"),
        ).collect()[0]
        return SparkMarginAudit(
            out,
            n,
            int(agg["n"]),
            int(agg["c"]),
            float(agg["up"] or 0.0),
            float(agg["pub"] or 0.0),
            int(agg["d"] or 0),
        )

    return spark_errors(read.where, run)
