r"""Unique keys of a streamed table, in bounded memory: proved, or the first duplicate named.

Sorted keys are proved unique in the first pass (:mod:`persuasive.release.stream_scan`). For
keys that are not sorted, :func:`check_unique` takes a second look, holding at most about
:data:`MEMORY_BUDGET` bytes:

* **integer keys over a compact range** — each key (several integer keys: their mixed-radix
  index over the product of the ranges) sets one bit of a table over ``[min, max]``; a bit set
  twice is a duplicate. The table takes ``(max - min + 1) / 8`` bytes: 2·10^9 keys, 250 MB;
* **otherwise** (text keys, or a range too wide for the budget) — the keys are split by a hash
  of the key into P parts, P chosen so that one part's keys fit the budget, and the input is
  read P times: pass j keeps the keys of part j (with their row numbers) in memory and checks
  them by hashing. Nothing is written to disk. Equal keys fall in the same part, so every
  duplicate is found.

On a duplicate the message is the in-memory engine's
(:func:`persuasive.release.table_keys._check_unique`): the duplicated key whose first row is
the earliest, at its first two rows; the bit table hands over to the partitioned passes to find
it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.release.stream_scan import batches
from persuasive.release.table_keys import _unused

__all__ = ["MEMORY_BUDGET", "check_unique", "partition_count"]

#: About the most memory (bytes) a check of unsorted keys holds: the bit table, or one part's
#: keys.
MEMORY_BUDGET = 1 << 29

#: Bytes a held key costs beyond its own size (its row number, the hash table of ``n_unique``).
_OVERHEAD = 32


def _bit_index(
    batch: pl.DataFrame, keys: Sequence[str], ranges: Sequence[tuple[int, int]]
) -> np.ndarray:
    """The mixed-radix index of each row's integer keys over the product of their ranges."""
    spans = [hi - lo + 1 for lo, hi in ranges]
    index = np.zeros(batch.height, dtype=np.int64)
    for k, (lo, _), span in zip(keys, ranges, spans, strict=True):
        v = batch.get_column(k).to_numpy()
        off = (
            (v - np.uint64(lo)).astype(np.int64)
            if v.dtype == np.uint64
            else v.astype(np.int64) - lo
        )
        index = index * span + off
    return index


def _bits_unique(
    raw: pl.LazyFrame, keys: Sequence[str], ranges: Sequence[tuple[int, int]], where: str
) -> bool:
    """True when no bit of the table over the keys' range is set twice (the keys are unique);
    False at the first key seen twice."""
    size = math.prod(hi - lo + 1 for lo, hi in ranges)
    bits = np.zeros(-(-size // 8), dtype=np.uint8)
    for batch in batches(raw.select(keys), where):
        if batch.height == 0:
            continue
        idx = np.sort(_bit_index(batch, keys, ranges))
        if idx.size > 1 and bool((idx[1:] == idx[:-1]).any()):
            return False
        byte, bit = idx >> 3, (np.uint8(1) << (idx & 7).astype(np.uint8)).astype(np.uint8)
        if bool((bits[byte] & bit).any()):
            return False
        starts = np.flatnonzero(np.r_[True, byte[1:] != byte[:-1]])
        bits[byte[starts]] |= np.bitwise_or.reduceat(bit, starts)
    return True


def partition_count(rows: int, bytes_per_row: float, budget: int) -> int:
    """The number of parts P so that one part's keys take about ``budget`` bytes at most."""
    return max(1, math.ceil(rows * (bytes_per_row + _OVERHEAD) / budget))


def _key_hash(keys: Sequence[str]) -> pl.Expr:
    key = pl.col(keys[0]) if len(keys) == 1 else pl.struct(list(keys))
    return key.hash(seed=0)


def _first_duplicate(
    raw: pl.LazyFrame, keys: Sequence[str], rows: int, budget: int, where: str
) -> dict[str, Any] | None:
    """The duplicated key whose first row is the earliest, with its first two rows ``a`` and
    ``b`` (0-based), by P passes over the input (see the module docstring); None when the keys
    are unique."""
    keyed = raw.select(keys)
    sample = next(iter(batches(keyed.head(1 << 14), where)), None)
    per_row = sample.estimated_size() / max(sample.height, 1) if sample is not None else 8.0
    parts = partition_count(rows, per_row, budget)
    best: dict[str, Any] | None = None
    row = pl.col(rd.ROW)
    first, second = (_unused(tuple(keys), name) for name in ("first", "second"))
    for j in range(parts):
        held: list[pl.DataFrame] = []
        offset = 0
        for batch in batches(keyed, where):
            b = batch.with_row_index(rd.ROW, offset=offset).with_columns(row.cast(pl.Int64))
            offset += batch.height
            if parts > 1:
                b = b.filter(_key_hash(keys) % parts == j)
            held.append(b)
        part = pl.concat(held) if held else keyed.head(0).collect()
        del held
        key_expr = pl.col(keys[0]) if len(keys) == 1 else pl.struct(list(keys))
        if part.height == 0 or part.select(key_expr.n_unique()).item() == part.height:
            continue
        found = (
            part.group_by(*keys)
            .agg(row.min().alias(first), row.filter(row > row.min()).min().alias(second))
            .filter(pl.col(second).is_not_null())
            .sort(first)
            .row(0, named=True)
        )
        dup = {"key": {k: found[k] for k in keys}, "a": found[first], "b": found[second]}
        if best is None or dup["a"] < best["a"]:
            best = dup
    return best


def check_unique(
    raw: pl.LazyFrame,
    keys: Sequence[str],
    rows: int,
    ranges: Sequence[tuple[int, int]] | None,
    where: str,
    *,
    budget: int | None = None,
) -> str:
    """Prove the unsorted keys of a streamed table unique, or raise the in-memory engine's
    duplicate message; returns how (``"bits"`` or ``"parts"``).

    Parameters
    ----------
    raw : polars.LazyFrame
        The key columns as written.
    keys : sequence of str
        The key columns.
    rows : int
        The number of rows.
    ranges : list of (min, max), optional
        The range of each key when all are integers.
    where : str
        How a read error names the source.
    budget : int, optional
        The memory budget in bytes (default :data:`MEMORY_BUDGET`).
    """
    budget = MEMORY_BUDGET if budget is None else budget
    if ranges is not None and math.prod(hi - lo + 1 for lo, hi in ranges) <= 8 * budget:
        if _bits_unique(raw, keys, ranges, where):
            return "bits"
    dup = _first_duplicate(raw, keys, rows, budget, where)
    if dup is None:
        return "parts"
    key_text = ", ".join(f"{k}={dup['key'][k]!r}" for k in keys)
    raise ValidationError(
        f"duplicated key ({key_text}) at rows {dup['a'] + 1} and {dup['b'] + 1}; each cell "
        "must appear once: aggregate (sum) or drop the duplicates"
    )
