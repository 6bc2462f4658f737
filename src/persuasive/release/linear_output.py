"""Writing a linear-statistics release: the values, the certificate and the report."""

from __future__ import annotations

from pathlib import Path

from persuasive.errors import ValidationError
from persuasive.release.linear import (
    LinearRelease,
    statement_of,
)


def write_linear_release(
    directory: str | Path,
    release: LinearRelease,
    *,
    table_format: str = "csv",
    report: bool = False,
) -> dict[str, Path]:
    """Write ``released.csv`` (or ``.parquet``; name, kind, where, value), ``certificate.json``
    and, with ``report``, ``report/report.html`` and ``report/report.md`` into ``directory``.

    A refused release (someone exposed) raises ValidationError: nothing of it may be published.
    """
    from persuasive._io import atomic_write
    from persuasive.report.certificate import write_certificate

    if release.certificate is None:
        raise ValidationError(f"nothing to write: {statement_of(release)}")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    files = {"released": out / f"released.{table_format}"}
    frame = release.values
    atomic_write(
        files["released"], frame.write_parquet if table_format == "parquet" else frame.write_csv
    )
    files["certificate"] = write_certificate(out / "certificate.json", release)
    if report:
        files["report"] = _write_report(out / "report", release)
    return files


def _write_report(directory: Path, release: LinearRelease) -> Path:
    from persuasive._io import atomic_write_text
    from persuasive.report import content as rc
    from persuasive.report import plots
    from persuasive.report.html import render_html
    from persuasive.report.markdown import render_markdown

    assert release.certificate is not None
    xs, kappas, label = release.calibration_curve()
    current = release.noise_sd
    png = plots.calibration_plot(
        xs, kappas, xlabel=label, current=current, target_kappa=release.target_kappa
    )
    figures = [rc.Figure("calibration.png", f"The proven κ against the {label}.", png)]
    cert_rows, notes = rc._certificate_rows(release)
    summary = release.summary()
    released = [
        ("what", f"{release.values.height} linear statistics of {release.value!r}"),
        ("prior class", f"linear_gaussian(r1={release.r1:g}, r2={release.r2:g})"),
        ("noise sd", "none (exact)" if release.noise_sd is None else f"{release.noise_sd:.6g}"),
        ("withheld", ", ".join(summary["withheld"]) or "none"),
        ("individuals n", str(release.n)),
    ]
    content = rc.ReportContent(
        title="Persuasive Privacy report: linear statistics",
        kind="linear",
        sentence=statement_of(release),
        released=released,
        certificate=cert_rows,
        notes=[
            *notes,
            "The certificate states the statistics by their WHERE clauses; "
            "`persuasive verify` does not re-check linear releases yet.",
        ],
        figures=figures,
        preview_columns=list(release.values.columns),
        preview_rows=[[rc.fmt(c) for c in row] for row in release.values.iter_rows()],
        preview_total=release.values.height,
    )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "calibration.png").write_bytes(png)
    atomic_write_text(directory / "report.md", render_markdown(content))
    return atomic_write_text(directory / "report.html", render_html(content))
