"""The self-contained HTML report and :func:`write_report` (``--report DIR``).

``report.html`` needs nothing but itself: CSS inline, every figure a ``data:image/png;base64``
URL, no external reference. A tiny inline script records, once the page has loaded, how many
``<img>`` elements decoded (``document.body.dataset.imagesLoaded``) out of how many there are
(``dataset.imagesTotal``), so that a headless browser can check that every image is present.
"""

from __future__ import annotations

import base64
import functools
import html
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from persuasive._io import atomic_write
from persuasive.report.content import ReportContent, report_content
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
        cls = "hash" if "SHA-256" in key else ""
        out.append(f'<tr><td class="k">{_e(key)}</td><td class="{cls}">{_e(value)}</td></tr>')
    return "<table>\n" + "\n".join(out) + "\n</table>"


def _preview(content: ReportContent) -> str:
    if not content.preview_columns:
        return ""
    head = "".join(f"<th>{_e(c)}</th>" for c in content.preview_columns)
    body = []
    for row in content.preview_rows:
        cells = "".join(
            f'<td class="sup">{_e(v)}</td>' if v == "suppressed" else f"<td>{_e(v)}</td>"
            for v in row
        )
        body.append(f"<tr>{cells}</tr>")
    note = " (suppressed cells are published as missing, not as zero)" * (content.kind == "table")
    return (
        f"<p>First {len(content.preview_rows)} of {content.preview_total} released rows"
        f"{note}:</p>\n"
        f"<table>\n<tr>{head}</tr>\n" + "\n".join(body) + "\n</table>"
    )


def render_html(content: ReportContent) -> str:
    """The self-contained HTML page of a report.

    Parameters
    ----------
    content : ReportContent
        From :func:`persuasive.report.content.report_content`.

    Returns
    -------
    str
        An HTML5 document with inline CSS, inline images and no external reference.
    """
    figures = []
    for fig in content.figures:
        data = base64.b64encode(fig.png).decode("ascii")
        figures.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{_e(fig.caption)}" '
            f'width="640" height="400"><figcaption>{_e(fig.caption)}</figcaption></figure>'
        )
    notes = "".join(f"<li>{_e(n)}</li>" for n in content.notes)
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
        "<h2>What was released</h2>",
        _pairs(content.released),
        _preview(content),
        "<h2>The certificate</h2>",
        _pairs(content.certificate),
        f'<ul class="notes">{notes}</ul>' if notes else "",
        "<p>Anyone can re-check the certificate from its spec alone, without the data: "
        "<code>persuasive verify CERTIFICATE.json</code>.</p>",
        "<h2>Figures</h2>",
        *figures,
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _write_file(tmp: Path, *, data: bytes) -> None:
    tmp.write_bytes(data)
    tmp.chmod(0o644)  # the temporary file is private (mkstemp); a report is for sharing


def _write_all(directory: Path, files: dict[str, str | bytes]) -> dict[str, Path]:
    out = {}
    for name, data in files.items():
        raw = data.encode("utf-8") if isinstance(data, str) else data
        out[name] = atomic_write(directory / name, functools.partial(_write_file, data=raw))
    return out


def write_report(
    directory: str | os.PathLike[str], release: Any, *, target_kappa: float | None = None
) -> dict[str, Path]:
    """Write the report of a release: ``report.html``, ``report.md`` and its PNG figures.

    Everything is computed in memory first. If ``directory`` does not exist, the files are
    written into a temporary folder beside it which is then renamed onto ``directory``;
    otherwise each file is replaced atomically. Either way an error leaves nothing behind.

    Parameters
    ----------
    directory : str or path-like
        The report folder.
    release : release object
        A table, mean or group-means release (:mod:`persuasive.report.content`).
    target_kappa : float, optional
        The κ the Sender asked for (drawn on the calibration curve).

    Returns
    -------
    dict of str to Path
        ``"html"``, ``"markdown"`` and one entry per figure (its file name without suffix).
    """
    content = report_content(release, target_kappa=target_kappa)
    files: dict[str, str | bytes] = {fig.name: fig.png for fig in content.figures}
    files["report.md"] = render_markdown(content)
    files["report.html"] = render_html(content)
    dest = Path(directory)
    if dest.exists() and not dest.is_dir():
        from persuasive.errors import ValidationError

        raise ValidationError(f"report directory '{dest}' exists and is not a folder")
    if dest.is_dir():
        written = _write_all(dest, files)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
        try:
            tmp.chmod(0o755)  # mkdtemp makes it private; a report folder is for sharing
            _write_all(tmp, files)
            os.rename(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        written = {name: dest / name for name in files}
    result = {"html": written["report.html"], "markdown": written["report.md"]}
    result.update({Path(n).stem: p for n, p in written.items() if n.endswith(".png")})
    return result
