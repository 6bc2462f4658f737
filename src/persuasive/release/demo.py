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

The output folder is written atomically (:func:`atomic_directory`): nothing is left behind if a
step fails, and an existing folder is replaced only if it holds a previous demo (or ``force``).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from persuasive.errors import PersuasiveError, ValidationError

#: Cell-suppression threshold of the demo's count table.
CANCER_H = 10
#: Range of the mean of the Receiver's negative-binomial cell priors, and their size.
CANCER_MEAN = (1.0, 40.0)
CANCER_SIZE = 1.0
#: The κ the demo's calibration step aims for (smallest h with −log α(h) ≤ this).
CANCER_TARGET_KAPPA = 1.0
#: (r1, r2) of the Gaussian Receiver class of the demo's means.
FAIR_R = (1.0, 4.0)
#: The manifest that marks a folder as a demo output (so the demo may replace it).
MANIFEST = "demo.json"

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


# --------------------------------------------------------------------------------------------
# Output folders: atomic, never overwriting somebody's files by accident
# --------------------------------------------------------------------------------------------


def check_output_dir(
    path: str | os.PathLike[str], *, force: bool = False, name: str = "--out"
) -> Path:
    """Return ``path`` if it may be (re)written: missing, an empty folder, or ``force``.

    Raises a ValidationError naming the folder and the fix otherwise (so a command can fail
    before doing any work).
    """
    dest = Path(path)
    if dest.exists() and not dest.is_dir():
        raise ValidationError(f"{name} '{dest}' exists and is not a folder; choose another one")
    if dest.is_dir() and any(dest.iterdir()) and not force:
        raise ValidationError(
            f"{name} '{dest}' exists and is not empty; choose another folder or pass --force "
            "to replace it"
        )
    return dest


