r"""The custodian's report of a table released with margins.

Sections: the guarantee in one sentence; what was released; the per-cell table of the
suppressed cells (exact κ at the true table, the publication bound, disclosed, the attacker's
interval, certified, the classical rule's κ); the planner's summary (secondary cells, cost,
proven lower bound, gap, the method that chose the pattern and what the MIP reached,
certified); the classical partner rule at the same target (the cells
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
from persuasive.report.kinds.margins import margin_words
from persuasive.report.plots import FIGSIZE, _png
from persuasive.report.words import receiver_words

#: Suppressed cells listed in the per-cell table (the worst first).
MAX_ROWS = 50
Pairs = list[tuple[str, str]]


def _ink(rgba: Any) -> str:
    """Black or white text, whichever contrasts more with the background (WCAG luminance)."""

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(float(c)) for c in rgba[:3])
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"


def pattern_plot(release: Any) -> bytes:
    """The first two dimensions as a grid (later ones merged): released, primary, secondary,
    disclosed cells."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    t = release.table
    code = np.where(t.secondary, 2, np.where(t.suppressed, 1, 0))
    code = np.where(release.verdict.disclosed, 3, code)
    while code.ndim > 2:
        code = code.max(axis=-1)
    grid = code if code.ndim == 2 else code[None, :]
    fig, ax = plt.subplots(figsize=FIGSIZE)
    cmap = ListedColormap(["#f3f3f3", "#d62728", "#ff9f1c", "#000000"])
    ax.imshow(grid, cmap=cmap, vmin=0, vmax=3, aspect="auto", interpolation="nearest")
    for k, name in enumerate(
        ["published", "hidden: below h", "hidden: protects", "revealed by margins"]
    ):
        ax.plot([], [], "s", color=cmap(k), label=name)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    keys = release.keys
    ax.set_ylabel(keys[0] if len(keys) > 1 else "")
    ax.set_xlabel(keys[1] if len(keys) > 1 else keys[0])
    axes = [keys[0], keys[1]] if len(keys) > 1 else [None, keys[0]]
    for k, set_ticks in zip(axes, (ax.set_yticks, ax.set_xticks), strict=True):
        labels = release.levels[k] if k is not None else [""]
        if len(labels) <= 30:
            set_ticks(range(len(labels)), [str(v) for v in labels], fontsize=9)
    if grid.size <= 400 and t.counts.ndim == 2:
        size = 11 if grid.size <= 60 else (9 if grid.size <= 150 else 7)
        for (i, j), c in np.ndenumerate(t.counts):
            ax.text(
                j, i, str(c), ha="center", va="center", fontsize=size, color=_ink(cmap(grid[i, j]))
            )
    merged = " (later dimensions merged)" if len(keys) > 2 else ""
    ax.set_title(f"Which cells are hidden, with their true counts{merged}", fontsize=11)
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
            "\n".join(f"{k}={release.levels[k][i]}" for k, i in zip(release.keys, c, strict=True))
            for c in cells
        ]
        ax.set_xticks(xs, names, fontsize=8)
    else:
        ax.set_xticks([])
    ax.bar(
        xs, k_pub[order], color="#9ecae1", label="κ certified (any table fitting the publication)"
    )
    ax.bar(xs, k_tab[order], width=0.5, color="#1f77b4", label="κ for the actual counts")
    if release.target_kappa is not None:
        ax.axhline(release.target_kappa, color="#d62728", ls="--", label="target κ")
    ax.set_xlabel("suppressed cell, largest certified κ first")
    ax.set_ylabel("κ (nats)")
    top = max([release.target_kappa or 0.0, *k_pub[order], *k_tab[order], 1e-3])
    ax.set_ylim(0, 1.35 * top)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title("κ of each suppressed cell", fontsize=11)
    return _png(fig)


