"""What a margins release gives the custodian: the per-cell frame, the comparison, the summary.

Split from :mod:`persuasive.release.margins` (the release itself); the one outcome every count
here comes from is :mod:`persuasive.release.margins_verdict`. The published files
(``released.*``: keys, count — empty where suppressed — and ``suppressed``, primary or
secondary; ``margins.*``: ``margin``, keys — empty where summed over — and ``total``) and the
custodian's files (``custodian_cells.*``: per-cell κ at the true table, the publication bound,
disclosed, attacker interval, certified, the classical rule's κ; ``custodian_comparison.json``:
primary only, the planner, the classical rule) are written by the release pipeline
(:mod:`persuasive.release.pipeline`); the custodian's files are never published.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from persuasive.release.margins_verdict import (  # re-exported
    Verdict,
    _cost,
    check_certificate,
    integer_intervals,
    verdict,
)

if TYPE_CHECKING:
    from persuasive.release.margins import MarginRelease

__all__ = [
    "CUSTODIAN_COLUMNS",
    "TABLE_ROLES",
    "Verdict",
    "check_certificate",
    "comparison_document",
    "custodian_cells",
    "integer_intervals",
    "summary",
    "verdict",
]

#: The files of a margins release by role (``table`` roles take the table format's suffix).
TABLE_ROLES = ("released", "margins", "custodian_cells")
#: Columns of :func:`custodian_cells` besides the keys (no key may be named like them).
CUSTODIAN_COLUMNS = (
    "count",
    "status",
    "kappa",
    "kappa_published",
    "disclosed",
    "lower",
    "upper",
    "certified",
    "post_mean",
    "classical",
    "classical_kappa",
)


def _post_mean(rel: MarginRelease) -> np.ndarray:
    out = np.full(rel.table.n_cells, np.nan)
    post = rel.worst.posterior
    if post is not None and post.cells.size:
        p = np.exp(post.log_pmf)
        values = post.lo[:, None] + np.arange(p.shape[1])[None, :]
        out[post.cells] = (p * values).sum(axis=1) / p.sum(axis=1)
    return out


def custodian_cells(rel: MarginRelease) -> pl.DataFrame:
    """One row per cell (C order): keys, true count, status, ``kappa`` (exact worst case at the
    true table), ``kappa_published``, ``disclosed``, attacker ``lower`` / ``upper``,
    ``certified`` (the certificate's: computed exactly, or κ published proven within the
    target by the switching or full-disclosure bound), ``post_mean`` (the class's common
    posterior), ``classical`` (hidden by the partner rule) and its ``classical_kappa``."""
    t, w = rel.table, rel.worst
    n = t.n_cells
    x, sup, sec = t.counts.ravel(), t.suppressed.ravel(), t.secondary.ravel()
    lower, upper = np.full(n, np.nan), np.full(n, np.nan)
    lower[rel.intervals.cells], upper[rel.intervals.cells] = integer_intervals(
        rel.intervals.lower, rel.intervals.upper
    )
    zero = np.zeros(n)
    cw = rel.classical_worst
    csup = rel.classical.table.suppressed.ravel()
    return pl.DataFrame(
        [
            *rel._labels(np.arange(n)).values(),
            pl.Series("count", x, dtype=pl.Int64),
            pl.Series("status", np.where(sec, "secondary", np.where(sup, "primary", "released"))),
            pl.Series("kappa", np.where(sup, w.kappa_upper.ravel(), zero)),
            pl.Series("kappa_published", np.where(sup, w.kappa_published.ravel(), zero)),
            pl.Series("disclosed", rel.verdict.disclosed.ravel()),  # proven: DP or LP
            pl.Series("lower", lower),
            pl.Series("upper", upper),
            pl.Series("certified", rel.verdict.cell_certified.ravel() | ~sup),
            pl.Series("post_mean", _post_mean(rel)),
            pl.Series("classical", csup),
            pl.Series("classical_kappa", np.where(csup, cw.kappa_upper.ravel(), zero)),
        ]
    )


def _cells(rel: MarginRelease, mask: np.ndarray) -> list[dict[str, Any]]:
    flat = np.flatnonzero(np.asarray(mask).ravel())
    frame = pl.DataFrame(list(rel._labels(flat).values()))
    return [dict(row) for row in frame.rows(named=True)] if flat.size else []


def comparison_document(rel: MarginRelease) -> dict[str, Any]:
    """The custodian's comparison: primary pattern alone, the planner, the classical rule."""
    from persuasive.report.certificate import canonical

    pw, t = rel.primary_worst, rel.primary
    cw, ct = rel.classical_worst, rel.classical.table
    target = rel.target_kappa
    kappa = cw.kappa_published if rel.bound == "publication" else cw.kappa_upper
    above = ct.suppressed & cw.certified & (kappa > target) if target is not None else None
    plan, vd = rel.plan, rel.verdict
    return canonical(
        {
            "receiver": rel.receiver.describe(),
            "h": rel.h,
            "r": rel.r,
            "margins": rel.table.margin_names(),
            "target_kappa": target,
            "bound": rel.bound,
            "objective": rel.objective,
            "primary_only": {
                "n_primary": int(t.suppressed.sum()),
                "disclosed": _cells(rel, t.suppressed & pw.disclosed),
                "max_kappa": pw.max_upper,
                "max_kappa_published": pw.max_published,
            },
            "planner": None
            if plan is None
            else {
                "n_secondary": vd.n_secondary,
                "cost": vd.cost,
                "lower_bound": vd.lower_bound,
                "gap": vd.gap,
                "optimal": vd.optimal,
                "certified": vd.released,
                "uncertified_cells": _cells(
                    rel, np.isin(np.arange(t.n_cells), plan.uncertified_cells)
                ),
                "explain": plan.explain(),
            },
            "classical": {
                "n_secondary": int(rel.classical.n_secondary),
                "cost": _cost(rel, rel.classical.secondary),
                "above_kappa": None if above is None else _cells(rel, above),
                "disclosed": _cells(rel, ct.suppressed & cw.disclosed),
                "uncertified": int((ct.suppressed & ~cw.certified).sum()),
                "max_kappa": cw.max_upper,
                "max_kappa_published": cw.max_published,
            },
            "final": {
                "n_secondary": vd.n_secondary,
                "max_kappa": vd.kappa_table,
                "max_kappa_published": vd.kappa_published,
                "certified": vd.n_exact == vd.n_suppressed,
                "n_certified": vd.n_certified,
                "n_disclosed": vd.n_disclosed,
                "released": vd.released,
                "ok": vd.ok,
            },
        }
    )