@contextmanager
def atomic_directory(path: str | os.PathLike[str], *, force: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling folder of ``path``; move it onto ``path`` if the block succeeds.

    On an error the temporary folder is removed and ``path`` is left as it was (not created).
    An existing ``path`` is replaced only if it is empty or ``force`` is true.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_directory(root / "out") as tmp:
    ...     _ = (tmp / "a.txt").write_text("a")
    >>> sorted(p.name for p in (root / "out").iterdir()), sorted(p.name for p in root.iterdir())
    (['a.txt'], ['out'])
    >>> try:
    ...     with atomic_directory(root / "other") as tmp:
    ...         raise RuntimeError("late failure")
    ... except RuntimeError:
    ...     pass
    >>> sorted(p.name for p in root.iterdir())
    ['out']
    """
    dest = check_output_dir(path, force=force)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it private (0700); give it a normal folder's mode
    try:
        yield tmp
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".old", dir=dest.parent))
            os.replace(dest, old / dest.name)
            os.replace(tmp, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_release(
    directory: str | os.PathLike[str],
    release: Any,
    *,
    table_format: str = "csv",
    report: bool = True,
) -> dict[str, Path]:
    """Write a release into ``directory``: the released data, ``certificate.json``, ``report/``.

    Tables and group means are written as ``released.csv`` or ``released.parquet``
    (``table_format``), a single mean as ``released.json``. Returns the written paths by role
    (``"released"``, ``"certificate"``, ``"report"``).
    """
    from persuasive._io import atomic_write, atomic_write_text
    from persuasive.report.certificate import write_certificate

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    if release.kind == "table":
        files["released"] = out / f"released.{table_format}"
        release.write(files["released"])
    elif release.kind == "group_means":
        files["released"] = out / f"released.{table_format}"
        published = released_group_means(release)
        if table_format == "parquet":
            atomic_write(files["released"], published.write_parquet)
        else:
            atomic_write(files["released"], published.write_csv)
    else:
        files["released"] = out / "released.json"
        text = json.dumps({"mean": float(release.value)}, indent=2) + "\n"
        atomic_write_text(files["released"], text)
    files["certificate"] = out / "certificate.json"
    write_certificate(files["certificate"], release)
    if report:
        from persuasive.report.html import write_report

        files["report"] = out / "report" / "report.html"
        write_report(out / "report", release)
    return files


def released_group_means(release: Any) -> Any:
    """The published columns of a group-means release: the group and its mean only.

    The group sizes ``n`` that the release object keeps for the report are *not* published:
    they are counts, which the mean's certificate does not cover.
    """
    return release.values.select([c for c in release.values.columns if c != "n"])


def guarantee_sentence(release: Any) -> str:
    """The guarantee of ``release`` in one plain sentence (the report's wording)."""
    from persuasive.report.content import plain_sentence

    return str(plain_sentence(release))


# --------------------------------------------------------------------------------------------
# The demo
# --------------------------------------------------------------------------------------------


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


def _kappa(release: Any) -> float:
    return float(release.certificate.kappa)


def _relocate(files: dict[str, Path], tmp: Path, dest: Path) -> dict[str, Path]:
    return {k: dest / p.relative_to(tmp) for k, p in files.items()}


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
        The output folder. It may exist if it is empty or holds a previous demo (its
        ``demo.json``); otherwise pass ``force=True``.
    force : bool
        Replace ``out_dir`` whatever it holds.
    report : bool
        Also write the HTML/Markdown reports (the slow part: plots).
    on_step : callable, optional
        Called with each step's description (:data:`DEMO_STEPS`) before it runs.
    """
    from persuasive.classes.receivers import NegativeBinomialReceiver
    from persuasive.release.calibrate import calibrate_threshold
    from persuasive.release.data import load_cancer_counts, load_fair
    from persuasive.release.means import release_group_means, release_mean
    from persuasive.release.tables import release_table
    from persuasive.report.verify import verify_certificate

    dest = Path(out_dir)
    overwrite = force or (dest.is_dir() and (dest / MANIFEST).is_file())
    check_output_dir(dest, force=overwrite, name="OUT_DIR")
    step = on_step or (lambda _s: None)
    steps = iter(DEMO_STEPS)

    items: list[DemoItem] = []
    notes: list[str] = []
    with atomic_directory(dest, force=overwrite) as tmp:
        step(next(steps))
        cancer = load_cancer_counts()
        (tmp / "input").mkdir()
        cancer.write_csv(tmp / "input" / "cancer_counts.csv")

        step(next(steps))
        receiver = NegativeBinomialReceiver(CANCER_MEAN[0], CANCER_MEAN[1], CANCER_SIZE)
        table = release_table(
            cancer.select("county", "cancer"),
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
        files = write_release(tmp / "cancer_table", table, report=report)
        items.append(
            DemoItem(
                name="cancer_table",
                title=f"County breast-cancer counts, cells below {CANCER_H} suppressed (Prop 8)",
                files=files,
                kappa=_kappa(table),
                holds=bool(table.certificate.holds),
                sentence=guarantee_sentence(table),
                summary=dict(table.summary()),
                command=(
                    f"persuasive release table {dest / 'input' / 'cancer_counts.csv'} "
                    f"--keys county --count cancer --h {CANCER_H} "
                    f"--negbin-mean {CANCER_MEAN[0]:g}:{CANCER_MEAN[1]:g} "
                    f"--negbin-size {CANCER_SIZE:g} --out OUT_DIR --report"
                ),
            )
        )

        step(next(steps))
        fair = load_fair()
        fair.write_csv(tmp / "input" / "fair.csv")
        r1, r2 = FAIR_R

        step(next(steps))
        mean = release_mean(fair.get_column("affairs").to_numpy(), r1=r1, r2=r2)
        mean_cmd = (
            f"persuasive release mean {dest / 'input' / 'fair.csv'} --column affairs "
            f"--r1 {r1:g} --r2 {r2:g} --out OUT_DIR --report"
        )

        step(next(steps))
        group: Any = None
        refusal: str | None = None
        try:
            group = release_group_means(fair, value="affairs", group="religious", r1=r1, r2=r2)
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
        files = write_release(tmp / "affairs_mean", mean, report=report)
        items.append(
            DemoItem(
                name="affairs_mean",
                title="Mean of 'affairs' over all 6366 respondents, exact (Prop 7)",
                files=files,
                kappa=_kappa(mean),
                holds=bool(mean.certificate.holds),
                sentence=guarantee_sentence(mean),
                summary=dict(mean.summary()),
                command=mean_cmd,
            )
        )
        title = (
            "Mean of 'affairs' per 'religious' group, exact (Prop 7; parallel composition, "
            "groups independent a priori)"
        )
        if group is not None:
            files = write_release(tmp / "affairs_by_religious", group, report=report)
            items.append(
                DemoItem(
                    name="affairs_by_religious",
                    title=title,
                    files=files,
                    kappa=_kappa(group),
                    holds=bool(group.certificate.holds),
                    sentence=guarantee_sentence(group),
                    summary=dict(group.summary()),
                    command=mean_cmd + " --group religious",
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

        manifest = {
            "demo": "persuasive demo",
            "releases": [i.name for i in items],
            "notes": notes,
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")

        items = [replace(i, files=_relocate(i.files, tmp, dest)) for i in items]

    step(next(steps))
    checked = []
    for item in items:
        if "certificate" not in item.files:
            checked.append(item)
            continue
        result = verify_certificate(item.files["certificate"])
        mismatches = tuple(str(m) for m in result.mismatches)
        checked.append(replace(item, verified=bool(result.ok), mismatches=mismatches))
    return DemoResult(directory=dest, items=tuple(checked), notes=tuple(notes))
