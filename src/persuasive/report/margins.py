r"""The custodian's report of a table released with margins (``release.kind == "margins"``).

Sections: the guarantee in one sentence; what was released; the per-cell table of the
suppressed cells (exact κ at the true table, the publication bound, disclosed, the attacker's
interval, certified, the classical rule's κ); the planner's summary (secondary cells, cost,
proven lower bound, gap, certified); the classical partner rule at the same target (the cells
it leaves above κ); the certificate and how to verify it; two figures (the pattern, κ per
cell). :func:`write_margins_report` writes ``report.html`` (self-contained) and
``report.md``; :func:`margins_report_content` flattens the same into a
:class:`~persuasive.report.content.ReportContent` for :func:`persuasive.report.html.write_report`.
Like every report it describes the data: it is for the custodian, not for publication.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from persuasive.report.plots import FIGSIZE, _png

if TYPE_CHECKING:
    from persuasive.report.content import Figure, ReportContent

#: Suppressed cells listed in the per-cell table (the worst first).
MAX_ROWS = 50
Pairs = list[tuple[str, str]]


@dataclass(frozen=True)
class Section:
    """A titled block: key-value pairs, a table (columns, rows) and/or a paragraph."""

    title: str
    pairs: Pairs = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    text: str = ""


def pattern_plot(release: Any) -> bytes:
    """The first two dimensions as a grid (later ones merged): released, primary, secondary,
    disclosed cells."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    t = release.table
    code = np.where(t.secondary, 2, np.where(t.suppressed, 1, 0))
    code = np.where(t.suppressed & release.worst.disclosed, 3, code)
    while code.ndim > 2:
        code = code.max(axis=-1)
    grid = code if code.ndim == 2 else code[None, :]
    fig, ax = plt.subplots(figsize=FIGSIZE)
    cmap = ListedColormap(["#f3f3f3", "#d62728", "#ff9f1c", "#000000"])
    ax.imshow(grid, cmap=cmap, vmin=0, vmax=3, aspect="auto", interpolation="nearest")
    for k, name in enumerate(["released", "primary", "secondary", "disclosed"]):
        ax.plot([], [], "s", color=cmap(k), label=name)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    keys = release.keys
    ax.set_ylabel(keys[0] if len(keys) > 1 else "")
    ax.set_xlabel(keys[1] if len(keys) > 1 else keys[0])
    axes = [keys[0], keys[1]] if len(keys) > 1 else [None, keys[0]]
    for k, set_ticks in zip(axes, (ax.set_yticks, ax.set_xticks), strict=True):
        labels = release.levels[k] if k is not None else [""]
        if len(labels) <= 30:
            set_ticks(range(len(labels)), [str(v) for v in labels], fontsize=8)
    if grid.size <= 400 and t.counts.ndim == 2:
        for (i, j), c in np.ndenumerate(t.counts):
            ax.text(j, i, str(c), ha="center", va="center", fontsize=7, color="#333")
    merged = " (later dimensions merged)" if len(keys) > 2 else ""
    ax.set_title(f"Suppression pattern{merged}")
    return _png(fig)


def kappa_plot(release: Any) -> bytes:
    """κ per suppressed cell (worst first): at the true table and the publication bound."""
    import matplotlib.pyplot as plt

    t, w = release.table, release.worst
    shown = t.suppressed & ((w.kappa_published > 0) | ~t.secondary)
    k_tab, k_pub = w.kappa_upper[shown], w.kappa_published[shown]
    order = np.argsort(-k_pub, kind="stable")[:MAX_ROWS]
    xs = np.arange(order.size)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    if order.size <= 12:
        cells = np.argwhere(shown)[order]
        names = [
            ",".join(str(release.levels[k][i]) for k, i in zip(release.keys, c, strict=True))
            for c in cells
        ]
        ax.set_xticks(xs, names, fontsize=8, rotation=30)
    ax.bar(xs, k_pub[order], color="#9ecae1", label="κ published (certificate)")
    ax.bar(xs, k_tab[order], width=0.5, color="#1f77b4", label="κ at the true table")
    if release.target_kappa is not None:
        ax.axhline(release.target_kappa, color="#d62728", ls="--", label="target κ")
    ax.set_xlabel(f"primary cell ({', '.join(release.keys)}), largest publication bound first")
    ax.set_ylabel("nats")
    top = max([release.target_kappa or 0.0, *k_pub[order], *k_tab[order], 1e-3])
    ax.set_ylim(0, 1.3 * top)
    ax.legend(fontsize=8, loc="upper right", ncols=3)
    return _png(fig)


def _label(release: Any, row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in release.keys)


def _labels(release: Any, cells: list[dict[str, Any]] | None) -> str:
    if not cells:
        return "none"
    return "; ".join(", ".join(f"{k}={v}" for k, v in c.items()) for c in cells)


