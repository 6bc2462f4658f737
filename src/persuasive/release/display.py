"""How results show themselves in a notebook: a one-line ``repr`` and a compact HTML block.

Every release result (:class:`~persuasive.release.tables.TableRelease`, the mean, group-means,
linear and margins releases) derives from :class:`ReleaseResult`, which gives it

* ``write(folder)``: the release folder, written through the pipeline
  (:func:`persuasive.release.pipeline.publish`: atomic, verified before it is in place);
* ``guarantee``: the certificate document's ``guarantee`` section (``holds``, ``kappa``,
  ``delta``, ``exact``, ``basis``, ``statement``), computed by the kind's code exactly as the
  pipeline computes it;
* ``__repr__``: one line (kind, κ, δ, holds, size, basis), and ``_repr_html_``: the guarantee
  sentence, κ, and the first rows of the *published* table.

The HTML shows only what is published: a suppressed cell is shown as "suppressed", never its
count (the custodian's views, ``TableRelease.table`` and ``MarginRelease.cells``, are never
read here). All text is escaped with :func:`html.escape`. :func:`certificate_html`,
:func:`verification_repr` and :func:`verification_html` serve
:class:`persuasive.results.Certificate` (whose one-line ``repr`` is its own, so that it needs no
import) and :class:`persuasive.report.verify.Verification`.
"""

from __future__ import annotations

import functools
import math
import os
import re
import tempfile
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any, ClassVar, TypeVar

__all__ = [
    "ROWS",
    "ReleaseResult",
    "certificate_html",
    "verification_html",
    "verification_repr",
]

#: How many rows of a published table the HTML block shows.
ROWS = 10

#: How a suppressed (or withheld) value is shown.
HIDDEN = "suppressed"

_STYLE = "font-family: sans-serif; line-height: 1.4; max-width: 60em"


def _num(x: Any) -> str:
    """κ, δ and other numbers as a person reads them: 4 significant digits, ∞ for infinity."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isinf(f):
        return "∞" if f > 0 else "-∞"
    return f"{f:.4g}"


def short_basis(basis: str, width: int = 72) -> str:
    """The theorem a guarantee rests on, short enough for one line: up to a colon, without a
    pointer into ``docs/`` (``"Linear statistics (persuasive extension of Prop 7, Bon et al.
    2026)"``)."""
    text = re.sub(r"[,;]\s*docs/[^)]*", "", str(basis)).split(":")[0].strip()
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _facts(pairs: Sequence[tuple[str, str]]) -> str:
    return " · ".join(f"{escape(k)}: {escape(v)}" for k, v in pairs)


def _block(title: str, headline: str, statement: str, body: str = "", facts: str = "") -> str:
    parts = [
        f'<div class="persuasive" style="{_STYLE}">',
        f"<p><strong>{escape(title)}</strong> — {escape(headline)}</p>",
        f"<p>{escape(statement)}</p>" if statement else "",
        f'<p style="font-size: smaller">{facts}</p>' if facts else "",
        body,
        "</div>",
    ]
    return "\n".join(p for p in parts if p)


