"""``persuasive release mean``: the mean of a column, or one mean per group (Prop 7).

Exit status 0 when the certificate claims a guarantee that holds (and meets ``--target-kappa``),
1 otherwise, 2 bad input, 3 an internal error.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from persuasive._wording import prior_sds
from persuasive.cli import _common as c
from persuasive.cli._common import (
    DataArg,
    ForceOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    R1Opt,
    R2Opt,
    ReportOpt,
    SeedOpt,
    TargetOpt,
    check_all,
    opt,
)
from persuasive.cli.release import Output, app


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


def _person_error(r0: float | None, kind: str | None, v: float | None) -> float | None:
    """``--max-person-error`` checked: > 0, and with Gaussian noise only beside --max-mean-sd."""
    from persuasive import _domains as dm
    from persuasive.errors import ValidationError

    if r0 is None:
        return None
    r0 = dm.check("max_mean_sd", r0, name="--max-person-error")
    if kind == "gaussian" and v is None:
        raise ValidationError(
            f"--max-person-error {r0:g} with --noise gaussian needs --max-mean-sd V (a bound on "
            "the Receiver's prior sd of the mean): without it noise cannot certify below the "
            "exact mean"
        )
    return r0


def _receivers(r1: float, r2: float, v: float | None, r0: float | None) -> str:
    """The Receiver class of the summary in plain words."""
    text = f"Gaussian class r1 = {c.num(r1)}, r2 = {c.num(r2)}"
    if r0 is None:
        return text + ("" if v is None else f", prior sd of the mean at most {c.num(v)}")
    text += f"; Receivers who are at most {prior_sds(r0, c.num(r0))} wrong about any one person"
    return text + ("" if v is None else f" and whose prior sd of the mean is at most {c.num(v)}")


@app.command("mean")
def mean_cmd(
    data: DataArg,
    out: OutOpt,
    column: Annotated[str, opt("--column", "The numeric column.")],
    r1: R1Opt = None,
    r2: R2Opt = None,
    group: Annotated[str | None, opt("--group", "One mean per value of this column.")] = None,
    noise: Annotated[
        str | None,
        opt(
            "--noise",
            "gaussian:SIGMA (or laplace:SCALE) added to the mean; plain 'gaussian' with "
            "--target-kappa calibrates SIGMA.",
        ),
    ] = None,
    max_mean_sd: Annotated[
        float | None, opt("--max-mean-sd", "Receivers: prior sd of the mean at most V (> 0).")
    ] = None,
    max_person_error: Annotated[
        float | None,
        opt(
            "--max-person-error",
            "Receivers: at most R0 prior sds wrong about any one person (> 0; with noise needs "
            "--max-mean-sd). Noise then lowers κ towards 0.",
            metavar="R0",
        ),
    ] = None,
    delta: Annotated[
        float,
        typer.Option(
            "--delta",
            help="Failure probability δ in [0, 1) (> 0 with noise, unless --max-person-error).",
        ),
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
    separator: c.SeparatorOpt = None,
    encoding: c.EncodingOpt = None,
) -> None:
    """Release the mean of a column (one per group with --group) and certify it (Prop 7).

    With --target-kappa: the largest r1 meeting κ (leave out --r1), or with --r1 and
    --noise gaussian the smallest noise sd. With --max-person-error R0 the certificate is
    against Receivers also at most R0 prior sds wrong about any one person
    (docs/release_means.md, section (e)). Exit 0 when the guarantee holds, 1 when it does
    not, 2 on bad input, 3 on an internal error.
    """
    from persuasive.errors import ValidationError
    from persuasive.release import means
    from persuasive.release.pipeline import table_format_of

    source = c.data_file(data, separator, encoding)
    output = Output.of(out, force, data, "mean", table_format_of(None, format_), report, json_)
    if r2 is None:
        raise ValidationError(
            "--r2 is required: the Receivers' correlation bound r2 > 1 (e.g. --r2 4)"
        )
    o = check_all(
        r1=r1, r2=r2, delta=delta, target_kappa=target_kappa, max_mean_sd=max_mean_sd, seed=seed
    )
    r1, r2, delta, target_kappa = o["r1"], o["r2"], o["delta"], o["target_kappa"]
    max_mean_sd, seed = o["max_mean_sd"], o["seed"]
    kind, scale = _noise(noise)
    r0 = _person_error(max_person_error, kind, max_mean_sd)
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
                    target_kappa, r2=r2, noise=noise_arg, max_mean_sd=max_mean_sd, delta=delta,
                    max_person_error=r0,
                )  # fmt: skip
                notes.append(
                    f"calibrated: the largest r1 with κ ≤ {target_kappa:g} is r1 = {r1:.6g}"
                )
            else:
                scale = means.calibrate_mean(
                    target_kappa, r2=r2, r1=r1, noise=kind, max_mean_sd=max_mean_sd, delta=delta,
                    max_person_error=r0,
                )  # fmt: skip
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
            "max_person_error": r0,
        }
        step("read")
        release: Any
        if group is None:
            frame = means.read_values(source, column)
            release = means.release_mean(
                frame.get_column(column).to_numpy(), column=column, **params
            )
        else:
            release = means.release_group_means(source, value=column, group=group, **params)
        rows = [
            ("input", c.shown(data)),
            ("column", column + (f", one mean per {group}" if group else "")),
            ("Receivers", _receivers(r1, r2, max_mean_sd, r0)),
            ("noise", "none (exact)" if kind is None else f"{kind}, scale {c.num(scale)}"),
        ]
        advice = release.noise_advice
        if advice is not None:  # noise that does not pay under this class is said so
            notes.append(advice)
        status = output.finish(release, rows, step, notes, target_kappa)
    raise typer.Exit(status)


from persuasive.cli import linear as _linear  # noqa: E402, F401  (registers "release linear")
