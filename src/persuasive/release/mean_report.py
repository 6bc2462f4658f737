"""The report of a released mean (or of group means)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from persuasive.release.table_report import preview_section
from persuasive.report import plots
from persuasive.report.content import Figure, ReportContent, Section, certificate_section, fmt

__all__ = ["mean_report"]


def mean_report(rel: Any, doc: Mapping[str, Any], target_kappa: float | None) -> ReportContent:
    """The report of a :class:`~persuasive.release.means.MeanRelease` or
    :class:`~persuasive.release.means.GroupMeansRelease` (in memory)."""
    p = rel.params
    grouped = p.group is not None
    pairs = [
        (
            "what",
            f"one mean of {p.value!r} per {p.group!r}" if grouped else f"the mean of {p.value!r}",
        ),
        (
            "Receivers",
            f"Gaussian class G^r: r1 = {fmt(p.r1)}, r2 = {fmt(p.r2)}"
            + (
                f", prior sd of the mean <= {fmt(p.max_mean_sd)}"
                if p.max_mean_sd is not None
                else ""
            ),
        ),
        ("noise", "none (exact)" if p.noise_sd is None else f"Gaussian, sd {fmt(p.noise_sd)}"),
        ("δ", fmt(p.delta)),
    ]
    if p.target_kappa is not None:
        pairs.append(("target κ", fmt(p.target_kappa)))
    sections = []
    if grouped:
        s = rel.summary()
        pairs += [
            ("groups", fmt(s["n_groups"])),
            ("smallest group (custodian only)", fmt(s["min_group_size"])),
        ]
        sections = [
            Section("What was released", pairs=pairs),
            preview_section(rel.published, "The published means (released.*)"),
        ]
    else:
        pairs += [
            ("individuals n (custodian only)", fmt(rel.n)),
            ("released mean", repr(rel.value)),
        ]
        sections = [Section("What was released", pairs=pairs)]
    sections.append(certificate_section(doc))
    xs, kappas, label = rel.calibration_curve()
    current = p.r1 if p.noise_sd is None else p.noise_sd
    figures = [
        Figure(
            "calibration.png",
            f"Calibration: the proven κ against the {label}.",
            plots.calibration_plot(
                xs, kappas, xlabel=label, current=current, target_kappa=target_kappa
            ),
        )
    ]
    kappa = float(rel.certificate.kappa)
    if math.isfinite(kappa) and kappa > 0:
        figures.append(
            Figure(
                "worst_individual.png",
                "One standardised individual: the prior against the posterior of a Receiver "
                "attaining κ (an illustration of the worst case, not of the data).",
                plots.gaussian_prior_posterior_plot(kappa, p.r1, p.r2),
            )
        )
    return ReportContent(
        title="Persuasive Privacy report: " + ("one mean per group" if grouped else "a mean"),
        sentence=str(doc["guarantee"]["statement"]),
        sections=sections,
        notes=list(doc["notes"]),
        figures=figures,
    )