def margins_sections(release: Any) -> tuple[str, list[Section], list[Figure]]:
    """The sentence, the sections and the figures of the report."""
    import polars as pl

    from persuasive.report.content import Figure, fmt

    s, cert = release.summary(), release.certificate_document()
    comp = release.comparison_document()
    g, claim = cert["guarantee"], cert["claim"]
    target = release.target_kappa
    sentence = (
        f"For every Receiver whose prior is in the class ({claim['class']}), and every table "
        f"consistent with what was published, no suppressed cell below r = {release.r} has its "
        f"log-score improved by more than {fmt(g['kappa_published'])} nats"
        + (" (certified: every component exact)." if g["certified"] else " (NOT certified).")
        + f" At the true table the largest is {fmt(s['kappa_max'])} nats."
        + (
            ""
            if target is None
            else f" Target κ = {fmt(target)}: the release "
            + ("meets it." if release.ok else "does NOT meet it.")
        )
    )
    released = [
        ("what", "a table of counts, small cells suppressed, margins published exactly"),
        ("margins", s["margins"]),
        ("h, r", f"{s['h']}, {s['r']}"),
        ("Receiver model", ", ".join(f"{k}={fmt(v)}" for k, v in claim["receiver"].items())),
        ("cells", fmt(s["n_cells"])),
        ("primary / secondary", f"{s['n_primary']} / {s['n_secondary']}"),
        (
            "disclosed (final / primary only)",
            f"{s['n_disclosed']} / {s['n_disclosed_primary_only']}",
        ),
    ]
    sup = release.cells.filter(pl.col("status") != "released").sort(
        "kappa_published", "kappa", descending=True, maintain_order=True
    )
    columns = [
        "cell",
        "status",
        "count",
        "κ (table)",
        "κ published",
        "disclosed",
        "attacker interval",
        "certified",
        "classical κ",
    ]
    rows = [
        [
            _label(release, r),
            r["status"],
            fmt(r["count"]),
            fmt(r["kappa"]),
            fmt(r["kappa_published"]),
            fmt(r["disclosed"]),
            f"{fmt(r['lower'])}..{fmt(r['upper'])}",
            fmt(r["certified"]),
            fmt(r["classical_kappa"]) if r["classical"] else "-",
        ]
        for r in sup.head(MAX_ROWS).iter_rows(named=True)
    ]
    shown = f"The {len(rows)} of {sup.height} suppressed cells with the largest bounds."
    plan = comp["planner"]
    planner: Pairs = (
        [("planner", "not run: no target κ (the primary pattern is released as it is)")]
        if plan is None
        else [
            ("target κ", f"{fmt(target)} against the {release.bound} bound"),
            ("secondary cells", fmt(plan["n_secondary"])),
            (f"cost ({release.objective})", fmt(plan["cost"])),
            ("proven lower bound", fmt(plan["lower_bound"])),
            ("gap", fmt(plan["gap"])),
            ("certified", fmt(plan["certified"])),
            ("summary", plan["explain"]),
        ]
    )
    cl = comp["classical"]
    classical: Pairs = [
        ("secondary cells", fmt(cl["n_secondary"])),
        (f"cost ({release.objective})", fmt(cl["cost"])),
        (
            "largest κ (table / published)",
            f"{fmt(cl['max_kappa'])} / {fmt(cl['max_kappa_published'])}",
        ),
        ("disclosed", _labels(release, cl["disclosed"])),
        (
            "cells above κ",
            "no target" if cl["above_kappa"] is None else _labels(release, cl["above_kappa"]),
        ),
        ("cells it cannot certify (MCMC)", fmt(cl["uncertified"])),
    ]
    pub = cert["publication"]
    certificate: Pairs = [
        ("format", f"{cert['format']} {cert['format_version']}"),
        ("κ published (max)", fmt(g["kappa_published"])),
        ("certified", fmt(g["certified"])),
        ("within target", fmt(g["within_target"])),
        ("basis", cert["basis"]),
        ("publication SHA-256", pub["sha256"]),
        ("claim SHA-256", cert["claim_sha256"]),
    ]
    sections = [
        Section("What was released", released),
        Section("Suppressed cells", columns=columns, rows=rows, text=shown),
        Section("Secondary suppression (planner)", planner),
        Section("The classical partner rule, audited exactly", classical),
        Section(
            "The certificate",
            certificate,
            text="It states only what follows from the publication; anyone can recompute it: "
            "persuasive verify certificate.json --published RELEASE_FOLDER.",
        ),
    ]
    figures = [
        Figure("pattern.png", "The suppression pattern.", pattern_plot(release)),
        Figure(
            "kappa.png",
            "κ per suppressed cell: at the true table and published.",
            kappa_plot(release),
        ),
    ]
    return sentence, sections, figures


