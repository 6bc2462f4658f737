"""What every ``persuasive choose`` command shares: its output options, files and printing.

:func:`output_options` adds ``--json``, ``--frontier FILE``, ``--plot FILE``, ``--report DIR``,
``--force`` and ``--quiet`` to a command and hands them to it as one :class:`Outputs`.
:func:`plan` checks the destinations before any work; :func:`finish` writes them atomically
(each file into a private temporary file beside it, renamed into place once all are complete;
the report folder through :class:`persuasive.files.output.OutputFolder`), prints the choice and
exits 0 when something is released, 1 when the best certified choice is to withhold.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from persuasive.cli import _common as c
from persuasive.cli._common import JsonOpt, QuietOpt, opt

__all__ = ["Outputs", "choice_dict", "exit_status", "finish", "output_options", "plan"]

#: Formats of --frontier (by suffix) and of --plot (matplotlib's, by suffix).
FRAME_SUFFIXES = (".csv", ".parquet")
PLOT_SUFFIXES = (".png", ".pdf", ".svg")

_FrontierOpt = Annotated[
    str | None,
    opt(
        "--frontier",
        "Also write the frontier (κ and loss at every point searched) to this .csv or "
        ".parquet file.",
        metavar="FILE.csv",
    ),
]
_PlotOpt = Annotated[
    str | None,
    opt(
        "--plot",
        "Also draw the frontier (κ against the loss) into this .png, .pdf or .svg file.",
        metavar="FILE.png",
    ),
]
_ReportOpt = Annotated[
    str | None,
    opt(
        "--report",
        "Also write an HTML report (report.html, report.md, frontier.png) into this new folder.",
        metavar="DIR",
    ),
]
_ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force", help="Replace an existing --frontier or --plot file, or --report folder."
    ),
]

#: The options :func:`output_options` adds: (parameter, annotation, default).
_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("json_", JsonOpt, False),
    ("frontier", _FrontierOpt, None),
    ("plot", _PlotOpt, None),
    ("report", _ReportOpt, None),
    ("force", _ForceOpt, False),
    ("quiet", QuietOpt, False),
)


@dataclass(frozen=True)
class Outputs:
    """The output options of a ``choose`` command."""

    json_: bool = False
    frontier: str | None = None
    plot: str | None = None
    report: str | None = None
    force: bool = False
    quiet: bool = False


def output_options(fn: Callable[..., None]) -> Callable[..., None]:
    """Give the command ``fn(..., out: Outputs)`` the options of :data:`_OPTIONS` (typer reads
    the wrapper's signature), collected into ``out``."""
    sig = inspect.signature(fn, eval_str=True)
    own = [p for p in sig.parameters.values() if p.name != "out"]
    names = [name for name, _, _ in _OPTIONS]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
        for name, ann, default in _OPTIONS
    ]

    @functools.wraps(fn)
    def command(**kwargs: Any) -> None:
        out = Outputs(**{name: kwargs.pop(name) for name in names})
        fn(**kwargs, out=out)

    command.__signature__ = sig.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
    command.__annotations__ = {
        **{p.name: p.annotation for p in own},
        **{name: ann for name, ann, _ in _OPTIONS},
        "return": None,
    }
    del command.__wrapped__  # typer must read the new signature, not fn's
    return command


# --------------------------------------------------------------------------------------------
# Destinations: checked before any work
# --------------------------------------------------------------------------------------------


def _check_file(option: str, text: str, suffixes: tuple[str, ...], force: bool) -> Path:
    """The destination of ``option``, or a ValidationError naming it and the value."""
    from persuasive.errors import ValidationError

    if text.strip() == "":
        raise ValidationError(f"{option} must name a file; got {text!r}")
    path = Path(text)
    if path.suffix.lower() not in suffixes:
        kinds = ", ".join(suffixes[:-1]) + " or " + suffixes[-1]
        raise ValidationError(f"{option} must name a {kinds} file; got {text!r}")
    if path.is_symlink():
        raise ValidationError(
            f"{option} '{path}' is a symbolic link (to '{os.readlink(path)}'); give the real "
            "file: it would be replaced by a new file"
        )
    if path.is_dir():
        raise ValidationError(f"{option} '{path}' is a folder; name a file inside it")
    if path.exists() and not force:
        raise ValidationError(
            f"{option} '{path}' exists; pass --force to replace it, or choose a new file"
        )
    parent = path.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise ValidationError(f"{option} '{path}': the folder '{parent}' {what}; create it first")
    return path


@dataclass
class Planned:
    """The checked destinations: files by role, and the report folder (or None)."""

    files: dict[str, Path] = field(default_factory=dict)
    report: Any = None


def plan(out: Outputs, inputs: tuple[Path, ...] = ()) -> Planned:
    """``--frontier``, ``--plot`` and ``--report`` checked before any work."""
    from persuasive.errors import ValidationError
    from persuasive.files.output import OutputFolder

    files: dict[str, Path] = {}
    if out.frontier is not None:
        files["frontier"] = _check_file("--frontier", out.frontier, FRAME_SUFFIXES, out.force)
    if out.plot is not None:
        files["plot"] = _check_file("--plot", out.plot, PLOT_SUFFIXES, out.force)
    if len(files) == 2 and files["frontier"].resolve() == files["plot"].resolve():
        raise ValidationError(f"--frontier and --plot name the same file; got {out.frontier!r}")
    for role, path in files.items():
        for inp in inputs:
            if inp.exists() and path.resolve() == inp.resolve():
                raise ValidationError(f"--{role} '{path}' is the input DATA; choose another file")
    folder = None
    if out.report is not None:
        folder = OutputFolder(
            out.report, force=out.force, inputs=inputs, option="--report", kind="choice"
        )
        dest = folder.check().resolve()
        for role, path in files.items():
            if dest in path.resolve().parents:
                raise ValidationError(
                    f"--{role} '{path}' is inside the --report folder '{out.report}', which is "
                    "replaced as a whole; write it elsewhere"
                )
    return Planned(files, folder)


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_frontier(choice: Any, path: Path, suffix: str) -> None:
    frame = choice.to_frame()
    if suffix == ".parquet":
        frame.write_parquet(path)
    else:
        frame.write_csv(path)


