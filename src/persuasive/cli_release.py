"""The release commands: ``release table``, ``release mean``, ``verify`` and ``demo``.

A thin layer over :mod:`persuasive.release` and :mod:`persuasive.report` (registered on the main
app by :mod:`persuasive.cli`): parse options, call the library, print, set the exit status.

Exit status: 0 the stated guarantee holds (for ``verify``: the certificate checks out), 1 it
does not (``verify``: some field disagrees, each one printed), 2 bad input — one ``error: ...``
line on standard error, no traceback, and no output folder left behind (a release is written
into a temporary sibling folder and renamed onto ``--out`` only once complete).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from persuasive.errors import PersuasiveError, ValidationError

T = TypeVar("T")

release_app = typer.Typer(
    name="release",
    help="Release a count table (cell suppression, Prop 8) or a mean (Prop 7) with a certificate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DataArg = Annotated[
    Path, typer.Argument(help="The data: a .csv or .parquet file.", show_default=False)
]
OutOpt = Annotated[
    Path,
    typer.Option("--out", help="Output folder (must not exist or be empty).", show_default=False),
]
ReportOpt = Annotated[
    bool, typer.Option("--report", help="Also write the HTML/Markdown report into OUT/report/.")
]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace a non-empty output folder.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
TargetOpt = Annotated[
    float | None,
    typer.Option(
        "--target-kappa",
        help="Calibrate instead: choose the parameter that meets this κ.",
        show_default=False,
    ),
]

#: The progress steps of a release command.
RELEASE_STEPS = ("read", "validate", "release", "certify", "report")


# --------------------------------------------------------------------------------------------
# Plumbing: errors, progress, printing
# --------------------------------------------------------------------------------------------


#: The progress bar being shown, stopped before an error line is printed.
_LIVE: list[Progress] = []


def _fail(exc: BaseException | str) -> NoReturn:
    """Report bad input as one line on stderr and exit with status 2."""
    while _LIVE:
        _LIVE.pop().stop()
    message = " ".join(str(exc).split())
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _guard(call: Callable[[], T], context: str = "") -> T:
    """Run ``call``; map library errors (and unreadable data) to exit status 2."""
    import polars as pl

    try:
        return call()
    except PersuasiveError as exc:
        _fail(f"{context}{exc}")
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _fail(f"{context}{first}")


def _stdout() -> Console:
    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 200
    return console


@contextmanager
def _progress(steps: Sequence[str], quiet: bool) -> Iterator[Callable[[str], None]]:
    """A rich progress bar over named steps; ``step(name)`` marks the start of the next one."""
    if quiet:
        yield lambda _name: None
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description:<42}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    console = Console(stderr=True)
    # transient: the bar disappears when done; nothing at all when stderr is not a terminal
    with Progress(
        *columns, console=console, transient=True, disable=not console.is_terminal
    ) as progress:
        _LIVE.append(progress)
        task = progress.add_task(steps[0] if steps else "", total=len(steps))
        started = False

        def step(name: str) -> None:
            nonlocal started
            if started:
                progress.advance(task)
            started = True
            progress.update(task, description=name)

        try:
            yield step
            progress.update(task, completed=len(steps))
        finally:
            if progress in _LIVE:
                _LIVE.remove(progress)


def _num(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    x = float(x)
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _print_pairs(rows: list[tuple[str, str]], title: str) -> None:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, val in rows:
        table.add_row(key, Text(val))
    _stdout().print(table)


def _range(option: str, text: str | None) -> tuple[float, float] | None:
    """``"LO:HI"`` -> (LO, HI); a one-line error naming the option otherwise."""
    if text is None:
        return None
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        lo, hi = float(parts[0]), float(parts[1])
    except ValueError:
        _fail(f"{option} must be LO:HI, two numbers separated by a colon (e.g. 1:40); got {text!r}")
    return lo, hi


def _noise(text: str | None) -> tuple[str | None, float | None]:
    """``"gaussian:S"`` / ``"laplace:B"`` -> (kind, scale); plain ``"gaussian"`` -> no scale."""
    if text is None:
        return None, None
    kind, sep, value = text.partition(":")
    if kind not in ("gaussian", "laplace"):
        _fail(f"--noise must be gaussian:SIGMA or laplace:SCALE (e.g. gaussian:0.1); got {text!r}")
    if not sep:
        return kind, None
    try:
        scale = float(value)
    except ValueError:
        scale = math.nan
    if not math.isfinite(scale) or scale <= 0:
        _fail(
            f"--noise {kind}: the scale must be a positive number (e.g. {kind}:0.1); got {text!r}"
        )
    return kind, scale


def _exit_status(certificate: Any, target: float | None) -> int:
    kappa = float(certificate.kappa)
    ok = bool(certificate.holds) and math.isfinite(kappa)
    if target is not None:
        ok = ok and kappa <= target
    return 0 if ok else 1


def _write_and_report(
    out: Path,
    release: Any,
    *,
    table_format: str,
    report: bool,
    force: bool,
    step: Callable[[str], None],
    target_kappa: float | None = None,
) -> dict[str, Path]:
    from persuasive.release.demo import atomic_directory, write_release

    with atomic_directory(out, force=force) as tmp:
        step("certify")
        files = write_release(tmp, release, table_format=table_format, report=False)
        if report:
            step("report")
            from persuasive.report.html import write_report

            write_report(tmp / "report", release, target_kappa=target_kappa)
            files["report"] = tmp / "report" / "report.html"
        return {k: out / p.relative_to(tmp) for k, p in files.items()}


def _sentence(release: Any) -> str:
    from persuasive.release.demo import guarantee_sentence

    return guarantee_sentence(release)


def _release_output(
    release: Any, files: dict[str, Path], rows: list[tuple[str, str]], json_: bool
) -> None:
    cert = release.certificate
    if json_:
        from persuasive.report.certificate import certificate_document

        typer.echo(
            json.dumps(
                {
                    "kind": release.kind,
                    "files": {k: str(p) for k, p in files.items()},
                    "holds": bool(cert.holds),
                    "certificate": certificate_document(release),
                    "summary": _jsonable(release.summary()),
                    "guarantee": _sentence(release),
                },
                indent=2,
            )
        )
        return
    rows = [
        *rows,
        ("certified κ", _num(cert.kappa)),
        ("at δ", _num(cert.delta)),
        ("basis", str(cert.basis)),
        ("exact", "yes" if cert.exact else "no (upper bound)"),
        *[(role, str(p)) for role, p in files.items()],
        ("verdict", "holds" if _exit_status(cert, None) == 0 else "does NOT hold"),
    ]
    _print_pairs(rows, "Release")
    _stdout().print(Text(_sentence(release)))


def _jsonable(value: Any) -> Any:
    from persuasive.report.certificate import canonical

    try:
        return canonical(value)
    except ValidationError:
        return str(value)


# --------------------------------------------------------------------------------------------
# release table
# --------------------------------------------------------------------------------------------


def _receiver(
    alpha: float | None,
    poisson_mean: str | None,
    negbin_mean: str | None,
    negbin_size: float | None,
) -> Any:
    from persuasive.classes import receivers

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
        _fail(
            "state the Receiver with exactly one of --alpha A, --poisson-mean LO:HI or "
            f"--negbin-mean LO:HI (with --negbin-size S); got {', '.join(given) or 'none'}"
        )
    if (negbin_size is not None) != (negbin_mean is not None):
        _fail("--negbin-mean LO:HI and --negbin-size S go together; give both")
    if alpha is not None:
        return _guard(lambda: receivers.SmallCellReceiver(alpha), "--alpha: ")
    if poisson_mean is not None:
        lo, hi = _range("--poisson-mean", poisson_mean) or (0.0, 0.0)
        return _guard(lambda: receivers.PoissonReceiver(lo, hi), "--poisson-mean: ")
    lo, hi = _range("--negbin-mean", negbin_mean) or (0.0, 0.0)
    size = negbin_size
    return _guard(
        lambda: receivers.NegativeBinomialReceiver(lo, hi, size),  # type: ignore[arg-type]
        "--negbin-mean/size: ",
    )


@release_app.command("table")
def release_table_cmd(
    data: DataArg,
    out: OutOpt,
    keys: Annotated[
        str, typer.Option("--keys", help="Key columns, comma-separated.", show_default=False)
    ],
    count: Annotated[str, typer.Option("--count", help="The count column.", show_default=False)],
    h: Annotated[
        int | None,
        typer.Option("--h", help="Suppress cells below h (h >= 1).", show_default=False),
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option("--alpha", help="Receivers with P(cell < h) >= A.", show_default=False),
    ] = None,
    poisson_mean: Annotated[
        str | None,
        typer.Option(
            "--poisson-mean", help="Poisson cell priors, mean in LO:HI.", show_default=False
        ),
    ] = None,
    negbin_mean: Annotated[
        str | None,
        typer.Option(
            "--negbin-mean", help="Negative-binomial priors, mean in LO:HI.", show_default=False
        ),
    ] = None,
    negbin_size: Annotated[
        float | None,
        typer.Option("--negbin-size", help="Negative-binomial size (> 0).", show_default=False),
    ] = None,
    r: Annotated[
        int | None,
        typer.Option(
            "--r", help="Small-cell score threshold (default h; r <= h).", show_default=False
        ),
    ] = None,
    target_kappa: TargetOpt = None,
    format_: Annotated[
        str | None,
        typer.Option(
            "--format", help="csv or parquet (default: as the input).", show_default=False
        ),
    ] = None,
    report: ReportOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
    margins: Annotated[
        str | None,
        typer.Option(
            "--margins",
            help="Also publish these totals exactly: rows,cols[,total] or kept keys 'a+b,c'; "
            "--target-kappa is then the planner's per-cell target.",
            show_default=False,
        ),
    ] = None,
    objective: Annotated[
        str | None,
        typer.Option(
            "--objective",
            help="With --margins: minimise secondary 'count' or 'total'.",
            show_default=False,
        ),
    ] = None,
    bound: Annotated[
        str | None,
        typer.Option(
            "--bound",
            help="With --margins: plan against 'publication' (default) or 'table'.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Suppress the cells below h of a count table and certify it (Prop 8).

    With --margins the totals are published too (docs/margins_release.md). Exit 0 when the
    guarantee holds, 1 when it does not, 2 on bad input.
    """
    if margins is not None or objective is not None or bound is not None:
        from persuasive.cli_margins import run_margins

        run_margins(
            data,
            out,
            keys=keys,
            count=count,
            h=h,
            margins=margins,
            objective=objective,
            bound=bound,
            receiver_opts=(alpha, poisson_mean, negbin_mean, negbin_size),
            r=r,
            target_kappa=target_kappa,
            format_=format_,
            report=report,
            force=force,
            quiet=quiet,
            json_=json_,
        )
    from persuasive.release import calibrate, tables
    from persuasive.release.data import scan_table, table_format
    from persuasive.release.demo import check_output_dir

    _guard(lambda: check_output_dir(out, force=force))
    if (h is None) == (target_kappa is None):
        _fail("give exactly one of --h H (the threshold) or --target-kappa K (calibrate h)")
    key_list = [k.strip() for k in keys.split(",") if k.strip()]
    if not key_list:
        _fail(f"--keys must name at least one key column, comma-separated; got {keys!r}")
    fmt = format_ or _guard(lambda: table_format(data))
    if fmt not in ("csv", "parquet"):
        _fail(f"--format must be csv or parquet; got {fmt!r}")
    receiver = _receiver(alpha, poisson_mean, negbin_mean, negbin_size)

    with _progress(RELEASE_STEPS, quiet or json_) as step:
        step("read")
        _guard(lambda: scan_table(data))  # exists and is readable; release_table reads it
        step("validate")
        if target_kappa is not None:
            threshold = _guard(
                lambda: calibrate.calibrate_threshold(receiver, target_kappa, r=r),
                "--target-kappa: ",
            )
        else:
            assert h is not None
            threshold = h
        step("release")
        release = _guard(
            lambda: tables.release_table(
                data, keys=key_list, count=count, h=threshold, receiver=receiver, r=r
            )
        )
        files = _guard(
            lambda: _write_and_report(
                out,
                release,
                table_format=fmt,
                report=report,
                force=force,
                step=step,
                target_kappa=target_kappa,
            )
        )
    summary = release.summary()
    rows = [
        ("input", str(data)),
        ("receiver", json.dumps(receiver.describe())),
        (
            "threshold h",
            f"{threshold}" + (" (calibrated)" if target_kappa is not None else ""),
        ),
        ("cells", f"{summary.get('n_cells', '?')} ({summary.get('n_suppressed', '?')} suppressed)"),
    ]
    if target_kappa is not None and not json_:
        _stdout().print(f"calibrated: the smallest h with κ ≤ {target_kappa:g} is h = {threshold}")
    _release_output(release, files, rows, json_)
    raise typer.Exit(_exit_status(release.certificate, target_kappa))