def _notes(release: Any) -> list[str]:
    from persuasive.report.margins_certificate import NOTES

    return [
        *NOTES,
        "The per-cell κ at the true table, the counts and the classical comparison describe the "
        "data: this report is for the custodian, not for publication.",
    ]


def render(
    title: str,
    sentence: str,
    sections: list[Section],
    notes: list[str],
    figures: list[Figure],
    *,
    markdown: bool,
) -> str:
    """The report as self-contained HTML (``markdown=False``) or Markdown."""
    import base64
    import html as h

    from persuasive.report import html as H
    from persuasive.report import markdown as M

    if markdown:
        out = [f"# {title}", "", f"> {sentence}", ""]
        for sec in sections:
            out += [f"## {sec.title}", ""] + ([*M._pairs(sec.pairs), ""] if sec.pairs else [])
            if sec.columns:
                out += ["| " + " | ".join(sec.columns) + " |", "|" + "---|" * len(sec.columns)]
                out += ["| " + " | ".join(M._cell(c) for c in row) + " |" for row in sec.rows]
                out.append("")
            out += [sec.text, ""] if sec.text else []
        out += ["## Notes", "", *[f"- {M._cell(n)}" for n in notes], "", "## Figures", ""]
        out += [line for f in figures for line in (f"![{f.caption}]({f.name})", "")]
        return "\n".join(out).rstrip("\n") + "\n"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{h.escape(title)}</title><style>{H._CSS}</style>",
        f"<script>{H._SCRIPT}</script></head><body>",
        f"<h1>{h.escape(title)}</h1>",
        f'<p class="guarantee">{h.escape(sentence)}</p>',
    ]
    for sec in sections:
        parts.append(f"<h2>{h.escape(sec.title)}</h2>")
        if sec.pairs:
            parts.append(H._pairs(sec.pairs))
        if sec.columns:
            head = "".join(f"<th>{h.escape(c)}</th>" for c in sec.columns)
            body = "".join(
                "<tr>" + "".join(f"<td>{h.escape(c)}</td>" for c in r) + "</tr>" for r in sec.rows
            )
            parts.append(f"<table><tr>{head}</tr>{body}</table>")
        if sec.text:
            parts.append(f"<p>{h.escape(sec.text)}</p>")
    parts.append(
        '<h2>Notes</h2><ul class="notes">'
        + "".join(f"<li>{h.escape(n)}</li>" for n in notes)
        + "</ul>"
    )
    for f in figures:
        data = base64.b64encode(f.png).decode("ascii")
        parts.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{h.escape(f.caption)}" '
            f'width="640" height="400"><figcaption>{h.escape(f.caption)}</figcaption></figure>'
        )
    return "\n".join([*parts, "</body></html>"]) + "\n"


TITLE = "Persuasive Privacy report: a table of counts released with its margins"


def write_margins_report(directory: str | os.PathLike[str], release: Any) -> dict[str, Path]:
    """Write ``report.html``, ``report.md`` and the PNG figures into ``directory``.

    Everything is computed first; a new folder is written beside its destination and renamed,
    an existing one has each file replaced atomically (nothing half-written either way).
    """
    from persuasive.errors import ValidationError
    from persuasive.report.html import _write_all

    sentence, sections, figures = margins_sections(release)
    notes = _notes(release)
    files: dict[str, str | bytes] = {f.name: f.png for f in figures}
    files["report.md"] = render(TITLE, sentence, sections, notes, figures, markdown=True)
    files["report.html"] = render(TITLE, sentence, sections, notes, figures, markdown=False)
    dest = Path(directory)
    if dest.exists() and not dest.is_dir():
        raise ValidationError(f"report directory '{dest}' exists and is not a folder")
    if dest.is_dir():
        _write_all(dest, files)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
        try:
            tmp.chmod(0o755)
            _write_all(tmp, files)
            os.rename(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return {
        "html": dest / "report.html",
        "markdown": dest / "report.md",
        **{Path(f.name).stem: dest / f.name for f in figures},
    }


def margins_report_content(release: Any, *, target_kappa: float | None = None) -> ReportContent:
    """The same report flattened into a :class:`ReportContent` (for ``write_report``)."""
    from persuasive.report.content import ReportContent

    sentence, sections, figures = margins_sections(release)
    by = {s.title: s for s in sections}
    released = list(sections[0].pairs)
    for sec in sections[2:4]:
        released += [(f"{sec.title.split(' (')[0].split(',')[0]}: {k}", v) for k, v in sec.pairs]
    table = by["Suppressed cells"]
    return ReportContent(
        title=TITLE,
        kind="margins",
        sentence=sentence,
        released=released,
        certificate=by["The certificate"].pairs,
        notes=[*_notes(release), by["The certificate"].text],
        figures=figures,
        preview_columns=table.columns,
        preview_rows=table.rows,
        preview_total=len(table.rows),
    )
