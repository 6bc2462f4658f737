r"""One release pipeline for every kind: read → validate → release → certify → write → verify.

A release kind (a count table, a mean, linear statistics, a table with margins …) supplies only
what differs, through :class:`Release`:

``kind``, ``params``
    The certificate kind (:mod:`persuasive.report.kinds`) and the parameters of its claim.
``published_files(table_format)``
    The publication: file name → writer. Only these files are published.
``custodian(table_format)``
    Files with true values, for the custodian only (``custodian_*``); may be empty.
``report(document, target_kappa)``
    The report's content (:class:`persuasive.report.content.ReportContent`).
``expected(name)``
    What a published file must read back as, to prove it was written exactly: a polars frame,
    a JSON document, or the digest of a table's rows (``{"rows", "chunk_rows", "columns",
    "sha256"}``, :mod:`persuasive.files.table_digest`) for a table that stays on disk or in
    Spark; None: not checked.

Everything else lives here, once: the output folder (atomic, private while written, signals
cleaned up, the ``--force`` guard: :class:`persuasive.files.output.OutputFolder`), writing the
publication, reading it back and comparing it with what the release computed, computing the
certificate from the *written* publication by the kind's code, strict JSON, the report, and a
final :func:`persuasive.report.verify.verify_certificate` of the folder before it is renamed into
place. A release whose written files do not verify is an internal error and leaves nothing.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

import polars as pl

from persuasive.errors import ValidationError
from persuasive.files.output import OutputFolder, relocate

__all__ = [
    "STEPS",
    "InternalError",
    "Outcome",
    "Release",
    "frame_files",
    "publish",
    "write_frame",
    "write_json",
    "write_release",
]

#: The progress steps of a release, in order.
STEPS = ("read", "validate", "release", "certify", "write", "report", "verify")

Writer = Callable[[Path], object]


class InternalError(RuntimeError):
    """The release produced files that do not verify: a bug, reported as exit status 3."""


class Release(Protocol):
    """What a release kind gives the pipeline (see the module docstring)."""

    kind: ClassVar[str]

    @property
    def params(self) -> Any: ...

    def published_files(self, table_format: str) -> dict[str, Writer]: ...

    def custodian(self, table_format: str) -> dict[str, Writer]: ...

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any: ...

    def expected(self, name: str) -> pl.DataFrame | dict[str, Any] | None: ...


@dataclass(frozen=True)
class Outcome:
    """A written release: its certificate document and where every file is."""

    document: dict[str, Any]
    files: dict[str, Path]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def holds(self) -> bool:
        """Whether the certificate claims a guarantee that holds (``guarantee.holds``)."""
        return bool(self.document["guarantee"]["holds"])

    @property
    def statement(self) -> str:
        return str(self.document["guarantee"]["statement"])

    @property
    def kappa(self) -> float:
        k = self.document["guarantee"]["kappa"]
        return float(k)  # "inf" reads as infinity

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.document["kind"],
            "holds": self.holds,
            "files": {k: str(p) for k, p in self.files.items()},
            "certificate": self.document,
            "guarantee": self.statement,
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------------------------
# Writers: exact and strict
# --------------------------------------------------------------------------------------------


def write_frame(frame: pl.DataFrame) -> Callable[[str], Writer]:
    """A writer factory of a table in the format a file name says (``.csv`` or ``.parquet``).

    CSV: polars writes every string exactly (quoted when it holds a comma, a quote or a line
    break; an empty string as ``""``, a missing value as an empty field), integers as digits
    and floats by their shortest round-trip text. Parquet keeps the column types.
    """

    def for_name(name: str) -> Writer:
        suffix = Path(name).suffix.lower()

        def write(path: Path) -> None:
            if suffix == ".csv":
                frame.write_csv(path)
            elif suffix in (".parquet", ".pq"):
                frame.write_parquet(path)
            else:  # pragma: no cover - names are chosen by the kinds
                raise ValidationError(f"cannot write {name!r}: use .csv or .parquet")

        return write

    return for_name


def frame_files(frames: Mapping[str, pl.DataFrame], table_format: str) -> dict[str, Writer]:
    """The writers of published tables by stem: ``{"released": frame}`` -> ``released.csv``."""
    out = {}
    for stem, frame in frames.items():
        name = f"{stem}.{table_format}"
        out[name] = write_frame(frame)(name)
    return out


def write_json(doc: Mapping[str, Any]) -> Writer:
    """A writer of strict JSON (no NaN or Infinity: a non-finite number is a ValidationError)."""
    import json

    def write(path: Path) -> None:
        try:
            text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False, sort_keys=True)
        except ValueError:
            raise ValidationError(
                f"{path.name} would hold a number that is not finite (NaN or infinity); nothing "
                "is published"
            ) from None
        path.write_text(text + "\n", encoding="utf-8")

    return write


def _read_back(path: Path, like: pl.DataFrame) -> pl.DataFrame:
    if path.suffix.lower() == ".csv":
        schema = {c: (pl.String if t == pl.String else t) for c, t in like.schema.items()}
        return pl.read_csv(path, schema=schema)
    return pl.read_parquet(path)


def _check_written(release: Release, files: Mapping[str, Path]) -> None:
    """Every published file reads back as exactly what the release computed."""
    from persuasive.report.certificate import loads

    for name, path in files.items():
        want = release.expected(name)
        if want is None:
            continue
        if isinstance(want, pl.DataFrame):
            try:
                got = _read_back(path, want)
            except pl.exceptions.PolarsError as exc:
                raise InternalError(f"{name} does not read back: {exc}") from None
            if got.schema != want.schema or not got.equals(want, null_equal=True):
                raise InternalError(
                    f"{name} does not read back as released (schema {dict(got.schema)} vs "
                    f"{dict(want.schema)}); nothing is published"
                )
        elif is_digest(want):
            continue  # read back by the kind's reading of the publication (_check_digests)
        else:
            doc, _ = loads(path.read_text(encoding="utf-8"), source=name)
            if doc != want:
                raise InternalError(f"{name} does not read back as released; nothing is published")


def is_digest(value: object) -> bool:
    """Whether ``value`` is the digest of a table
    (:func:`persuasive.files.table_digest.combine`)."""
    return isinstance(value, dict) and set(value) == {"rows", "chunk_rows", "columns", "sha256"}


def _check_digests(release: Release, publication: Any) -> None:
    """Each table that the release gave as the digest of its rows (a table that stays on disk
    or in Spark) has that digest as the kind read it back from the written files
    (``publication.entries``: the reading that the certificate is computed from, so the table is
    read once for both)."""
    for name in publication.files:
        want = release.expected(name)
        if not isinstance(want, dict) or not is_digest(want):
            continue
        back = (publication.entries.get(name) or {}).get("table") or {}
        if back != want:
            raise InternalError(
                f"{name} does not read back as released (the digest of its rows differs: "
                f"{back.get('rows')} rows read, {want.get('rows')} released); nothing is "
                "published"
            )


# --------------------------------------------------------------------------------------------
# The pipeline
# --------------------------------------------------------------------------------------------


def write_release(
    release: Release,
    folder: str | os.PathLike[str],
    *,
    table_format: str = "csv",
    report: bool = False,
    target_kappa: float | None = None,
    on_step: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], dict[str, Path]]:
    """Write a release into ``folder`` (a private folder not yet in place); return the
    certificate document and the written paths by role.

    The roles are ``released`` (and the kind's other published files by stem),
    ``certificate``, the custodian files by stem, and ``report``. This writes in place, with
    no guard: a release result's ``write(folder)`` (:func:`publish`) is the atomic form, which
    refuses to replace a folder persuasive did not write and leaves nothing when it fails.
    """
    from persuasive.report.certificate import dumps, envelope
    from persuasive.report.kinds import kind_of
    from persuasive.report.verify import verify_certificate

    step = on_step or (lambda _s: None)
    kind = kind_of(getattr(release, "kind", None)) if hasattr(release, "kind") else None
    missing = [
        name
        for name in ("kind", "params", "published_files", "custodian", "expected", "report")
        if not hasattr(release, name)
    ]
    if missing or kind is None:
        raise ValidationError(
            "release must be a release object (e.g. from persuasive.release.tables.release_table"
            f"); got {type(release).__name__}, which has no {', '.join(missing)}"
        )
    if table_format not in ("csv", "parquet"):
        raise ValidationError(f"--format must be csv or parquet; got {table_format!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    step("write")
    published = {}
    for name, write in release.published_files(table_format).items():
        write(folder / name)
        published[name] = folder / name
    _check_written(release, published)
    step("certify")
    publication = kind.read_publication(release.params, published)
    if publication.problems:
        raise InternalError(
            "the written publication fails its checks: " + "; ".join(publication.problems)
        )
    _check_digests(release, publication)
    body = kind.certify(release.params, publication)
    doc = envelope(
        kind.name,
        kind.claim(release.params),
        body.guarantee,
        body.notes,
        publication.section(),
        extra=body.extra,
    )
    cert_path = folder / "certificate.json"
    cert_path.write_text(dumps(doc), encoding="utf-8")
    files: dict[str, Path] = {Path(n).stem: p for n, p in published.items()}
    files["certificate"] = cert_path
    for name, write in release.custodian(table_format).items():
        write(folder / name)
        files[Path(name).stem] = folder / name
    if report:
        from persuasive.report.html import write_report

        step("report")
        content = release.report(doc, target_kappa)
        files["report"] = write_report(folder / "report", content)["html"]
    step("verify")
    check = verify_certificate(cert_path, published=folder)
    if not check.consistent:
        raise InternalError(
            "the written certificate does not verify: " + "; ".join(check.mismatches)
        )
    return doc, files


def publish(
    release: Release,
    out: OutputFolder,
    *,
    table_format: str = "csv",
    report: bool = False,
    target_kappa: float | None = None,
    on_step: Callable[[str], None] | None = None,
    notes: Sequence[str] = (),
) -> Outcome:
    """Write a release into its output folder, atomically (see the module docstring)."""
    with out as tmp:
        doc, files = write_release(
            release,
            tmp,
            table_format=table_format,
            report=report,
            target_kappa=target_kappa,
            on_step=on_step,
        )
        final = relocate(files, tmp, out.path)
    return Outcome(doc, final, tuple(notes))


def exit_status(outcome: Outcome) -> int:
    """0 when the certificate claims a guarantee that holds, 1 otherwise."""
    return 0 if outcome.holds and math.isfinite(outcome.kappa) else 1


def table_format_of(path: str | os.PathLike[str] | None, given: str | None) -> str:
    """The output table format: ``given``, else the input's if a release writes it (CSV or
    Parquet), else CSV (a release read from a Stata, SPSS or SAS file writes CSV)."""
    from persuasive.files.reading import OUTPUT_FORMATS, format_of

    if given is not None:
        if given not in OUTPUT_FORMATS:
            raise ValidationError(
                "--format must be csv or parquet (a release writes CSV or Parquet; Stata, SPSS "
                f"and SAS files are read, not written); got {given!r}"
            )
        return given
    if isinstance(path, (str, os.PathLike)):
        fmt = format_of(path)
        return fmt if fmt in OUTPUT_FORMATS else "csv"
    return "csv"