def _label(release: Any, row: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {row[k]}" for k in release.keys)


def _labels(release: Any, cells: list[dict[str, Any]] | None) -> str:
    if not cells:
        return "none"
    return "; ".join(", ".join(f"{k} = {v}" for k, v in c.items()) for c in cells)


def margins_report(release: Any, cert: Mapping[str, Any]) -> ReportContent:
    """The custodian's report of a table with margins, from the release and its certificate."""
    import polars as pl

    s, vd = release.summary(), release.verdict
    comp = release.comparison_document()
    g, claim = cert["guarantee"], cert["claim"]
    target = release.target_kappa
    sentence = (
        f"{g['statement']} For the actual counts the largest κ is {fmt(s['kappa_max'])} nats"
        + (
            "."
            if target is None
            else f"; target κ = {fmt(target)}: the release "
            + ("meets it." if release.ok else "does NOT meet it.")
        )
    )
    bound = (
        "the certified κ (any table consistent with the publication)"
        if release.bound == "publication"
        else "κ for the actual counts"
    )
    cost = "number of secondary cells" if release.objective == "count" else "sum of their counts"
    released = [
        ("what", "a table of counts, small cells suppressed, margins published exactly"),
        ("margins published", margin_words(claim["margins"])),
        ("threshold h", f"{s['h']} (a count below {s['h']} is suppressed)"),
        ("sensitive counts", f"below {s['r']} (the guarantee is about these)"),
        ("Receivers covered", receiver_words(claim["receiver"])),
        ("cells", fmt(s["n_cells"])),
        (
            "suppressed",
            f"{s['n_primary'] + s['n_secondary']}: {s['n_primary']} below h, {s['n_secondary']} "
            "more to protect them (secondary)",
        ),
        (
            "cells the margins reveal exactly",
            f"{s['n_disclosed']} ({s['n_disclosed_primary_only']} before secondary suppression)",
        ),
    ]
    sup = release.cells.filter(pl.col("status") != "released").sort(
        "kappa_published", "kappa", descending=True, maintain_order=True
    )
    columns = [
        "cell",
        "why hidden",
        "true count",
        "κ for the actual counts",
        "κ certified",
        "revealed by the margins",
        "what a Receiver can deduce",
        "κ proven exactly or within the target",
        "κ under the classical rule",
    ]
    rows = [
        [
            _label(release, r),
            "below h" if r["status"] == "primary" else "protects another cell",
            fmt(r["count"]),
            fmt(r["kappa"]),
            fmt(r["kappa_published"]),
            fmt(r["disclosed"]),
            f"{fmt(r['lower'])} to {fmt(r['upper'])}",
            fmt(r["certified"]),
            fmt(r["classical_kappa"]) if r["classical"] else "not hidden",
        ]
        for r in sup.head(MAX_ROWS).iter_rows(named=True)
    ]
    shown = (
        f"The {len(rows)} of {sup.height} suppressed cells with the largest certified κ. "
        "“κ certified” holds for every table consistent with the publication and is what the "
        "certificate states; “κ for the actual counts” describes the data and stays with the "
        "custodian."
    )
    plan = comp["planner"]
    planner: Pairs = (
        [("planner", "not run: no target κ (the cells below h are the only ones hidden)")]
        if plan is None
        else [
            ("target κ", f"{fmt(target)}, for {bound} of every suppressed cell"),
            ("secondary cells", fmt(vd.n_secondary)),
            (f"cost ({cost})", fmt(vd.cost)),
            ("no plan can cost less than", fmt(vd.lower_bound)),
            (
                "gap to that lower bound",
                f"{fmt(vd.gap)} ({vd.relative_gap or 0.0:.0%} of the cost)",
            ),
            (
                "optimal",
                {True: "yes, proven", False: "no", None: "not known (the gap says how far)"}[
                    vd.optimal
                ],
            ),
            ("pattern chosen by", str(vd.method_words())),
            (
                "lower bound on the secondary cells from the publication alone",
                f"{fmt(vd.public_lower_bound)} (what the certificate states and verify recomputes)",
            ),
            (
                "suppressed cells proven within the target",
                f"{vd.n_certified} of {vd.n_suppressed}"
                + (
                    f" ({vd.n_by_bound} by a proven bound, in parts too large for the exact "
                    f"posterior: the switching bound for {vd.n_switching} of them, else the "
                    "full-disclosure bound)"
                    if vd.n_by_bound
                    else ""
                ),
            ),
        ]
    )
    cl = comp["classical"]
    classical: Pairs = [
        ("secondary cells", fmt(cl["n_secondary"])),
        (f"cost ({cost})", fmt(cl["cost"])),
        (
            "largest κ (actual counts / certified)",
            f"{fmt(cl['max_kappa'])} / {fmt(cl['max_kappa_published'])}",
        ),
        ("cells the margins reveal exactly", _labels(release, cl["disclosed"])),
        (
            "cells above the target κ",
            "no target" if cl["above_kappa"] is None else _labels(release, cl["above_kappa"]),
        ),
        ("cells whose κ could only be estimated, not proven", fmt(cl["uncertified"])),
    ]
    sections = [
        Section("What was released", pairs=released),
        Section("Suppressed cells", columns=columns, rows=rows, text=shown),
        Section("Secondary suppression (the planner)", pairs=planner),
        Section(
            "For comparison: the classical rule (hide a partner cell in each row and column)",
            pairs=classical,
        ),
        certificate_section(cert),
    ]
    figures = [
        Figure(
            "pattern.png",
            "The table with its true counts: grey cells are published, red ones are hidden "
            "because they are below h, orange ones are hidden to protect them, black ones "
            "would be revealed by the margins. Look for a row or column with a single hidden "
            "cell: the margins would reveal it.",
            pattern_plot(release),
        ),
        Figure(
            "kappa.png",
            "κ of each suppressed cell: light bars are what the certificate guarantees for "
            "every table consistent with the publication, dark bars the value for the actual "
            "counts; the dashed line is the target. Look for a light bar above the line.",
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
