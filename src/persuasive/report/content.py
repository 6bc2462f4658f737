"""What a report says: titled sections, notes and figures, rendered as HTML or Markdown.

Every release kind builds its :class:`ReportContent` from these primitives (its own sections:
what was released, per-cell tables, figures); :func:`certificate_section` states the certificate
the same way for every kind. Nothing here writes a file or knows a kind.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Figure", "ReportContent", "Section", "certificate_section", "fmt"]

#: Rows of a released table shown in a report.
PREVIEW_ROWS = 20

Pairs = list[tuple[str, str]]


@dataclass(frozen=True)
class Figure:
    """One figure of the report: a file name, a caption and the PNG bytes."""

    name: str
    caption: str
    png: bytes


@dataclass(frozen=True)
class Section:
    """A titled block: key-value pairs, a table (columns, rows) and/or a paragraph."""

    title: str
    pairs: Pairs = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    text: str = ""


@dataclass(frozen=True)
class ReportContent:
    """Everything a report shows (:mod:`persuasive.report.html`, :mod:`~.markdown`)."""

    title: str
    sentence: str
    sections: list[Section]
    notes: list[str]
    figures: list[Figure]


def fmt(x: Any) -> str:
    """A value for humans: 4 significant digits, ∞ for infinity, yes/no for booleans; integers
    (counts) exactly.

    Examples
    --------
    >>> fmt(1.0 / 3.0), fmt(float("inf")), fmt(True), fmt(None), fmt(12), fmt(1.51959)
    ('0.3333', '∞', 'yes', '-', '12', '1.52')
    """
    if isinstance(x, bool) or x is None:
        return {True: "yes", False: "no", None: "-"}[x]
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        if math.isnan(x):
            return "nan"
        return ("∞" if x > 0 else "−∞") if math.isinf(x) else f"{float(x):.4g}"
    if x == "inf":
        return "∞"
    return str(x)


def certificate_section(doc: Mapping[str, Any]) -> Section:
    """The certificate, as every report states it (from its document)."""
    from persuasive.report.words import proof_words

    g = doc["guarantee"]
    files = doc.get("publication", {}).get("files", [])
    delta = float(g["delta"]) if not isinstance(g["delta"], str) else math.inf
    return Section(
        "The certificate (certificate.json)",
        pairs=[
            ("guarantee holds", fmt(bool(g["holds"]))),
            ("κ proven (nats)", fmt(g["kappa"])),
            (
                "δ, the probability the bound may fail",
                "0 (it never fails)" if delta == 0 else fmt(g["delta"]),
            ),
            (
                "exact",
                "yes: some Receiver of the class reaches κ"
                if g["exact"]
                else "no: an upper bound (the worst case may be smaller)",
            ),
            ("proof", proof_words(str(g["basis"]))),
            *[
                (f"SHA-256 of the rows of {f['name']}", str(f["table"]["sha256"]))
                if isinstance(f.get("table"), dict)
                else (f"SHA-256 of {f['name']}", str(f.get("sha256")))
                for f in files
            ],
            ("digest", str(doc["digest"])),
            ("library", f"{doc['library']['name']} {doc['library']['version']}"),
            ("check it", "persuasive verify certificate.json --published ."),
        ],
    )
