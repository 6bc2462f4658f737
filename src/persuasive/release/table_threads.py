"""Worker threads for the passes over a table's column buffers.

:func:`_split` runs ``fn(start, stop)`` over contiguous parts of ``range(n)``, the first in the
calling thread and the others in a small pool (one thread per further core, at most four in
all), from :data:`_PARALLEL_ROWS` rows: numpy releases the GIL in its loops, so the parts run
at once. The pool's threads block every asynchronous signal, so that SIGINT, SIGTERM and SIGHUP
reach the main thread, where a release's handlers run (:mod:`persuasive.files.signals`); a
fork forgets the pool.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["_BLOCK", "_PARALLEL_ROWS", "_PARALLEL_SCATTER_ROWS", "_executor", "_split", "_workers"]

_T = TypeVar("_T")

#: Rows per block of the key-table passes (512 KiB of int64: a block's index stays in cache
#: while it is scattered), and of the leading sortedness check.
_BLOCK = 1 << 16
#: Streaming passes (min, comparisons) over at least this many rows are split across worker
#: threads, one part per core (below, the data is in cache and a thread costs more than it
#: saves); the key table's scatter (random writes) from :data:`_PARALLEL_SCATTER_ROWS` rows.
_PARALLEL_ROWS = 1 << 22
_PARALLEL_SCATTER_ROWS = 1 << 17
#: Synchronous signals (faults) stay unblocked in the worker threads; every other signal is
#: blocked there, so that SIGINT, SIGTERM and SIGHUP reach the main thread, where the release's
#: handlers run (:mod:`persuasive.files.signals`).
_SYNCHRONOUS = {"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT", "SIGTRAP", "SIGSYS"}

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _block_signals() -> None:
    if hasattr(signal, "pthread_sigmask"):
        asynchronous = {
            s for s in signal.valid_signals() if getattr(s, "name", "") not in _SYNCHRONOUS
        }
        signal.pthread_sigmask(signal.SIG_BLOCK, asynchronous)


def _workers() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, cpus or 1))


def _executor() -> ThreadPoolExecutor | None:
    global _pool
    if _workers() < 2:
        return None
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                _workers() - 1, thread_name_prefix="persuasive-tables", initializer=_block_signals
            )
        return _pool


def _after_fork() -> None:  # the pool's threads do not survive a fork
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _split(fn: Callable[[int, int], _T], n: int, min_rows: int | None = None) -> list[_T]:
    """``fn(start, stop)`` over contiguous parts of ``range(n)`` (starts are multiples of
    :data:`_BLOCK`), the first part in this thread and the others in the worker pool."""
    pool = _executor() if n >= (_PARALLEL_ROWS if min_rows is None else min_rows) else None
    parts = _workers() if pool is not None else 1
    step = -(-n // parts // _BLOCK) * _BLOCK
    bounds = [(a, min(a + step, n)) for a in range(0, n, step)] if n else [(0, 0)]
    if pool is None or len(bounds) == 1:
        return [fn(a, b) for a, b in bounds]
    futures = [pool.submit(fn, a, b) for a, b in bounds[1:]]
    first = fn(*bounds[0])
    return [first, *(f.result() for f in futures)]