def summary(rel: MarginRelease) -> dict[str, Any]:
    """Data-dependent numbers for the report and the CLI (never in the certificate), all from
    the release's :class:`Verdict`."""
    vd, t = rel.verdict, rel.table
    comp = rel.comparison
    return {
        "n_cells": vd.n_cells,
        "n_suppressed": vd.n_suppressed,
        "n_primary": vd.n_primary,
        "n_secondary": vd.n_secondary,
        "n_disclosed": vd.n_disclosed,
        "n_disclosed_exact": vd.n_disclosed_exact,
        "n_disclosed_primary_only": int(
            (rel.primary.suppressed & rel.primary_worst.disclosed).sum()
        ),
        "n_exact": vd.n_exact,
        "n_certified": vd.n_certified,
        "n_by_bound": vd.n_by_bound,
        "n_switching": vd.n_switching,
        "n_failing": vd.n_failing,
        "kappa_max": vd.kappa_table,
        "kappa_published": vd.kappa_published,
        "kappa_estimate": vd.kappa_estimate,
        "certified": vd.n_exact == vd.n_suppressed,
        "released": vd.released,
        "holds": vd.holds,
        "ok": vd.ok,
        "target_kappa": vd.target_kappa,
        "bound": vd.bound,
        "objective": vd.objective,
        "margins": ", ".join(t.margin_names()),
        "h": rel.h,
        "r": rel.r,
        "planner_cost": None if rel.plan is None else vd.cost,
        "planner_lower_bound": vd.lower_bound,
        "planner_gap": vd.gap,
        "planner_optimal": vd.optimal,
        "gap": vd.gap_words(),
        "classical_secondary": int(rel.classical.n_secondary),
        "classical_above_kappa": None if comp is None else len(comp.classical_above),
        "reasons": list(vd.reasons),
        "remedies": list(vd.remedies),
    }
