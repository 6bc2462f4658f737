r"""The connected components of the suppressed cells of a table with margins, found on Spark.

Two suppressed cells are *linked* when they lie in one entry of a published margin (the same
values of the margin's keys); a component is a class of the transitive closure. The posterior
of a component's cells depends on nothing outside it (``docs/margins.md``: the cells of
different components are independent a posteriori), so components are the unit of work of the
audit on the executors (:mod:`persuasive.spark.margin_audit`).

Found by *min-label propagation* on the bipartite graph (suppressed cells, margin entries):
every cell starts with its own id as label; each round gives every entry the smallest label of
its cells and every cell the smallest label of its entries, until no label changes (at most
the component's diameter in rounds; each round's result is checkpointed, so the plan stays
short). A component's label is the smallest id of its cells. Nothing is collected to the
driver but whether some label changed, once per round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["CELL", "LABEL", "components", "entries"]

#: Column of a suppressed cell's id and of its component's label.
CELL, LABEL = "__persuasive_cell__", "__persuasive_label__"
_ENTRY = "__persuasive_entry__"

#: Rounds of propagation before giving up (a component's diameter is below its cell count;
#: far above any table with margins the exact posterior can audit).
MAX_ROUNDS = 10_000


def entries(cells: Any, keys: Sequence[str], margins: Sequence[Sequence[int]]) -> Any:
    """``(CELL, entry)`` for every cell of ``cells`` (with :data:`CELL`) and every margin: the
    entry is the margin's number and the values of its keys (the grand total: the number)."""
    from pyspark.sql import functions as F

    parts = []
    for i, m in enumerate(margins):
        kept = [keys[a] for a in m]
        tag = F.lit(f"{i}|")
        entry = F.concat(tag, F.to_json(F.struct(*kept))) if kept else tag
        parts.append(cells.select(CELL, entry.alias(_ENTRY)))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def components(cells: Any, keys: Sequence[str], margins: Sequence[Sequence[int]]) -> Any:
    """``cells`` (suppressed cells with a unique LongType :data:`CELL`) with the
    :data:`LABEL` of their component: the smallest :data:`CELL` in it.

    Raises
    ------
    RuntimeError
        The labels did not settle in :data:`MAX_ROUNDS` rounds (never for a finite table:
        a label falls at every round until it is the component's smallest id).
    """
    from pyspark.sql import functions as F

    edges = entries(cells, keys, margins).localCheckpoint()
    label = cells.select(CELL, F.col(CELL).alias(LABEL)).localCheckpoint()
    for _ in range(MAX_ROUNDS):
        per_entry = edges.join(label, CELL).groupBy(_ENTRY).agg(F.min(LABEL).alias(LABEL))
        new = edges.join(per_entry, _ENTRY).groupBy(CELL).agg(F.min(LABEL).alias(LABEL))
        new = new.localCheckpoint()
        moved = new.join(label.withColumnRenamed(LABEL, "__old__"), CELL)
        if moved.filter(F.col(LABEL) != F.col("__old__")).limit(1).count() == 0:
            return cells.join(new, CELL)
        label = new
    raise RuntimeError(f"component labels did not settle in {MAX_ROUNDS} rounds")
