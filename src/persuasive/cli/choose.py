"""``persuasive choose``: the Sender's choice (eq. 5, Bon et al. 2026) on the command line.

* ``choose mean`` — the release of a mean (exact, Gaussian noise, withhold) of least expected
  squared error whose certified κ meets ``--target-kappa`` (:func:`persuasive.choose
  .choose_mean`);
* ``choose table DATA`` — the suppression threshold of a count table of least loss (cells, or
  people, suppressed) meeting the target (:func:`persuasive.choose.choose_table`);
* ``choose linear DATA`` — linear statistics released exactly, with one Gaussian noise sd, or
  some withheld (:func:`persuasive.choose.choose_linear`; :mod:`persuasive.cli.choose_linear`).

Each prints the families searched (certified or not, and why), the choice in one sentence, and
optionally writes the frontier (``--frontier FILE.csv``), its plot (``--plot FILE.png``) and an
HTML report (``--report DIR``) (:mod:`persuasive.cli.choose_output`). The destinations are
checked before any work and written atomically.

Exit status 0 when a certified mechanism other than withholding is the best, 1 when the best
certified choice is to release nothing, 2 on bad input (one ``error:`` line, nothing written),
3 on an internal error.
"""

from __future__ import annotations

from typing import Annotated

import typer

from persuasive.cli import _common as c
from persuasive.cli._common import DataArg, opt
from persuasive.cli.choose_output import Outputs, finish, output_options, plan

__all__ = ["app"]

app = typer.Typer(
    name="choose",
    help="Choose the certified mechanism of least utility loss for a target κ (eq. 5): the "
    "release of a mean, the suppression threshold of a count table, or how to release linear "
    "statistics.",
    no_args_is_help=True,
    add_completion=False,
)

TargetOpt = Annotated[
    float, opt("--target-kappa", "The κ the mechanism must meet (a real number >= 0).")
]
DeltaOpt = Annotated[
    float,
    typer.Option("--delta", help="Failure probability δ in [0, 1) allowed to noisy releases."),
]


# --------------------------------------------------------------------------------------------
# choose mean
# --------------------------------------------------------------------------------------------


@app.command("mean")
@output_options
def mean_cmd(
    r1: Annotated[float, opt("--r1", "Receivers: squared prior-mean error bound r1 > 0.")],
    r2: Annotated[float, opt("--r2", "Receivers: correlation bound r2 > 1.")],
    target_kappa: TargetOpt,
    delta: DeltaOpt = 0.05,
    max_mean_sd: Annotated[
        float | None, opt("--max-mean-sd", "Receivers: prior sd of the mean at most V (> 0).")
    ] = None,
    max_person_error: Annotated[
        float | None,
        opt(
            "--max-person-error",
            "Receivers: prior error about any one person at most R0 prior sds (> 0; noise "
            "pays only with --max-mean-sd too).",
            metavar="R0",
        ),
    ] = None,
    *,
    out: Outputs,
) -> None:
    """Choose how to release a mean: exact, with Gaussian noise (the smallest sd meeting the
    target) or not at all, by least expected squared error among the certified (Prop 7; with
    --max-person-error the class of docs/release_means.md (e)).

    Exit 0 when the mean (exact or noisy) is released, 1 when only withholding meets the
    target, 2 on bad input, 3 on an internal error.
    """
    from persuasive import _domains as dm
    from persuasive.choose import choose_mean

    o = c.check_all(r1=r1, r2=r2, delta=delta, target_kappa=target_kappa, max_mean_sd=max_mean_sd)
    r0 = None
    if max_person_error is not None:
        r0 = dm.check("max_person_error", max_person_error, name="--max-person-error")
    planned = plan(out)
    with c.progress(["search"], out.quiet or out.json_) as step:
        step("searching the releases of the mean ...")
        choice = choose_mean(
            r1=o["r1"],
            r2=o["r2"],
            target_kappa=o["target_kappa"],
            delta=o["delta"],
            max_mean_sd=o["max_mean_sd"],
            max_person_error=r0,
        )
    finish(choice, [], planned, out)


# --------------------------------------------------------------------------------------------
# choose table
# --------------------------------------------------------------------------------------------


@app.command("table")
@output_options
def table_cmd(
    data: DataArg,
    keys: Annotated[str, opt("--keys", "Key columns, comma-separated.")],
    count: Annotated[str, opt("--count", "The count column.")],
    target_kappa: TargetOpt,
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
    separator: c.SeparatorOpt = None,
    encoding: c.EncodingOpt = None,
    *,
    out: Outputs,
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
    planned = plan(out, inputs=(data,))
    with c.progress(["search"], out.quiet or out.json_) as step:
        step("searching the thresholds ...")
        choice = choose_table(
            source, keys=key_cols, count=count, receiver=receiver, target_kappa=target,
            objective=obj,
        )  # fmt: skip
    finish(choice, [("input", c.shown(data))], planned, out)


from persuasive.cli import choose_linear as _linear  # noqa: E402, F401  ("choose linear")
