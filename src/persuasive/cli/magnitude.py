"""``persuasive release magnitude``: a magnitude table (cell totals of a non-negative value)
released by the PP sensitivity rule, beside the p% and (n,k)-dominance rules.

Every cell whose certified κ against outsiders and coalitions of up to ``--insiders`` insiders
exceeds ``--target-kappa`` is suppressed (``docs/magnitude.md``); with ``--margins``, secondary
suppression until every suppressed cell is certified too, or a refusal. Exit status 0 when the
certificate holds, 1 when refused (nothing written), 2 on bad input (one ``error:`` line), 3 on
an internal error.
"""

from __future__ import annotations

from typing import Annotated

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
    opt,
)
from persuasive.cli.release import Output, app


@app.command("magnitude")
def magnitude_cmd(
    data: DataArg,
    out: OutOpt,
    keys: Annotated[str, opt("--keys", "Classification columns, comma-separated.")],
    value: Annotated[str, opt("--value", "The non-negative magnitude column.")],
    unit: Annotated[str, opt("--unit", "The unit id column.")],
    target_kappa: Annotated[
        float, opt("--target-kappa", "Suppress every cell whose certified κ exceeds K (>= 0).")
    ],
    insiders: Annotated[
        int, opt("--insiders", "Protect against coalitions of up to m contributors (>= 0).")
    ] = 1,
    holding: Annotated[
        str | None, opt("--holding", "The holding of each unit: its units are one contributor.")
    ] = None,
    size: Annotated[
        str | None, opt("--size", "A public size of each row (> 0): spreads scale with it.")
    ] = None,
    r1: Annotated[
        float, opt("--r1", "Receivers: squared error bound of the guessed total, r1 > 0.")
    ] = 1.0,
    r2: Annotated[
        float, opt("--r2", "Receivers: correlation condition number bound, r2 >= 1.")
    ] = 1.0,
    gamma: Annotated[
        float, opt("--gamma", "Receivers: relative spreads unequal by at most γ >= 1.")
    ] = 1.0,
    margins: Annotated[
        str | None,
        opt(
            "--margins",
            "Also publish these totals exactly: keys joined by '+', comma-separated, and "
            "'total' (e.g. a,b,total); secondary suppression certifies them or refuses.",
        ),
    ] = None,
    counts: Annotated[
        bool,
        opt("--counts", "Also publish each cell's number of contributors (every cell)."),
    ] = False,
    format_: FormatOpt = None,
    report: ReportOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
    separator: c.SeparatorOpt = None,
    encoding: c.EncodingOpt = None,
) -> None:
    """Release the cell totals of a value by the PP sensitivity rule (magnitude tables).

    Exit 0 when the certificate holds, 1 when refused with --margins (nothing written), 2 on
    bad input, 3 on an internal error.
    """
    from persuasive import _validation as v
    from persuasive.magnitude.certificate import MagnitudeClass
    from persuasive.magnitude.kind import MAX_KAPPA
    from persuasive.release.magnitude import release_magnitude
    from persuasive.release.magnitude_output import insiders_words
    from persuasive.release.pipeline import table_format_of

    source = c.data_file(data, separator, encoding)
    output = Output.of(out, force, data, "magnitude", table_format_of(data, format_), report, json_)
    ks = c.key_list(keys)
    target = v.real("--target-kappa", target_kappa, low=0.0, high=MAX_KAPPA)
    m = v.integer("--insiders", insiders, low=0)
    cls = MagnitudeClass(
        v.real("--r1", r1, low=0.0, low_open=True),
        v.real("--r2", r2, low=1.0),
        v.real("--gamma", gamma, low=1.0),
    )
    with c.progress(
        ("read", "release", "write", "certify", "report", "verify"), quiet or json_
    ) as step:
        step("read")
        release = release_magnitude(
            source,
            keys=ks,
            value=value,
            unit=unit,
            target_kappa=target,
            holding=holding,
            size=size,
            insiders=m,
            r1=cls.r1,
            r2=cls.r2,
            gamma=cls.gamma,
            margins=margins,
            counts=counts,
        )
        step("release")
        if getattr(release, "refused", False):
            c.stop_progress()
            if json_:
                c.emit_json(
                    {
                        "kind": release.kind,
                        "holds": False,
                        "refused": True,
                        "files": {},
                        "guarantee": release.statement(),
                        "summary": release.summary(),
                    }
                )
            else:
                c.stdout().print(
                    f"NOT released (nothing written): {release.statement()}", markup=False
                )
            raise typer.Exit(1)
        s = release.summary()
        rows = [
            ("input", c.shown(data)),
            (
                "Receivers",
                f"{insiders_words(m)}; r1 = {c.num(cls.r1)}, r2 = "
                f"{c.num(cls.r2)}, γ = {c.num(cls.gamma)}",
            ),
            ("cells", f"{s['n_cells']} ({s['n_suppressed']} suppressed, {s['n_exposed']} exposed)"),
            ("p% / (n,k) flag", f"{s['n_p_percent']} / {s['n_nk']} cells (not applied)"),
        ]
        notes = [
            "custodian_cells.* is the only file with the true totals of the suppressed cells "
            "(with each cell's κ and largest share; the report shows κ and shares too): never "
            "publish it; publish released.*"
            + (" and margins.*" if margins else "")
            + " with the certificate."
        ]
        status = output.finish(release, rows, step, notes, target, {"summary": s})
    raise typer.Exit(status)
