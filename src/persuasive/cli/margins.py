"""``persuasive release table --margins``: a count table published with exact totals.

Primary suppression, planned secondary suppression to a per-cell target, the exact audit, the
classical rule beside it, and a certificate recomputed from the publication
(``docs/margins_release.md``). Called by ``release table`` when ``--margins`` is given.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from persuasive.cli import _common as c

STEPS = ("read", "plan and audit", "write", "certify", "report", "verify")


def _cell(release: Any, row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in release.keys)


def _cells_text(release: Any, vd: Any) -> str:
    """The table's cells: how many are published (structural zeros are not cells) and how
    many of them are suppressed."""
    import numpy as np

    structural = getattr(release.table, "structural", None)
    n_struct = 0 if structural is None else int(np.count_nonzero(structural))
    text = f"{vd.n_cells - n_struct} ({vd.n_primary} primary, {vd.n_secondary} secondary)"
    if n_struct:
        text += f"; {n_struct} structural zeros, known to everyone and not published"
    n_known = len(getattr(release, "known_keys", ()))
    n_box = len(getattr(release, "apriori_bounds", ()))
    if n_known:
        text += f"; {n_known} known to the Receiver"
    if n_box:
        text += f"; {n_box} with a-priori bounds the Receiver knows"
    return text


#: The bound a margins plan aims at, in words.
_BOUND_WORDS = {
    "publication": "against what the published files show",
    "table": "at the true table, custodian only",
}


#: Problem lines printed (the JSON output lists them all).
MAX_PROBLEMS = 10


def _interval(row: dict[str, Any]) -> str:
    lo, up = row["lower"], row["upper"]
    if lo is None or up is None or not (math.isfinite(lo) and math.isfinite(up)):
        return f"{c.num(lo)}..{c.num(up)}"
    return f"{int(lo)}..{int(up)}"  # integer bounds (margins_output.integer_intervals)


def problems(release: Any) -> list[str]:
    """One line per failing or disclosed suppressed cell (the release's verdict decides which
    fail): why, and its attacker interval."""
    import polars as pl

    vd = release.verdict
    cells = release.cells.with_columns(
        fails=pl.Series(vd.failing.ravel()), shown=pl.Series(vd.disclosed.ravel())
    )
    rows = cells.filter(pl.col("fails") | pl.col("shown"))
    target = release.target_kappa
    out = []
    for row in rows.iter_rows(named=True):
        why = []
        if not row["certified"]:
            why.append("in a part of the table too large for the exact posterior")
        if row["shown"]:
            why.append("disclosed: recovered exactly from the margins")
        if target is not None and row["kappa_published"] > target:
            why.append(
                f"κ {c.num(row['kappa_published'])} (proven, {_BOUND_WORDS['publication']}) "
                f"> target {c.num(target)}"
            )
        elif target is not None and row["shown"]:
            why.append(f"κ {c.num(row['kappa_published'])} <= target {c.num(target)}")
        out.append(
            f"{'FAILS' if row['fails'] else 'note'}: {_cell(release, row)} ({row['status']}): "
            f"{'; '.join(why)} (κ at the table {c.num(row['kappa'])}, attacker interval "
            f"{_interval(row)})"
        )
    return out


def _pairs(release: Any, data: Path, receiver: Any, h: int) -> list[tuple[str, str]]:
    """The summary table, every count from the release's verdict."""
    s, vd = release.summary(), release.verdict
    comp = release.comparison
    classical = (
        f"{s['classical_secondary']} secondary cells"
        + ("" if comp is None else f", {s['classical_above_kappa']} cells above the target")
        + f"; κ published {c.num(release.classical_worst.max_published)}"
    )
    n_big = vd.n_suppressed - vd.n_exact
    if vd.target_kappa is not None:
        certified = (
            f"{vd.n_certified} of {vd.n_suppressed} suppressed cells proven within the target"
            + (
                f" ({n_big} in parts too large for the exact posterior, {vd.n_by_bound} of them "
                "proven within it by the switching or the full-disclosure bound)"
                if n_big
                else ""
            )
        )
    else:
        certified = (
            "yes (every suppressed cell computed exactly)"
            if not n_big
            else f"no: {n_big} cells in parts too large for the exact posterior (κ there is a "
            "proven bound: the switching bound, or the full-disclosure bound)"
        )
    disclosed = str(vd.n_disclosed) + (
        f" ({vd.n_disclosed_exact} by the exact posterior, the others pinned by the attacker's LP)"
        if vd.n_disclosed != vd.n_disclosed_exact
        else ""
    )
    target = (
        "none"
        if vd.target_kappa is None
        else f"{c.num(vd.target_kappa)} ({_BOUND_WORDS[vd.bound]})"
    )
    return [
        ("input", c.shown(data)),
        ("receiver", c.receiver_words(receiver, h)),
        ("margins", s["margins"]),
        ("h, r", f"{s['h']}, {s['r']}"),
        ("cells", _cells_text(release, vd)),
        ("κ at the table", f"{c.num(vd.kappa_table)} (exact worst case, custodian only)"),
        ("κ published", f"{c.num(vd.kappa_published)} (proven; what the certificate states)"),
        ("certified", certified),
        ("disclosed", disclosed),
        ("target κ", target),
        (
            "secondary plan",
            "not planned (no target)" if vd.gap_words() is None else str(vd.gap_words()),
        ),
        ("classical rule", classical),
    ]


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
    method: str | None = None,
    mip_time_limit: str | None = None,
    fmt: str,
    report: bool,
    quiet: bool,
    json_: bool,
    microdata: bool = False,
    absent: str = "zero",
    known: Path | None = None,
    hierarchy: str | None = None,
    apriori: Path | None = None,
    hierarchy_file: str | None = None,
    hierarchy_lead: str | None = None,
    engine: str = "polars",
    spark_master: str | None = None,
) -> int:
    """The ``--margins`` route of ``release table``; returns the exit status. With
    ``microdata`` the records of ``data`` are counted first; absent key combinations are counts
    of zero, or structural zeros (``absent="structural"``); ``known`` is a file of cells the
    Receiver knows, ``apriori`` a file of bounds it knows (key columns, ``lower``, ``upper``),
    ``hierarchy`` nested keys (``region>district``), ``hierarchy_file`` ``COLUMN=FILE`` items
    (:func:`persuasive.margins.hrc.load_specs`, read here so errors name the option);
    ``method`` and ``mip_time_limit`` (text, seconds) choose the planner
    (:func:`check_planner`); ``engine`` ``"spark"`` runs it on Spark at ``spark_master``."""
    from persuasive.errors import ValidationError
    from persuasive.margins.planner import InfeasiblePlanError
    from persuasive.release.margins import check_margins_receiver, release_table_with_margins
    from persuasive.release.margins_output import check_certificate
    from persuasive.release.pipeline import exit_status, publish

    if margins is None:
        given_opts = zip(
            ("--objective", "--bound", "--method", "--mip-time-limit"),
            (objective, bound, method, mip_time_limit),
            strict=True,
        )
        which = next(o for o, val in given_opts if val is not None)
        raise ValidationError(
            f"{which} needs --margins (it chooses secondary suppressions of a table with totals)"
        )
    if h is None:
        raise ValidationError(
            "--h: with --margins give the threshold --h H (--target-kappa is then the planner's "
            "per-cell target, not a calibration of h)"
        )
    objective, bound = c.planner_choices(objective, bound)
    check_margins_receiver(receiver)
    meth, limit = check_planner(method, mip_time_limit, target_kappa)
    from persuasive.margins.hrc import load_specs

    if hierarchy_lead is not None and hierarchy_file is None:
        raise ValidationError("--hierarchy-lead needs --hierarchy-file (it reads its .hrc files)")
    files = load_specs(hierarchy_file, keys, lead=hierarchy_lead or "@", option="--hierarchy-file")
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
                objective=objective,
                bound=bound,
                r=r,
                microdata=microdata,
                absent=absent,
                known=known,
                hierarchy=hierarchy,
                hierarchy_file=files,
                apriori=apriori,
                engine=engine,
                spark=spark_master,
                method=meth,
                mip_time_limit=limit,
            )
        except InfeasiblePlanError as exc:
            c.stop_progress()
            refusal = " ".join(str(exc).split())
            if json_:
                c.emit_json({"kind": "margins", "holds": False, "refused": refusal, "files": {}})
            else:
                c.stdout().print(f"NOT released (nothing written): {refusal}", markup=False)
            return 1
        vd = release.verdict
        if vd.refused:
            c.stop_progress()
            lines = problems(release)
            if json_:
                c.emit_json(
                    {
                        "kind": "margins",
                        "holds": False,
                        "refused": vd.statement(),
                        "files": {},
                        "summary": release.summary(),
                        "comparison": release.comparison_document(),
                        "problems": lines,
                    }
                )
                return 1
            c.print_pairs(
                [*_pairs(release, data, receiver, h), ("verdict", "NOT released")],
                "Release with margins",
            )
            _print_problems(lines)
            c.stdout().print(f"NOT released (nothing written): {vd.statement()}", markup=False)
            return 1
        outcome = publish(
            release,
            folder,
            table_format=fmt,
            report=report,
            target_kappa=target_kappa,
            on_step=step,
        )
    check_certificate(release, outcome.document)  # one outcome: the certificate agrees
    # With a target the release is certified (else refused above); without one the certificate
    # states κ, and the release fails (exit 1) when a cell is disclosed below r or not exact.
    status = 0 if release.ok and exit_status(outcome) == 0 else 1
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
    c.print_pairs(
        [
            *_pairs(release, data, receiver, h),
            *[(role, str(p)) for role, p in outcome.files.items()],
            ("verdict", "holds" if status == 0 else "does NOT hold"),
        ],
        "Release with margins",
    )
    _print_problems(lines)
    console = c.stdout()
    if not release.ok:
        console.print(release.verdict.statement(), markup=False)
    console.print(outcome.statement, markup=False)
    console.print(
        "custodian_* files are for the custodian: do not publish them. Anyone can check the "
        f"certificate: persuasive verify {outcome.files['certificate']} --published {folder.path}",
        markup=False,
    )
    return status


