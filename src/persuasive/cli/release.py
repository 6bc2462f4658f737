"""``persuasive release``: the command group, ``release table``, and what the commands share.

``release mean`` is in :mod:`persuasive.cli.mean`, ``release linear`` in
:mod:`persuasive.cli.linear`, the ``--margins`` route of ``release table`` in
:mod:`persuasive.cli.margins`.

Each command checks its options (one ``error:`` line, exit 2, before any work), builds the
release with the library, and writes it with :func:`persuasive.release.pipeline.publish`, which
owns the output folder, the certificate and the final verification. Exit status 0 when the
certificate claims a guarantee that holds (and meets ``--target-kappa``), 1 otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    TargetOpt,
    checked,
    opt,
)

app = typer.Typer(
    name="release",
    help="Release a count table (Prop 8), a mean (Prop 7) or linear statistics, with a "
    "certificate anyone can verify.",
    no_args_is_help=True,
    add_completion=False,
)


@dataclass(frozen=True)
class Output:
    """Where and how a release command writes: its folder (checked before any work), the table
    format, the report, the target κ, JSON or a table on standard output."""

    folder: Any
    fmt: str
    report: bool
    json_: bool

    @classmethod
    def of(
        cls, out: str, force: bool, data: Path, kind: str, fmt: str, report: bool, json_: bool
    ) -> Output:
        from persuasive.files.output import OutputFolder

        folder = OutputFolder(out, force=force, inputs=[data], kind=kind)
        folder.check()
        return cls(folder, fmt, report, json_)

    def finish(
        self,
        release: Any,
        rows: list[tuple[str, str]],
        step: Any,
        notes: list[str],
        target: float | None,
        extra: Any = None,
    ) -> int:
        """Publish the release, print what was written, return the exit status."""
        from persuasive.release.pipeline import exit_status, publish

        outcome = publish(
            release,
            self.folder,
            table_format=self.fmt,
            report=self.report,
            target_kappa=target,
            on_step=step,
            notes=notes,
        )
        status = exit_status(outcome)
        if self.json_:
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
    keys: Annotated[str, opt("--keys", "Key columns, comma-separated.")],
    count: Annotated[
        str | None, opt("--count", "The count column (with --microdata: its name, default n).")
    ] = None,
    h: c.HOpt = None,
    alpha: c.AlphaOpt = None,
    poisson_mean: c.PoissonMeanOpt = None,
    negbin_mean: c.NegbinMeanOpt = None,
    negbin_size: c.NegbinSizeOpt = None,
    r: c.ROpt = None,
    target_kappa: TargetOpt = None,
    format_: FormatOpt = None,
    report: ReportOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
    separator: c.SeparatorOpt = None,
    encoding: c.EncodingOpt = None,
    margins: Annotated[
        str | None,
        opt(
            "--margins",
            "Also publish these totals exactly: rows,cols[,total] or kept keys 'a+b,c'; "
            "--target-kappa is then the planner's per-cell target.",
        ),
    ] = None,
    objective: c.MarginsObjectiveOpt = None,
    bound: c.MarginsBoundOpt = None,
    method: Annotated[
        str | None,
        opt(
            "--method",
            "With --margins and a target: the planner, 'greedy' (default), 'mip' (the "
            "mixed-integer program, the greedy if it certifies nothing) or 'auto' (mip on "
            "tables of at most 2500 cells).",
        ),
    ] = None,
    mip_time_limit: Annotated[
        str | None,
        opt("--mip-time-limit", "With --method mip|auto: seconds for the MIP (default 20)."),
    ] = None,
    microdata: Annotated[
        bool,
        typer.Option(
            "--microdata",
            help="DATA holds one record per unit: count the records per combination of "
            "--keys first (--count then names the count column, default n).",
        ),
    ] = False,
    weight: Annotated[
        str | None,
        opt("--weight", "Refused: Prop 8 certifies counts of records, not weighted totals."),
    ] = None,
    absent: Annotated[
        str | None,
        opt(
            "--absent",
            "Absent key combinations: 'zero' (counts of zero, suppressed like any cell; "
            "default) or 'structural' (known structural zeros, not published).",
        ),
    ] = None,
    known: Annotated[
        Path | None,
        opt(
            "--known",
            "With --margins: a CSV with the key columns of cells the Receiver knows already "
            "(published, never suppressed, listed in the certificate).",
        ),
    ] = None,
    hierarchy: Annotated[
        str | None,
        opt(
            "--hierarchy",
            "With --margins: nested keys, outer first, e.g. region>district; the pairs that "
            "do not nest are structural zeros.",
        ),
    ] = None,
    hierarchy_file: Annotated[
        str | None,
        opt(
            "--hierarchy-file",
            "With --margins: COLUMN=FILE, the coarser levels of the key COLUMN from a "
            "tau-Argus .hrc file (one code a line, one @ per level below the top), built as "
            "COLUMN_1, ... or named: region>district=FILE; several separated by commas.",
        ),
    ] = None,
    hierarchy_lead: Annotated[
        str | None,
        opt("--hierarchy-lead", "With --hierarchy-file: the leading string (default @)."),
    ] = None,
    apriori: Annotated[
        Path | None,
        opt(
            "--apriori",
            "With --margins: a CSV or Parquet file of bounds the Receiver knows already: the "
            "key columns and lower and/or upper (inclusive counts), one row per cell "
            "(docs/margins_apriori.md).",
        ),
    ] = None,
    engine: Annotated[
        str | None,
        opt(
            "--engine",
            "Where the table is read and suppressed: polars (in memory, default), streaming "
            "(out of core, bounded memory) or spark (Apache Spark); the same published rows "
            "and certificate from each (docs/scale.md).",
        ),
    ] = None,
    spark_master: Annotated[
        str | None,
        opt(
            "--spark-master",
            "With --engine spark: the master URL, e.g. local[2] or spark://host:7077 "
            "(default local[*]).",
        ),
    ] = None,
) -> None:
    """Suppress the cells below h of a count table and certify it (Prop 8).

    With --margins the totals are published too (docs/margins_release.md). Exit 0 when the
    guarantee holds, 1 when it does not, 2 on bad input, 3 on an internal error.
    """
    from persuasive.errors import ValidationError
    from persuasive.release import grid
    from persuasive.release.pipeline import table_format_of

    ks = c.key_list(keys)
    source = c.data_file(data, separator, encoding)
    grid.refuse_weight(weight, option="--weight")
    absent = grid.check_absent("zero" if absent is None else absent, option="--absent")
    if count is None and not microdata:
        raise ValidationError(
            "--count: name the count column of the table, or pass --microdata to count the "
            "records of DATA (one row per unit) into a table"
        )
    count = "n" if count is None else count
    kind = "margins" if margins else "table"
    output = Output.of(out, force, data, kind, table_format_of(data, format_), report, json_)
    h, r, target_kappa = (
        checked("--h", h),
        checked("--r", r),
        checked("--target-kappa", target_kappa),
    )
    receiver = c.receiver(alpha, poisson_mean, negbin_mean, negbin_size)
    given = {"--known": known, "--hierarchy": hierarchy, "--hierarchy-file": hierarchy_file}
    given |= {"--hierarchy-lead": hierarchy_lead, "--apriori": apriori}
    if margins is None and any(v is not None for v in given.values()):
        which = next(o for o, v in given.items() if v is not None)
        raise ValidationError(
            f"{which} needs --margins (it is about a table published with its totals)"
        )
    from persuasive.release.table_request import check_engine

    engine = "polars" if engine is None else check_engine(engine, None, option="--engine")
    if spark_master is not None and engine != "spark":
        raise ValidationError(f"--spark-master needs --engine spark; got --engine {engine}")
    if spark_master is not None and not spark_master.strip():
        raise ValidationError(
            f"--spark-master must be a master URL, e.g. local[2]; got {spark_master!r}"
        )
    planner = (objective, bound, method, mip_time_limit)
    if engine == "streaming" and (margins is not None or any(o is not None for o in planner)):
        raise ValidationError(
            "--engine streaming releases a table without margins: the planner and the audit of "
            "a table with --margins read its whole grid of cells; use --engine polars or spark"
        )
    if margins is not None or any(o is not None for o in planner):
        from persuasive.cli.margins import run_margins

        raise typer.Exit(
            run_margins(
                source,
                output.folder,
                keys=ks,
                count=count,
                h=h,
                r=r,
                receiver=receiver,
                margins=margins,
                objective=objective,
                bound=bound,
                method=method,
                mip_time_limit=mip_time_limit,
                target_kappa=target_kappa,
                fmt=output.fmt,
                report=report,
                quiet=quiet,
                json_=json_,
                microdata=microdata,
                absent=absent,
                known=known,
                hierarchy=hierarchy,
                hierarchy_file=hierarchy_file,
                hierarchy_lead=hierarchy_lead,
                apriori=apriori,
                engine=engine,
                spark_master=spark_master,
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
            source,
            keys=ks,
            count=count,
            h=h,
            receiver=receiver,
            r=r,
            target_kappa=target_kappa,
            microdata=microdata,
            absent=absent,
            engine=engine,
            spark=spark_master,
        )
        s = release.summary()
        rows = [
            ("input", c.shown(data)),
            ("receiver", c.receiver_words(receiver, h)),
            ("threshold h", f"{h}" + (" (calibrated)" if target_kappa is not None else "")),
            ("cells", f"{s['n_cells']} ({s['n_suppressed']} suppressed)"),
        ]
        status = output.finish(release, rows, step, notes, target_kappa, {"summary": s})
    raise typer.Exit(status)


from persuasive.cli import linear as _linear  # noqa: E402, F401  (registers "release linear")
from persuasive.cli import linked as _linked  # noqa: E402, F401  (registers "release linked")
from persuasive.cli import magnitude as _magnitude  # noqa: E402, F401  ("release magnitude")
from persuasive.cli import mean as _mean  # noqa: E402, F401  (registers "release mean")