# --------------------------------------------------------------------------------------------
# release mean
# --------------------------------------------------------------------------------------------


@release_app.command("mean")
def release_mean_cmd(
    data: DataArg,
    out: OutOpt,
    column: Annotated[
        str, typer.Option("--column", help="The numeric column.", show_default=False)
    ],
    r1: Annotated[
        float | None,
        typer.Option(
            "--r1", help="Receivers: squared prior-mean error bound r1 > 0.", show_default=False
        ),
    ] = None,
    r2: Annotated[
        float | None,
        typer.Option("--r2", help="Receivers: correlation bound r2 > 1.", show_default=False),
    ] = None,
    group: Annotated[
        str | None,
        typer.Option(
            "--group", help="Release one mean per value of this column.", show_default=False
        ),
    ] = None,
    noise: Annotated[
        str | None,
        typer.Option(
            "--noise",
            help="gaussian:SIGMA (or laplace:SCALE) added to the mean; plain 'gaussian' with "
            "--target-kappa calibrates SIGMA.",
            show_default=False,
        ),
    ] = None,
    max_mean_sd: Annotated[
        float | None,
        typer.Option(
            "--max-mean-sd", help="Receivers: prior sd of the mean at most V.", show_default=False
        ),
    ] = None,
    delta: Annotated[
        float,
        typer.Option("--delta", help="Failure probability δ (needed > 0 with noise)."),
    ] = 0.0,
    target_kappa: TargetOpt = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed of the noise.", min=0, show_default=False)
    ] = None,
    format_: Annotated[
        str,
        typer.Option("--format", help="Format of the group means: csv or parquet."),
    ] = "csv",
    report: ReportOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Release the mean of a column (one per group with --group) and certify it (Prop 7).

    With --target-kappa: the largest r1 meeting κ (leave out --r1), or with --r1 and
    --noise gaussian the smallest noise sd. Exit 0 when the guarantee holds, 1 when it does
    not, 2 on bad input.
    """
    from persuasive.release import means
    from persuasive.release.data import require_columns, scan_table
    from persuasive.release.demo import check_output_dir

    _guard(lambda: check_output_dir(out, force=force))
    if format_ not in ("csv", "parquet"):
        _fail(f"--format must be csv or parquet; got {format_!r}")
    if r2 is None:
        _fail("--r2 is required: the Receivers' correlation bound r2 > 1 (e.g. --r2 4)")
    kind, scale = _noise(noise)
    if target_kappa is None and (r1 is None or (kind is not None and scale is None)):
        _fail(
            "give --r1 (and the noise scale, e.g. --noise gaussian:0.1), or --target-kappa K "
            "to calibrate the one left out"
        )
    if target_kappa is not None and r1 is not None and (kind is None or scale is not None):
        _fail(
            "--target-kappa calibrates r1 (leave out --r1) or, with --r1, the noise sd "
            "(--noise gaussian without a scale); got both --r1 and a fixed noise"
        )

    with _progress(RELEASE_STEPS, quiet or json_) as step:
        step("read")
        frame = _guard(lambda: scan_table(data))
        step("validate")
        _guard(lambda: require_columns(frame, column=column, group=group))
        calibrated = ""
        if target_kappa is not None:
            target = target_kappa
            if r1 is None:
                noise_arg = None if kind is None else (kind, scale)
                r1 = _guard(
                    lambda: means.calibrate_mean(
                        target, r2=r2, noise=noise_arg, max_mean_sd=max_mean_sd, delta=delta
                    ),
                    "--target-kappa: ",
                )
                calibrated = f"the largest r1 with κ ≤ {target:g} is r1 = {r1:.6g}"
            else:
                r1_fixed = r1
                scale = _guard(
                    lambda: means.calibrate_mean(
                        target,
                        r2=r2,
                        r1=r1_fixed,
                        noise=kind,
                        max_mean_sd=max_mean_sd,
                        delta=delta,
                    ),
                    "--target-kappa: ",
                )
                calibrated = f"the smallest {kind} noise sd with κ ≤ {target:g} is {scale:.6g}"
        assert r1 is not None
        params: dict[str, Any] = {
            "r1": r1,
            "r2": r2,
            "noise": None if kind is None else (kind, scale),
            "max_mean_sd": max_mean_sd,
            "delta": delta,
            "rng": seed,
        }
        step("release")
        release: Any
        if group is None:
            values = _guard(lambda: frame.select(column).collect().to_series())
            if not values.dtype.is_numeric():
                _fail(
                    f"--column {column!r} is {values.dtype}, not numbers; choose a numeric column"
                )
            release = _guard(
                lambda: means.release_mean(values.to_numpy(), **params), f"--column {column!r}: "
            )
        else:
            release = _guard(
                lambda: means.release_group_means(frame, value=column, group=group, **params)
            )
        files = _guard(
            lambda: _write_and_report(
                out,
                release,
                table_format=format_,
                report=report,
                force=force,
                step=step,
                target_kappa=target_kappa,
            )
        )
    rows = [
        ("input", str(data)),
        ("column", column + (f", one mean per {group}" if group else "")),
        ("Receivers", f"Gaussian class r1 = {_num(r1)}, r2 = {_num(r2)}"),
        ("noise", "none (exact)" if kind is None else f"{kind}, scale {_num(scale)}"),
    ]
    if calibrated and not json_:
        _stdout().print(f"calibrated: {calibrated}")
    _release_output(release, files, rows, json_)
    raise typer.Exit(_exit_status(release.certificate, target_kappa))


# --------------------------------------------------------------------------------------------
# verify, demo
# --------------------------------------------------------------------------------------------


def verify(
    certificate: Annotated[
        Path, typer.Argument(help="A certificate.json written by a release.", show_default=False)
    ],
    json_: JsonOpt = False,
    published: Annotated[
        list[Path] | None,
        typer.Option(
            "--published",
            help="A margins certificate: the release folder or its published files.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Re-check a certificate from its spec alone; exit 0 if it holds as stated, 1 if not.

    A margins certificate is recomputed from the published table: --published DIR.
    """
    from persuasive.report.verify import verify_certificate

    result = _guard(lambda: verify_certificate(certificate, published=published or None))
    if json_:
        rec = result.recomputed
        typer.echo(
            json.dumps(
                {
                    "certificate": str(certificate),
                    "ok": bool(result.ok),
                    "mismatches": list(result.mismatches),
                    "recomputed": None if rec is None else rec.to_dict(),
                },
                indent=2,
            )
        )
    elif result.ok:
        _stdout().print(Text(result.explain()))
    else:
        console = _stdout()
        console.print(Text(f"NOT verified: {certificate}"))
        for m in result.mismatches:
            console.print(Text(f"mismatch: {m}"))
    raise typer.Exit(0 if result.ok else 1)


