"""``persuasive choose``: the Sender's choice (eq. 5, Bon et al. 2026) on the command line.

* ``choose mean`` — the release of a mean (exact, Gaussian noise, withhold) of least expected
  squared error whose certified κ meets ``--target-kappa`` (:func:`persuasive.choose
  .choose_mean`);
* ``choose table DATA`` — the suppression threshold of a count table of least loss (cells, or
  people, suppressed) meeting the target (:func:`persuasive.choose.choose_table`).

Both print the families searched (certified or not, and why), the choice in one sentence, and
optionally write the frontier (``--frontier FILE.csv``) and its plot (``--plot FILE.png``).
The files are checked before any work and written atomically (a private temporary file in the
destination's folder, renamed into place; nothing is left behind on an error or a signal).

Exit status 0 when a certified mechanism other than withholding is the best, 1 when the best
certified choice is to release nothing, 2 on bad input (one ``error:`` line, nothing written),
3 on an internal error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from persuasive.cli import _common as c
from persuasive.cli._common import DataArg, JsonOpt, QuietOpt, opt

__all__ = ["app"]

app = typer.Typer(
    name="choose",
    help="Choose the certified mechanism of least utility loss for a target κ (eq. 5): the "
    "release of a mean, or the suppression threshold of a count table.",
    no_args_is_help=True,
    add_completion=False,
)

#: Formats of --frontier (by suffix) and of --plot (matplotlib's, by suffix).
FRAME_SUFFIXES = (".csv", ".parquet")
PLOT_SUFFIXES = (".png", ".pdf", ".svg")

_TargetOpt = Annotated[
    float, opt("--target-kappa", "The κ the mechanism must meet (a real number >= 0).")
]
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
_ForceOpt = Annotated[
    bool, typer.Option("--force", help="Replace an existing --frontier or --plot file.")
]


# --------------------------------------------------------------------------------------------
# Output files: checked before any work, written atomically
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


def output_files(
    frontier: str | None,
    plot: str | None,
    force: bool,
    inputs: tuple[Path, ...] = (),
) -> dict[str, Path]:
    """``--frontier`` and ``--plot`` checked (before any work): {"frontier": path, "plot":
    path} for those given."""
    from persuasive.errors import ValidationError

    files: dict[str, Path] = {}
    if frontier is not None:
        files["frontier"] = _check_file("--frontier", frontier, FRAME_SUFFIXES, force)
    if plot is not None:
        files["plot"] = _check_file("--plot", plot, PLOT_SUFFIXES, force)
    if len(files) == 2 and files["frontier"].resolve() == files["plot"].resolve():
        raise ValidationError(f"--frontier and --plot name the same file; got {frontier!r}")
    for role, path in files.items():
        for inp in inputs:
            if inp.exists() and path.resolve() == inp.resolve():
                raise ValidationError(f"--{role} '{path}' is the input DATA; choose another file")
    return files


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
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.subplots()
    choice.plot(ax)
    losses = [x.loss for x in choice.frontier if 0.0 < x.loss < float("inf")]
    if losses and max(losses) > 100.0 * min(losses):  # errors over decades: a readable axis
        ax.set_xscale("symlog", linthresh=min(losses))
    ax.set_title(f"The Sender's choice: target κ ≤ {choice.target_kappa:g}")
    fig.tight_layout()
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


def _print_choice(choice: Any, rows: list[tuple[str, str]], files: dict[str, Path]) -> None:
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
        table.add_row(
            x.family,
            c.num(x.parameter),
            c.num(x.kappa),
            c.num(x.delta),
            c.num(x.loss),
            mark,
            Text(x.reason),
        )
    out = c.stdout()
    out.print(table)
    for role, path in files.items():
        out.print(f"{role}: {path}", markup=False)
    out.print(choice.statement(), markup=False)


def _finish(choice: Any, rows: list[tuple[str, str]], files: dict[str, Path], json_: bool) -> None:
    write_files(choice, files)
    if json_:
        c.emit_json({**choice_dict(choice), "files": {k: str(p) for k, p in files.items()}})
    else:
        _print_choice(choice, rows, files)
    raise typer.Exit(exit_status(choice))


# --------------------------------------------------------------------------------------------
# choose mean
# --------------------------------------------------------------------------------------------


@app.command("mean")
def mean_cmd(
    r1: Annotated[float, opt("--r1", "Receivers: squared prior-mean error bound r1 > 0.")],
    r2: Annotated[float, opt("--r2", "Receivers: correlation bound r2 > 1.")],
    target_kappa: _TargetOpt,
    delta: Annotated[
        float,
        typer.Option("--delta", help="Failure probability δ in [0, 1) allowed to noisy releases."),
    ] = 0.05,
    max_mean_sd: Annotated[
        float | None, opt("--max-mean-sd", "Receivers: prior sd of the mean at most V (> 0).")
    ] = None,
    max_person_error: Annotated[
        float | None,
        opt(
            "--max-person-error",
            "Receivers: prior error about any one person at most R0 prior sds (> 0; needs "
            "--max-mean-sd).",
            metavar="R0",
        ),
    ] = None,
    json_: JsonOpt = False,
    frontier: _FrontierOpt = None,
    plot: _PlotOpt = None,
    force: _ForceOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Choose how to release a mean: exact, with Gaussian noise (the smallest sd meeting the
    target) or not at all, by least expected squared error among the certified (Prop 7; with
    --max-person-error the class of docs/release_means.md (e)).

    Exit 0 when the mean (exact or noisy) is released, 1 when only withholding meets the
    target, 2 on bad input, 3 on an internal error.
    """
    from persuasive import _domains as dm
    from persuasive.choose import choose_mean
    from persuasive.errors import ValidationError

    o = c.check_all(r1=r1, r2=r2, delta=delta, target_kappa=target_kappa, max_mean_sd=max_mean_sd)
    r0 = None
    if max_person_error is not None:
        r0 = dm.check("max_mean_sd", max_person_error, name="--max-person-error")
        if o["max_mean_sd"] is None:
            raise ValidationError(
                "--max-person-error needs --max-mean-sd V (a bound on the Receiver's prior sd "
                f"of the mean); got --max-person-error {r0:g} without --max-mean-sd"
            )
    files = output_files(frontier, plot, force)
    with c.progress(["search"], quiet or json_) as step:
        step("searching the releases of the mean ...")
        choice = choose_mean(
            r1=o["r1"],
            r2=o["r2"],
            target_kappa=o["target_kappa"],
            delta=o["delta"],
            max_mean_sd=o["max_mean_sd"],
            max_person_error=r0,
        )
    receivers = f"Gaussian class r1 = {c.num(o['r1'])}, r2 = {c.num(o['r2'])}"
    if o["max_mean_sd"] is not None:
        receivers += f", prior sd of the mean <= {c.num(o['max_mean_sd'])}"
    if r0 is not None:
        receivers += f", error about any one person <= {c.num(r0)} prior sds"
    rows = [
        ("Receivers", receivers),
        ("target", f"κ <= {c.num(o['target_kappa'])} at δ <= {c.num(o['delta'])}"),
        ("loss", choice.utility),
    ]
    _finish(choice, rows, files, json_)


