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
    of = f"“{p.value}”"
    pairs = [
        (
            "what",
            f"one mean of the column {of} per “{p.group}” group"
            if grouped
            else f"the mean of the column {of}",
        ),
        (
            "Receivers covered",
            f"Gaussian priors whose guess of the mean is at most {fmt(math.sqrt(p.r1))} prior "
            f"standard deviations off (r1 = {fmt(p.r1)}) and whose correlations are balanced "
            f"(r2 = {fmt(p.r2)})"
            + (
                f"; prior standard deviation of the mean at most {fmt(p.max_mean_sd)}"
                if p.max_mean_sd is not None
                else ""
            )
            + (
                f"; at most {fmt(p.max_person_error)} prior standard deviations wrong about "
                f"any one person (r0 = {fmt(p.max_person_error)})"
                if p.max_person_error is not None
                else ""
            ),
        ),
        (
            "noise",
            "none (the exact mean)"
            if p.noise_sd is None
            else f"Gaussian, standard deviation {fmt(p.noise_sd)}",
        ),
        ("δ, the probability the bound may fail", fmt(p.delta)),
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
            preview_section(
                rel.published,
                "The published means (released.*)",
                "; means rounded to 4 significant digits here, exact in the file",
            ),
        ]
    else:
        pairs += [
            ("individuals n (custodian only)", f"{rel.n:,}"),
            ("released mean", f"{fmt(rel.value)} (exact value in released.json)"),
        ]
        sections = [Section("What was released", pairs=pairs)]
    sections.append(certificate_section(doc))
    xs, kappas, label = rel.calibration_curve()
    against_noise = label.startswith("Gaussian noise sd")
    current = p.noise_sd if against_noise else p.r1
    how = (
        "the dotted line is the value used. Look at how fast κ grows with it."
        if current is not None
        else f"the exact mean released here is noise sd 0, κ = {fmt(rel.certificate.kappa)}. "
        "Look at how fast κ falls as noise is added: against this class noise pays."
    )
    figures = [
        Figure(
            "calibration.png",
            f"The κ proven against the {label}, the other settings as released; {how}",
            plots.calibration_plot(
                xs, kappas, xlabel=label, current=current, target_kappa=target_kappa
            ),
        )
    ]
    kappa = float(rel.certificate.kappa)
    if p.noise_sd is None and p.max_person_error is None and math.isfinite(kappa) and kappa > 0:
        figures.append(
            Figure(
                "worst_individual.png",
                f"The Receiver of the class that reaches κ for r1 = {fmt(p.r1)}, r2 = "
                f"{fmt(p.r2)}, for its most exposed person (units: that person's prior "
                "standard deviations): the prior (blue) and the belief once the mean is "
                "published (red). Look at the height of both curves at the true value: it "
                "rises by e to the power κ/2, and for no Receiver of the class by more. A "
                "construction from the proof, not the data.",
                plots.gaussian_prior_posterior_plot(kappa, p.r1, p.r2),
            )
        )
    title = (
        f"one mean of “{p.value}” per “{p.group}” group" if grouped else f"the mean of “{p.value}”"
    )
    return ReportContent(
        title="Persuasive Privacy report: " + title,
        sentence=str(doc["guarantee"]["statement"]),
        sections=sections,
        notes=list(doc["notes"]),
        figures=figures,
    )
