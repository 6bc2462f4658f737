"""``persuasive release table|mean|linear``: a thin layer over the release pipeline.

Each command checks its options (one ``error:`` line, exit 2, before any work), builds the
release with the library, and writes it with :func:`persuasive.release.pipeline.publish`, which
owns the output folder, the certificate and the final verification. Exit status 0 when the
certificate claims a guarantee that holds (and meets ``--target-kappa``), 1 otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from persuasive.cli import _common as c
from persuasive.cli._common import (
    DataArg,
    ForceOpt,
    FormatOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    ReportOpt,
    SeedOpt,
    checked,
)

app = typer.Typer(
    name="release",
    help="Release a count table (Prop 8), a mean (Prop 7) or linear statistics, with a "
    "certificate anyone can verify.",
    no_args_is_help=True,
    add_completion=False,
)

TargetOpt = Annotated[
    float | None,
    typer.Option(
        "--target-kappa",
        help="Calibrate: choose the parameter that meets this κ (a real number >= 0).",
        show_default=False,
    ),
]


def _folder(out: str, force: bool, data: Path, kind: str) -> Any:
    from persuasive.files.output import OutputFolder

    folder = OutputFolder(out, force=force, inputs=[data], kind=kind)
    folder.check()
    return folder


def _finish(
    release: Any,
    folder: Any,
    rows: list[tuple[str, str]],
    *,
    fmt: str,
    report: bool,
    target: float | None,
    json_: bool,
    step: Any,
    notes: list[str],
    extra: Any = None,
) -> int:
    from persuasive.release.pipeline import exit_status, publish

    outcome = publish(
        release,
        folder,
        table_format=fmt,
        report=report,
        target_kappa=target,
        on_step=step,
        notes=notes,
    )
    status = exit_status(outcome)
    if json_:
        c.emit_json({**outcome.to_dict(), **(extra or {})})
        return status
    g = outcome.document["guarantee"]
    for note in notes:
        c.stdout().print(note, markup=False)
    c.print_pairs(
        [
            *rows,
            ("certified κ", c.num(g["kappa"])),
            ("at δ", c.num(g["delta"])),
            ("basis", str(g["basis"])),
            ("exact", "yes" if g["exact"] else "no (upper bound)"),
            *[(role, str(p)) for role, p in outcome.files.items()],
            ("verdict", "holds" if status == 0 else "does NOT hold"),
        ],
        "Release",
    )
    c.stdout().print(outcome.statement, markup=False)
    return status


# --------------------------------------------------------------------------------------------
# release table
# --------------------------------------------------------------------------------------------


@app.command("table")
def table_cmd(
    data: DataArg,
    out: OutOpt,
    keys: Annotated[
        str, typer.Option("--keys", help="Key columns, comma-separated.", show_default=False)
    ],
    count: Annotated[str, typer.Option("--count", help="The count column.", show_default=False)],
    h: Annotated[
        int | None,
        typer.Option(
            "--h", help="Suppress cells below h: an integer in [2, 10^6].", show_default=False
        ),
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option(
            "--alpha",
            help="Receivers: every prior with P(cell < h) >= A, A in (0, 1].",
            show_default=False,
        ),
    ] = None,
    poisson_mean: Annotated[
        str | None,
        typer.Option(
            "--poisson-mean",
            help="Receivers: Poisson cell priors, mean in LO:HI.",
            show_default=False,
        ),
    ] = None,
    negbin_mean: Annotated[
        str | None,
        typer.Option(
            "--negbin-mean",
            help="Receivers: negative-binomial priors, mean in LO:HI.",
            show_default=False,
        ),
    ] = None,
    negbin_size: Annotated[
        float | None,
        typer.Option("--negbin-size", help="Negative-binomial size (> 0).", show_default=False),
    ] = None,
    r: Annotated[
        int | None,
        typer.Option(
            "--r", help="Small-cell score threshold: 2 <= r <= h (default h).", show_default=False
        ),
    ] = None,
    target_kappa: TargetOpt = None,
    format_: FormatOpt = None,
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
    guarantee holds, 1 when it does not, 2 on bad input, 3 on an internal error.
    """
    from persuasive.errors import ValidationError
    from persuasive.release.pipeline import table_format_of

    folder = _folder(out, force, data, "margins" if margins else "table")
    ks = c.key_list(keys)
    fmt = table_format_of(data, format_)
    h, r, target_kappa = (
        checked("--h", h),
        checked("--r", r),
        checked("--target-kappa", target_kappa),
    )
    receiver = c.receiver(alpha, poisson_mean, negbin_mean, negbin_size)
    if margins is not None or objective is not None or bound is not None:
        from persuasive.cli.margins import run_margins

        raise typer.Exit(
            run_margins(
                data,
                folder,
                keys=ks,
                count=count,
                h=h,
                r=r,
                receiver=receiver,
                margins=margins,
                objective=objective,
                bound=bound,
                target_kappa=target_kappa,
                fmt=fmt,
                report=report,
                quiet=quiet,
                json_=json_,
            )
        )
    if (h is None) == (target_kappa is None):
        raise ValidationError(
            "give exactly one of --h H (the threshold) or --target-kappa K (calibrate h)"
        )
    from persuasive.release.calibrate import calibrate_threshold
    from persuasive.release.tables import release_table

    notes: list[str] = []
    with c.progress(
        ("read", "validate", "release", "write", "certify", "report", "verify"), quiet or json_
    ) as step:
        if target_kappa is not None:
            h = calibrate_threshold(receiver, target_kappa, r=r)
            notes.append(f"calibrated: the smallest h with κ ≤ {target_kappa:g} is h = {h}")
        step("read")
        release = release_table(
            data, keys=ks, count=count, h=h, receiver=receiver, r=r, target_kappa=target_kappa
        )
        s = release.summary()
        rows = [
            ("input", str(data)),
            ("receiver", str(receiver.describe())),
            ("threshold h", f"{h}" + (" (calibrated)" if target_kappa is not None else "")),
            ("cells", f"{s['n_cells']} ({s['n_suppressed']} suppressed)"),
        ]
        status = _finish(
            release,
            folder,
            rows,
            fmt=fmt,
            report=report,
            target=target_kappa,
            json_=json_,
            step=step,
            notes=notes,
            extra={"summary": s},
        )
    raise typer.Exit(status)


