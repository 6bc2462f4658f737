r"""The custodian's report of a table released with margins.

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

from collections.abc import Mapping
from typing import Any

import numpy as np

from persuasive.report.content import Figure, ReportContent, Section, certificate_section, fmt
from persuasive.report.plots import FIGSIZE, _png

#: Suppressed cells listed in the per-cell table (the worst first).
MAX_ROWS = 50
Pairs = list[tuple[str, str]]


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


def margins_report(release: Any, cert: Mapping[str, Any]) -> ReportContent:
    """The custodian's report of a table with margins, from the release and its certificate."""
    import polars as pl

    s = release.summary()
    comp = release.comparison_document()
    g, claim = cert["guarantee"], cert["claim"]
    target = release.target_kappa
    sentence = f"{g['statement']} At the true table the largest is {fmt(s['kappa_max'])} nats" + (
        "."
        if target is None
        else f"; target κ = {fmt(target)}: the release "
        + ("meets it." if release.ok else "does NOT meet it.")
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
    sections = [
        Section("What was released", pairs=released),
        Section("Suppressed cells", columns=columns, rows=rows, text=shown),
        Section("Secondary suppression (planner)", pairs=planner),
        Section("The classical partner rule, audited exactly", pairs=classical),
        certificate_section(cert),
    ]
    figures = [
        Figure("pattern.png", "The suppression pattern.", pattern_plot(release)),
        Figure(
            "kappa.png",
            "κ per suppressed cell: at the true table and published.",
            kappa_plot(release),
        ),
    ]
    return ReportContent(
        title=TITLE,
        sentence=sentence,
        sections=sections,
        notes=[
            *cert["notes"],
            "The per-cell κ at the true table, the counts and the classical comparison describe "
            "the data: this report is for the custodian, not for publication.",
        ],
        figures=figures,
    )


TITLE = "Persuasive Privacy report: a table of counts released with its margins"
