r"""The whole release workflow on real public data: ``persuasive demo``.

Two releases of data that :mod:`statsmodels` ships (see :mod:`persuasive.release.data`), each
written as a folder with the released data, its certificate (``certificate.json``) and a report
(``report/report.html`` and ``report/report.md``), then re-checked with
:func:`persuasive.report.verify.verify_certificate`:

1. **A count table, with cell suppression (Prop 8).** Breast-cancer deaths in 301 US counties
   (``cancer``), keyed by ``county``. Cells below :data:`CANCER_H` = 10 are suppressed — the
   threshold of many public-health agencies (e.g. CDC WONDER suppresses counts below 10). The
   Receiver is stated *before* looking at the data (Assumption 1): each county's count has a
   negative-binomial prior with mean between :data:`CANCER_MEAN` = (1, 40) and size 1 (a
   geometric law: the counties differ in population by two orders of magnitude, so a Receiver
   is very unsure of any one count). The least favourable such prior has mean 40 and puts
   α = P(X < 10) ≈ 0.22 on small counts, so the certified bound is κ = −log α ≈ 1.52 nats
   (exact: attained by that prior). The demo also solves the Sender's design problem the
   other way round: the smallest h with κ ≤ :data:`CANCER_TARGET_KAPPA`.
2. **Means, released exactly (Prop 7).** Fair's affairs survey (6366 women): the mean of
   ``affairs`` over everybody, and one mean per ``religious`` group (four groups) as separate
   releases combined by parallel composition (Receivers whose prior treats the groups as
   independent; a Receiver whose prior correlates the groups is *not* covered, and the demo
   shows the library's refusal for that case). The Receivers are the Gaussian class
   :math:`\mathcal G^r_x` with :data:`FAIR_R` = (r1, r2) = (1, 4): the Receiver's prior guess
   of the mean is off by at most one prior standard deviation (r1 = 1) and its correlation
   structure is not too lopsided (r2 = 4), so κ = r1 + log r2 ≈ 2.39 per mean. If the group
   release is refused (its conditions do not hold), the refusal is part of the demo's output.

The output folder is written like every release folder (:class:`persuasive.files.output
.OutputFolder`): atomically, private until complete, removed on an interruption; an existing
folder is replaced only if it holds an earlier demo and nothing else (a file of yours in it is
never deleted, ``--force`` or not).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from persuasive.errors import PersuasiveError

#: Cell-suppression threshold of the demo's count table.
CANCER_H = 10
#: Range of the mean of the Receiver's negative-binomial cell priors, and their size.
CANCER_MEAN = (1.0, 40.0)
CANCER_SIZE = 1.0
#: The κ the demo's calibration step aims for (smallest h with −log α(h) ≤ this).
CANCER_TARGET_KAPPA = 1.0
#: (r1, r2) of the Gaussian Receiver class of the demo's means.
FAIR_R = (1.0, 4.0)
#: The marker kind of a demo folder (which a later demo may replace).
DEMO_KIND = "demo"

#: The steps :func:`run_demo` reports to its ``on_step`` callback, in order.
DEMO_STEPS = (
    "read the county cancer counts",
    "release the table (cell suppression)",
    "calibrate the threshold",
    "write the table's certificate and report",
    "read the affairs survey",
    "release the overall mean",
    "release the group means (and the refused case)",
    "write the means' certificates and reports",
    "verify the certificates",
)


@dataclass(frozen=True)
class DemoItem:
    """One release of the demo: where it was written and what it guarantees."""

    name: str
    title: str
    files: dict[str, Path] = field(default_factory=dict)
    kappa: float | None = None
    holds: bool = False
    sentence: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    refusal: str | None = None
    verified: bool | None = None
    mismatches: tuple[str, ...] = ()
    command: str = ""

    @property
    def ok(self) -> bool:
        """Released and verified, or refused with a message (a refusal is a correct answer)."""
        return self.refusal is not None or (self.holds and self.verified is True)


@dataclass(frozen=True)
class DemoResult:
    """Everything :func:`run_demo` wrote and checked."""

    directory: Path
    items: tuple[DemoItem, ...]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.items) and all(i.ok for i in self.items)

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "ok": self.ok,
            "notes": list(self.notes),
            "releases": [
                {
                    "name": i.name,
                    "title": i.title,
                    "files": {k: str(p) for k, p in i.files.items()},
                    "kappa": i.kappa,
                    "holds": i.holds,
                    "guarantee": i.sentence,
                    "refusal": i.refusal,
                    "verified": i.verified,
                    "mismatches": list(i.mismatches),
                    "command": i.command,
                }
                for i in self.items
            ],
        }


def _item(
    name: str, title: str, doc: dict[str, Any], files: dict[str, Path], summary: Any, command: str
) -> DemoItem:
    g = doc["guarantee"]
    kappa = g["kappa"]
    return DemoItem(
        name=name,
        title=title,
        files=files,
        kappa=math.inf if kappa == "inf" else float(kappa),
        holds=bool(g["holds"]),
        sentence=str(g["statement"]),
        summary=dict(summary),
        command=command,
    )


def run_demo(
    out_dir: str | os.PathLike[str] = "persuasive-demo",
    *,
    force: bool = False,
    report: bool = True,
    on_step: Callable[[str], None] | None = None,
) -> DemoResult:
    """Release the bundled real data sets into ``out_dir`` and verify the certificates.

    Parameters
    ----------
    out_dir : path
        The output folder: new, empty, or an earlier demo holding nothing else.
    force : bool
        Also replace a release folder persuasive wrote (never a folder with other files).
    report : bool
        Also write the HTML/Markdown reports (the slow part: plots).
    on_step : callable, optional
        Called with each step's description (:data:`DEMO_STEPS`) before it runs.
    """
    from persuasive.classes.receivers import NegativeBinomialReceiver
    from persuasive.files.output import OutputFolder, relocate
    from persuasive.release.calibrate import calibrate_threshold
    from persuasive.release.data import load_cancer_counts, load_fair
    from persuasive.release.means import release_group_means, release_mean
    from persuasive.release.pipeline import write_release
    from persuasive.release.tables import release_table
    from persuasive.report.verify import verify_certificate

    folder = OutputFolder(
        out_dir, force=force, option="OUT_DIR", kind=DEMO_KIND, replace_kinds=(DEMO_KIND,)
    )
    dest = folder.check()
    step = on_step or (lambda _s: None)
    steps = iter(DEMO_STEPS)
    items: list[DemoItem] = []
    notes: list[str] = []
    with folder as tmp:
        step(next(steps))
        cancer = load_cancer_counts()
        (tmp / "input").mkdir()
        cancer.write_csv(tmp / "input" / "cancer_counts.csv")

        step(next(steps))
        receiver = NegativeBinomialReceiver(CANCER_MEAN[0], CANCER_MEAN[1], CANCER_SIZE)
        table = release_table(
            tmp / "input" / "cancer_counts.csv",
            keys=["county"],
            count="cancer",
            h=CANCER_H,
            receiver=receiver,
        )

        step(next(steps))
        h_star = calibrate_threshold(receiver, CANCER_TARGET_KAPPA)
        notes.append(
            f"Calibration: under the same Receivers, the smallest threshold with "
            f"κ ≤ {CANCER_TARGET_KAPPA:g} is h = {h_star} "
            f"(κ = {-math.log(receiver.alpha(h_star)):.3f})."
        )

        step(next(steps))
        doc, files = write_release(table, tmp / "cancer_table", report=report)
        items.append(
            _item(
                "cancer_table",
                f"County breast-cancer counts, cells below {CANCER_H} suppressed (Prop 8)",
                doc,
                files,
                table.summary(),
                f"persuasive release table {dest / 'input' / 'cancer_counts.csv'} "
                f"--keys county --count cancer --h {CANCER_H} "
                f"--negbin-mean {CANCER_MEAN[0]:g}:{CANCER_MEAN[1]:g} "
                f"--negbin-size {CANCER_SIZE:g} --out OUT_DIR --report",
            )
        )

        step(next(steps))
        fair = load_fair()
        fair.write_csv(tmp / "input" / "fair.csv")
        r1, r2 = FAIR_R

        step(next(steps))
        mean = release_mean(fair.get_column("affairs").to_numpy(), r1=r1, r2=r2, column="affairs")
        mean_cmd = (
            f"persuasive release mean {dest / 'input' / 'fair.csv'} --column affairs "
            f"--r1 {r1:g} --r2 {r2:g} --out OUT_DIR --report"
        )

        step(next(steps))
        group: Any = None
        refusal: str | None = None
        try:
            group = release_group_means(
                tmp / "input" / "fair.csv", value="affairs", group="religious", r1=r1, r2=r2
            )
        except PersuasiveError as exc:
            refusal = " ".join(str(exc).split())
        try:  # a Receiver whose prior correlates the groups: not covered, and said so
            release_group_means(
                fair, value="affairs", group="religious", r1=r1, r2=r2, independent_groups=False
            )
            joint_refusal = None
        except PersuasiveError as exc:
            joint_refusal = " ".join(str(exc).split())

        step(next(steps))
        doc, files = write_release(mean, tmp / "affairs_mean", report=report)
        items.append(
            _item(
                "affairs_mean",
                "Mean of 'affairs' over all 6366 respondents, exact (Prop 7)",
                doc,
                files,
                mean.summary(),
                mean_cmd,
            )
        )
        title = (
            "Mean of 'affairs' per 'religious' group, exact (Prop 7; parallel composition, "
            "groups independent a priori)"
        )
        if group is not None:
            doc, files = write_release(group, tmp / "affairs_by_religious", report=report)
            items.append(
                _item(
                    "affairs_by_religious",
                    title,
                    doc,
                    files,
                    group.summary(),
                    mean_cmd + " --group religious",
                )
            )
        else:
            items.append(
                DemoItem(name="affairs_by_religious", title=title, refusal=refusal or "refused")
            )
        if joint_refusal is not None:
            items.append(
                DemoItem(
                    name="affairs_by_religious_joint",
                    title="The same group means against Receivers whose prior correlates the "
                    "groups",
                    refusal=joint_refusal,
                )
            )
        items = [replace(i, files=relocate(i.files, tmp, dest)) for i in items]

    step(next(steps))
    checked = []
    for item in items:
        if "certificate" not in item.files:
            checked.append(item)
            continue
        result = verify_certificate(
            item.files["certificate"], published=item.files["certificate"].parent
        )
        checked.append(replace(item, verified=bool(result.ok), mismatches=tuple(result.mismatches)))
    return DemoResult(directory=dest, items=tuple(checked), notes=tuple(notes))
