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
    """The Markdown text of a report; figures are linked by their file names (relative).

    Parameters
    ----------
    content : ReportContent
        From :func:`persuasive.report.content.report_content`.

    Returns
    -------
    str
        Markdown ending with a newline.
    """
    lines = [f"# {content.title}", "", "## The guarantee", "", f"> {content.sentence}", ""]
    lines += ["## What was released", "", *_pairs(content.released), ""]
    if content.preview_columns:
        shown = len(content.preview_rows)
        lines += [
            f"First {shown} of {content.preview_total} released rows"
            + (" (suppressed cells are missing, not zero):" if content.kind == "table" else ":"),
            "",
            "| " + " | ".join(map(_cell, content.preview_columns)) + " |",
            "|" + "---|" * len(content.preview_columns),
        ]
        lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in content.preview_rows]
        lines.append("")
    lines += ["## The certificate", "", *_pairs(content.certificate), ""]
    if content.notes:
        lines += ["Notes:", "", *[f"- {_cell(n)}" for n in content.notes], ""]
    lines += [
        "Anyone can re-check the certificate from its spec alone, without the data: "
        "`persuasive verify CERTIFICATE.json`.",
        "",
        "## Figures",
        "",
    ]
    for fig in content.figures:
        lines += [f"![{_cell(fig.caption)}]({fig.name})", "", f"*{_cell(fig.caption)}*", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
