"""``persuasive release linear``: linear statistics of one column, certified or refused.

Names every individual the statistics expose and the combination that reveals them; nothing is
written then. With ``--max-person-error R0`` the certificate is against Receivers who are also
at most R0 prior sds wrong about any one person (``docs/linear_bounded.md``). Noise that does
not lower κ under the chosen class is said so in a note before the verdict, with the class
under which it would (also ``advice`` in ``--json``). Exit status 0 when the guarantee holds,
1 when the release is not private (someone is exposed, or κ is above the target), 2 bad input,
3 an internal error.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer

from persuasive._wording import prior_sds
from persuasive.cli import _common as c
from persuasive.cli._common import (
    DataArg,
    ForceOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    R2Opt,
    ReportOpt,
    SeedOpt,
    check_all,
    opt,
)
from persuasive.cli.release import Output, app


def parse_statistic(text: str) -> Any:
    """``"NAME:KIND:WHERE"`` (WHERE may itself hold colons) -> a Statistic.

    >>> parse_statistic("all_but_17:mean:row_id != 17")
    Statistic(name='all_but_17', kind='mean', where='row_id != 17')
    """
    from persuasive.errors import ValidationError
    from persuasive.release.statistics import Statistic

    parts = text.split(":", 2)
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise ValidationError(
            f"--stat must be NAME:KIND:WHERE (e.g. 'overall:mean:true'); got {text!r}"
        )
    return Statistic(parts[0].strip(), parts[1].strip(), parts[2].strip())


def read_statistics(path: str | Path) -> list[Any]:
    """Read ``[[statistics]]`` tables (keys ``name``, ``kind``, optional ``where``) from TOML."""
    from persuasive.errors import ValidationError
    from persuasive.release.statistics import Statistic

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
                f"--stats '{p}': statistics[{i}] must have keys name, kind and optionally "
                f"where; got {item!r:.80}"
            )
        out.append(Statistic(item["name"], item["kind"], item.get("where", "true")))
    return out


def needed_columns(lazy: Any, value: str, statistics: list[Any]) -> Any:
    """The data with only the columns the release reads (the value column, those the WHERE
    clauses name, and ``row_id`` if the file has one, which the release refuses), collected;
    every column when a clause does not parse or names a column the file lacks (the release
    then names it, with the file's columns)."""
    import polars as pl

    from persuasive.release.statistics import ROW_ID

    names = lazy.collect_schema().names()
    want = {value, ROW_ID}
    try:
        for s in statistics:
            want.update(pl.sql_expr(s.where).meta.root_names())
    except Exception:  # the release reports the bad clause, naming its statistic
        return lazy.collect()
    if not want - {ROW_ID} <= set(names):
        return lazy.collect()
    return lazy.select([n for n in names if n in want]).collect()


def _statistics_table(release: Any) -> None:
    from rich.table import Table
    from rich.text import Text

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
            shown = repr(values[s.name])
        table.add_row(Text(s.name), s.kind, Text(s.where), shown)
    c.stdout().print(table)


def _receivers(r1: float, r2: float, v: float | None, r0: float | None) -> str:
    """The Receiver class of the summary in plain words."""
    text = f"linear Gaussian class r1 = {c.num(r1)}, r2 = {c.num(r2)}"
    if r0 is not None:
        text += f"; Receivers who are at most {prior_sds(r0, c.num(r0))} wrong about any one person"
    return text + ("" if v is None else f", prior sd of each statistic at most {c.num(v)}")


@app.command("linear")
def linear_cmd(
    data: DataArg,
    out: OutOpt,
    value: Annotated[str, opt("--value", "The numeric column.")],
    r1: Annotated[
        float | None,
        opt(
            "--r1",
            "Receivers: squared error bound of the prior mean of each "
            "statistic, in prior sds (r1 > 0).",
        ),
    ] = None,
    r2: R2Opt = None,
    stat: Annotated[
        list[str] | None,
        opt(
            "--stat",
            "NAME:KIND:WHERE, KIND mean or sum, WHERE a SQL condition (repeatable).",
            metavar="NAME:KIND:WHERE",
        ),
    ] = None,
    stats: Annotated[
        Path | None, opt("--stats", "A TOML file of [[statistics]] tables (name, kind, where).")
    ] = None,
    noise_sd: Annotated[
        float | None, opt("--noise-sd", "Gaussian noise sd on every statistic (> 0).")
    ] = None,
    target_kappa: Annotated[
        float | None,
        opt("--target-kappa", "Calibrate the noise (or, with --withhold, drop statistics) to κ."),
    ] = None,
    withhold: Annotated[
        bool, typer.Option("--withhold", help="Withhold statistics greedily instead of noise.")
    ] = False,
    delta: Annotated[
        float | None, opt("--delta", "Failure probability (default 0; 0.05 with noise).")
    ] = None,
    max_stat_sd: Annotated[
        float | None, opt("--max-stat-sd", "Receivers: prior sd of the statistics at most V.")
    ] = None,
    max_person_error: Annotated[
        float | None,
        opt(
            "--max-person-error",
            "Receivers: at most R0 prior sds wrong about any one person (> 0; noise then needs "
            "--max-stat-sd and lowers κ towards 0; docs/linear_bounded.md).",
            metavar="R0",
        ),
    ] = None,
    seed: SeedOpt = None,
    format_: Annotated[
        str, typer.Option("--format", help="Format of the released statistics: csv or parquet.")
    ] = "csv",
    report: ReportOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
    separator: c.SeparatorOpt = None,
    encoding: c.EncodingOpt = None,
) -> None:
    """Release linear statistics (means and sums over subsets) of a column, or refuse.

    Names every individual the statistics expose and the combination that reveals them.
    With --max-person-error R0 the certificate is against Receivers also at most R0 prior sds
    wrong about any one person (docs/linear_bounded.md). Exit 0 when the guarantee holds, 1
    when the release is not private (someone exposed: nothing written; or κ above the target),
    2 on bad input, 3 on an internal error.
    """
    from persuasive.errors import ValidationError
    from persuasive.files import reading as rd
    from persuasive.release.linear import person_error, release_linear
    from persuasive.release.pipeline import table_format_of

    source = c.data_file(data, separator, encoding)
    output = Output.of(out, force, data, "linear", table_format_of(None, format_), report, json_)
    if r1 is None or r2 is None:
        raise ValidationError(
            "--r1 and --r2 are required: the Receivers' class (e.g. --r1 1 --r2 4)"
        )
    o = check_all(
        r1=r1,
        r2=r2,
        noise_sd=noise_sd,
        target_kappa=target_kappa,
        delta=delta,
        max_stat_sd=max_stat_sd,
        max_person_error=max_person_error,
        seed=seed,
    )
    r1, r2, noise_sd, target_kappa = o["r1"], o["r2"], o["noise_sd"], o["target_kappa"]
    delta, max_stat_sd, seed = o["delta"], o["max_stat_sd"], o["seed"]
    r0 = person_error(
        o["max_person_error"],
        noise_sd is not None,
        max_stat_sd,
        names=("--max-person-error", "--noise-sd", "--max-stat-sd"),
    )
    if noise_sd is not None and (target_kappa is not None or withhold):
        raise ValidationError(
            "--noise-sd fixes the noise; leave it out with --target-kappa or --withhold"
        )
    statistics = [parse_statistic(s) for s in stat or []]
    if stats is not None:
        statistics += read_statistics(stats)
    if not statistics:
        raise ValidationError(
            "give the statistics: --stat NAME:KIND:WHERE (repeatable) or --stats FILE.toml"
        )
    with c.progress(
        ("read", "release", "write", "certify", "report", "verify"), quiet or json_
    ) as step:
        step("read")
        frame = needed_columns(rd.scan(source, text=[value], infer=True), value, statistics)
        step("release")
        release = release_linear(
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
            max_person_error=r0,
        )
        if release.refused:
            c.stop_progress()
            if json_:
                c.emit_json(
                    {
                        "kind": "linear",
                        "holds": False,
                        "refused": True,
                        "files": {},
                        "exposed": [
                            {"row_id": e.row_id, "combination": e.combination, "text": e.describe()}
                            for e in release.exposed
                        ],
                        "guarantee": release.statement(),
                    }
                )
            else:
                _statistics_table(release)
                console = c.stdout()
                for e in release.exposed:
                    console.print(
                        f"EXPOSED: {e.describe()} (κ = inf: this combination is their value)",
                        markup=False,
                    )
                console.print(
                    f"NOT released (nothing written): {release.statement()}", markup=False
                )
            raise typer.Exit(1)
        if not json_:
            _statistics_table(release)
        notes = [f"calibrated: {release.calibrated}"] if release.calibrated else []
        advice = release.noise_advice
        if advice is not None:  # noise that does not pay under this class is said so
            notes.append(advice)
        rows = [
            ("input", c.shown(data)),
            ("Receivers", _receivers(r1, r2, max_stat_sd, r0)),
            (
                "noise",
                "none (exact)"
                if release.noise_sd is None
                else f"gaussian, sd {c.num(release.noise_sd)}",
            ),
        ]
        status = output.finish(
            release,
            rows,
            step,
            notes,
            target_kappa,
            {
                "withheld": [s.name for s in release.withheld],
                "refused": False,
                "noise_sd": release.noise_sd,
                "max_person_error": r0,
                "advice": advice,
            },
        )
    raise typer.Exit(status)
