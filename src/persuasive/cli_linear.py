"""``persuasive release linear``: a list of linear statistics of one column, with a certificate.

A thin layer over :func:`persuasive.release.linear.release_linear` (registered on the
``release`` sub-app of :mod:`persuasive.cli_release`). Exit status: 0 the guarantee holds,
1 the release is not private (someone is exposed — nothing is written — or κ is above the
target), 2 bad input (one ``error: ...`` line, nothing left on disk).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from persuasive.cli_release import (
    DataArg,
    ForceOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    ReportOpt,
    _fail,
    _guard,
    _jsonable,
    _num,
    _print_pairs,
    _progress,
    _stdout,
    release_app,
)
from persuasive.errors import ValidationError
from persuasive.release.statistics import Statistic


def parse_statistic(text: str) -> Statistic:
    """``"NAME:KIND:WHERE"`` (WHERE may itself hold colons) -> :class:`Statistic`.

    >>> parse_statistic("all_but_17:mean:row_id != 17")
    Statistic(name='all_but_17', kind='mean', where='row_id != 17')
    """
    parts = text.split(":", 2)
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise ValidationError(
            f"--stat must be NAME:KIND:WHERE (e.g. 'overall:mean:true'); got {text!r}"
        )
    return Statistic(parts[0].strip(), parts[1].strip(), parts[2].strip())


def read_statistics(path: str | Path) -> list[Statistic]:
    """Read ``[[statistics]]`` tables (keys ``name``, ``kind``, optional ``where``) from TOML."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValidationError(f"--stats '{p}': cannot read it as TOML ({exc})") from None
    items = doc.get("statistics")
    unknown = sorted(set(doc) - {"statistics"})
    if unknown or not isinstance(items, list) or not items:
        raise ValidationError(
            f"--stats '{p}': expected [[statistics]] tables with keys name, kind, where"
            + (f"; unknown keys {unknown}" if unknown else "")
        )
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not {"name", "kind"} <= set(item) <= {
            "name",
            "kind",
            "where",
        }:
            raise ValidationError(
                f"--stats '{p}': statistics[{i}] must have keys name, kind and optionally where; "
                f"got {item!r}"
            )
        out.append(Statistic(item["name"], item["kind"], item.get("where", "true")))
    return out


def _statistics_table(release: Any) -> None:
    table = Table(title="Statistics", title_justify="left")
    for col in ("name", "kind", "where", "value"):
        table.add_column(col, overflow="fold")
    values = {row["name"]: row["value"] for row in release.values.iter_rows(named=True)}
    withheld = {s.name for s in release.withheld}
    for s in release.statistics:
        if s.name in withheld:
            shown = "withheld"
        elif release.refused:
            shown = "not released"
        else:
            shown = _num(values[s.name])
        table.add_row(Text(s.name), s.kind, Text(s.where), shown)
    _stdout().print(table)


def _json_doc(release: Any, files: dict[str, Path]) -> dict[str, Any]:
    from persuasive.report.certificate import certificate_document

    cert = None if release.refused else certificate_document(release)
    return {
        "kind": release.kind,
        "holds": bool(release.holds),
        "refused": bool(release.refused),
        "files": {k: str(p) for k, p in files.items()},
        "statistics": _jsonable(release.values.to_dicts()),
        "withheld": [s.name for s in release.withheld],
        "exposed": [
            {"row_id": e.row_id, "combination": e.combination, "text": e.describe()}
            for e in release.exposed
        ],
        "noise_sd": release.noise_sd,
        "calibrated": release.calibrated,
        "certificate": cert,
        "summary": _jsonable(release.summary()),
        "guarantee": release.statement(),
    }


