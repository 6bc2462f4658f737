"""The report of a suppressed count table: what was released, the certificate, the figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from persuasive.report import plots
from persuasive.report.content import (
    PREVIEW_ROWS,
    Figure,
    ReportContent,
    Section,
    certificate_section,
    fmt,
)

__all__ = ["preview_section", "table_report"]


def preview_section(frame: pl.DataFrame, title: str, note: str = "") -> Section:
    """The first rows of a published frame (a missing value shown as *suppressed*)."""
    head = frame.head(PREVIEW_ROWS)
    rows = [["suppressed" if v is None else fmt(v) for v in row] for row in head.iter_rows()]
    text = f"First {head.height} of {frame.height} published rows{note}."
    return Section(title, columns=list(head.columns), rows=rows, text=text)


def _released(rel: Any, doc: Mapping[str, Any]) -> Section:
    receiver = rel.receiver.describe()
    s = rel.summary()
    pairs = [
        ("what", "a table of counts with small cells suppressed (Prop 8)"),
        ("threshold h", fmt(rel.h)),
        ("score threshold r", fmt(rel.r)),
        ("Receiver model", ", ".join(f"{k}={fmt(v)}" for k, v in receiver.items())),
        ("α = smallest prior mass below h", fmt(rel.alpha)),
        ("cells", fmt(s["n_cells"])),
        ("suppressed", f"{s['n_suppressed']} ({100 * s['share_suppressed']:.3g}%)"),
        ("largest per-cell loss (custodian only)", fmt(s["max_loss"])),
    ]
    if doc["claim"].get("target_kappa") is not None:
        pairs.insert(3, ("target κ", fmt(doc["claim"]["target_kappa"])))
    return Section("What was released", pairs=pairs)


def _figures(rel: Any, target_kappa: float | None) -> list[Figure]:
    hs = np.arange(1, max(3 * rel.h, 10) + 1)
    xs, kappas = rel.calibration_curve(hs)
    figs = [
        Figure(
            "calibration.png",
            "Calibration: the proven κ against the threshold h.",
            plots.calibration_plot(
                xs, kappas, xlabel="threshold h", current=float(rel.h), target_kappa=target_kappa
            ),
        )
    ]
    losses = rel.table.get_column("loss").to_numpy()
    figs.append(
        Figure(
            "loss.png",
            "Per-cell relative loss under the worst prior in the class (counts on a log scale).",
            plots.loss_histogram(losses, kappa=rel.kappa),
        )
    )
    law = rel.receiver.worst_prior(rel.h)
    upper = rel.h + max(rel.h, 10)
    if hasattr(law, "ppf"):  # the bulk of a scipy law (99.9%), within reason
        upper = int(min(max(upper, float(law.ppf(0.999)) + 1), 10 * upper))
    support = np.arange(upper)
    pmf = law.pmf(support) if hasattr(law, "pmf") else np.asarray(law, dtype=float)[: support.size]
    figs.append(
        Figure(
            "worst_cell.png",
            "A small cell under the least favourable prior of the class: the Receiver's prior "
            "against its posterior once the cell is suppressed.",
            plots.cell_prior_posterior_plot(pmf, rel.h, cell="a small cell"),
        )
    )
    return figs


def table_report(rel: Any, doc: Mapping[str, Any], target_kappa: float | None) -> ReportContent:
    """The report of a :class:`~persuasive.release.tables.TableRelease` (in memory)."""
    return ReportContent(
        title="Persuasive Privacy report: a table of counts with small cells suppressed",
        sentence=str(doc["guarantee"]["statement"]),
        sections=[
            _released(rel, doc),
            preview_section(
                rel.published,
                "The published table (released.*)",
                " (a suppressed cell is published as missing, not as zero)",
            ),
            certificate_section(doc),
        ],
        notes=[
            *doc["notes"],
            "This report is for the custodian: the per-cell losses describe the data and are "
            "not published.",
        ],
        figures=_figures(rel, target_kappa),
    )
