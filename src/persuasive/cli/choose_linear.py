"""``persuasive choose linear DATA``: how to release linear statistics (eq. 5, Bon et al. 2026).

The statistics are stated as for ``persuasive release linear`` (``--stat NAME:KIND:WHERE``,
repeatable, or ``--stats FILE.toml``); the search is :func:`persuasive.choose.choose_linear`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

from persuasive.cli import _common as c
from persuasive.cli._common import DataArg, R2Opt, opt
from persuasive.cli.choose import DeltaOpt, TargetOpt, app
from persuasive.cli.choose_output import Outputs, finish, output_options, plan

__all__ = ["linear_cmd", "withhold_costs"]


def withhold_costs(items: list[str] | None) -> dict[str, float] | None:
    """``--withhold-cost`` values: ``C`` (every statistic) and ``NAME=C`` (one), C >= 0 or inf.

    >>> withhold_costs(["2", "overall=inf"])
    {'*': 2.0, 'overall': inf}
    """
    from persuasive.errors import ValidationError

    if not items:
        return None
    out: dict[str, float] = {}
    for text in items:
        name, _, num = text.rpartition("=")
        try:
            val = float(num)
        except ValueError:
            val = math.nan
        if math.isnan(val) or val < 0 or (name == "" and "=" in text):
            raise ValidationError(
                "--withhold-cost must be C or NAME=C with C a number >= 0 (inf allowed); "
                f"got {text!r}"
            )
        out[name.strip() or "*"] = val
    return out


def _cost_arg(costs: dict[str, float] | None, names: list[str]) -> Any:
    """The ``withhold_cost`` of :func:`choose_linear`: None (its default), or a cost for every
    statistic (a bare C for those not named; the library's default for the rest)."""
    from persuasive.errors import ValidationError

    if costs is None:
        return None
    unknown = sorted(set(costs) - {"*", *names})
    if unknown:
        raise ValidationError(
            f"--withhold-cost names statistics that do not exist: {unknown}; the statistics "
            f"are {names}"
        )
    if "*" not in costs:
        return costs
    return {n: costs.get(n, costs["*"]) for n in names}


@app.command("linear")
@output_options
def linear_cmd(
    data: DataArg,
    value: Annotated[str, opt("--value", "The numeric column.")],
    target_kappa: TargetOpt,
    r1: Annotated[
        float | None,
        opt(
            "--r1",
            "Receivers: squared error bound of the prior mean of each statistic, in prior sds "
            "(r1 > 0).",
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
    delta: DeltaOpt = 0.05,
    max_stat_sd: Annotated[
        float | None, opt("--max-stat-sd", "Receivers: prior sd of every statistic at most V.")
    ] = None,
    max_person_error: Annotated[
        float | None,
        opt(
            "--max-person-error",
            "Receivers: prior error about any one person at most R0 prior sds (> 0; with "
            "--max-stat-sd noise then lowers κ towards 0; docs/linear_bounded.md).",
            metavar="R0",
        ),
    ] = None,
    withhold_cost: Annotated[
        list[str] | None,
        opt(
            "--withhold-cost",
            "What withholding a statistic costs, in squared units: C for every statistic or "
            "NAME=C for one (repeatable; C >= 0 or inf; default V², or inf without "
            "--max-stat-sd).",
            metavar="C|NAME=C",
        ),
    ] = None,
    separator: c.SeparatorOpt = None,
    encoding: c.EncodingOpt = None,
    *,
    out: Outputs,
) -> None:
    """Choose how to release linear statistics (means and sums over subsets of a column):
    exactly, with the smallest Gaussian noise sd meeting the target, or with some statistics
    withheld, by least total expected squared error among the certified (the linear class,
    docs/linear_release.md). When the statistics expose someone, the statistics kept are
    the best set that exposes nobody (every subset searched up to 12 statistics; above that
    chosen greedily, which is not exact, and the output says so).

    Exit 0 when some statistics are released, 1 when only withholding them all meets the
    target, 2 on bad input, 3 on an internal error.
    """
    from persuasive.choose import choose_linear
    from persuasive.cli.linear import parse_statistic, read_statistics
    from persuasive.errors import ValidationError
    from persuasive.files import reading as rd

    source = c.data_file(data, separator, encoding)
    if r1 is None or r2 is None:
        raise ValidationError(
            "--r1 and --r2 are required: the Receivers' class (e.g. --r1 1 --r2 4)"
        )
    o = c.check_all(
        r1=r1, r2=r2, target_kappa=target_kappa, delta=delta, max_stat_sd=max_stat_sd
    )  # fmt: skip
    from persuasive import _domains as dm

    r0 = None
    if max_person_error is not None:
        r0 = dm.check("max_person_error", max_person_error, name="--max-person-error")
    costs = withhold_costs(withhold_cost)
    statistics = [parse_statistic(s) for s in stat or []]
    if stats is not None:
        statistics += read_statistics(stats)
    if not statistics:
        raise ValidationError(
            "give the statistics: --stat NAME:KIND:WHERE (repeatable) or --stats FILE.toml"
        )
    costs_by_name = _cost_arg(costs, [s.name for s in statistics])
    planned = plan(out, inputs=(data,) if stats is None else (data, stats))
    with c.progress(["read", "search"], out.quiet or out.json_) as step:
        step("read")
        frame = rd.scan(source, text=[value], infer=True).collect()
        step("searching the releases of the statistics ...")
        choice = choose_linear(
            frame, value=value, statistics=statistics, r1=o["r1"], r2=o["r2"],
            target_kappa=o["target_kappa"], delta=o["delta"], max_stat_sd=o["max_stat_sd"],
            withhold_cost=costs_by_name, max_person_error=r0,
        )  # fmt: skip
    finish(choice, [("input", c.shown(data))], planned, out)
