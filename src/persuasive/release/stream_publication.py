"""The statistics a table certificate reads from its publication, in bounded memory.

:meth:`persuasive.report.kinds.table.TableKind.read_publication` needs, over the published
table, one row of statistics: the number of cells ``n``, of ``suppressed`` cells, of distinct
keys ``unique``, of levels of each key ``levels{i}``, the first row showing a count below h
(``below``) and the first row failing each count check (``bad{i}``). One polars query gives
them, but in memory and hashing every key (``n_unique``: 6.1 GB at 10^8 keys, measured), so
its memory grows with the table (it is the oracle of the tests).
:func:`publication_stats` gives the same row from batches (the streaming engine's
:func:`persuasive.release.stream_scan.batches`): the counts and first rows in one pass, the
distinct keys proved as the streaming engine proves them (sorted keys in the same pass, else
:func:`persuasive.release.stream_keys.check_unique`), and the levels of several keys by the
streaming engine (they are held: as many as the levels, not the cells). Only a publication
whose keys repeat is counted exactly by ``n_unique`` (a failing publication).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.release import stream_keys
from persuasive.release.stream_scan import batches
from persuasive.release.table_keys import _orderable, _sorted_unique

__all__ = ["publication_stats"]


def publication_stats(
    frame: pl.LazyFrame,
    keys: Sequence[str],
    count: str,
    h: int,
    checks: Sequence[rd.Check],
    where: str = "the published table",
) -> dict[str, Any]:
    """The statistics row of ``read_publication`` (see the module docstring).

    Parameters
    ----------
    frame : polars.LazyFrame
        The published table as read (keys as written, the count as written: CSV text).
    keys, count : sequence of str, str
        The key columns and the count column.
    h : int
        The threshold.
    checks : sequence of Check
        The count checks, each applied to the rows whose count is not missing.
    where : str
        How a read error names the table.

    Returns
    -------
    dict
        ``n``, ``suppressed``, ``unique``, ``levels{i}``, ``below``, ``bad{i}``, as
        ``read_publication``'s query gives them.
    """
    keys = tuple(keys)
    schema = frame.collect_schema()
    counts = rd.count_expr(count, schema[count])
    present = pl.col(count).is_not_null()
    firsts = [
        (counts.is_not_null() & (counts < h)).arg_true().first().alias("below"),
        *((c.fails & present).arg_true().first().alias(f"bad{i}") for i, c in enumerate(checks)),
    ]
    sorted_expr = _sorted_unique(schema, keys)
    integer = all(schema[k].is_integer() for k in keys)
    out: dict[str, Any] = {"n": 0, "suppressed": 0, "below": None}
    out |= {f"bad{i}": None for i in range(len(checks))}
    ordered = all(_orderable(schema[k]) for k in keys)
    last: pl.DataFrame | None = None
    ranges: list[tuple[int, int]] | None = None
    for batch in batches(frame.select(*keys, count), where):
        if batch.height == 0:
            continue
        offset = out["n"]
        row = batch.select(pl.col(count).null_count().alias("s"), *firsts).row(0, named=True)
        out["suppressed"] += int(row["s"])
        for name in ("below", *(f"bad{i}" for i in range(len(checks)))):
            if out[name] is None and row[name] is not None:
                out[name] = offset + int(row[name])
        out["n"] += batch.height
        if ordered:
            keyed = batch.select(keys) if last is None else pl.concat([last, batch.select(keys)])
            ordered = bool(keyed.select(sorted_expr).item())
            last = batch.select(keys).tail(1)
        if integer:
            lo_hi = batch.select(
                *(pl.col(k).min().alias(f"a{j}") for j, k in enumerate(keys)),
                *(pl.col(k).max().alias(f"b{j}") for j, k in enumerate(keys)),
            ).row(0)
            got = [
                (int(a), int(b))
                for a, b in zip(lo_hi[: len(keys)], lo_hi[len(keys) :], strict=True)
            ]
            ranges = (
                got
                if ranges is None
                else [(min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(ranges, got, strict=True)]
            )
    out["unique"] = out["n"] if ordered else _distinct(frame, keys, out["n"], ranges, where)
    if len(keys) == 1:
        out["levels0"] = out["unique"]
    else:
        levels = frame.select(pl.col(k).n_unique() for k in keys).collect(engine="streaming")
        out |= {f"levels{i}": int(v) for i, v in enumerate(levels.row(0))}
    return out


def _distinct(
    frame: pl.LazyFrame,
    keys: tuple[str, ...],
    n: int,
    ranges: list[tuple[int, int]] | None,
    where: str,
) -> int:
    """The number of distinct keys: ``n`` when they are proved unique in bounded memory, else
    counted by ``n_unique`` (the publication fails then)."""
    try:
        stream_keys.check_unique(frame.select(keys), keys, n, ranges, where)
        return n
    except ValidationError:
        key = pl.struct(list(keys)) if len(keys) > 1 else pl.col(keys[0])
        return int(frame.select(key.n_unique()).collect(engine="streaming").item())
