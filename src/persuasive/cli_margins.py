"""``persuasive release table ... --margins rows,cols``: a table released with its totals.

A thin layer over :func:`persuasive.release.margins.release_table_with_margins`, called by
``release table`` (:mod:`persuasive.cli_release`) when ``--margins`` (or ``--objective`` /
``--bound``) is given. With ``--margins``, ``--h`` is required and ``--target-kappa`` is the
planner's per-cell target, not a calibration of h.

Exit status: 0 every suppressed cell is certified (exact), none below r is disclosed and the
target (if any) is met; 1 the release was written but some cell fails (each listed), or the
planner found no pattern meeting the target (refused: nothing written); 2 bad input (one
``error: ...`` line naming the field, nothing left on disk): an unknown margin dimension,
margins that do not add up (``--margins FILE``: totals to publish, checked against the
table), the small-cell model (``--alpha``: κ = ∞ once a margin is
published), a bad κ, a missing column, an incomplete grid.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.text import Text

from persuasive.cli_release import (
    _fail,
    _guard,
    _jsonable,
    _num,
    _print_pairs,
    _progress,
    _receiver,
    _stdout,
)

#: The progress steps of a release with margins.
STEPS = ("read", "plan and audit", "write", "report")


def _cell(release: Any, row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in release.keys)


def _problems(release: Any) -> list[str]:
    """One line per failing or disclosed suppressed cell: why, and its attacker interval."""
    import polars as pl

    cells = release.cells.with_columns(fails=pl.Series(release.failing().ravel()))
    rows = cells.filter(pl.col("fails") | pl.col("disclosed"))
    out = []
    for row in rows.iter_rows(named=True):
        why = []
        if not row["certified"]:
            why.append("not certified (MCMC component)")
        if row["disclosed"]:
            why.append("disclosed: recovered exactly from the margins")
        bound = row["kappa_published" if release.bound == "publication" else "kappa"]
        if release.target_kappa is not None and bound > release.target_kappa:
            why.append(f"{release.bound} bound {_num(bound)} > target {_num(release.target_kappa)}")
        interval = f"{_num(row['lower'])}..{_num(row['upper'])}"
        out.append(
            f"{'FAILS' if row['fails'] else 'note'}: {_cell(release, row)} ({row['status']}): "
            f"{'; '.join(why)} (κ {_num(row['kappa'])}, attacker interval {interval})"
        )
    return out


def _check_args(
    margins: str | None, objective: str | None, bound: str | None, h: int | None, target: Any
) -> tuple[str, str, str]:
    if margins is None:
        given = "--objective" if objective is not None else "--bound"
        _fail(f"{given} needs --margins (it chooses secondary suppressions of a table with totals)")
    if h is None:
        _fail(
            "--h: with --margins give the threshold --h H (--target-kappa is then the planner's "
            "per-cell target, not a calibration of h)"
        )
    if objective not in (None, "count", "total"):
        _fail(f"--objective must be count or total; got {objective!r}")
    if bound not in (None, "publication", "table"):
        _fail(f"--bound must be publication or table; got {bound!r}")
    if target is not None and not (math.isfinite(target) and target >= 0):
        _fail(f"--target-kappa must be a finite number >= 0 (nats); got {target!r}")
    return margins, objective or "count", bound or "publication"


def run_margins(
    data: Path,
    out: Path,
    *,
    keys: str,
    count: str,
    h: int | None,
    margins: str | None,
    objective: str | None,
    bound: str | None,
    receiver_opts: tuple[Any, Any, Any, Any],
    r: int | None,
    target_kappa: float | None,
    format_: str | None,
    report: bool,
    force: bool,
    quiet: bool,
    json_: bool,
) -> NoReturn:
    """The ``--margins`` route of ``release table`` (always raises :class:`typer.Exit`)."""
    from persuasive.margins.planner import InfeasiblePlanError
    from persuasive.release.data import scan_table, table_format
    from persuasive.release.demo import atomic_directory, check_output_dir
    from persuasive.release.margins import check_margins_receiver, release_table_with_margins

    _guard(lambda: check_output_dir(out, force=force))
    spec, obj, bnd = _check_args(margins, objective, bound, h, target_kappa)
    key_list = [k.strip() for k in keys.split(",") if k.strip()]
    if not key_list:
        _fail(f"--keys must name at least one key column, comma-separated; got {keys!r}")
    fmt = format_ or _guard(lambda: table_format(data))
    if fmt not in ("csv", "parquet"):
        _fail(f"--format must be csv or parquet; got {fmt!r}")
    receiver = _receiver(*receiver_opts)
    _guard(lambda: check_margins_receiver(receiver), "--margins: ")
    given: Any = spec
    if Path(spec).suffix.lower() in (".csv", ".parquet", ".pq"):  # published totals to check
        from persuasive.report.margins_certificate import read_frame

        given = _guard(lambda: read_frame(Path(spec)), "--margins: ")

    def release_it() -> tuple[Any, str]:
        try:
            rel = release_table_with_margins(
                frame,
                keys=key_list,
                count=count,
                h=h,  # type: ignore[arg-type]
                receiver=receiver,
                margins=given,
                target_kappa=target_kappa,
                objective=obj,
                bound=bnd,
                r=r,
            )
        except InfeasiblePlanError as exc:
            return None, " ".join(str(exc).split())
        return rel, ""

    files: dict[str, Path] = {}
    with _progress(STEPS, quiet or json_) as step:
        step("read")
        frame = _guard(lambda: scan_table(data).collect())
        step("plan and audit")
        release, refusal = _guard(release_it, "--margins/--keys/--count: ")
        if release is not None:
            step("write")
            with atomic_directory(out, force=force) as tmp:
                written = _guard(lambda: release.write(tmp, table_format=fmt))
                if report:
                    step("report")
                    from persuasive.report.margins import write_margins_report

                    _guard(lambda: write_margins_report(tmp / "report", release))
                    written["report"] = tmp / "report" / "report.html"
                files = {k: out / p.relative_to(tmp) for k, p in written.items()}
    if release is None:
        if json_:
            typer.echo(json.dumps({"kind": "margins", "ok": False, "refused": refusal}, indent=2))
        else:
            _stdout().print(Text(f"NOT released (nothing written): {refusal}"))
        raise typer.Exit(1)
    status = 0 if release.ok else 1
    problems = _problems(release)
    if json_:
        doc = {
            "kind": "margins",
            "ok": release.ok,
            "files": {k: str(p) for k, p in files.items()},
            "certificate": release.certificate_document(),
            "summary": _jsonable(release.summary()),
            "comparison": release.comparison_document(),
            "problems": problems,
        }
        typer.echo(json.dumps(doc, indent=2))
        raise typer.Exit(status)
    _print_summary(release, data, files, status)
    console = _stdout()
    for line in problems:
        console.print(Text(line))
    console.print(
        Text(
            f"custodian_* files are for the custodian: do not publish them. Anyone can check the "
            f"certificate: persuasive verify {files['certificate']} --published {out}"
        )
    )
    raise typer.Exit(status)


def _print_summary(release: Any, data: Path, files: dict[str, Path], status: int) -> None:
    s = release.summary()
    plan, comp = release.plan, release.comparison
    classical = (
        f"{s['classical_secondary']} secondary cells"
        + ("" if comp is None else f", {s['classical_above_kappa']} cells above the target")
        + f"; κ published {_num(release.classical_worst.max_published)}"
    )
    rows = [
        ("input", str(data)),
        ("receiver", json.dumps(release.receiver.describe())),
        ("margins", s["margins"]),
        ("h, r", f"{s['h']}, {s['r']}"),
        ("cells", f"{s['n_cells']} ({s['n_primary']} primary, {s['n_secondary']} secondary)"),
        ("κ at the table", f"{_num(s['kappa_max'])} (exact worst case, custodian only)"),
        ("κ published", f"{_num(s['kappa_published'])} (the certificate)"),
        ("certified", "yes" if s["certified"] else "no (an MCMC component)"),
        ("disclosed", str(s["n_disclosed"])),
        ("target κ", f"{_num(s['target_kappa'])} ({s['bound']} bound)"),
        ("planner", "not run (no target)" if plan is None else plan.explain()),
        ("classical rule", classical),
        *[(role, str(p)) for role, p in files.items()],
        ("verdict", "meets it" if status == 0 else "does NOT meet it"),
    ]
    _print_pairs(rows, "Release with margins")