def demo(
    out_dir: Annotated[
        Path,
        typer.Argument(help="Output folder (replaced if it holds a previous demo)."),
    ] = Path("persuasive-demo"),
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Release real public data (bundled with statsmodels) end to end, then verify it.

    Writes the released table and means, their certificates and reports into OUT_DIR; exit 0
    when every release holds and verifies (a documented refusal counts), 1 otherwise.
    """
    from persuasive.release.demo import DEMO_STEPS, run_demo

    with _progress(DEMO_STEPS, quiet or json_) as step:
        result = _guard(lambda: run_demo(out_dir, force=force, on_step=step))
    if json_:
        typer.echo(json.dumps(result.to_dict(), indent=2))
        raise typer.Exit(0 if result.ok else 1)
    console = _stdout()
    console.print(f"[bold]persuasive demo[/bold]: everything is in {escape(str(out_dir))}/\n")
    for item in result.items:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        if item.refusal is not None:
            grid.add_row("refused", Text(f"nothing released: {item.refusal}"))
        else:
            for role, path in item.files.items():
                grid.add_row(role, Text(str(path)))
            s = item.summary
            if "n_cells" in s:
                grid.add_row("cells", f"{s['n_cells']}, {s.get('n_suppressed', '?')} suppressed")
            grid.add_row("κ", _num(item.kappa))
            grid.add_row("guarantee", Text(item.sentence))
            verdict = "verified" if item.verified else "NOT verified: " + "; ".join(item.mismatches)
            grid.add_row("verify", Text(verdict))
            grid.add_row("command", Text(item.command))
        console.print(Text(item.title, style="bold underline"))
        console.print(grid)
        console.print()
    for note in result.notes:
        console.print(Text(note))
    done = sum(i.refusal is None and i.ok for i in result.items)
    refused = sum(i.refusal is not None for i in result.items)
    console.print(
        f"{done} releases written and verified, {refused} refused with a reason"
        + ("." if result.ok else "; SOME RELEASE FAILED.")
    )
    raise typer.Exit(0 if result.ok else 1)


from persuasive import cli_linear as _cli_linear  # noqa: E402, F401  (registers "release linear")
