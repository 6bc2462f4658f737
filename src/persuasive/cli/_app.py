"""The command's error handling and exit codes, in one place.

Exit status of every command:

== =========================================================================================
0  the guarantee holds / the certificate is verified
1  it does not hold / the certificate was tampered with or claims no guarantee / a violation
   was found
2  bad input or usage: one ``error: ...`` line on standard error (typer's own parameter errors
   included), nothing written
3  internal error (a bug): one ``error: internal error ...`` line; the traceback only with
   ``--debug`` (or ``PERSUASIVE_DEBUG=1``)
== =========================================================================================

An interruption (SIGINT, SIGTERM, SIGHUP) removes every temporary file, prints one line and
exits with 128 + the signal number (130, 143, 129), as shells do.

Nothing here imports numpy, polars or the library: ``persuasive --help`` and
``persuasive --version`` start fast.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

import typer
from typer import _click
from typer.core import TyperArgument, TyperGroup

__all__ = ["BAD_INPUT", "DOES_NOT_HOLD", "HOLDS", "INTERNAL", "PersuasiveGroup", "fail"]

HOLDS = 0
DOES_NOT_HOLD = 1
BAD_INPUT = 2
INTERNAL = 3

#: Set by ``--debug``: print the traceback of an internal error.
DEBUG = {"on": os.environ.get("PERSUASIVE_DEBUG", "") not in ("", "0")}


def one_line(text: object) -> str:
    """A message on one line (internal white space folded)."""
    return " ".join(str(text).split())


def fail(message: object, code: int = BAD_INPUT) -> NoReturn:
    """Print ``error: message`` (one line) on standard error and exit with ``code``."""
    from persuasive.cli._common import stop_progress

    stop_progress()
    print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def _usage(exc: _click.exceptions.ClickException) -> str:
    message = one_line(exc.format_message())
    errors = getattr(exc.__cause__, "errors", None)  # a value typer could not convert
    if callable(errors):
        try:
            given = errors()[0].get("input")
        except (IndexError, AttributeError, TypeError):
            given = None
        if given is not None:
            message = message.rstrip(".") + f"; got {given!r}"
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        message += f" (see: {ctx.command_path} --help)"
    return message


def _signal_exit(signum: int) -> int:
    return 128 + signum


def run(group: TyperGroup, args: Sequence[str] | None, prog_name: str | None, **extra: Any) -> int:
    """Run the command line; return its exit status (see the module docstring)."""
    from persuasive.cli._common import stop_progress

    try:
        rv = TyperGroup.main(group, args=args, prog_name=prog_name, standalone_mode=False, **extra)
        return int(rv) if isinstance(rv, int) and not isinstance(rv, bool) else HOLDS
    except typer.Exit as exc:
        return int(exc.exit_code)
    except _click.exceptions.NoArgsIsHelpError as exc:
        print(exc.format_message())
        return BAD_INPUT
    except typer.Abort:
        stop_progress()
        print("error: interrupted (SIGINT); nothing was written", file=sys.stderr)
        return _signal_exit(signal.SIGINT)
    except _click.exceptions.ClickException as exc:
        stop_progress()
        print(f"error: {_usage(exc)}", file=sys.stderr)
        return BAD_INPUT
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (HOLDS if code is None else BAD_INPUT)
    except KeyboardInterrupt:
        stop_progress()
        print("error: interrupted (SIGINT); nothing was written", file=sys.stderr)
        return _signal_exit(signal.SIGINT)
    except BaseException as exc:
        return _error_status(exc)


def _error_status(exc: BaseException) -> int:
    from persuasive.cli._common import stop_progress
    from persuasive.errors import PersuasiveError
    from persuasive.files.signals import interruption

    stop_progress()
    signum = interruption(exc)  # also an interruption another exception stands in for
    if signum is not None and not isinstance(exc, PersuasiveError):
        name = signal.Signals(signum).name
        print(f"error: interrupted ({name}); nothing was written", file=sys.stderr)
        return _signal_exit(signum)
    if isinstance(exc, PersuasiveError):
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return BAD_INPUT
    if isinstance(exc, MemoryError):
        print(
            "error: out of memory; use a smaller input or option (e.g. fewer --samples)",
            file=sys.stderr,
        )
        return BAD_INPUT
    if isinstance(exc, OSError) and exc.errno == 32:  # EPIPE: the reader went away
        return DOES_NOT_HOLD
    if DEBUG["on"]:
        traceback.print_exception(exc)
    where = ""
    tb = traceback.extract_tb(exc.__traceback__)
    if tb:
        where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}"
    print(
        f"error: internal error{where}: {type(exc).__name__}: {one_line(exc)} (a bug in "
        "persuasive; run with --debug for the traceback and please report it)",
        file=sys.stderr,
    )
    return INTERNAL


#: What the value of an option looks like in ``--help``, by option (for options that declare
#: no ``metavar`` of their own; any other option shows its name in capitals, e.g. ``--x X``).
METAVARS = {
    "--out": "FOLDER",
    "--keys": "K1,K2",
    "--count": "COLUMN",
    "--column": "COLUMN",
    "--value": "COLUMN",
    "--group": "COLUMN",
    "--weight": "COLUMN",
    "--h": "H",
    "--r": "R",
    "--r1": "R1",
    "--r2": "R2",
    "--alpha": "A",
    "--poisson-mean": "LO:HI",
    "--negbin-mean": "LO:HI",
    "--negbin-size": "S",
    "--target-kappa": "K",
    "--delta": "D",
    "--seed": "N",
    "--samples": "N",
    "--format": "csv|parquet",
    "--margins": "MARGINS",
    "--objective": "count|total",
    "--bound": "publication|table",
    "--method": "greedy|auto|mip",
    "--mip-time-limit": "SECONDS",
    "--noise": "KIND:SCALE",
    "--noise-sd": "S",
    "--max-mean-sd": "V",
    "--max-stat-sd": "V",
    "--stats": "FILE.toml",
    "--absent": "zero|structural",
    "--known": "FILE.csv",
    "--apriori": "FILE.csv",
    "--hierarchy": "OUTER>INNER",
    "--separator": "CHAR",
    "--encoding": "NAME",
}


class _Argument(TyperArgument):
    """An argument shown by its metavar alone (``DATA``, ``[OUT_DIR]``), without a type."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def readable_help(command: Any) -> None:
    """Readable types in ``--help``: every option and argument of ``command`` and its
    subcommands without a metavar gets one (:data:`METAVARS`, else its name in capitals)
    instead of typer's ``<str>``/``<float>``/``<list[Path]>``; arguments show no type."""
    for param in getattr(command, "params", ()):
        if isinstance(param, TyperArgument):
            if param.metavar is None:
                param.metavar = (param.name or "value").upper()
            if type(param) is TyperArgument:
                param.__class__ = _Argument
        elif not getattr(param, "is_flag", False) and param.metavar is None:
            longest = max(param.opts, key=len)
            param.metavar = METAVARS.get(longest, longest.lstrip("-").replace("-", "_").upper())
    for sub in getattr(command, "commands", {}).values():
        readable_help(sub)


class PersuasiveGroup(TyperGroup):
    """The root command: every failure becomes one line and an exit status (module docstring)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        from persuasive.files.signals import COMMITTED, handle_signals

        DEBUG["on"] = os.environ.get("PERSUASIVE_DEBUG", "") not in ("", "0")
        readable_help(self)
        COMMITTED.clear()
        with handle_signals(redeliver_late=False) as seen:
            code = run(self, args, prog_name or "persuasive", **extra)
        if seen.late:
            name = signal.Signals(seen.late[0]).name
            print(
                f"note: {name} came after the release was written; '{COMMITTED[-1]}' is complete",
                file=sys.stderr,
            )
        sys.stdout.flush()
        raise SystemExit(code)
