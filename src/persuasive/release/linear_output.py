"""The report of a linear-statistics release."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from persuasive.release.table_report import preview_section
from persuasive.report import plots
from persuasive.report.content import Figure, ReportContent, Section, certificate_section, fmt

__all__ = ["linear_report"]


def linear_report(release: Any, doc: Mapping[str, Any]) -> ReportContent:
    """The report of a :class:`~persuasive.release.linear.LinearRelease` (in memory)."""
    xs, kappas, label = release.calibration_curve()
    png = plots.calibration_plot(
        xs, kappas, xlabel=label, current=release.noise_sd, target_kappa=release.target_kappa
    )
    summary = release.summary()
    released = Section(
        "What was released",
        pairs=[
            ("what", f"{release.values.height} linear statistics of {release.value!r}"),
            ("prior class", f"linear_gaussian(r1={fmt(release.r1)}, r2={fmt(release.r2)})"),
            ("noise sd", "none (exact)" if release.noise_sd is None else fmt(release.noise_sd)),
            ("withheld", ", ".join(summary["withheld"]) or "none"),
            ("individuals n", fmt(release.n)),
            *([("calibration", release.calibrated)] if release.calibrated else []),
        ],
    )
    return ReportContent(
        title="Persuasive Privacy report: linear statistics",
        sentence=str(doc["guarantee"]["statement"]),
        sections=[
            released,
            preview_section(release.values, "The published statistics (released.*)"),
            certificate_section(doc),
        ],
        notes=list(doc["notes"]),
        figures=[Figure("calibration.png", f"The proven κ against the {label}.", png)],
    )
