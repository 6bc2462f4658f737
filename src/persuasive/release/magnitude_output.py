"""The report of a magnitude release: the rules compared cell by cell, the dominance picture
of the worst cells, the published table and the certificate (the custodian's, never
published: it shows κ and shares computed from the contributions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from persuasive.release.table_report import preview_section
from persuasive.report.content import ReportContent, Section, certificate_section, fmt
from persuasive.report.words import percent

__all__ = ["agreement", "comparison", "dominance", "magnitude_report"]

#: Rows of the per-cell tables in a report.
ROWS = 40


def insiders_words(m: int) -> str:
    """``outsiders only`` / ``outsiders and coalitions of up to 1 insider`` / ``… 3 insiders``."""
    if m == 0:
        return "outsiders only"
    return f"outsiders and coalitions of up to {m:,} insider{'s' if m > 1 else ''}"


def comparison(rel: Any) -> pl.DataFrame:
    """Per cell: contributors, the largest share, κ against outsiders and up to m insiders,
    and which rule flags it (PP: κ above the target), the highest κ first."""
    keys = list(rel.params.keys)
    return rel.cells.select(
        *keys,
        "contributors",
        "largest_share",
        "kappa_outsider",
        "kappa",
        pl.col("suppressed").alias("pp"),
        "p_percent",
        "nk",
    ).sort(["kappa", *keys], descending=[True, *([False] * len(keys))], nulls_last=True)


def agreement(rel: Any) -> list[tuple[str, int]]:
    """How many cells each combination of the three rules flags."""
    c = rel.cells
    pp, pr, nk = (c[k].to_numpy() for k in ("suppressed", "p_percent", "nk"))
    return [
        ("flagged by all three", int(np.sum(pp & pr & nk))),
        ("by the PP rule only", int(np.sum(pp & ~pr & ~nk))),
        ("by p% only", int(np.sum(~pp & pr & ~nk))),
        ("by (n,k) only", int(np.sum(~pp & ~pr & nk))),
        ("by PP and p%, not (n,k)", int(np.sum(pp & pr & ~nk))),
        ("by PP and (n,k), not p%", int(np.sum(pp & ~pr & nk))),
        ("by p% and (n,k), not PP", int(np.sum(~pp & pr & nk))),
        ("by none", int(np.sum(~pp & ~pr & ~nk))),
    ]


def dominance(rel: Any, worst: int = 10, top: int = 3) -> pl.DataFrame:
    """The worst cells' largest contributions as shares of the total (custodian only)."""
    c, cert = rel.contributors, rel.certificate
    order = np.argsort(-cert.cell, kind="stable")
    order = order[rel.cells["contributors"].to_numpy()[order] > 0][:worst]
    total = c.total
    cols: dict[str, Any] = {
        "cell": [", ".join(map(str, rel.cells.row(int(j))[: len(rel.params.keys)])) for j in order]
    }
    for r in range(top):
        idx = c.start[order] + r
        ok = r < c.count[order]
        vals = np.where(ok, c.value[np.minimum(idx, c.value.size - 1)], 0.0) / total[order]
        cols[f"share {r + 1}"] = [float(x) if o else None for x, o in zip(vals, ok, strict=True)]
    # with margins the cells' own κ (before the margins) is kappa_primary in the other tables
    name = "kappa_primary" if "kappa_primary" in rel.cells.columns else "kappa"
    cols[name] = [float(cert.cell[j]) for j in order]
    return pl.DataFrame(cols)


def exact_text(published: pl.DataFrame) -> pl.DataFrame:
    """The published frame with ``total`` as the text the file holds (shortest round-trip
    form, not rounded to a few digits: the report shows the published value itself)."""
    return published.with_columns(pl.col("total").cast(pl.String))


def _rows(frame: pl.DataFrame) -> list[list[str]]:
    return [[fmt(x) for x in row] for row in frame.head(ROWS).iter_rows()]


def magnitude_report(rel: Any, doc: Mapping[str, Any]) -> ReportContent:
    """The report of a :class:`~persuasive.release.magnitude.MagnitudeRelease`."""
    p, s = rel.params, rel.summary()
    released = Section(
        "What was released",
        pairs=[
            ("what", f"the totals of “{p.value}” by {', '.join(p.keys)}"),
            (
                "contributors",
                f"units “{p.unit}”" + (f", holdings “{p.holding}”" if p.holding else ""),
            ),
            (
                "Receivers",
                f"{insiders_words(p.insiders)}; r1 = {fmt(p.r1)}, "
                f"r2 = {fmt(p.r2)}, γ = {fmt(p.gamma)}",
            ),
            ("PP rule", f"suppress every cell with κ > {fmt(p.target_kappa)}"),
            (
                "cells",
                f"{s['n_cells']:,}, {s['n_suppressed']:,} suppressed ({s['n_exposed']:,} exposed)",
            ),
            ("largest κ published (custodian only)", fmt(s["max_kappa_published"])),
            ("p% rule", f"p = {percent(rel.rules['p'])}: {s['n_p_percent']:,} cells flagged"),
            (
                "(n,k) rule",
                f"n = {rel.rules['n']}, k = {percent(rel.rules['k'])}: {s['n_nk']:,} cells flagged",
            ),
        ],
    )
    table = comparison(rel)
    compared = Section(
        "The rules on the same cells (custodian only)",
        columns=table.columns,
        rows=_rows(table),
        text=f"The {min(ROWS, table.height)} cells of highest κ (of {table.height}). κ against "
        "outsiders and against up to m insiders (docs/magnitude.md §2); pp: suppressed by the "
        "PP rule; p_percent and nk: flagged by those rules (ACRO's definitions).",
    )
    agree = Section("Where the rules agree", pairs=[(k, f"{n:,}") for k, n in agreement(rel)])
    dom = dominance(rel)
    picture = Section(
        "Dominance in the worst cells (custodian only)",
        columns=dom.columns,
        rows=_rows(dom),
        text="The largest contributions of the cells of highest κ, as shares of the cell total.",
    )
    extra = []
    if "attacker_low" in rel.cells.columns:
        supp = rel.cells.filter(pl.col("suppressed")).select(
            *p.keys, "kappa_primary", "kappa", "secondary", "attacker_low", "attacker_high"
        )  # the true totals of suppressed cells are in custodian_cells.* only
        extra.append(
            Section(
                "Suppressed cells with the margins published (custodian only)",
                columns=supp.columns,
                rows=_rows(supp),
                text="κ before (primary) and with the margins published (docs/magnitude.md §6); "
                "secondary: suppressed to protect another cell; the attacker's interval is the "
                "range of the total over the non-negative solutions of the published equations. "
                "The true totals are in custodian_cells.* only.",
            )
        )
    return ReportContent(
        title=f"Persuasive Privacy report: magnitude table of “{p.value}”",
        sentence=str(doc["guarantee"]["statement"]),
        sections=[
            released,
            compared,
            agree,
            *extra,
            picture,
            preview_section(
                exact_text(rel.published), "The published table (released.*)", missing="total"
            ),
            certificate_section(doc),
        ],
        notes=[
            *doc["notes"],
            "This report is for the custodian, not for publication: the κ, shares and rule "
            "flags of each cell describe the contributions, suppressed cells included.",
        ],
        figures=[],
    )