def frame_html(frame: Any, hidden: Sequence[str] = (), *, what: str = "rows") -> str:
    """The first :data:`ROWS` rows of a published polars frame as an HTML table, and how many
    rows it has. A missing value in a ``hidden`` column (a suppressed count) reads
    "suppressed"; elsewhere it is empty."""
    cols = list(frame.columns)
    head = "".join(f"<th>{escape(str(c))}</th>" for c in cols)
    rows = []
    for row in frame.head(ROWS).iter_rows():
        tds = []
        for c, value in zip(cols, row, strict=True):
            if value is None:
                text = f'<em style="color: gray">{HIDDEN}</em>' if c in hidden else ""
                tds.append(f"<td>{text}</td>")
            else:
                tds.append(f"<td>{escape(_cell(value))}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    n = frame.height
    shown = f"first {ROWS} of {n:,} {what}" if n > ROWS else f"{n:,} {what}"
    return (
        f'<table style="border-collapse: collapse"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table>\n<p style="font-size: smaller">'
        f"{escape(shown)}</p>"
    )


def describe_receiver(receiver: Any) -> str:
    """A Receiver model in words: ``poisson (mean min 0, mean max 3)``."""
    d = dict(receiver.describe())
    model = str(d.pop("model", type(receiver).__name__)).replace("_", " ")
    inner = ", ".join(f"{str(k).replace('_', ' ')} {_num(v)}" for k, v in d.items())
    return f"{model} ({inner})" if inner else model


class ReleaseResult:
    """What every release result shares: ``write(folder)``, ``guarantee``, a short ``repr`` and
    ``_repr_html_`` (see the module docstring). A subclass states its ``kind`` and ``params``
    (the pipeline's :class:`~persuasive.release.pipeline.Release` protocol) and overrides
    :meth:`_display` with what it shows."""

    kind: ClassVar[str]
    params: Any
    published_files: Any  # the pipeline's protocol: name -> writer
    #: The files the release was read from: :meth:`write` never replaces a folder holding one.
    inputs: tuple[Path, ...] = ()

    def write(
        self,
        folder: str | os.PathLike[str],
        *,
        format: str = "csv",
        report: bool = False,
        force: bool = False,
    ) -> Path:
        """Write the release folder and return its path.

        The folder holds the published files (``released.csv`` or ``released.parquet``; a
        table with margins also ``margins.*``), ``certificate.json`` (which
        ``persuasive verify`` re-derives), the custodian's files where the kind has them
        (``custodian_*``: never publish those) and, with ``report=True``, ``report/``. It is
        written as the command line writes it (:func:`persuasive.release.pipeline.publish`):
        privately, read back and verified, then renamed into place; nothing of a failed
        write remains.

        Parameters
        ----------
        folder : str or path-like
            The destination folder: new, or (with ``force``) one persuasive wrote earlier.
        format : {"csv", "parquet"}
            The format of the published tables.
        report : bool
            Also write the custodian's report (HTML and Markdown, with plots).
        force : bool
            Replace a folder that persuasive wrote earlier (never any other folder).

        Returns
        -------
        pathlib.Path
            The folder.

        Notes
        -----
        For just the table, without a folder or certificate, use the published frame itself,
        e.g. ``rel.published.write_csv("table.csv")``: ``rel.published`` is a polars
        DataFrame, null where a cell is suppressed.
        """
        from persuasive import _validation as v
        from persuasive.files.output import OutputFolder
        from persuasive.release.pipeline import publish

        format = v.choice("format", format, ("csv", "parquet"))
        out = OutputFolder(
            folder, force=force, inputs=self.inputs, option="folder", kind=str(self.kind)
        )
        out.check()
        outcome = publish(
            self,  # type: ignore[arg-type]
            out,
            table_format=format,
            report=report,
            target_kappa=getattr(self.params, "target_kappa", None),
        )
        self.__dict__["guarantee"] = dict(outcome.document["guarantee"])
        return out.path

    @functools.cached_property
    def guarantee(self) -> dict[str, Any]:
        """The certificate's ``guarantee`` section (``holds``, ``kappa``, ``delta``, ``exact``,
        ``basis``, ``statement``), as ``certificate.json`` states it."""
        from persuasive.report.kinds import kind_of

        kind = kind_of(self.kind)
        if not kind.needs_publication:
            return dict(kind.certify(self.params, None).guarantee)
        writers = self.published_files("parquet")  # the guarantee follows from the published files
        with tempfile.TemporaryDirectory(prefix="persuasive-") as tmp:
            files = {name: Path(tmp) / name for name in writers}
            for name, write in writers.items():
                write(files[name])
            publication = kind.read_publication(self.params, files)
            return dict(kind.certify(self.params, publication).guarantee)

    # ------------------------------------------------------------------ display
    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        """(title, facts, published frame or None, columns whose missing values are
        suppressed); ``facts`` also make the ``repr``."""
        raise NotImplementedError  # pragma: no cover

    def _refusal(self) -> str | None:
        """The sentence of a refused release (linear statistics that expose someone), else
        None."""
        if not getattr(self, "refused", False):
            return None
        return str(getattr(self, "statement")())  # noqa: B009 - only refusable kinds have it

    def _statement(self) -> str:
        refusal = self._refusal()
        return refusal if refusal is not None else str(self.guarantee["statement"])

    def _verdict(self) -> tuple[str, str, str]:
        """(κ and δ, holds or not, basis) of the guarantee, or the refusal."""
        if self._refusal() is not None:
            return "κ=∞", "refused", "no certificate"
        g = self.guarantee
        holds = "holds" if g["holds"] else "does not hold"
        return f"κ={_num(g['kappa'])}, δ={_num(g['delta'])}", holds, short_basis(g["basis"])

    def __repr__(self) -> str:
        _, facts, _, _ = self._display()
        kd, holds, basis = self._verdict()
        size = ", ".join(f"{k}: {v}" for k, v in facts[:2])
        return f"<{type(self).__name__} {kd}, {holds}; {size}; {basis}>"

    def _repr_html_(self) -> str:
        title, facts, frame, hidden = self._display()
        kd, holds, basis = self._verdict()
        headline = f"{kd.replace('=', ' = ').replace(',', ' nats,', 1)} · {holds} · {basis}"
        body = "" if frame is None else frame_html(frame, hidden)
        return _block(title, headline, self._statement(), body, _facts(facts))


# --------------------------------------------------------------------------------------------
# Certificate and Verification
# --------------------------------------------------------------------------------------------


def certificate_html(cert: Any) -> str:
    """The certificate's sentence, κ, δ and basis (its notes, in the paper's notation, stay in
    ``cert.notes``)."""
    holds = "holds" if cert.holds else "does not hold"
    exact = "exact" if cert.exact else "an upper bound"
    headline = f"κ = {_num(cert.kappa)} nats ({exact}), δ = {_num(cert.delta)} · {holds}"
    facts = [("basis", short_basis(cert.basis)), ("notes", str(len(cert.notes)))]
    return _block("Certificate", headline, cert.explain(), "", _facts(facts))


def _verified(check: Any) -> str:
    if check.ok:
        return "verified"
    return "inconsistent" if not check.consistent else "consistent, claims no guarantee"


def _recomputed_guarantee(check: Any) -> dict[str, Any]:
    doc = check.recomputed or {}
    g = doc.get("guarantee")
    return g if isinstance(g, dict) else {}


def verification_repr(check: Any) -> str:
    """One line: verified or not, the kind, κ and δ recomputed, mismatches."""
    g = _recomputed_guarantee(check)
    kd = f"κ={_num(g['kappa'])}, δ={_num(g['delta'])}; " if "kappa" in g and "delta" in g else ""
    pub = "publication checked" if check.published_checked else "publication not checked"
    return (
        f"<Verification {_verified(check)}; {check.kind or 'unknown kind'}; {kd}{pub}; "
        f"{len(check.mismatches)} mismatch(es)>"
    )


def verification_html(check: Any) -> str:
    """Verified or not, the recomputed guarantee sentence, κ, and the first mismatches."""
    g = _recomputed_guarantee(check)
    head = [_verified(check)]
    if "kappa" in g:
        head.append(f"κ = {_num(g['kappa'])}")
    head.append("publication checked" if check.published_checked else "publication not checked")
    items = "".join(f"<li>{escape(m)}</li>" for m in check.mismatches[:ROWS])
    more = len(check.mismatches) - ROWS
    if more > 0:
        items += f"<li>… and {more} more</li>"
    body = f"<ul>{items}</ul>" if items else ""
    facts = _facts([("kind", check.kind)]) if check.kind else ""
    return _block("Verification", " · ".join(head), check.statement, body, facts)


_R = TypeVar("_R", bound=ReleaseResult)


def read_from(release: _R, source: Any) -> _R:
    """``release``, remembering the file it was read from (a path or a
    :class:`~persuasive.files.DataFile`; nothing for a frame or an array), so that
    :meth:`ReleaseResult.write` refuses a folder that holds it."""
    if isinstance(source, (str, os.PathLike)):
        release.__dict__["inputs"] = (Path(os.fspath(source)),)
    return release
