"""Signals during a release: SIGINT, SIGTERM and SIGHUP become :class:`Interrupted`, so that
the clean-up code of :class:`persuasive.files.output.OutputFolder` runs before the process
exits; during a folder swap they are held back by a flag-only handler; once a release folder is
in place (:data:`COMMITTED`) a signal no longer interrupts the work.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

__all__ = [
    "COMMITTED",
    "RECEIVED",
    "SIGNALS",
    "Interrupted",
    "handle_signals",
    "interruption",
    "signals_deferred",
]

#: The signals after which a release removes its temporary folder before exiting.
SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Interrupted(BaseException):
    """Raised in the main thread when SIGINT, SIGTERM or SIGHUP arrives, so that clean-up code
    runs before the process exits."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


#: Folders renamed into place during this process (so that an interruption after a release was
#: written is reported as such, not as "nothing was written").
COMMITTED: list[Path] = []

#: Signals that interrupted this process (raised as :class:`Interrupted`). An ``Interrupted``
#: raised inside code that swallows or replaces it (a C extension's initialisation turns it
#: into ``ImportError: initialization failed``) still leaves its signal here, so the command
#: line reports an interruption, not an internal error.
RECEIVED: list[int] = []


def interruption(exc: BaseException) -> int | None:
    """The signal behind ``exc``: an :class:`Interrupted` in its chain (cause or context), or
    else a signal that interrupted this process (:data:`RECEIVED`); None when there is none."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, Interrupted):
            return cur.signum
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return RECEIVED[-1] if RECEIVED else None


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class _Signals:
    """What :func:`handle_signals` saw: the signals that came once a release was in place."""

    def __init__(self) -> None:
        self.late: list[int] = []


@contextlib.contextmanager
def handle_signals(*, redeliver_late: bool = True) -> Iterator[_Signals]:
    """Turn SIGINT, SIGTERM and SIGHUP into :class:`Interrupted` while the block runs (main
    thread only; elsewhere a no-op), restoring the previous handlers afterwards.

    A signal that comes once a release folder has been renamed into place (the release is
    complete) does not interrupt the block: it is recorded, and delivered again when the block
    ends (``redeliver_late``), or left to the caller in ``.late`` (the command line, which then
    exits normally and says so)."""
    seen = _Signals()
    if not _main_thread():
        yield seen
        return
    start = len(COMMITTED)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if len(COMMITTED) > start:
            seen.late.append(signum)
            return
        RECEIVED.append(signum)
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in SIGNALS}
    try:
        yield seen
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if redeliver_late:
        for signum in seen.late:
            signal.raise_signal(signum)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back while the block runs; raise :class:`Interrupted`
    afterwards if one came.

    A handler that only records the signal is installed (masking the signal would not do: the
    kernel may deliver a process-directed signal to any thread, e.g. one of polars' workers,
    and Python then runs the handler in the main thread at the next bytecode)."""
    if not _main_thread():
        yield
        return
    pending: list[int] = []

    def record(signum: int, _frame: FrameType | None) -> None:
        pending.append(signum)

    previous = {sig: signal.signal(sig, record) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for signum in pending:  # the handler in force now decides (it may record a late signal)
        signal.raise_signal(signum)
