"""Whether the keys of a table strictly increase, in one streaming pass (bounded memory).

Keys that strictly increase (lexicographically over several key columns) are distinct, which
proves a published table has no duplicated key without holding a hash table of its keys (a
streaming ``n_unique`` of 10^8 Int64 keys took 6.1 GB, measured): the tables written by a
statistical office are most often sorted by their keys. :func:`increasing` answers False at the
first descent, so unsorted keys cost the batches read until then; the caller then counts the
distinct keys in memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

__all__ = ["increasing"]


def _later(a: Sequence[pl.Series], b: Sequence[pl.Series]) -> pl.Series:
    """Row by row, whether the key ``a`` is strictly after the key ``b`` (lexicographic)."""
    out = a[-1] > b[-1]
    for x, y in zip(reversed(a[:-1]), reversed(b[:-1]), strict=True):
        out = (x > y) | ((x == y) & out)
    return out


def increasing(frame: pl.LazyFrame, keys: Sequence[str]) -> bool:
    """Whether the rows' keys strictly increase (then they are distinct).

    Parameters
    ----------
    frame : polars.LazyFrame
        The table, in its published order.
    keys : sequence of str
        The key columns, compared lexicographically in this order (strings by their UTF-8
        bytes, numbers by value). A missing key makes the answer False.

    Returns
    -------
    bool
    """
    previous: list[pl.Series] | None = None
    for batch in frame.select(*keys).collect_batches(maintain_order=True):
        if batch.height == 0:
            continue
        cols = [batch.get_column(k) for k in keys]
        if any(c.null_count() for c in cols):
            return False
        if batch.height > 1:
            step = _later([c.slice(1) for c in cols], [c.slice(0, batch.height - 1) for c in cols])
            if not step.all():
                return False
        if previous is not None:
            first = [c.slice(0, 1) for c in cols]
            if not _later(first, previous).all():
                return False
        previous = [c.slice(batch.height - 1, 1) for c in cols]
    return True