# --------------------------------------------------------------------------------------------
# choose table
# --------------------------------------------------------------------------------------------


@app.command("table")
def table_cmd(
    data: DataArg,
    keys: Annotated[str, opt("--keys", "Key columns, comma-separated.")],
    count: Annotated[str, opt("--count", "The count column.")],
    target_kappa: _TargetOpt,
    alpha: c.AlphaOpt = None,
    poisson_mean: c.PoissonMeanOpt = None,
    negbin_mean: c.NegbinMeanOpt = None,
    negbin_size: c.NegbinSizeOpt = None,
    objective: Annotated[
        str | None,
        opt(
            "--objective",
            "What the threshold minimises: 'count', the cells suppressed (default), or "
            "'total', their total count.",
        ),
    ] = None,
    json_: JsonOpt = False,
    frontier: _FrontierOpt = None,
    plot: _PlotOpt = None,
    force: _ForceOpt = False,
    quiet: QuietOpt = False,
    separator: c.SeparatorOpt = None,
    encoding: c.EncodingOpt = None,
) -> None:
    """Choose the suppression threshold h of a count table (Prop 8): the smallest h whose
    certified κ meets the target, which suppresses least.

    Exit 0 when a threshold meets the target, 1 when only withholding the table does, 2 on
    bad input, 3 on an internal error.
    """
    from persuasive.choose import choose_table
    from persuasive.choose.table import OBJECTIVES
    from persuasive.errors import ValidationError

    source = c.data_file(data, separator, encoding)
    key_cols = c.key_list(keys)
    target = c.checked("--target-kappa", target_kappa)
    receiver = c.receiver(alpha, poisson_mean, negbin_mean, negbin_size)
    if objective not in (None, *OBJECTIVES):
        raise ValidationError(f"--objective must be {' or '.join(OBJECTIVES)}; got {objective!r}")
    obj = objective or OBJECTIVES[0]
    files = output_files(frontier, plot, force, inputs=(data,))
    with c.progress(["search"], quiet or json_) as step:
        step("searching the thresholds ...")
        choice = choose_table(
            source, keys=key_cols, count=count, receiver=receiver, target_kappa=target,
            objective=obj,
        )  # fmt: skip
    rows = [
        ("input", c.shown(data)),
        ("Receivers", c.receiver_words(receiver, None)),
        ("target", f"κ <= {c.num(target)}"),
        ("loss", choice.utility),
    ]
    _finish(choice, rows, files, json_)