@release_app.command("linear")
def release_linear_cmd(
    data: DataArg,
    out: OutOpt,
    value: Annotated[str, typer.Option("--value", help="The numeric column.", show_default=False)],
    r1: Annotated[float, typer.Option("--r1", help="Receivers: statistic-error bound r1 > 0.")],
    r2: Annotated[float, typer.Option("--r2", help="Receivers: correlation bound r2 > 1.")],
    stat: Annotated[
        list[str] | None,
        typer.Option(
            "--stat",
            help="NAME:KIND:WHERE, KIND mean or sum, WHERE a SQL condition (repeatable).",
            show_default=False,
        ),
    ] = None,
    stats: Annotated[
        Path | None,
        typer.Option("--stats", help="A TOML file of [[statistics]].", show_default=False),
    ] = None,
    noise_sd: Annotated[
        float | None,
        typer.Option(
            "--noise-sd", help="Gaussian noise sd on every statistic.", show_default=False
        ),
    ] = None,
    target_kappa: Annotated[
        float | None,
        typer.Option(
            "--target-kappa",
            help="Calibrate the noise (or, with --withhold, drop statistics) to meet κ.",
            show_default=False,
        ),
    ] = None,
    withhold: Annotated[
        bool, typer.Option("--withhold", help="Withhold statistics greedily instead of noise.")
    ] = False,
    delta: Annotated[
        float | None,
        typer.Option(
            "--delta", help="Failure probability (default 0; 0.05 with noise).", show_default=False
        ),
    ] = None,
    max_stat_sd: Annotated[
        float | None,
        typer.Option(
            "--max-stat-sd",
            help="Receivers: prior sd of the statistics at most V.",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed of the noise.", min=0, show_default=False)
    ] = None,
    format_: Annotated[
        str, typer.Option("--format", help="Format of the released statistics: csv or parquet.")
    ] = "csv",
    report: ReportOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Release linear statistics (means and sums over subsets) of a column, or refuse.

    Names every individual the statistics expose and the combination that reveals them.
    Exit 0 when the guarantee holds, 1 when the release is not private, 2 on bad input.
    """
    from persuasive.release.data import scan_table
    from persuasive.release.demo import atomic_directory, check_output_dir
    from persuasive.release.linear import release_linear
    from persuasive.release.linear_output import write_linear_release

    _guard(lambda: check_output_dir(out, force=force))
    if format_ not in ("csv", "parquet"):
        _fail(f"--format must be csv or parquet; got {format_!r}")
    if noise_sd is not None and (target_kappa is not None or withhold):
        _fail("--noise-sd fixes the noise; leave it out with --target-kappa or --withhold")
    statistics = [_guard(lambda s=s: parse_statistic(s)) for s in stat or []]  # type: ignore[misc]
    if stats is not None:
        statistics += _guard(lambda: read_statistics(stats))
    if not statistics:
        _fail("give the statistics: --stat NAME:KIND:WHERE (repeatable) or --stats FILE.toml")

    files: dict[str, Path] = {}
    with _progress(("read", "release", "write"), quiet or json_) as step:
        step("read")
        frame = _guard(lambda: scan_table(data).collect())
        step("release")
        release = _guard(
            lambda: release_linear(
                frame,
                value=value,
                statistics=statistics,
                r1=r1,
                r2=r2,
                noise_sd=noise_sd,
                target_kappa=target_kappa,
                withhold=withhold,
                delta=delta,
                max_stat_sd=max_stat_sd,
                rng=seed,
            )
        )
        if not release.refused:
            step("write")
            with atomic_directory(out, force=force) as tmp:
                written = _guard(
                    lambda: write_linear_release(tmp, release, table_format=format_, report=report)
                )
                files = {k: out / p.relative_to(tmp) for k, p in written.items()}
    status = 0 if release.holds else 1
    if json_:
        typer.echo(json.dumps(_json_doc(release, files), indent=2))
        raise typer.Exit(status)
    _statistics_table(release)
    console = _stdout()
    for e in release.exposed:
        console.print(Text(f"EXPOSED: {e.describe()} (κ = inf: this combination is their value)"))
    if release.calibrated:
        console.print(Text(f"calibrated: {release.calibrated}"))
    if release.refused:
        console.print(Text(f"NOT released (nothing written): {release.statement()}"))
        raise typer.Exit(1)
    cert = release.certificate
    assert cert is not None  # not refused
    rows = [
        ("input", str(data)),
        ("Receivers", f"linear Gaussian class r1 = {_num(r1)}, r2 = {_num(r2)}"),
        (
            "noise",
            "none (exact)"
            if release.noise_sd is None
            else f"gaussian, sd {_num(release.noise_sd)}",
        ),
        ("certified κ", _num(cert.kappa)),
        ("at δ", _num(cert.delta)),
        ("basis", str(cert.basis)),
        *[(role, str(p)) for role, p in files.items()],
        ("verdict", "holds" if status == 0 else "does NOT hold"),
    ]
    _print_pairs(rows, "Release")
    console.print(Text(release.statement()))
    raise typer.Exit(status)
