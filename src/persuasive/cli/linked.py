"""``persuasive release linked``: several tables of one microdata file, one publication.

``--tables 'a*b;a*c'`` names the tables (variables joined by ``*``, tables separated by ``;``),
``--margins 'a,b;a,c'`` each table's published margins (the syntax of ``release table
--margins``, one set per table, separated by ``;``). The Receiver is stated for the cover
table's cells (``--poisson-mean LO:HI``); each table's is derived (``docs/linked.md``).

All or nothing: exit 0 when every table is certified and the folder is written, 1 when a table
is not certified (nothing written, the reason printed), 2 on bad input (a cyclic family, shared
totals a table does not publish, a negative-binomial Receiver …), 3 on an internal error.
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
    checked,
    opt,
)
from persuasive.cli.release import Output, app

STEPS = ("read", "plan and audit", "write", "certify", "report", "verify")


@app.command("linked")
def linked_cmd(
    data: DataArg,
    out: OutOpt,
    tables: Annotated[
        str, opt("--tables", "The tables: variables joined by '*', tables by ';' (a*b;a*c).")
    ],
    margins: Annotated[
        str,
        opt(
            "--margins",
            "Each table's published margins, as release table --margins, separated by ';' "
            "(a,b;a,c); every pair's shared variables must be published by both.",
        ),
    ],
    h: c.HRequiredOpt,
    poisson_mean: c.PoissonMeanOpt = None,
    negbin_mean: Annotated[
        str | None, opt("--negbin-mean", "Refused for linked tables (docs/linked.md).")
    ] = None,
    negbin_size: Annotated[float | None, opt("--negbin-size", "See --negbin-mean.")] = None,
    r: c.ROpt = None,
    target_kappa: Annotated[
        float | None,
        opt(
            "--target-kappa", "Every table's per-cell target κ (>= 0): secondary cells are planned."
        ),
    ] = None,
    objective: c.ObjectiveOpt = None,
    bound: c.BoundOpt = None,
    count: Annotated[
        str, opt("--count", "The name of each table's count column (default n).")
    ] = "n",
    format_: FormatOpt = None,
    report: Annotated[
        bool,
        typer.Option("--report", help="Also write each table's report into OUT/TABLE/report/."),
    ] = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
    separator: c.SeparatorOpt = None,
    encoding: c.EncodingOpt = None,
) -> None:
    """Release linked tables of one microdata file (one row per record) as one publication.

    The Receiver's priors (--poisson-mean) are stated for the cells of the cover table, every
    combination of the tables' variables, with one common mean. Each table is released with
    its margins and certified on its own; by the lemma of docs/linked.md each table's
    certificate is the guarantee for the whole publication. Exit 0 when every table is
    certified, 1 when one is not (nothing written), 2 on bad input.
    """

    from persuasive.margins.planner import InfeasiblePlanError
    from persuasive.release.linked import release_linked_tables
    from persuasive.release.linked_check import check_cover_receiver, linked_spec
    from persuasive.release.pipeline import table_format_of

    source = c.data_file(data, separator, encoding)
    output = Output.of(out, force, data, "linked", table_format_of(data, format_), report, json_)
    spec = linked_spec(tables, margins)  # bad tables or margins: exit 2 before any work
    h_, r_, target = checked("--h", h), checked("--r", r), checked("--target-kappa", target_kappa)
    objective_, bound_ = c.planner_choices(objective, bound)
    _check_count(count, spec.variables)
    receiver = check_cover_receiver(c.receiver(None, poisson_mean, negbin_mean, negbin_size))
    with c.progress(STEPS, quiet or json_) as step:
        step("read")
        step("plan and audit")
        try:
            rel = release_linked_tables(
                source,
                tables=list(spec.keys),
                margins=[",".join(spec.margin_names(k)) for k in range(len(spec.keys))],
                h=h_,
                receiver=receiver,
                target_kappa=target,
                r=r_,
                objective=objective_,
                bound=bound_,
                count=count,
            )
        except InfeasiblePlanError as exc:
            c.stop_progress()
            _refused(" ".join(str(exc).split()), json_)
            raise typer.Exit(1) from None
        if rel.refused:
            c.stop_progress()
            _refused(rel.statement(), json_, rel)
            raise typer.Exit(1)
        from persuasive.release.linked_output import publish_linked

        doc, files = publish_linked(
            rel, output.folder, table_format=output.fmt, report=report, on_step=step
        )
    folder = output.folder.path
    if json_:
        c.emit_json(
            {
                "kind": "linked",
                "holds": bool(doc["guarantee"]["holds"]),
                "files": {k: str(p) for k, p in files.items()},
                "certificate": doc,
                "tables": rel.summary().to_dicts(),
            }
        )
        raise typer.Exit(0)
    c.print_pairs(_pairs(rel, data, doc, files), "Linked tables")
    console = c.stdout()
    console.print(doc["guarantee"]["statement"], markup=False)
    console.print(
        "custodian_* files are for the custodian: do not publish them. Anyone can check the "
        f"certificate: persuasive verify {files['certificate']} --published {folder}",
        markup=False,
    )
    raise typer.Exit(0)


def _check_count(count: str, variables: tuple[str, ...]) -> None:
    from persuasive.errors import ValidationError

    if not count.strip() or count != count.strip():
        raise ValidationError(
            f"--count must be a column name without leading or trailing spaces; got {count!r:.40}"
        )
    if count in variables:
        raise ValidationError(
            f"--count {count!r} is a variable of the tables; name the count column otherwise "
            "(e.g. --count n)"
        )


def _pairs(rel: object, data: object, doc: dict, files: dict) -> list[tuple[str, str]]:
    from persuasive.release.linked import LinkedRelease

    assert isinstance(rel, LinkedRelease)
    rows = [
        ("input", c.shown(data)),  # type: ignore[arg-type]
        ("receiver (cover cells)", c.receiver_words(rel.receiver, rel.h)),
    ]
    for t in rel.summary().iter_rows(named=True):
        rows.append(
            (
                f"table {t['table']}",
                f"{t['variables']}, margins {t['margins']}; Poisson mean "
                f"{c.num(t['mean_min'])}..{c.num(t['mean_max'])} ({t['cover_cells_per_cell']} "
                f"cover cells per cell); {t['suppressed']} suppressed ({t['secondary']} "
                f"secondary); κ published {c.num(t['kappa_published'])}",
            )
        )
    shared = doc["publication"]["shared"]
    rows.append(
        (
            "shared totals",
            "; ".join(
                f"{' and '.join(s['tables'])}: {'+'.join(s['variables']) or 'total'} "
                f"({len(s['totals'])} equal totals)"
                for s in shared
            ),
        )
    )
    rows.append(("certified κ", c.num(doc["guarantee"]["kappa"])))
    rows += [(role, str(p)) for role, p in files.items() if "/" not in role]
    rows.append(
        ("tables written", ", ".join(str(files[f"{n}/certificate"].parent) for n in rel.names))
    )
    rows.append(("verdict", "holds"))
    return rows


def _refused(reason: str, json_: bool, rel: object = None) -> None:
    if json_:
        extra = {} if rel is None else {"tables": rel.summary().to_dicts()}  # type: ignore[attr-defined]
        c.emit_json({"kind": "linked", "holds": False, "refused": reason, "files": {}, **extra})
        return
    c.stdout().print(f"NOT released (nothing written): {reason}", markup=False)
