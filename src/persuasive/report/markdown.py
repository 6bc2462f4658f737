"""The Markdown summary of a release (``report.md``, figures as PNG files beside it)."""

from __future__ import annotations

from persuasive.report.content import ReportContent


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _pairs(rows: list[tuple[str, str]]) -> list[str]:
    out = ["| | |", "|---|---|"]
    out.extend(f"| {_cell(k)} | {_cell(v)} |" for k, v in rows)
    return out


def render_markdown(content: ReportContent) -> str:
    """The Markdown text of a report; figures are linked by their file names (relative)."""
    lines = [f"# {content.title}", "", "## The guarantee", "", f"> {content.sentence}", ""]
    for sec in content.sections:
        lines += [f"## {sec.title}", ""]
        if sec.pairs:
            lines += [*_pairs(sec.pairs), ""]
        if sec.columns:
            lines += ["| " + " | ".join(map(_cell, sec.columns)) + " |"]
            lines += ["|" + "---|" * len(sec.columns)]
            lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in sec.rows]
            lines.append("")
        if sec.text:
            lines += [sec.text, ""]
    if content.notes:
        lines += ["## Notes", "", *[f"- {_cell(n)}" for n in content.notes], ""]
    if content.figures:
        lines += ["## Figures", ""]
    for fig in content.figures:
        lines += [f"![{_cell(fig.caption)}]({fig.name})", "", f"*{_cell(fig.caption)}*", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