# --------------------------------------------------------------------------------------------
# release mean
# --------------------------------------------------------------------------------------------


def _noise(text: str | None) -> tuple[str | None, float | None]:
    """``"gaussian:S"`` / ``"laplace:B"`` -> (kind, scale); plain ``"gaussian"`` -> no scale."""
    from persuasive.errors import ValidationError

    if text is None:
        return None, None
    kind, sep, value = text.partition(":")
    if kind not in ("gaussian", "laplace"):
        raise ValidationError(
            f"--noise must be gaussian:SIGMA or laplace:SCALE (e.g. gaussian:0.1); got {text!r}"
        )
    if not sep:
        return kind, None
    try:
        scale = float(value)
    except ValueError:
        raise ValidationError(
            f"--noise {kind}: the scale must be a number (e.g. {kind}:0.1); got {text!r}"
        ) from None
    from persuasive import _domains as dm

    return kind, dm.check("noise_scale", scale, name=f"--noise {kind}: the scale")


@app.command("mean")
def mean_cmd(
    data: DataArg,
    out: OutOpt,
    column: Annotated[
        str, typer.Option("--column", help="The numeric column.", show_default=False)
    ],
    r1: Annotated[
        float | None,
        typer.Option("--r1", help="Receivers: prior-mean error bound r1 > 0.", show_default=False),
    ] = None,
    r2: Annotated[
        float | None,
        typer.Option("--r2", help="Receivers: correlation bound r2 > 1.", show_default=False),
    ] = None,
    group: Annotated[
        str | None,
        typer.Option("--group", help="One mean per value of this column.", show_default=False),
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
            "--max-mean-sd",
            help="Receivers: prior sd of the mean at most V (> 0).",
            show_default=False,
        ),
    ] = None,
    delta: Annotated[
        float, typer.Option("--delta", help="Failure probability δ in [0, 1) (> 0 with noise).")
    ] = 0.0,
    target_kappa: TargetOpt = None,
    seed: SeedOpt = None,
    format_: Annotated[
        str, typer.Option("--format", help="Format of the group means: csv or parquet.")
    ] = "csv",
    report: ReportOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Release the mean of a column (one per group with --group) and certify it (Prop 7).

    With --target-kappa: the largest r1 meeting κ (leave out --r1), or with --r1 and
    --noise gaussian the smallest noise sd. Exit 0 when the guarantee holds, 1 when it does
    not, 2 on bad input, 3 on an internal error.
    """
    from persuasive.errors import ValidationError
    from persuasive.release import means
    from persuasive.release.pipeline import table_format_of

    folder = _folder(out, force, data, "mean")
    fmt = table_format_of(None, format_)
    if r2 is None:
        raise ValidationError(
            "--r2 is required: the Receivers' correlation bound r2 > 1 (e.g. --r2 4)"
        )
    r1, r2 = checked("--r1", r1), checked("--r2", r2)
    delta, target_kappa = checked("--delta", delta), checked("--target-kappa", target_kappa)
    max_mean_sd, seed = checked("--max-mean-sd", max_mean_sd), checked("--seed", seed)
    kind, scale = _noise(noise)
    if target_kappa is None and (r1 is None or (kind is not None and scale is None)):
        raise ValidationError(
            "give --r1 (and the noise scale, e.g. --noise gaussian:0.1), or --target-kappa K "
            "to calibrate the one left out"
        )
    if target_kappa is not None and r1 is not None and (kind is None or scale is not None):
        raise ValidationError(
            "--target-kappa calibrates r1 (leave out --r1) or, with --r1, the noise sd "
            "(--noise gaussian without a scale); got both --r1 and a fixed noise"
        )
    notes: list[str] = []
    with c.progress(
        ("read", "validate", "release", "write", "certify", "report", "verify"), quiet or json_
    ) as step:
        if target_kappa is not None:
            if r1 is None:
                noise_arg = None if kind is None else (kind, scale)
                r1 = means.calibrate_mean(
                    target_kappa, r2=r2, noise=noise_arg, max_mean_sd=max_mean_sd, delta=delta
                )
                notes.append(
                    f"calibrated: the largest r1 with κ ≤ {target_kappa:g} is r1 = {r1:.6g}"
                )
            else:
                scale = means.calibrate_mean(
                    target_kappa, r2=r2, r1=r1, noise=kind, max_mean_sd=max_mean_sd, delta=delta
                )
                notes.append(
                    f"calibrated: the smallest {kind} noise sd with κ ≤ {target_kappa:g} is "
                    f"{scale:.6g}"
                )
        params: dict[str, Any] = {
            "r1": r1,
            "r2": r2,
            "noise": None if kind is None else (kind, scale),
            "max_mean_sd": max_mean_sd,
            "delta": delta,
            "rng": seed,
            "target_kappa": target_kappa,
        }
        step("read")
        release: Any
        if group is None:
            frame = means.read_values(data, column)
            release = means.release_mean(
                frame.get_column(column).to_numpy(), column=column, **params
            )
        else:
            release = means.release_group_means(data, value=column, group=group, **params)
        rows = [
            ("input", str(data)),
            ("column", column + (f", one mean per {group}" if group else "")),
            ("Receivers", f"Gaussian class r1 = {c.num(r1)}, r2 = {c.num(r2)}"),
            ("noise", "none (exact)" if kind is None else f"{kind}, scale {c.num(scale)}"),
        ]
        status = _finish(
            release,
            folder,
            rows,
            fmt=fmt,
            report=report,
            target=target_kappa,
            json_=json_,
            step=step,
            notes=notes,
        )
    raise typer.Exit(status)


from persuasive.cli import linear as _linear  # noqa: E402, F401  (registers "release linear")
