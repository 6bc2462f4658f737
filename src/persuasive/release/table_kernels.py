r"""Compiled kernels for the in-memory table release (numba, loaded on first use).

Two kernels; :func:`publish` runs over parts of the rows in the worker threads of
:mod:`persuasive.release.table_threads` (compiled with ``nogil``, so the parts run at once):

* :func:`publish` — one pass over an Int64 key and an Int64 count column: whether a count is
  negative, whether the keys increase strictly (then they are unique), and the published count
  column of :func:`persuasive.release.table_cells.published_column` — the comparison
  ``count >= h`` packed straight into an Arrow validity bitmap, and the values: the count where
  kept, **0** where suppressed;
* :func:`publish_distinct` — for keys that are not sorted, :func:`publish` and the marking
  of every key in a bit table of ``n + n // 8 + 1`` slots indexed by the keys as they are (the
  table of :func:`persuasive.release.table_keys._marks`), in the same pass: each thread marks
  a table of its own, and the keys are distinct when the union of the tables has n bits set
  (n keys in n distinct slots). Up to :data:`FUSED_ROWS` keys, where two tables stay in cache;
* :func:`distinct` — the marking alone, one thread with one table (a byte a slot, or from
  :data:`BYTE_ROWS` keys one bit a slot: 14 MB at 10^8 keys, which stays in cache where the
  byte table of 112 MB does not, and where two tables of 14 MB do not either), each key's word
  prefetched 16 keys ahead (``llvm.prefetch``: a random access into the table is a cache miss).

The kernels themselves, and the ``llvm.prefetch`` intrinsic, are compiled in
:mod:`persuasive.release.table_jit`; this module loads them once and runs them over the rows.

A kernel only ever answers a question or gives up: a negative count, a duplicate, a key outside
the table, hand over to the numpy/polars path, which names the first offending row. numba is
imported (by :mod:`persuasive.release.table_jit`) only on the first call above
:data:`MIN_ROWS` rows (``persuasive --version`` and the CLI, which read files, never import
it); the kernels are compiled once per machine
(``cache=True``). Any failure to import or compile (numba missing, an unwritable cache) makes
:func:`kernels` return None for the life of the process: the numpy/polars path is used.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from persuasive.release.table_jit import _kernels, _prefetch
from persuasive.release.table_keys import _popcount
from persuasive.release.table_threads import _split

__all__ = [
    "BYTE_ROWS",
    "FUSED_ROWS",
    "MIN_ROWS",
    "descends",
    "distinct",
    "kernels",
    "publish",
    "publish_distinct",
]

#: From this many rows the kernels serve the release: there a release takes about half the time
#: of the numpy/polars path (0.18 against 0.32 ms at 2^18 sorted rows, ``benchmarks/README.md``).
#: The first use in a process also imports numba and loads the cached kernels (~0.3 s, once).
MIN_ROWS = 1 << 18

#: Up to this many keys the uniqueness table has a byte a slot (stores only; 38 MB at most),
#: above a bit a slot (a load and a store a key, but 8x smaller: 14 MB at 10^8 keys).
BYTE_ROWS = 1 << 25

#: Up to this many keys, unsorted keys are marked in the pass of the published column
#: (:func:`publish_distinct`: a bit table per thread, 4.7 MB each at most); above, two tables
#: leave the cache and :func:`distinct` marks one table in one thread after the pass (at 10^8
#: keys: 9.3x the copy fused, against 5.6x after, measured).
FUSED_ROWS = 1 << 25

#: The kernels' passes are split across the worker threads from this many rows (their data
#: is in cache there, and a second core halves the pass: 2.9x against 1.8x a copy at 10^6).
_PARALLEL_ROWS = 1 << 18

_lock = threading.Lock()
_loaded: Any = None  # None: not tried yet; False: unavailable; else the compiled kernels


def _compile() -> Any:
    """The compiled kernels (raises whatever numba raises when it cannot provide them); with
    prefetching when the intrinsic compiles, else without (the same results, slower)."""
    import numba

    try:
        return _kernels(_prefetch())
    except Exception:  # an LLVM that does not know the intrinsic's name: no prefetching
        return _kernels(numba.njit(lambda array, index: None))


def kernels() -> Any:
    """The compiled kernels, compiled (or loaded from numba's cache) on the first call.

    Returns
    -------
    tuple of numba dispatchers or None
        None when numba cannot be imported or cannot compile them (e.g. no writable cache
        directory); the failure is remembered, and never raised, for the life of the process.
    """
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                try:
                    _loaded = _compile()
                except Exception:  # any failure (import, compile, cache): the numpy/polars path
                    _loaded = False
    return _loaded or None


def publish(
    keys: NDArray[np.int64], counts: NDArray[np.int64], h: int
) -> tuple[bool, bool, pa.Buffer, pa.Buffer] | None:
    """The published count column and the checks of the cells, in one pass over the counts
    split across the worker threads (and one over the keys, which stops at the first descent).

    Parameters
    ----------
    keys, counts : numpy.ndarray of int64
        The key and the count column (read-only views of the frame's buffers do).
    h : int
        The suppression threshold.

    Returns
    -------
    tuple or None
        (some count is negative, the keys increase strictly, validity, values): the validity
        is the Arrow bitmap (bit i is row i: ``counts[i] >= h``; bits beyond the rows are 0),
        the values (Int64) the count where kept and 0 where suppressed. None without the
        kernels.
    """
    k = kernels()
    if k is None:
        return None
    counts_part, order_part = k[0], k[1]
    n = counts.size
    # From Arrow's memory pool (mimalloc or jemalloc: reused, not faulted in afresh as a new
    # numpy array of 80 MB is: 2.2x against 4.2x a copy, copy included, measured at 10^7).
    bits_buf, values_buf = pa.allocate_buffer(-(-n // 64) * 8), pa.allocate_buffer(n * 8)
    bits = np.frombuffer(bits_buf, dtype=np.uint64)
    values = np.frombuffer(values_buf, dtype=np.int64)

    def part(a: int, b: int) -> tuple[int, int]:
        return counts_part(counts, h, bits, values, a, b), order_part(keys, a, b)

    found = _split(part, n, _PARALLEL_ROWS)
    neg = any(f[0] < 0 for f in found)
    down = any(f[1] for f in found)
    return neg, not down, bits_buf, values_buf


def descends(keys: NDArray[np.int64]) -> bool:
    """Whether some key is at most the key before it (the kernels' order pass, which stops at
    the first block holding a descent); False without the kernels.

    Parameters
    ----------
    keys : numpy.ndarray of int64

    Returns
    -------
    bool
    """
    k = kernels()
    return k is not None and bool(k[1](keys, 0, keys.size))


def publish_distinct(
    keys: NDArray[np.int64], counts: NDArray[np.int64], h: int
) -> tuple[bool, bool, pa.Buffer, pa.Buffer] | None:
    """:func:`publish` for keys that are not sorted: the published column and, in the same
    pass, whether the keys are distinct, each thread marking the keys of its rows in a bit table
    of its own (:data:`FUSED_ROWS` keys at most: two tables in cache).

    The keys are distinct when every key is a slot of the tables (0 <= key <= n + n // 8) and
    the union of the tables has n bits set: n keys in n distinct slots are n distinct keys.

    Parameters
    ----------
    keys, counts : numpy.ndarray of int64
        The key and the count column.
    h : int
        The suppression threshold.

    Returns
    -------
    tuple or None
        (some count is negative, the keys are proved distinct, validity, values), the last two
        as for :func:`publish`; "not proved" when a key is outside the table or a slot is marked
        twice (:func:`persuasive.release.table_keys._check_unique` then decides and names the
        duplicate). None without the kernels.
    """
    k = kernels()
    if k is None:
        return None
    n = counts.size
    words = -(-(n + n // 8 + 1) // 64)
    bits_buf, values_buf = pa.allocate_buffer(-(-n // 64) * 8), pa.allocate_buffer(n * 8)
    bits = np.frombuffer(bits_buf, dtype=np.uint64)
    values = np.frombuffer(values_buf, dtype=np.int64)

    def part(a: int, b: int) -> tuple[int, int, NDArray[np.uint64]]:
        table = np.zeros(words, dtype=np.uint64)
        signs, outside = k[4](keys, counts, h, bits, values, table, a, b)
        return signs, outside, table

    found = _split(part, n, _PARALLEL_ROWS)
    neg = any(f[0] < 0 for f in found)
    proved = not any(f[1] for f in found)
    if proved:
        union = found[0][2]
        for f in found[1:]:
            np.bitwise_or(union, f[2], out=union)
        proved = _popcount(union.view(np.uint8)) == n
    return neg, proved, bits_buf, values_buf


def distinct(keys: NDArray[np.int64]) -> bool | None:
    """Whether Int64 keys are distinct, by a table over slots 0..n + n // 8 (the keys as they
    are, one thread): a byte a slot up to :data:`BYTE_ROWS` keys, a bit a slot above (a byte
    table would leave the cache).

    Parameters
    ----------
    keys : numpy.ndarray of int64

    Returns
    -------
    True or None
        True when proved distinct; None when the table proves nothing (a key outside it, or a
        slot marked twice: :func:`persuasive.release.table_keys._check_unique` then decides
        and names the duplicate), and None without the kernels.
    """
    k = kernels()
    if k is None:
        return None
    n = keys.size
    slots = n + n // 8 + 1
    if n <= BYTE_ROWS:
        seen = np.zeros(slots, dtype=np.uint8)
        return True if k[3](keys, seen) == 1 and np.count_nonzero(seen) == n else None
    bits = np.zeros(-(-slots // 64), dtype=np.uint64)
    if k[2](keys, bits) != 1:
        return None
    return True if _popcount(bits.view(np.uint8)) == n else None