def _write_plot(choice: Any, path: Path, suffix: str) -> None:
    from persuasive.choose.report import frontier_figure

    fig = frontier_figure(choice, figsize=(6.4, 4.2))
    fig.savefig(path, format=suffix.lstrip("."), dpi=120)


def write_files(choice: Any, files: dict[str, Path]) -> None:
    """Write the frontier and its plot atomically: every file into a private temporary file
    beside its destination, then all renamed into place (signals held back meanwhile); on any
    error or signal the temporary files are removed and nothing is written."""
    import tempfile

    from persuasive.errors import ValidationError
    from persuasive.files.signals import handle_signals, signals_deferred

    writers = {"frontier": _write_frontier, "plot": _write_plot}
    if not files:
        return
    tmps: dict[str, Path] = {}
    with handle_signals():
        try:
            for role, path in files.items():
                try:
                    with signals_deferred():  # no signal between creating the file and owning it
                        fd, name = tempfile.mkstemp(
                            prefix=f".{path.name}.", suffix=".persuasive-tmp", dir=path.parent
                        )
                        os.close(fd)
                        tmps[role] = Path(name)
                except OSError as exc:
                    raise ValidationError(
                        f"--{role} '{path}': cannot write in '{path.parent}': {exc.strerror}"
                    ) from None
                writers[role](choice, tmps[role], path.suffix.lower())
            with signals_deferred():
                mode = 0o666 & ~_umask()
                for role, path in files.items():
                    os.chmod(tmps[role], mode)
                    os.replace(tmps[role], path)
                    del tmps[role]
        finally:
            for tmp in tmps.values():
                tmp.unlink(missing_ok=True)


def write_all(choice: Any, planned: Planned, setting: tuple[tuple[str, str], ...]) -> None:
    """The report folder (if asked) and the files; the folder is committed only after the
    files are written, so an error in either leaves neither."""
    if planned.report is None:
        write_files(choice, planned.files)
        return
    from persuasive.choose.report import report_content
    from persuasive.choose.report import write_files as write_report

    content = report_content(choice, setting)
    with planned.report as tmp:
        write_report(content, tmp)
        write_files(choice, planned.files)


# --------------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------------


def choice_dict(choice: Any) -> dict[str, Any]:
    """The Choice as plain data: best, candidates, frontier and what they are measured in."""
    from dataclasses import asdict

    return {
        "best": None if choice.best is None else asdict(choice.best),
        "candidates": [asdict(x) for x in choice.candidates],
        "frontier": [asdict(x) for x in choice.frontier],
        "target_kappa": choice.target_kappa,
        "delta": choice.delta,
        "utility": choice.utility,
        "exact_search": choice.exact_search,
        "notes": list(choice.notes),
        "statement": choice.statement(),
    }


def exit_status(choice: Any) -> int:
    """0 when the best certified mechanism releases something, 1 when it is to withhold."""
    best = choice.best
    return 0 if best is not None and best.family != "withhold" else 1


def _print_choice(choice: Any, rows: list[tuple[str, str]], paths: list[tuple[str, Any]]) -> None:
    from rich.table import Table
    from rich.text import Text

    c.print_pairs(rows, "Sender's choice")
    table = Table(title="Mechanisms searched", title_justify="left")
    for name in ("family", "parameter", "certified κ", "at δ", "loss", "certified"):
        table.add_column(name, justify="left" if name == "family" else "right")
    table.add_column("why", overflow="fold")
    best = choice.best
    for x in choice.candidates:
        mark = "yes (best)" if x is best else ("yes" if x.certified else "no")
        why = x.reason + (f" [withheld: {', '.join(x.withheld)}]" if x.withheld else "")
        table.add_row(
            x.family, c.num(x.parameter), c.num(x.kappa), c.num(x.delta), c.num(x.loss), mark,
            Text(why),
        )  # fmt: skip
    out = c.stdout()
    out.print(table)
    for note in choice.notes:
        out.print(f"note: {note}", markup=False)
    for role, path in paths:
        out.print(f"{role}: {path}", markup=False)
    out.print(choice.statement(), markup=False)


def finish(choice: Any, inputs: list[tuple[str, str]], planned: Planned, out: Outputs) -> None:
    """Write the outputs, print the choice (or its JSON) and exit with :func:`exit_status`."""
    write_all(choice, planned, tuple(inputs))
    paths: list[tuple[str, Any]] = list(planned.files.items())
    if planned.report is not None:
        paths.append(("report", planned.report.path / "report.html"))
    if out.json_:
        c.emit_json({**choice_dict(choice), "files": {k: str(p) for k, p in paths}})
    else:
        _print_choice(choice, [*inputs, *choice.setting], paths)
    raise typer.Exit(exit_status(choice))
