"""``persuasive release table --margins``: a count table published with exact totals.

Primary suppression, planned secondary suppression to a per-cell target, the exact audit, the
classical rule beside it, and a certificate recomputed from the publication
(``docs/margins_release.md``). Called by ``release table`` when ``--margins`` is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from persuasive.cli import _common as c

STEPS = ("read", "plan and audit", "write", "certify", "report", "verify")


def _cell(release: Any, row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in release.keys)


#: The bound a margins plan aims at, in words.
_BOUND_WORDS = {
    "publication": "against what the published files show",
    "table": "at the true table, custodian only",
}


def problems(release: Any) -> list[str]:
    """One line per failing or disclosed suppressed cell: why, and its attacker interval."""
    import polars as pl

    cells = release.cells.with_columns(fails=pl.Series(release.failing().ravel()))
    rows = cells.filter(pl.col("fails") | pl.col("disclosed"))
    out = []
    for row in rows.iter_rows(named=True):
        why = []
        if not row["certified"]:
            why.append("not certified (in a part of the table too large for the exact posterior)")
        if row["disclosed"]:
            why.append("disclosed: recovered exactly from the margins")
        bound = row["kappa_published" if release.bound == "publication" else "kappa"]
        if release.target_kappa is not None and bound > release.target_kappa:
            why.append(
                f"κ {c.num(bound)} ({_BOUND_WORDS[release.bound]}) > target "
                f"{c.num(release.target_kappa)}"
            )
        interval = f"{c.num(row['lower'])}..{c.num(row['upper'])}"
        out.append(
            f"{'FAILS' if row['fails'] else 'note'}: {_cell(release, row)} ({row['status']}): "
            f"{'; '.join(why)} (κ {c.num(row['kappa'])}, attacker interval {interval})"
        )
    return out


def run_margins(
    data: Path,
    folder: Any,
    *,
    keys: list[str],
    count: str,
    h: int | None,
    r: int | None,
    receiver: Any,
    margins: str | None,
    objective: str | None,
    bound: str | None,
    target_kappa: float | None,
    fmt: str,
    report: bool,
    quiet: bool,
    json_: bool,
    microdata: bool = False,
    absent: str = "zero",
) -> int:
    """The ``--margins`` route of ``release table``; returns the exit status. With
    ``microdata`` the records of ``data`` are counted first; absent key combinations are counts
    of zero (``absent="structural"`` is refused with margins)."""
    from persuasive.errors import ValidationError
    from persuasive.margins.planner import InfeasiblePlanError
    from persuasive.release.margins import (
        BOUNDS,
        OBJECTIVES,
        check_margins_receiver,
        release_table_with_margins,
    )
    from persuasive.release.pipeline import exit_status, publish

    if margins is None:
        which = "--objective" if objective is not None else "--bound"
        raise ValidationError(
            f"{which} needs --margins (it chooses secondary suppressions of a table with totals)"
        )
    if h is None:
        raise ValidationError(
            "--h: with --margins give the threshold --h H (--target-kappa is then the planner's "
            "per-cell target, not a calibration of h)"
        )
    if objective not in (None, *OBJECTIVES):
        raise ValidationError(f"--objective must be {' or '.join(OBJECTIVES)}; got {objective!r}")
    if bound not in (None, *BOUNDS):
        raise ValidationError(f"--bound must be {' or '.join(BOUNDS)}; got {bound!r}")
    if absent == "structural":
        raise ValidationError(
            "--absent structural is not available with --margins: the margins engine has no "
            "cells known to be zero; drop --absent (absent combinations are then counts of zero) "
            "or release the table without --margins"
        )
    check_margins_receiver(receiver)
    given: Any = margins
    if Path(margins).suffix.lower() in (".csv", ".parquet", ".pq"):  # published totals to check
        from persuasive.report.margins_certificate import read_frame

        given = read_frame(Path(margins))
    with c.progress(STEPS, quiet or json_) as step:
        step("read")
        step("plan and audit")
        try:
            release = release_table_with_margins(
                data,
                keys=keys,
                count=count,
                h=h,
                receiver=receiver,
                margins=given,
                target_kappa=target_kappa,
                objective=objective or "count",
                bound=bound or "publication",
                r=r,
                microdata=microdata,
                absent=absent,
            )
        except InfeasiblePlanError as exc:
            c.stop_progress()
            refusal = " ".join(str(exc).split())
            if json_:
                c.emit_json({"kind": "margins", "holds": False, "refused": refusal, "files": {}})
            else:
                c.stdout().print(f"NOT released (nothing written): {refusal}", markup=False)
            return 1
        outcome = publish(
            release,
            folder,
            table_format=fmt,
            report=report,
            target_kappa=target_kappa,
            on_step=step,
        )
    # The certificate states κ for every table consistent with the publication; the release
    # also fails (exit 1) when a cell fails the custodian's own check: above the target at the
    # planned-against bound, not computed exactly, or, without a target, disclosed below r.
    status = exit_status(outcome) if release.ok else 1
    lines = problems(release)
    if json_:
        c.emit_json(
            {
                **outcome.to_dict(),
                "summary": release.summary(),
                "comparison": release.comparison_document(),
                "problems": lines,
            }
        )
        return status
    s = release.summary()
    plan, comp = release.plan, release.comparison
    classical = (
        f"{s['classical_secondary']} secondary cells"
        + ("" if comp is None else f", {s['classical_above_kappa']} cells above the target")
        + f"; κ published {c.num(release.classical_worst.max_published)}"
    )
    c.print_pairs(
        [
            ("input", c.shown(data)),
            ("receiver", c.receiver_words(receiver, h)),
            ("margins", s["margins"]),
            ("h, r", f"{s['h']}, {s['r']}"),
            ("cells", f"{s['n_cells']} ({s['n_primary']} primary, {s['n_secondary']} secondary)"),
            ("κ at the table", f"{c.num(s['kappa_max'])} (exact worst case, custodian only)"),
            ("κ published", f"{c.num(outcome.document['guarantee']['kappa'])} (the certificate)"),
            (
                "certified",
                "yes"
                if s["certified"]
                else "no (a part of the table is too large for the exact posterior)",
            ),
            ("disclosed", str(s["n_disclosed"])),
            ("target κ", f"{c.num(s['target_kappa'])} ({_BOUND_WORDS[s['bound']]})"),
            ("planner", "not run (no target)" if plan is None else plan.explain()),
            ("classical rule", classical),
            *[(role, str(p)) for role, p in outcome.files.items()],
            ("verdict", "holds" if status == 0 else "does NOT hold"),
        ],
        "Release with margins",
    )
    console = c.stdout()
    for line in lines:
        console.print(line, markup=False)
    console.print(outcome.statement, markup=False)
    console.print(
        "custodian_* files are for the custodian: do not publish them. Anyone can check the "
        f"certificate: persuasive verify {outcome.files['certificate']} --published {folder.path}",
        markup=False,
    )
    return status
