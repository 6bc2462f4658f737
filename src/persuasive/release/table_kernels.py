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

A kernel only ever answers a question or gives up: a negative count, a duplicate, a key outside
the table, hand over to the numpy/polars path, which names the first offending row. numba is
imported only here, on the first call above :data:`MIN_ROWS` rows (``persuasive --version`` and
the CLI, which read files, never import it); the kernels are compiled once per machine
(``cache=True``). Any failure to import or compile (numba missing, an unwritable cache) makes
:func:`kernels` return None for the life of the process: the numpy/polars path is used.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

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


def _prefetch() -> Any:
    """``prefetch(array, index)``: the LLVM intrinsic ``llvm.prefetch`` (for writing, into all
    cache levels) on ``array[index]``, for use inside a numba kernel."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx: Any, array: Any, index: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
            name = "llvm.prefetch.p0i8"
            fn = builder.module.globals.get(name) or ir.Function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), name=name
            )
            address = builder.bitcast(builder.gep(data, [args[1]]), i8p)
            builder.call(fn, [address, *(ir.Constant(i32, v) for v in (1, 3, 1))])
            return context.get_dummy_value()

        return types.void(array, index), codegen

    return prefetch


def _compile() -> Any:
    """The compiled kernels (raises whatever numba raises when it cannot provide them); with
    prefetching when the intrinsic compiles, else without (the same results, slower)."""
    import numba

    try:
        return _kernels(_prefetch())
    except Exception:  # an LLVM that does not know the intrinsic's name: no prefetching
        return _kernels(numba.njit(lambda array, index: None))


def _kernels(prefetch: Callable[..., None]) -> Any:
    """The kernels, compiled with ``prefetch`` (:func:`_prefetch`, or a no-op)."""
    import numba

    ro = numba.types.Array(numba.types.int64, 1, "C", readonly=True)
    rw64 = numba.types.Array(numba.types.int64, 1, "C")
    words = numba.types.Array(numba.types.uint64, 1, "C")
    i64 = numba.types.int64

    def jit(signature: Any) -> Any:
        return numba.njit(signature, nogil=True, cache=True, boundscheck=False)

    @jit(i64(ro, i64, words, rw64, i64, i64))
    def publish_part(counts, h, bits, values, start, stop):
        # The OR of the counts (negative iff one is) over rows start..stop-1, start a multiple
        # of 64; the words of those rows are written whole. Slices, not offsets, index the
        # loops: numba then knows the indices are >= 0 (no wraparound test) and LLVM
        # vectorises them. (Measured: with the key order in the same function, or the tail's
        # variables reused from the main loop, the pass is ~2x slower.)
        cs = counts[start:stop]
        vs = values[start:stop]
        bs = bits[start >> 6 :]
        signs = np.int64(0)
        full = cs.size // 64
        for w in range(full):
            word = np.uint64(0)
            block = cs[w * 64 : (w + 1) * 64]
            out = vs[w * 64 : (w + 1) * 64]
            for j in range(64):
                c = block[j]
                keep = c >= h
                word |= np.uint64(keep) << np.uint64(j)
                out[j] = c if keep else 0
                signs |= c
            bs[w] = word
        if cs.size > full * 64:  # the last, partial word (its bits beyond the rows are 0)
            last_word = np.uint64(0)
            last_block = cs[full * 64 :]
            last_out = vs[full * 64 :]
            for t in range(last_block.size):
                x = last_block[t]
                kept = x >= h
                last_word |= np.uint64(kept) << np.uint64(t)
                last_out[t] = x if kept else 0
                signs |= x
            bs[full] = last_word
        return signs

    @jit(i64(ro, i64, i64))
    def order_part(keys, start, stop):
        # 1 if some key of rows start..stop-1 is <= the previous row's, else 0; block by block,
        # so that unsorted keys stop at once.
        first = max(start, 1)
        later = keys[first:stop]
        earlier = keys[first - 1 : stop - 1]
        for b in range(0, later.size, 1 << 16):
            down = np.int64(0)
            a = later[b : b + (1 << 16)]
            z = earlier[b : b + (1 << 16)]
            for j in range(a.size):
                down |= np.int64(a[j] <= z[j])
            if down:
                return 1
        return 0

    @jit(i64(ro, words))
    def mark(keys, bits):
        # Set the bit of every key, the word of the key 16 rows ahead prefetched: 1 when no bit
        # was set twice, 0 on a bit set twice (a duplicate), -1 on a key outside
        # 0..64 * len(bits) - 1.
        top = (np.uint64(bits.size) << np.uint64(6)) - np.uint64(1)
        m = keys.size
        dup = np.uint64(0)
        bad = np.uint64(0)
        for i in range(m):
            ahead = min(np.uint64(keys[min(i + 16, m - 1)]), top)
            prefetch(bits, np.int64(ahead >> np.uint64(6)))
            k = np.uint64(keys[i])
            bad |= np.uint64(k > top)
            k = min(k, top)
            w = k >> np.uint64(6)
            mask = np.uint64(1) << (k & np.uint64(63))
            old = bits[w]
            dup |= old & mask
            bits[w] = old | mask
        if bad:
            return -1
        return 0 if dup else 1

    @jit(numba.types.UniTuple(i64, 2)(ro, ro, i64, words, rw64, words, i64, i64))
    def publish_mark(keys, counts, h, bits, values, table, start, stop):
        # publish_part over rows start..stop-1 (start a multiple of 64) and, 64 rows at a time
        # in the same loop, the bit of each row's key set in ``table``: (the OR of the counts,
        # 1 if some key is outside 0..64 * len(table) - 1 else 0). Two loops over each block of
        # 64 rows, so that the first stays vectorised (measured: 1.7x against 2.9x a copy for
        # the two kernels one after the other, at 10^7 rows).
        cs = counts[start:stop]
        ks = keys[start:stop]
        vs = values[start:stop]
        bs = bits[start >> 6 :]
        top = (np.uint64(table.size) << np.uint64(6)) - np.uint64(1)
        signs = np.int64(0)
        bad = np.uint64(0)
        full = cs.size // 64
        for w in range(full):
            word = np.uint64(0)
            block = cs[w * 64 : (w + 1) * 64]
            out = vs[w * 64 : (w + 1) * 64]
            for j in range(64):
                c = block[j]
                keep = c >= h
                word |= np.uint64(keep) << np.uint64(j)
                out[j] = c if keep else 0
                signs |= c
            bs[w] = word
            kb = ks[w * 64 : (w + 1) * 64]
            for j in range(64):
                k = np.uint64(kb[j])
                bad |= np.uint64(k > top)
                k = min(k, top)
                table[k >> np.uint64(6)] |= np.uint64(1) << (k & np.uint64(63))
        if cs.size > full * 64:  # the last, partial word (its bits beyond the rows are 0)
            last_word = np.uint64(0)
            for t in range(full * 64, cs.size):
                x = cs[t]
                kept = x >= h
                last_word |= np.uint64(kept) << np.uint64(t - full * 64)
                vs[t] = x if kept else 0
                signs |= x
                k = np.uint64(ks[t])
                bad |= np.uint64(k > top)
                k = min(k, top)
                table[k >> np.uint64(6)] |= np.uint64(1) << (k & np.uint64(63))
            bs[full] = last_word
        return signs, np.int64(bad)

    @jit(i64(ro, numba.types.Array(numba.types.uint8, 1, "C")))
    def scatter(keys, seen):
        # Store 1 in the slot of every key (a store, no load: ~2x numpy's scatter, measured);
        # 1 when every key is in 0..len(seen) - 1, else 0.
        size = np.uint64(seen.size)
        bad = np.uint64(0)
        for i in range(keys.size):
            k = np.uint64(keys[i])
            bad |= np.uint64(k >= size)
            seen[min(k, size - np.uint64(1))] = 1
        return np.int64(bad == 0)

    return publish_part, order_part, mark, scatter, publish_mark


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
