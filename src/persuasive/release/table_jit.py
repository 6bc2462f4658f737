r"""The numba source of the table-release kernels of :mod:`persuasive.release.table_kernels`.

:func:`_kernels` compiles them (``nogil``, cached per machine) with a ``prefetch`` function:
:func:`_prefetch`, the LLVM intrinsic ``llvm.prefetch`` as a numba intrinsic, or a no-op where
an LLVM does not know it. numba is imported only inside these functions, on the first release
that uses the kernels; what each kernel computes is in the docstring of
:mod:`persuasive.release.table_kernels` and in the comments below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["_kernels", "_prefetch"]


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
