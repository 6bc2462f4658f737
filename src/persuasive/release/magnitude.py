r"""Release a magnitude table (cell totals of a non-negative value) by the PP sensitivity rule.

Every cell's certified κ (``docs/magnitude.md`` §2, this library's extension of Prop 7, Bon et
al. 2026) is computed from its contributions against outsiders and every coalition of at most
m insiders; the cells whose κ exceeds the target are suppressed (primary suppression), and the
release is (𝒟, ℳ, K, 0)-PP for each contributor of a published cell. The p% and
(n,k)-dominance rules are computed on the same cells for comparison (ACRO's definitions,
:mod:`persuasive.magnitude.rules`); they do not decide anything.

With ``margins`` (totals over groups of cells, published exactly) a suppressed cell is also
constrained by the margins: :mod:`persuasive.release.magnitude_margins` certifies each
suppressed cell's κ with the margins published and adds secondary suppressions, or refuses
(``docs/magnitude.md`` §6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.files.sources import Source
from persuasive.magnitude.certificate import MagnitudeCertificate, MagnitudeClass, certify_cells
from persuasive.magnitude.contributors import Contributions, contributions
from persuasive.magnitude.kind import MAX_KAPPA, MagnitudeParams
from persuasive.magnitude.rules import ACRO_K, ACRO_N, ACRO_P, nk_dominance, p_percent, top_sum
from persuasive.release import display

__all__ = ["MagnitudeRelease", "release_magnitude"]


@dataclass(frozen=True, repr=False)
class MagnitudeRelease(display.ReleaseResult):
    """A magnitude table released by the PP sensitivity rule; see :func:`release_magnitude`.

    Attributes
    ----------
    published : polars.DataFrame
        The key columns and ``total``, null where a cell is suppressed: what is published.
    cells : polars.DataFrame
        The custodian's view (never publish it): per cell its total, contributors, the
        largest contribution's share, κ against outsiders and against up to m insiders,
        exposure, the p% and (n,k) flags and whether the PP rule suppressed it.
    params : MagnitudeParams
        The certificate's claim.
    """

    kind: ClassVar[str] = "magnitude"

    published: pl.DataFrame
    cells: pl.DataFrame
    params: MagnitudeParams
    contributors: Contributions = field(repr=False)
    certificate: MagnitudeCertificate = field(repr=False)
    rules: dict[str, Any] = field(default_factory=dict)

    @property
    def target_kappa(self) -> float:
        return self.params.target_kappa

    @property
    def refused(self) -> bool:
        """Whether nothing may be published (only a release with margins can be refused)."""
        return False

    def statement(self) -> str:
        """The guarantee, or the refusal, in one plain sentence."""
        return str(self.guarantee["statement"])

    def summary(self) -> dict[str, Any]:
        """Data-dependent facts for the custodian and the report (never for the certificate)."""
        cells = self.cells
        shown = cells.filter(~pl.col("suppressed"))
        worst = shown["kappa"].max() if shown.height else None
        return {
            "n_cells": cells.height,
            "n_suppressed": int(cells["suppressed"].sum()),
            "n_exposed": int(cells["exposed"].sum()),
            "n_p_percent": int(cells["p_percent"].sum()),
            "n_nk": int(cells["nk"].sum()),
            "contributors": int(self.contributors.value.size),
            "max_kappa_published": None if worst is None else float(worst),  # type: ignore[arg-type]
        }

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        s = self.summary()
        facts = [
            ("cells", f"{s['n_cells']:,}"),
            ("suppressed", f"{s['n_suppressed']:,}"),
            ("insiders", str(self.params.insiders)),
            ("column", repr(self.params.value)),
        ]
        return "Magnitude table release", facts, self.published, ("total",)

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        return frame_files({"released": self.published}, table_format)

    def custodian(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        return frame_files({"custodian_cells": self.cells}, table_format)

    def expected(self, name: str) -> pl.DataFrame | None:
        return self.published if Path(name).stem == "released" else None

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any:
        from persuasive.release.magnitude_output import magnitude_report

        return magnitude_report(self, document)

    def comparison(self) -> pl.DataFrame:
        """Per cell: which rule flags it and its κ (the table of ``docs/magnitude.md`` §4)."""
        from persuasive.release.magnitude_output import comparison

        return comparison(self)


def exposure(c: Contributions, exposed: Any, shown: int = 5) -> pl.Series:
    """Who is exposed to whom, per cell (custodian only; null where no one is): a cell's only
    contributor to every Receiver, or each of its n ≤ m + 1 contributors to the coalition of
    the n − 1 others (``docs/magnitude.md`` §2), naming up to ``shown`` of them."""
    flat = pl.DataFrame(
        {"cell": c.cell, "label": list(c.label)}, schema={"cell": pl.Int64, "label": pl.String}
    )
    hit = flat.filter(pl.Series(np.asarray(exposed)[c.cell]))
    per = hit.group_by("cell").agg(pl.col("label").head(shown), pl.len().alias("n"))
    names = pl.col("label").list.join(", ") + pl.when(pl.col("n") > shown).then(
        pl.lit(", …")
    ).otherwise(pl.lit(""))
    text = (
        pl.when(pl.col("n") == 1)
        .then(pl.concat_str(names, pl.lit(": its only contributor, read off the total by anyone")))
        .when(pl.col("n") == 2)
        .then(pl.concat_str(names, pl.lit(": each is the total minus the other's value")))
        .otherwise(
            pl.concat_str(
                pl.lit("each of "),
                names,
                pl.lit(": the total minus the values of the "),
                (pl.col("n") - 1).cast(pl.String),
                pl.lit(" others (a coalition of insiders)"),
            )
        )
    )
    per = per.select("cell", text.alias("exposure"))
    full = pl.DataFrame({"cell": np.arange(c.n_cells, dtype=np.int64)}).join(
        per, on="cell", how="left"
    )
    return full["exposure"]


def cell_label(cells: pl.DataFrame) -> Any:
    """``j -> "cell (k='a', …)"``: how messages name cell j."""

    def label(j: int) -> str:
        pairs = zip(cells.columns, cells.row(j), strict=True)
        return "cell (" + ", ".join(f"{k}={x!r}" for k, x in pairs) + ")"

    return label


def exact_columns(c: Contributions, suppressed: Any) -> tuple[pl.Series, pl.Series]:
    """The published ``total`` (exact, null where suppressed) and the custodian's (exact for
    every cell; the exact decimal text where a suppressed total has no exact float).

    A published total that cannot be written exactly is a ValidationError
    (:func:`persuasive.magnitude.exact.publishable`); a suppressed cell's total is not checked
    against the published form, so no refusal depends on a value that is not published.
    """
    from persuasive.magnitude.exact import publishable

    sums, scale, floats = c.exact_totals()
    shown = np.flatnonzero(~suppressed)
    label = cell_label(c.cells)
    pub = publishable(sums.gather(shown), scale, lambda j: label(int(shown[j])), floats=floats)
    idx = pl.Series(shown, dtype=pl.Int64)
    dtype = pub.dtype
    full = pl.Series("total", [None] * c.n_cells, dtype=dtype).scatter(idx, pub)
    try:
        custodian = publishable(sums, scale, label, floats=floats).alias("total")
    except ValidationError:  # only the custodian's suppressed totals: exact text instead
        text = sums.cast(pl.String).str.zfill(scale + 1)
        custodian = (
            pl.select(
                pl.concat_str(text.str.head(-scale), pl.lit("."), text.str.tail(scale))
                if scale
                else pl.lit(text)
            )
            .to_series()
            .alias("total")
        )
    return full.alias("total"), custodian


def release_magnitude(
    frame: Source,
    *,
    keys: str | Sequence[str],
    value: str,
    unit: str,
    target_kappa: float,
    holding: str | None = None,
    size: str | None = None,
    insiders: int = 1,
    r1: float = 1.0,
    r2: float = 1.0,
    gamma: float = 1.0,
    margins: Any = None,
    p: float = ACRO_P,
    nk: tuple[int, float] = (ACRO_N, ACRO_K),
    counts: bool = False,
) -> MagnitudeRelease:
    r"""Release the cell totals of ``value`` by ``keys``, suppressing every cell whose certified
    κ exceeds ``target_kappa``.

    Parameters
    ----------
    frame : path, DataFile, polars DataFrame or LazyFrame, pandas DataFrame or pyarrow Table
        Microdata: one row per unit and cell (several rows of a unit in a cell are summed).
    keys : str or sequence of str
        The classification columns (a comma-separated string is split).
    value : str
        The non-negative magnitude column.
    unit : str
        The unit id column.
    target_kappa : float
        The PP sensitivity rule's threshold K ≥ 0 (nats).
    holding : str, optional
        The enterprise group of each unit (missing: none): one contributor, one coalition.
    size : str, optional
        A public size of each row's contribution (> 0): the Receivers' spreads scale with it
        instead of the value, so κ and the suppression pattern depend only on public sizes and
        the pattern is covered too (``docs/magnitude.md`` §5).
    insiders : int
        m ≥ 0: protect against coalitions of up to m contributors who know their own values.
    r1, r2, gamma : float
        The Receivers' class :class:`persuasive.magnitude.MagnitudeClass` (r1 > 0, r2 ≥ 1,
        γ ≥ 1).
    margins : str or sequence of str, optional
        Margins published exactly: ``"a,b,total"`` (totals by a, by b, the grand total;
        ``"a+b"`` a total over two keys). Cells are then suppressed until every suppressed
        cell's κ with the margins is at most the target, or the release is refused
        (``refused``, ``refusal``); needs r2 = 1.
    p : float
        The p% rule's p (a fraction; comparison only).
    nk : (int, float)
        The (n,k)-dominance rule's n and k (comparison only).
    counts : bool
        Also publish each cell's number of contributors (``contributors``, every cell): the
        Receivers of the class know it already (``docs/magnitude.md`` §1).

    Returns
    -------
    MagnitudeRelease

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"k": ["a"] * 4 + ["b"] * 2, "id": list("pqrsuv"),
    ...                    "v": [9.0, 1.0, 1.0, 1.0, 5.0, 4.0]})
    >>> rel = release_magnitude(df, keys="k", value="v", unit="id", target_kappa=5.0)
    >>> rel.published["total"].to_list()  # b has two contributors: each exposes the other
    [12.0, None]
    >>> [round(x, 4) for x in rel.cells["kappa"].to_list()]  # 1 + log(1 + 81/2), ∞
    [4.7256, inf]
    """
    key_list = [k.strip() for k in keys.split(",")] if isinstance(keys, str) else list(keys)
    reserved = ("total", *(["margin"] if margins is not None else []))
    reserved += ("contributors",) if counts else ()
    clash = [k for k in key_list if k in reserved]
    if clash:
        raise ValidationError(
            f"keys: {clash[0]!r} names a column of the published files ({', '.join(reserved)}); "
            "rename that key column (e.g. with a suffix) and name it in --keys"
        )
    spec: tuple[tuple[str, ...], ...] = ()
    if margins is not None:
        from persuasive.magnitude.margins import parse

        spec = parse(margins, key_list)
    target = v.real("target_kappa", target_kappa, low=0.0, high=MAX_KAPPA)
    m = v.integer("insiders", insiders, low=0)
    cls = MagnitudeClass(r1, r2, gamma)
    n_rule = v.integer("nk[0]", nk[0], low=1)
    k_rule = v.real("nk[1]", nk[1], low=0.0, high=1.0)
    params = MagnitudeParams(
        keys=tuple(key_list),
        value=value,
        unit=unit,
        holding=holding,
        r1=cls.r1,
        r2=cls.r2,
        gamma=cls.gamma,
        insiders=m,
        target_kappa=target,
        size=size,
        margins=spec,
        counts=bool(counts),
    )
    if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        from persuasive.files.reading import scan

        text = [*key_list, value, unit, *(c for c in (holding, size) if c)]
        lf = scan(frame, text=text)
    else:
        lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    c = contributions(lf, keys=key_list, value=value, unit=unit, holding=holding, size=size)
    cert = certify_cells(c, cls, m)
    suppressed = ~(cert.cell <= target)  # a κ that is not a number is never published
    kappa = cert.cell
    plan = None
    if spec:
        from persuasive.release.magnitude_margins import plan_margins

        plan = plan_margins(c, cert, cls, m, spec, target)
        suppressed, kappa = plan.suppressed, plan.kappa
    total = c.total
    first = top_sum(c, 1)  # the largest value (dominance), whatever the spreads scale with
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, first / np.where(total > 0, total, 1.0), 0.0)
    flags_p = p_percent(c, p)
    flags_nk = nk_dominance(c, n_rule, k_rule)
    exact, custodian_total = exact_columns(c, np.asarray(suppressed))
    published = c.cells.with_columns(exact)
    if counts:
        published = published.with_columns(pl.Series("contributors", c.count, dtype=pl.Int64))
    cells = c.cells.with_columns(
        custodian_total,
        pl.Series("contributors", c.count),
        pl.Series("largest_share", share),
        pl.Series("kappa_outsider", cert.cell_outsider),
        pl.Series("kappa", kappa),
        pl.Series("exposed", cert.exposed),
        exposure(c, cert.exposed),
        pl.Series("p_percent", flags_p),
        pl.Series("nk", flags_nk),
        pl.Series("suppressed", suppressed),
    )
    rules = {"p": float(v.real("p", p, low=0.0)), "n": n_rule, "k": k_rule}
    common: dict[str, Any] = {
        "published": published,
        "params": params,
        "contributors": c,
        "certificate": cert,
        "rules": rules,
    }
    if plan is None:
        return display.read_from(MagnitudeRelease(cells=cells, **common), frame)
    from persuasive.release.magnitude_margins import MagnitudeMarginsRelease

    cells = cells.with_columns(
        pl.Series("kappa_primary", cert.cell),
        pl.Series("secondary", plan.secondary),
        pl.Series("attacker_low", plan.low),
        pl.Series("attacker_high", plan.high),
    )
    release = MagnitudeMarginsRelease(
        cells=cells, margins=plan.margins, refusal=plan.refused, **common
    )
    return display.read_from(release, frame)
