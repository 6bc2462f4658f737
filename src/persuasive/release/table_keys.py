"""The keys of a count table: sorted (hence unique), or proved unique, or the first duplicate.

* **Order.** :func:`_sorted_unique` (a polars expression, the generic path) and
  :func:`_increasing` (on the Series, the in-memory path: the leading block first, so that
  unsorted keys are found at once) tell whether every row's key is lexicographically above the
  previous row's: then the keys are unique.
* **Uniqueness of unsorted keys** (:func:`_check_unique`): integer keys are marked in a table of
  slots indexed by a function of the key (:func:`_dense_distinct`, :func:`_marks`): n distinct
  slots prove n distinct keys; otherwise sorting the values of one integer key, or the 64-bit
  row hashes (distinct hashes are distinct keys, :func:`_sorted_distinct`); hashing
  (``n_unique``) only on a hash collision or a duplicate, which is then named by its first two
  rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive.errors import ValidationError
from persuasive.files import reading as rd
from persuasive.release.table_threads import _BLOCK, _PARALLEL_SCATTER_ROWS, _executor, _split

__all__ = ["_check_unique", "_increasing", "_orderable", "_sorted_unique"]

#: Integer keys whose range is at most this multiple of the row count are checked for
#: duplicates by marking a table over the range (one scatter pass) rather than by sorting.
_DENSE_KEY_SPAN = 8
#: Integer keys are first marked in a table of n + n // _DIRECT_SLACK + 1 slots for n rows,
#: indexed by the keys as they are (so no min/max pass comes first; keys from 0 or 1, with a
#: few gaps, fit); if that does not prove them distinct, the key range decides
#: (:data:`_DENSE_KEY_SPAN`).
_DIRECT_SLACK = 8


def _sorted_unique(schema: pl.Schema, keys: tuple[str, ...]) -> pl.Expr:
    """True when every row's key is lexicographically above the previous row's: then the keys are
    unique and the hash-based check (the costly part of validation) is skipped."""
    if not all(_orderable(schema[k]) for k in keys):
        return pl.lit(False)
    above = pl.col(keys[-1]) > pl.col(keys[-1]).shift(1)
    for k in reversed(keys[:-1]):
        prev = pl.col(k).shift(1)
        above = (pl.col(k) > prev) | ((pl.col(k) == prev) & above)
    return above.fill_null(False).slice(1).all()


def _orderable(dtype: pl.DataType) -> bool:
    """Key types whose order :func:`_sorted_unique` uses (others are checked by hashing)."""
    return dtype.is_numeric() or dtype.is_temporal() or dtype in (pl.String, pl.Boolean)


def _increasing(cols: list[pl.Series]) -> bool:
    """Every row's key is lexicographically above the previous row's (the comparison of
    :func:`_sorted_unique`, on the Series): first on the leading block alone, so that
    unsorted keys are found at once."""
    pairs = cols[0].len() - 1

    def above(start: int, length: int) -> bool:
        later = [s.slice(start + 1, length) for s in cols]
        earlier = [s.slice(start, length) for s in cols]
        out = later[-1] > earlier[-1]
        for a, b in zip(reversed(later[:-1]), reversed(earlier[:-1]), strict=True):
            out = (a > b) | ((a == b) & out)
        return bool(out.all())

    head = min(pairs, _BLOCK)
    if not above(0, head):
        return False
    return head == pairs or all(_split(lambda a, b: above(head + a, b - a), pairs - head))


def _offset(block: NDArray[Any], lo: int) -> NDArray[np.int64]:
    """``block - lo`` as int64, for entries known to be in [lo, lo + 2^62)."""
    if block.dtype == np.uint64:
        return (block - np.uint64(lo)).astype(np.int64)
    return block.astype(np.int64, copy=False) - lo


def _dense_distinct(cols: list[NDArray[Any]]) -> bool | None:
    """Whether the rows' integer keys are distinct, by marking each key's slot in a table over
    the key range (:func:`_marks`). None when the range is not compact (above
    :data:`_DENSE_KEY_SPAN` times the row count): then sorting or hashing decides."""
    n = cols[0].size
    direct = n + n // _DIRECT_SLACK + 1
    if len(cols) == 1 and _marks(lambda i, j: _as_index(cols[0][i:j]), n, direct):
        return True
    ranges = [_min_max(k) for k in cols]
    spans = [hi - lo + 1 for lo, hi in ranges]
    size = math.prod(spans)
    if size > _DENSE_KEY_SPAN * n:
        return None
    strides = [math.prod(spans[j + 1 :]) for j in range(len(cols))]

    def composite(i: int, j: int) -> NDArray[np.int64]:
        index = _offset(cols[-1][i:j], ranges[-1][0])
        for k, (lo, _), stride in zip(cols[:-1], ranges[:-1], strides[:-1], strict=True):
            index += _offset(k[i:j], lo) * stride
        return index

    return _marks(composite, n, size)


def _as_index(block: NDArray[Any]) -> NDArray[np.int64]:
    return block if block.dtype == np.int64 else block.astype(np.int64)


#: Without worker threads, tables for more rows than this use one bit per slot (a byte per slot
#: would not stay in cache); with them, the byte table split across threads is faster.
_BOOL_SLOTS = 1 << 25
_ONE = np.uint8(1)
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _popcount(b: NDArray[np.uint8]) -> int:
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return int(np.bitwise_count(b).sum(dtype=np.int64))
    return int(_POPCOUNT[b].sum(dtype=np.int64))


def _marks(index: Callable[[int, int], NDArray[np.int64]], n: int, size: int) -> bool:
    """True when the slots ``index(i, j)`` of rows i..j-1 are n distinct slots of a table of
    ``size`` slots, numpy's indexing rules applied (a negative slot wraps once from the end; a
    slot out of bounds stops the marking: False). Where a row lands is a function of its key,
    so n distinct slots prove n distinct keys; False proves nothing unless the slots are a
    bijection of the keys.

    A byte per slot, set by a scatter split across the worker threads (every write stores
    True, so the parts may share the table). Without worker threads and above
    :data:`_BOOL_SLOTS` rows: a byte per 8 slots, to which each row adds 2^(slot mod 8)
    (``np.add.at``); the sums' popcounts total n iff no slot is added twice (adding a bit
    already set carries, which never raises the popcount; nor does the wrap mod 256)."""
    if n > _BOOL_SLOTS and _executor() is None:
        sums = np.zeros(-(-size // 8), dtype=np.uint8)
        try:
            for i in range(0, n, _BLOCK):
                slots = index(i, min(i + _BLOCK, n))
                np.add.at(sums, slots >> 3, np.left_shift(_ONE, (slots & 7).astype(np.uint8)))
        except IndexError:
            return False
        return _popcount(sums) == n
    seen = np.zeros(size, dtype=np.bool_)

    def part(start: int, stop: int) -> bool:
        try:
            for i in range(start, stop, _BLOCK):
                seen[index(i, min(i + _BLOCK, stop))] = True
        except IndexError:
            return False
        return True

    return all(_split(part, n, _PARALLEL_SCATTER_ROWS)) and int(np.count_nonzero(seen)) == n


def _min_max(k: NDArray[Any]) -> tuple[int, int]:
    def part(start: int, stop: int) -> tuple[int, int]:
        lo, hi = None, None
        for i in range(start, stop, _BLOCK):
            block = k[i : min(i + _BLOCK, stop)]
            a, b = int(block.min()), int(block.max())
            lo, hi = (a, b) if lo is None or hi is None else (min(lo, a), max(hi, b))
        assert lo is not None and hi is not None
        return lo, hi

    found = _split(part, k.size)
    return min(lo for lo, _ in found), max(hi for _, hi in found)


def _exact_hash(dtype: pl.DataType) -> bool:
    """Types whose equal values have equal bits, so equal keys have equal row hashes."""
    return dtype.is_integer() or dtype.is_temporal() or dtype in (pl.String, pl.Binary, pl.Boolean)


def _sorted_distinct(table: pl.DataFrame, keys: tuple[str, ...]) -> bool | None:
    """True when the keys are distinct, proved by sorting: the values of one integer key, else
    the 64-bit row hashes (equal keys hash equally, so distinct hashes are distinct keys).
    None when two hashes are equal (a duplicate, or a collision: hashing decides)."""
    if len(keys) == 1 and table.schema[keys[0]].is_integer():
        values = np.sort(table.get_column(keys[0]).to_numpy())
        return not bool((values[1:] == values[:-1]).any())
    hashes = np.sort(table.select(*keys).hash_rows().to_numpy())
    return None if bool((hashes[1:] == hashes[:-1]).any()) else True


def _check_unique(table: pl.DataFrame, keys: tuple[str, ...]) -> None:
    """Keys are unique: a bitmap for compact integer keys, sorting (the values, or the row
    hashes) for other integer, text and temporal keys, hashing otherwise; a duplicate is named
    by its first two rows."""
    distinct: bool | None = None
    if table.height and all(table.schema[k].is_integer() for k in keys):
        distinct = _dense_distinct([table.get_column(k).to_numpy() for k in keys])
    if distinct is None and all(_exact_hash(table.schema[k]) for k in keys):
        distinct = _sorted_distinct(table, keys)
    if distinct is None:
        key_struct = pl.col(keys[0]) if len(keys) == 1 else pl.struct(list(keys))
        distinct = table.select(key_struct.n_unique()).item() == table.height
    if distinct:
        return
    row = pl.col(rd.ROW)
    first, second = (_unused(keys, name) for name in ("first", "second"))
    dup = (
        table.select(*keys)
        .with_row_index(rd.ROW)
        .group_by(*keys)
        .agg(row.min().alias(first), row.filter(row > row.min()).min().alias(second))
        .filter(pl.col(second).is_not_null())
        .sort(first)
        .row(0, named=True)
    )
    key_text = ", ".join(f"{k}={dup[k]!r}" for k in keys)
    raise ValidationError(
        f"duplicated key ({key_text}) at rows {dup[first] + 1} and {dup[second] + 1}; each "
        "cell must appear once: aggregate (sum) or drop the duplicates"
    )


def _unused(keys: tuple[str, ...] | list[str], name: str) -> str:
    """A column name that is not a key (``name``, lengthened with ``_`` until it is not)."""
    name = f"{rd.ROW}{name}"
    while name in keys:
        name += "_"
    return name
