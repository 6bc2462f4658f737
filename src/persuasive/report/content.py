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
    """A value for humans: 6 significant digits, ``inf`` for infinity, yes/no for booleans.

    Examples
    --------
    >>> fmt(1.0 / 3.0), fmt(float("inf")), fmt(True), fmt(None), fmt(12)
    ('0.333333', 'inf', 'yes', '-', '12')
    """
    if isinstance(x, bool) or x is None:
        return {True: "yes", False: "no", None: "-"}[x]
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return "inf" if math.isinf(x) else ("nan" if math.isnan(x) else f"{float(x):.6g}")
    if x == "inf":
        return "inf"
    return str(x)


def certificate_section(doc: Mapping[str, Any]) -> Section:
    """The certificate, as every report states it (from its document)."""
    g = doc["guarantee"]
    files = doc.get("publication", {}).get("files", [])
    return Section(
        "The certificate (certificate.json)",
        pairs=[
            ("guarantee holds", fmt(bool(g["holds"]))),
            ("κ (proven)", fmt(g["kappa"])),
            ("δ", fmt(g["delta"])),
            ("exact", "yes" if g["exact"] else "no (an upper bound)"),
            ("basis", str(g["basis"])),
            *[(f"SHA-256 of {f['name']}", str(f["sha256"])) for f in files],
            ("digest", str(doc["digest"])),
            ("library", f"{doc['library']['name']} {doc['library']['version']}"),
            ("check it", "persuasive verify certificate.json --published ."),
        ],
    )
