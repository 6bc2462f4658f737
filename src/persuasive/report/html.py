"""The self-contained HTML report and :func:`write_report` (``--report DIR``).

``report.html`` needs nothing but itself: CSS inline, every figure a ``data:image/png;base64``
URL, no external reference. A tiny inline script records, once the page has loaded, how many
``<img>`` elements decoded (``document.body.dataset.imagesLoaded``) out of how many there are
(``dataset.imagesTotal``), so that a headless browser can check that every image is present.
"""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path

from persuasive.report.content import ReportContent, Section
from persuasive.report.markdown import render_markdown

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 60rem;
       margin: 2rem auto; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.5rem; border-bottom: 2px solid #1f77b4; padding-bottom: .3rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; color: #1f4e79; }
.guarantee { font-size: 1.15rem; background: #eef5fb; border-left: 5px solid #1f77b4;
             padding: .8rem 1rem; margin: 1rem 0; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .92rem; }
td, th { border: 1px solid #ccc; padding: .25rem .6rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.k { font-weight: 600; white-space: nowrap; }
td.hash { font-family: monospace; font-size: .8rem; word-break: break-all; }
td.sup { color: #999; font-style: italic; }
p.statement { font-size: .95rem; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: .9rem; color: #555; }
ul.notes { font-size: .9rem; color: #444; }
code { background: #f3f3f3; padding: 0 .2rem; }
"""

_SCRIPT = """
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; });
  document.body.dataset.imagesLoaded = String(ok.length);
  document.body.dataset.imagesTotal = String(imgs.length);
});
"""


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _pairs(rows: list[tuple[str, str]]) -> str:
    out = []
    for key, value in rows:
        cls = "hash" if ("SHA-256" in key or key == "digest") else ""
        out.append(f'<tr><td class="k">{_e(key)}</td><td class="{cls}">{_e(value)}</td></tr>')
    return "<table>\n" + "\n".join(out) + "\n</table>"


def _section(sec: Section) -> str:
    parts = [f"<h2>{_e(sec.title)}</h2>"]
    if sec.pairs:
        parts.append(_pairs(sec.pairs))
    if sec.columns:
        head = "".join(f"<th>{_e(c)}</th>" for c in sec.columns)
        body = "".join(
            "<tr>"
            + "".join(
                f'<td class="sup">{_e(c)}</td>' if c == "suppressed" else f"<td>{_e(c)}</td>"
                for c in row
            )
            + "</tr>"
            for row in sec.rows
        )
        parts.append(f"<table><tr>{head}</tr>{body}</table>")
    if sec.text:
        parts.append(f'<p class="statement">{_e(sec.text)}</p>')
    return "\n".join(parts)


def render_html(content: ReportContent) -> str:
    """The self-contained HTML page of a report: inline CSS, inline images, no external
    reference."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(content.title)}</title>",
        f"<style>{_CSS}</style>",
        f"<script>{_SCRIPT}</script>",
        "</head><body>",
        f"<h1>{_e(content.title)}</h1>",
        "<h2>The guarantee</h2>",
        f'<p class="guarantee">{_e(content.sentence)}</p>',
        *(_section(sec) for sec in content.sections),
    ]
    if content.notes:
        parts.append(
            '<h2>Notes</h2><ul class="notes">'
            + "".join(f"<li>{_e(n)}</li>" for n in content.notes)
            + "</ul>"
        )
    if content.figures:
        parts.append("<h2>Figures</h2>")
    for fig in content.figures:
        data = base64.b64encode(fig.png).decode("ascii")
        parts.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{_e(fig.caption)}" '
            f'width="640" height="400"><figcaption>{_e(fig.caption)}</figcaption></figure>'
        )
    return "\n".join([*parts, "</body></html>"]) + "\n"


def write_report(directory: str | os.PathLike[str], content: ReportContent) -> dict[str, Path]:
    """Write ``report.html``, ``report.md`` and the PNG figures into ``directory``.

    The folder is created; the release pipeline calls this inside its private output folder,
    which is renamed into place only once everything is written (so nothing half-written is
    ever visible).

    Returns
    -------
    dict of str to Path
        ``"html"``, ``"markdown"`` and one entry per figure (its file name without suffix).
    """
    dest = Path(directory)
    dest.mkdir(parents=True, exist_ok=True)
    out = {"html": dest / "report.html", "markdown": dest / "report.md"}
    for fig in content.figures:
        (dest / fig.name).write_bytes(fig.png)
        out[Path(fig.name).stem] = dest / fig.name
    out["markdown"].write_text(render_markdown(content), encoding="utf-8")
    out["html"].write_text(render_html(content), encoding="utf-8")
    return out
