"""What every command shares: options, their checks, and (from :mod:`persuasive.cli._output`)
progress and printing.

Options are declared once here (``Annotated`` types) and reused by every command; values with
a domain are checked through :mod:`persuasive._domains` (:func:`checked`), whose description
is also the option's help text, so ``--help``, the error and the Python API say the same thing.
Heavy modules (rich, numpy, polars, the library) are imported inside functions only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from persuasive.cli._output import (  # re-exported: how commands write
    emit_json,
    num,
    print_pairs,
    progress,
    stdout,
    stop_progress,
)

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


# The options of the count-table releases (release table, release table --margins, release
# linked): declared once, so that every command shows the same text.
_H_HELP = "Suppress cells below h: an integer in [2, 10^6]."
HOpt = Annotated[int | None, opt("--h", _H_HELP)]
#: ``--h`` where the command cannot go without it (typer reports it missing).
HRequiredOpt = Annotated[int, opt("--h", _H_HELP)]
ROpt = Annotated[int | None, opt("--r", "Small-cell score threshold: 2 <= r <= h (default h).")]
AlphaOpt = Annotated[
    float | None, opt("--alpha", "Receivers: every prior with P(cell < h) >= A, A in (0, 1].")
]
PoissonMeanOpt = Annotated[
    str | None, opt("--poisson-mean", "Receivers: Poisson cell priors, mean in LO:HI.")
]
NegbinMeanOpt = Annotated[
    str | None, opt("--negbin-mean", "Receivers: negative-binomial priors, mean in LO:HI.")
]
NegbinSizeOpt = Annotated[float | None, opt("--negbin-size", "Negative-binomial size (> 0).")]

_OBJECTIVE_HELP = "minimise secondary 'count' or 'total'."
_BOUND_HELP = "plan against 'publication' (default) or 'table'."
#: ``--objective`` and ``--bound`` of ``release table``, which need ``--margins``.
MarginsObjectiveOpt = Annotated[
    str | None, opt("--objective", "With --margins: " + _OBJECTIVE_HELP)
]
MarginsBoundOpt = Annotated[str | None, opt("--bound", "With --margins: " + _BOUND_HELP)]
#: ``--objective`` and ``--bound`` of a command that always publishes margins.
ObjectiveOpt = Annotated[str | None, opt("--objective", _OBJECTIVE_HELP.capitalize())]
BoundOpt = Annotated[str | None, opt("--bound", _BOUND_HELP.capitalize())]


def planner_choices(objective: str | None, bound: str | None) -> tuple[str, str]:
    """``--objective`` and ``--bound`` checked (one line naming the option, echoing the value,
    saying what is allowed), with their defaults ``count`` and ``publication``."""
    from persuasive.errors import ValidationError
    from persuasive.release.margins_input import BOUNDS, OBJECTIVES

    if objective not in (None, *OBJECTIVES):
        raise ValidationError(f"--objective must be {' or '.join(OBJECTIVES)}; got {objective!r}")
    if bound not in (None, *BOUNDS):
        raise ValidationError(f"--bound must be {' or '.join(BOUNDS)}; got {bound!r}")
    return objective or OBJECTIVES[0], bound or BOUNDS[0]


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
