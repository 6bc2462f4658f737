"""The report of a linear-statistics release."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from persuasive.release.table_report import preview_section
from persuasive.report import plots
from persuasive.report.content import Figure, ReportContent, Section, certificate_section, fmt
from persuasive.report.words import plural

__all__ = ["linear_report"]


def linear_report(release: Any, doc: Mapping[str, Any]) -> ReportContent:
    """The report of a :class:`~persuasive.release.linear.LinearRelease` (in memory)."""
    xs, kappas, label = release.calibration_curve()
    png = plots.calibration_plot(
        xs, kappas, xlabel=label, current=release.noise_sd, target_kappa=release.target_kappa
    )
    summary = release.summary()
    k = release.values.height
    released = Section(
        "What was released",
        pairs=[
            ("what", f"{plural(k, 'linear statistic')} of the column “{release.value}”"),
            (
                "Receivers covered",
                f"Gaussian priors whose guess of the statistics is at most "
                f"{_sds(math.sqrt(release.r1))} off (r1 = {fmt(release.r1)}) and whose "
                f"correlations are balanced (r2 = {fmt(release.r2)})"
                + (
                    ""
                    if release.max_stat_sd is None
                    else f"; prior sd of each statistic at most {fmt(release.max_stat_sd)}"
                )
                + (
                    ""
                    if release.max_person_error is None
                    else f"; at most {_sds(release.max_person_error)} wrong about any one person"
                ),
            ),
            (
                "noise",
                "none (exact)"
                if release.noise_sd is None
                else f"Gaussian, standard deviation {fmt(release.noise_sd)} on each statistic",
            ),
            ("withheld", ", ".join(summary["withheld"]) or "none"),
            ("individuals n (custodian only)", f"{release.n:,}"),
            *([("calibration", release.calibrated)] if release.calibrated else []),
        ],
    )
    return ReportContent(
        title=f"Persuasive Privacy report: linear statistics of “{release.value}”",
        sentence=str(doc["guarantee"]["statement"]),
        sections=[
            released,
            preview_section(
                release.values,
                "The published statistics (released.*)",
                "; values rounded to 4 significant digits here, exact in the file",
            ),
            certificate_section(doc),
        ],
        notes=list(doc["notes"]),
        figures=[
            Figure(
                "calibration.png",
                f"The κ proven against the {label}, the other settings as released. Look at "
                "the noise needed to bring κ down to a level you can defend.",
                png,
            )
        ],
    )


def _sds(x: float) -> str:
    """``x`` prior standard deviation(s), the noun agreeing with the number."""
    return f"{fmt(x)} prior standard deviation{'' if fmt(x) == '1' else 's'}"