def _print_problems(lines: list[str]) -> None:
    console = c.stdout()
    for line in lines[:MAX_PROBLEMS]:
        console.print(line, markup=False)
    if len(lines) > MAX_PROBLEMS:
        console.print(
            f"... and {len(lines) - MAX_PROBLEMS} more cells (--json lists them all; "
            "custodian_cells has every cell)",
            markup=False,
        )


def check_planner(
    method: str | None, mip_time_limit: str | None, target_kappa: float | None
) -> tuple[str, float | None]:
    """``--method`` and ``--mip-time-limit`` (seconds, text), checked: one line naming the
    option, echoing the value and saying what is allowed (a ValidationError: exit 2)."""
    from persuasive.errors import ValidationError
    from persuasive.release.margins_plan import METHODS

    if method is not None and method not in METHODS:
        raise ValidationError(f"--method must be {', '.join(METHODS)}; got {method!r:.40}")
    if (method is not None or mip_time_limit is not None) and target_kappa is None:
        which = "--method" if method is not None else "--mip-time-limit"
        raise ValidationError(
            f"{which} needs --target-kappa K (it chooses the secondary pattern planned to K)"
        )
    meth = method or "greedy"
    if mip_time_limit is None:
        return meth, None
    if meth == "greedy":
        raise ValidationError(
            f"--mip-time-limit {mip_time_limit!r:.40} needs --method mip or --method auto (the "
            "greedy has no time limit)"
        )
    # a decimal number as written (float() would also take '1_0', 'inf' or ' 5 ')
    decimal = re.fullmatch(r"[+]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", mip_time_limit)
    limit = float(mip_time_limit) if decimal else math.nan
    if not (math.isfinite(limit) and limit > 0):
        raise ValidationError(
            f"--mip-time-limit must be a finite number of seconds > 0, such as 20 or 0.5; got "
            f"{mip_time_limit!r:.40}"
        )
    return meth, limit
