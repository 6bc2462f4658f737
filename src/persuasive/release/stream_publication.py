"""The statistics a table certificate reads from its publication, in bounded memory.

:meth:`persuasive.report.kinds.table.TableKind.read_publication` computes, over the published
table, one row of statistics: the number of cells ``n``, of ``suppressed`` cells, of distinct
keys ``unique``, of levels of each key ``levels{i}``, the first row showing a count below h
(``below``) and the first row failing each count check (``bad{i}``). It does so with one polars
query that runs in memory and hashes every key (``n_unique``), so its memory grows with the
table. :func:`publication_stats` gives the same row from batches (the streaming engine's
:func:`persuasive.release.stream_scan.batches`): the counts and first rows in one pass, the
distinct keys proved as the streaming engine proves them (sorted keys in the same pass, else
:func:`persuasive.release.stream_keys.check_unique`), and the levels of several keys by the
streaming engine (they are held: as many as the levels, not the cells). Only a publication
whose keys repeat is counted exactly by ``n_unique`` (a failing publication).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.release import stream_keys
from persuasive.release.stream_scan import batches
from persuasive.release.table_keys import _orderable, _sorted_unique

__all__ = ["publication_stats", "read_publication_streaming"]


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


def read_publication_streaming(p: Any, files: Any) -> Any:
    """:meth:`persuasive.report.kinds.table.TableKind.read_publication` with its statistics
    query replaced by :func:`publication_stats` (bounded memory); the same Publication.

    A drop-in for measuring the whole pipeline out of core (``benchmarks/bench_streaming.py``,
    stage ``bounded``) until the table kind computes its statistics this way itself."""
    from persuasive.files.reading import ROW, count_checks, count_expr
    from persuasive.files.table_digest import scan_published
    from persuasive.report.kinds import Publication, one_file
    from persuasive.report.kinds import table as kind

    name, path = one_file(files, "released")
    frame = scan_published(path, text=[*p.keys, p.count], role="published table")
    schema = frame.collect_schema()
    want = [*p.keys, p.count]
    if list(schema.names()) != want:
        return Publication(
            {name: path},
            {},
            [
                f"publication: {name} has columns {list(schema.names())}; the certificate "
                f"states {want}"
            ],
        )
    problems: list[str] = []
    dtype = schema[p.count]
    checks = [c for c in count_checks(p.count, dtype) if "missing" not in c.message]
    counts = count_expr(p.count, dtype)
    raw = frame.with_row_index(ROW)
    stats = publication_stats(frame, p.keys, p.count, p.h, checks)

    def at(row: int) -> dict[str, Any]:
        return raw.filter(pl.col(ROW) == row).collect(engine="streaming").row(0, named=True)

    if stats["below"] is not None:
        row = at(stats["below"])
        where = ", ".join(f"{k}={row[k]!r}" for k in p.keys)
        problems.append(
            f"publication: cell ({where}) shows {row[p.count]}, below h = {p.h}: a count "
            "below h must be suppressed (a suppressed cell filled back in?)"
        )
    for i, c in enumerate(checks):
        if stats[f"bad{i}"] is not None:
            row = at(stats[f"bad{i}"])
            problems.append(
                f"publication: column {p.count!r} at row {stats[f'bad{i}'] + 1} "
                + c.message.format(value=row[p.count])
            )
    if stats["unique"] != stats["n"]:
        problems.append(f"publication: {stats['n'] - stats['unique']} key(s) appear more than once")
    facts = {"cells": int(stats["n"]), "suppressed": int(stats["suppressed"])}
    grid = math.prod(int(stats[f"levels{i}"]) for i in range(len(p.keys)))
    absent = grid - int(stats["n"]) if stats["unique"] == stats["n"] else 0
    if p.absent == "structural":
        facts["structural_cells"] = absent
    elif p.absent == "zero" and absent:
        problems.append(
            f"publication: {name} lacks {absent} of the {grid} combinations of its keys' "
            "levels, but the claim states that absent combinations are counts of zero "
            "(claim.absent = 'zero'): each must be published as a cell"
        )
    entry = {"name": name, "table": kind._digest(frame, p, counts)}
    return Publication({name: path}, facts, problems, entries={name: entry})
