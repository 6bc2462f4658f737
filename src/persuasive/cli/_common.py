"""What every command shares: options, their checks, progress, printing.

Options are declared once here (``Annotated`` types) and reused by every command; values with
a domain are checked through :mod:`persuasive._domains` (:func:`checked`), whose description
is also the option's help text, so ``--help``, the error and the Python API say the same thing.
Heavy modules (rich, numpy, polars, the library) are imported inside functions only.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = [
    "DataArg",
    "EncodingOpt",
    "ForceOpt",
    "JsonOpt",
    "OutOpt",
    "QuietOpt",
    "ReportOpt",
    "SeparatorOpt",
    "check_all",
    "checked",
    "data_file",
    "emit_json",
    "num",
    "print_pairs",
    "progress",
    "stdout",
    "stop_progress",
]


def opt(flag: str, text: str, *names: str, metavar: str | None = None) -> Any:
    """A typer option with its help text and no default shown (the shared form of every option)."""
    return typer.Option(flag, *names, help=text, show_default=False, metavar=metavar)


def checked(option: str, value: Any) -> Any:
    """``value`` checked against the declared domain of ``option`` (None passes through)."""
    if value is None:
        return None
    from persuasive import _domains as dm

    return dm.check(option, value)


# --------------------------------------------------------------------------------------------
# Shared options
# --------------------------------------------------------------------------------------------


def _stdin_data(value: Path | None) -> Path | None:
    """``-`` as DATA: standard input, copied to a private temporary CSV file (mode 0700
    folder) that is removed when the command ends. Read as CSV (--separator and --encoding
    apply); the --force guard has no input file to protect."""
    if value is None or str(value) != "-":
        return value
    import atexit
    import shutil
    import tempfile

    from persuasive.errors import ValidationError

    if sys.stdin is None or sys.stdin.isatty():
        raise ValidationError(
            "DATA '-' reads a CSV file from standard input, but standard input is a terminal; "
            "pipe the file in (e.g. `cat counts.csv | persuasive release table - ...`)"
        )
    folder = Path(tempfile.mkdtemp(prefix="persuasive-stdin-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = folder / "standard-input.csv"
    with open(path, "wb") as fh:
        shutil.copyfileobj(sys.stdin.buffer, fh)
    return path


def shown(data: str | os.PathLike[str]) -> str:
    """DATA (a path or a DataFile) as the summary prints it: ``standard input`` for ``-``."""
    path = Path(os.fspath(data))
    if path.name == "standard-input.csv" and path.parent.name.startswith("persuasive-stdin-"):
        return "standard input"
    return str(path)


DataArg = Annotated[
    Path,
    typer.Argument(
        help="The data: a .csv, .parquet, Stata .dta, SPSS .sav/.zsav or SAS .sas7bdat/.xpt "
        "file, or - for a CSV file on standard input.",
        show_default=False,
        callback=_stdin_data,
    ),
]
OutOpt = Annotated[
    str,
    typer.Option(
        "--out",
        help="Output folder: new or empty (or, with --force, one persuasive wrote).",
        show_default=False,
    ),
]
ReportOpt = Annotated[
    bool, typer.Option("--report", help="Also write the HTML/Markdown report into OUT/report/.")
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace an output folder persuasive wrote (never one with other files in it).",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
FormatOpt = Annotated[
    str | None,
    typer.Option("--format", help="csv or parquet (default: as the input).", show_default=False),
]
SeedOpt = Annotated[int | None, opt("--seed", "Random seed: an integer >= 0.")]
TargetOpt = Annotated[
    float | None,
    opt(
        "--target-kappa", "Calibrate: choose the parameter that meets this κ (a real number >= 0)."
    ),
]
R1Opt = Annotated[float | None, opt("--r1", "Receivers: squared prior-mean error bound r1 > 0.")]
R2Opt = Annotated[float | None, opt("--r2", "Receivers: correlation bound r2 > 1.")]
SeparatorOpt = Annotated[
    str | None,
    opt("--separator", "CSV field separator: one character, e.g. ';' (or 'tab'); default ','."),
]
EncodingOpt = Annotated[
    str | None,
    opt(
        "--encoding",
        "Text encoding of the data, e.g. latin-1 or cp1252 (default utf-8); output is UTF-8.",
    ),
]


def check_all(**options: Any) -> dict[str, Any]:
    """Every option value checked against its declared domain: ``check_all(r1=..., delta=...)``
    (names as in :data:`persuasive._domains.RELEASE`; None passes through)."""
    return {name: checked("--" + name.replace("_", "-"), value) for name, value in options.items()}


def data_file(data: Path, separator: str | None, encoding: str | None) -> Any:
    """The DATA argument with --separator and --encoding: a :class:`persuasive.files.DataFile`
    (checked here, before any work: one ``error:`` line naming the option)."""
    from persuasive.files.sources import DataFile, encoding_of, separator_of

    sep = separator_of(separator, name="--separator")
    enc = encoding_of(encoding, name="--encoding")
    return DataFile(data, separator=sep, encoding=enc)


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Parsing option text
# --------------------------------------------------------------------------------------------


def pair(option: str, text: str | None) -> tuple[float, float] | None:
    """``"LO:HI"`` -> (LO, HI), checked against the option's domain."""
    if text is None:
        return None
    from persuasive.errors import ValidationError

    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        lo, hi = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValidationError(
            f"{option} must be LO:HI, two numbers separated by a colon (e.g. 1:40); got {text!r}"
        ) from None
    out: tuple[float, float] = checked(option, (lo, hi))
    return out


def receiver(
    alpha: float | None,
    poisson_mean: str | None,
    negbin_mean: str | None,
    negbin_size: float | None,
) -> Any:
    """The Receiver model of a table release, from exactly one of its three options."""
    from persuasive.classes import receivers
    from persuasive.errors import ValidationError

    given = [
        name
        for name, val in (
            ("--alpha", alpha),
            ("--poisson-mean", poisson_mean),
            ("--negbin-mean", negbin_mean),
        )
        if val is not None
    ]
    if len(given) != 1:
        raise ValidationError(
            "state the Receiver with exactly one of --alpha A, --poisson-mean LO:HI or "
            f"--negbin-mean LO:HI (with --negbin-size S); got {', '.join(given) or 'none'}"
        )
    if (negbin_size is not None) != (negbin_mean is not None):
        raise ValidationError("--negbin-mean LO:HI and --negbin-size S go together; give both")
    if alpha is not None:
        return receivers.SmallCellReceiver(checked("--alpha", alpha))
    if poisson_mean is not None:
        lo, hi = pair("--poisson-mean", poisson_mean) or (0.0, 0.0)
        return receivers.PoissonReceiver(lo, hi)
    lo, hi = pair("--negbin-mean", negbin_mean) or (0.0, 0.0)
    return receivers.NegativeBinomialReceiver(lo, hi, checked("--negbin-size", negbin_size))


def key_list(keys: str) -> list[str]:
    from persuasive.errors import ValidationError

    out = [k.strip() for k in keys.split(",") if k.strip()]
    if not out:
        raise ValidationError(
            f"--keys must name at least one key column, comma-separated; got {keys!r}"
        )
    return out


def receiver_words(receiver: Any, h: int | None) -> str:
    """A Receiver model in words, for the summary a release command prints."""
    from persuasive.report.words import receiver_words as words

    return words(receiver.describe(), h)
