"""Progress of long computations, reported to whoever listens — or to nobody.

Library code marks a step that can take more than a second::

    from persuasive._progress import task

    with task("margins: posterior", total=n_components) as advance:
        for component in components:
            ...
            advance()          # or advance(k), in chunks inside hot loops

Without a listener, :func:`task` yields a function that does nothing (one context-variable
lookup per task, nothing per ``advance``), so the library prints nothing and depends on no
display package. A listener is a :class:`Reporter` installed for the current context with
:func:`reporting`; the command line installs one that draws rich progress bars on standard
error (``persuasive.cli._common.progress``). The reporter lives in a
:class:`contextvars.ContextVar`, so concurrent contexts (threads, asyncio tasks) do not see each
other's bars. :class:`RecordingReporter` records what was reported, for tests.

This is a foundation module: it imports nothing from the library and nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["RecordingReporter", "Reporter", "active", "reporting", "task"]


class Reporter(Protocol):
    """What receives progress: a task starts, advances, finishes."""

    def start(self, name: str, total: float | None) -> Any:
        """A task begins; ``total`` is its amount of work (None: unknown). Returns a handle."""
        ...

    def advance(self, handle: Any, amount: float) -> None:
        """``amount`` more of the task's work is done."""
        ...

    def finish(self, handle: Any) -> None:
        """The task ended (normally or by an exception)."""
        ...


_REPORTER: ContextVar[Reporter | None] = ContextVar("persuasive_progress", default=None)


def _nothing(amount: float = 1) -> None:
    return None


def active() -> bool:
    """Whether a reporter listens in this context (to skip preparing costly progress totals)."""
    return _REPORTER.get() is not None


@contextmanager
def task(name: str, total: float | None = None) -> Iterator[Callable[..., None]]:
    """Report a step of ``total`` units of work; yields ``advance(amount=1)``.

    A no-op unless a reporter is installed (:func:`reporting`).
    """
    rep = _REPORTER.get()
    if rep is None:
        yield _nothing
        return
    handle = rep.start(name, total)

    def advance(amount: float = 1) -> None:
        rep.advance(handle, amount)

    try:
        yield advance
    finally:
        rep.finish(handle)


@contextmanager
def reporting(reporter: Reporter | None) -> Iterator[Reporter | None]:
    """Install ``reporter`` for the current context (None: silence) while the block runs."""
    token = _REPORTER.set(reporter)
    try:
        yield reporter
    finally:
        _REPORTER.reset(token)


@dataclass
class Recorded:
    """One task as a :class:`RecordingReporter` saw it."""

    name: str
    total: float | None
    done: float = 0.0
    advances: int = 0
    finished: bool = False

    @property
    def complete(self) -> bool:
        """Finished, and (when it has a total) advanced to its total."""
        return self.finished and (self.total is None or self.done >= self.total)


@dataclass
class RecordingReporter:
    """A reporter that records every task (``tasks``, in start order), for tests.

    >>> rec = RecordingReporter()
    >>> with reporting(rec):
    ...     with task("work", total=3) as advance:
    ...         advance(); advance(2)
    >>> [(t.name, t.done, t.complete) for t in rec.tasks]
    [('work', 3.0, True)]
    """

    tasks: list[Recorded] = field(default_factory=list)

    def start(self, name: str, total: float | None) -> Recorded:
        rec = Recorded(name, None if total is None else float(total))
        self.tasks.append(rec)
        return rec

    def advance(self, handle: Recorded, amount: float) -> None:
        handle.done += float(amount)
        handle.advances += 1

    def finish(self, handle: Recorded) -> None:
        handle.finished = True

    def named(self, prefix: str) -> list[Recorded]:
        """The tasks whose name starts with ``prefix``."""
        return [t for t in self.tasks if t.name.startswith(prefix)]
