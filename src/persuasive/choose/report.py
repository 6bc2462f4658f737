"""The Sender's choice as a report: one HTML page (and Markdown) with the frontier's plot.

Built from the report primitives every release uses (:mod:`persuasive.report.content`,
rendered by :mod:`persuasive.report.html`: inline CSS, the figure inline as PNG, no external
reference) and written through the one atomic folder writer
(:class:`persuasive.files.output.OutputFolder`).
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path
from typing import Any

from persuasive.choose.frontier import Candidate, Choice
from persuasive.report.content import Figure, ReportContent, Section, fmt

__all__ = [
    "choice_html",
    "frontier_figure",
    "report_content",
    "write_choice_report",
    "write_files",
]

#: The report's figure: 640 × 400 pixels, as the HTML page shows it.
FIGSIZE, DPI = (6.4, 4.0), 100
#: Frontier rows shown in the report (all of them up to this many).
MAX_ROWS = 80


def frontier_figure(choice: Choice, figsize: tuple[float, float] = FIGSIZE) -> Any:
    """The frontier drawn on a new matplotlib Figure (no pyplot state): κ against the loss,
    the target and the best; a symlog loss axis when the losses span decades."""
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=figsize)
    ax = fig.subplots()
    choice.plot(ax)
    ax.grid(True, alpha=0.3)
    losses = [x.loss for x in choice.frontier if 0.0 < x.loss < math.inf]
    if losses and max(losses) > 100.0 * min(losses):  # errors over decades: a readable axis
        ax.set_xscale("symlog", linthresh=min(losses))
    ax.set_title(f"The Sender's choice: target κ ≤ {choice.target_kappa:g}")
    fig.tight_layout()
    return fig


def _png(choice: Choice) -> bytes:
    buf = io.BytesIO()
    frontier_figure(choice).savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _withheld(c: Candidate) -> str:
    if not c.withheld:
        return "-"
    return ", ".join(c.withheld[:8]) + (f" (+{len(c.withheld) - 8})" if len(c.withheld) > 8 else "")


def report_content(choice: Choice, setting: tuple[tuple[str, str], ...] = ()) -> ReportContent:
    """What the report shows, from the choice alone."""
    best = choice.best
    asked = [*setting, *choice.setting]
    asked.append(
        (
            "search",
            "exact (see the notes)" if choice.exact_search else "NOT exact: see the notes",
        )
    )
    families = Section(
        "Mechanisms searched",
        columns=["family", "parameter", "withheld", "certified κ", "at δ", "loss", "certified",
                 "why"],
        rows=[
            [
                x.family, fmt(x.parameter), _withheld(x), fmt(x.kappa), fmt(x.delta),
                fmt(x.loss), "yes (best)" if x is best else fmt(x.certified), x.reason,
            ]
            for x in choice.candidates
        ],
        text=f"Loss: {choice.utility}. A family that is not certified cannot be chosen, "
        "however useful it looks.",
    )  # fmt: skip
    pts = choice.frontier[:MAX_ROWS]
    more = len(choice.frontier) - len(pts)
    frontier = Section(
        "The frontier: κ against the loss",
        columns=["family", "parameter", "certified κ", "at δ", choice.utility,
                 f"meets κ ≤ {choice.target_kappa:g}"],
        rows=[
            [x.family, fmt(x.parameter), fmt(x.kappa), fmt(x.delta), fmt(x.loss),
             fmt(x.certified)]
            for x in pts
        ],
        text="Every point searched, for the table and the plot; the Pareto frontier is their "
        "lower envelope." + (f" {more} more points are in --frontier FILE." if more else ""),
    )  # fmt: skip
    figure = Figure(
        "frontier.png",
        f"Certified κ against the {choice.utility} for each family, the target κ (dashed) and "
        "the best (star).",
        _png(choice),
    )
    return ReportContent(
        title="The Sender's choice (eq. 5, Bon et al. 2026)",
        sentence=choice.statement(),
        sections=[Section("What was asked", pairs=asked), families, frontier],
        notes=list(choice.notes),
        figures=[figure],
    )


#: The shared renderers head the sentence "The guarantee"; a choice states a choice.
_HEADINGS = (("<h2>The guarantee</h2>", "<h2>The choice</h2>"),
             ("## The guarantee", "## The choice"))  # fmt: skip


def _renamed(text: str) -> str:
    for old, new in _HEADINGS:
        text = text.replace(old, new, 1)
    return text


def choice_html(choice: Choice, setting: tuple[tuple[str, str], ...] = ()) -> str:
    """The report as one self-contained HTML page."""
    return _html(report_content(choice, setting))


def _html(content: ReportContent) -> str:
    from persuasive.report.html import render_html

    return _renamed(render_html(content))


def write_files(content: ReportContent, folder: Path) -> dict[str, Path]:
    """``report.html``, ``report.md`` and the figures into ``folder`` (which exists)."""
    from persuasive.report.markdown import render_markdown

    out = {"html": folder / "report.html", "markdown": folder / "report.md"}
    for fig in content.figures:
        (folder / fig.name).write_bytes(fig.png)
        out[Path(fig.name).stem] = folder / fig.name
    out["markdown"].write_text(_renamed(render_markdown(content)), encoding="utf-8")
    out["html"].write_text(_html(content), encoding="utf-8")
    return out


def write_choice_report(
    choice: Choice,
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    setting: tuple[tuple[str, str], ...] = (),
    option: str = "path",
) -> dict[str, Path]:
    """Write the report folder atomically; returns {"html", "markdown", "frontier"} paths."""
    from persuasive.files.output import OutputFolder, relocate

    folder = OutputFolder(path, force=force, option=option, kind="choice")
    content = report_content(choice, setting)
    with folder as tmp:
        paths = write_files(content, tmp)
    return relocate(paths, tmp, folder.path)
