"""How the command line writes: consoles (no padding when piped, ``NO_COLOR``, ``TERM=dumb``,
``FORCE_COLOR``), numbers, key–value tables, JSON, and the progress bar over a command's steps
that also draws the library's tasks (:mod:`persuasive._progress`). Split from
:mod:`persuasive.cli._common`, which re-exports these names. rich is imported inside functions.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import typer

__all__ = [
    "draws_progress",
    "emit_json",
    "num",
    "plain_console",
    "print_pairs",
    "progress",
    "stdout",
    "stop_progress",
]


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced by a stream without a terminal
        return False


def _colour() -> dict[str, Any]:
    """Console options for colour: none at all (not even bold) when ``NO_COLOR`` is set (it
    wins over ``FORCE_COLOR``) or ``TERM=dumb``; otherwise rich decides (``FORCE_COLOR``
    forces colour on a pipe)."""
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM", "") == "dumb":
        return {"color_system": None, "no_color": True}
    return {}


#: Width a piped console lays tables out in: wide enough that nothing is folded.
PIPE_WIDTH = 10_000


def stdout() -> Any:
    """A rich console on standard output.

    On a terminal: its width, colour unless ``NO_COLOR``/``TERM=dumb``. Piped or redirected
    (:func:`plain_console`): nothing is wrapped or padded, tables lose their box, every line
    ends with its last character (``COLUMNS`` still sets a width).
    """
    if _isatty(sys.stdout):
        from rich.console import Console

        return Console(highlight=False, soft_wrap=False, **_colour())
    return plain_console()


def _strip(text: str) -> str:
    """``text`` with the white space at the end of every line removed (before any trailing
    ANSI codes, which a forced colour may leave there)."""
    import re

    tail = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$")
    return "".join(tail.sub(r"\1", line) + "\n" for line in text.splitlines())


def plain_console() -> Any:
    """A console for a pipe or a file: see :func:`stdout`."""
    from rich.console import Console
    from rich.table import Table

    class PlainConsole(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            for obj in objects:
                if isinstance(obj, Table):  # a box pads every line to the widest row
                    obj.box, obj.pad_edge, obj.show_edge = None, False, False
            with self.capture() as cap:
                super().print(*objects, **kwargs)
            self.file.write(_strip(cap.get()))
            self.file.flush()

    width = None if "COLUMNS" in os.environ else PIPE_WIDTH
    return PlainConsole(highlight=False, soft_wrap=False, width=width, **_colour())


def num(x: Any) -> str:
    """A number for a table: 6 significant digits, ``inf``, ``-`` for None."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    x = float(x)
    return "inf" if math.isinf(x) else f"{x:.6g}"


def print_pairs(rows: Sequence[tuple[str, str]], title: str) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, val in rows:
        table.add_row(key, Text(val))
    stdout().print(table)


def emit_json(payload: Any) -> None:
    """Print strict JSON (an infinite κ is the string ``"inf"``)."""
    from persuasive.report.certificate import canonical

    typer.echo(json.dumps(canonical(payload), indent=2, ensure_ascii=False, allow_nan=False))


#: The progress bars being shown, stopped before an error line is printed.
_LIVE: list[Any] = []


def stop_progress() -> None:
    while _LIVE:
        _LIVE.pop().stop()


@contextmanager
def progress(steps: Sequence[str], quiet: bool) -> Iterator[Callable[[str], None]]:
    """A rich progress bar over named steps (standard error, terminals only); ``step(name)``
    marks the start of a step. Unknown names are shown as they come."""
    if quiet:
        yield lambda _name: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from persuasive._progress import reporting

    console = Console(stderr=True, **_colour())
    drawn = draws_progress()
    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description:<42}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not drawn,
    )
    with bar, reporting(BarReporter(bar) if drawn else None):
        _LIVE.append(bar)
        task = bar.add_task(steps[0] if steps else "", total=len(steps))
        done: set[str] = set()

        def step(name: str) -> None:
            if done:
                bar.advance(task)
            done.add(name)
            bar.update(task, description=name)

        try:
            yield step
            bar.update(task, completed=len(steps))
        finally:
            if bar in _LIVE:
                _LIVE.remove(bar)


def draws_progress() -> bool:
    """Whether progress bars are drawn: standard error is a terminal (really: ``FORCE_COLOR``
    does not make a pipe one) that is not ``TERM=dumb``."""
    return _isatty(sys.stderr) and os.environ.get("TERM", "") != "dumb"


class BarReporter:
    """The library's progress (:mod:`persuasive._progress`) as rows under a rich bar: a row
    per running task (its name indented), removed when the task ends."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def start(self, name: str, total: float | None) -> Any:
        return self.bar.add_task("  " + name, total=total)

    def advance(self, handle: Any, amount: float) -> None:
        self.bar.advance(handle, amount)

    def finish(self, handle: Any) -> None:
        self.bar.remove_task(handle)
