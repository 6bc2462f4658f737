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
from persuasive.report.words import percent, receiver_words

__all__ = ["preview_section", "table_report"]


def preview_section(
    frame: pl.DataFrame, title: str, note: str = "", *, missing: str | None = None
) -> Section:
    """A preview of a published frame (a missing value shown as *suppressed*).

    The first :data:`PREVIEW_ROWS` rows, in the order of the published file. When ``missing``
    names a column with both missing and present values and the frame is longer than the
    preview, the preview is representative instead: the first rows with a value and the first
    rows without (half each, as far as there are), in file order, and the text says so.
    """
    rows_of = frame.with_row_index("__row")
    head = rows_of.head(PREVIEW_ROWS)
    text = f"The first {head.height} of {frame.height} published rows, in file order{note}."
    if missing is not None and frame.height > PREVIEW_ROWS:
        gone = rows_of.get_column(missing).is_null()
        n_gone = int(gone.sum())
        if 0 < n_gone < frame.height:
            half = PREVIEW_ROWS // 2
            k_gone = min(n_gone, max(half, PREVIEW_ROWS - (frame.height - n_gone)))
            k_shown = PREVIEW_ROWS - k_gone
            head = pl.concat(
                [rows_of.filter(~gone).head(k_shown), rows_of.filter(gone).head(k_gone)]
            ).sort("__row")
            text = (
                f"{head.height} of {frame.height} published rows, in file order: the first "
                f"{k_shown} shown and the first {k_gone} suppressed{note}."
            )
    head = head.drop("__row")
    rows = [["suppressed" if v is None else fmt(v) for v in row] for row in head.iter_rows()]
    return Section(title, columns=list(head.columns), rows=rows, text=text)


def _released(rel: Any, doc: Mapping[str, Any]) -> Section:
    s = rel.summary()
    pairs = [
        ("what", "a table of counts, every count below h suppressed"),
        ("threshold h", f"{rel.h} (a count below {rel.h} is suppressed)"),
        ("sensitive counts", f"below {rel.r} (the guarantee is about these)"),
        ("Receivers covered", receiver_words(rel.receiver.describe(), h=rel.h)),
        (f"their least prior probability of a count below {rel.h}", percent(rel.alpha)),
        ("cells", fmt(s["n_cells"])),
        (
            "suppressed",
            f"{s['n_suppressed']} of {s['n_cells']} ({percent(s['share_suppressed'])})",
        ),
        ("largest κ of a cell of this table (custodian only)", fmt(s["max_loss"])),
    ]
    if doc["claim"].get("target_kappa") is not None:
        pairs.insert(3, ("target κ", fmt(doc["claim"]["target_kappa"])))
    return Section("What was released", pairs=pairs)


def _figures(rel: Any, target_kappa: float | None) -> list[Figure]:
    hs = np.arange(2, max(3 * rel.h, 10) + 1)
    xs, kappas = rel.calibration_curve(hs)
    figs = [
        Figure(
            "calibration.png",
            f"The κ proven at each threshold h for the same Receivers; the dotted line is the h "
            f"used ({rel.h}). Look at how much a larger h would lower κ, and at what cost in "
            "suppressed cells.",
            plots.calibration_plot(
                xs, kappas, xlabel="threshold h", current=float(rel.h), target_kappa=target_kappa
            ),
        )
    ]
    losses = rel.table.get_column("loss").to_numpy()
    figs.append(
        Figure(
            "loss.png",
            "How many cells reach each loss under the worst prior of the class: every cell with "
            f"a true count below {rel.r} reaches κ, every other cell 0. Look at how many cells "
            "are at κ: those are the ones the guarantee protects.",
            plots.loss_histogram(
                losses,
                kappa=rel.kappa,
                labels={
                    0.0: f"published, or count {rel.r} or more",
                    float(rel.kappa): f"suppressed, count below {rel.r}",
                },
            ),
        )
    )
    law = rel.receiver.worst_prior(rel.h)
    upper = max(3 * rel.h, rel.h + 10)
    support = np.arange(upper)
    pmf = law.pmf(support) if hasattr(law, "pmf") else np.asarray(law, dtype=float)[: support.size]
    figs.append(
        Figure(
            "worst_cell.png",
            f"The worst Receiver of the class for h = {rel.h}, whose prior puts only "
            f"{percent(rel.alpha)} on counts below {rel.h}: its prior for a cell (blue) and its "
            "belief once it sees the cell suppressed "
            f"(red). Look at the counts below {rel.h}: each becomes at most e to the power κ "
            "times more probable, and no more.",
            plots.cell_prior_posterior_plot(pmf, rel.h),
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
                "; a suppressed cell is published as missing, not as zero",
                missing=rel.count,
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
