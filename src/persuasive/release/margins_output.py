"""What a margins release gives the custodian: the per-cell frame, the comparison, the summary.

Split from :mod:`persuasive.release.margins` (the release itself). The published files
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

if TYPE_CHECKING:
    from persuasive.release.margins import MarginRelease

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
    ``certified``, ``post_mean`` (the class's common posterior), ``classical`` (hidden by the
    partner rule) and its ``classical_kappa``."""
    t, w = rel.table, rel.worst
    n = t.n_cells
    x, sup, sec = t.counts.ravel(), t.suppressed.ravel(), t.secondary.ravel()
    lower, upper = np.full(n, np.nan), np.full(n, np.nan)
    lower[rel.intervals.cells] = rel.intervals.lower
    upper[rel.intervals.cells] = rel.intervals.upper
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
            pl.Series("disclosed", sup & w.disclosed.ravel()),
            pl.Series("lower", lower),
            pl.Series("upper", upper),
            pl.Series("certified", w.certified.ravel() | ~sup),
            pl.Series("post_mean", _post_mean(rel)),
            pl.Series("classical", csup),
            pl.Series("classical_kappa", np.where(csup, cw.kappa_upper.ravel(), zero)),
        ]
    )


def _cells(rel: MarginRelease, mask: np.ndarray) -> list[dict[str, Any]]:
    flat = np.flatnonzero(np.asarray(mask).ravel())
    frame = pl.DataFrame(list(rel._labels(flat).values()))
    return [dict(row) for row in frame.rows(named=True)] if flat.size else []


def _cost(rel: MarginRelease, secondary: np.ndarray) -> float:
    if rel.objective == "count":
        return float(np.count_nonzero(secondary))
    return float(rel.table.counts[secondary].sum())


def comparison_document(rel: MarginRelease) -> dict[str, Any]:
    """The custodian's comparison: primary pattern alone, the planner, the classical rule."""
    from persuasive.report.certificate import canonical

    pw, t = rel.primary_worst, rel.primary
    cw, ct = rel.classical_worst, rel.classical.table
    target = rel.target_kappa
    kappa = cw.kappa_published if rel.bound == "publication" else cw.kappa_upper
    above = ct.suppressed & cw.certified & (kappa > target) if target is not None else None
    plan = rel.plan
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
                "n_secondary": int(plan.n_secondary),
                "cost": float(plan.objective_value),
                "lower_bound": float(plan.lower_bound),
                "gap": float(plan.gap),
                "certified": bool(plan.certified),
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
                "n_secondary": int(rel.table.secondary.sum()),
                "max_kappa": rel.worst.max_upper,
                "max_kappa_published": rel.worst.max_published,
                "certified": rel.worst.all_certified,
                "ok": rel.ok,
            },
        }
    )


def summary(rel: MarginRelease) -> dict[str, Any]:
    """Data-dependent numbers for the report and the CLI (never in the certificate)."""
    t, w = rel.table, rel.worst
    sup = t.suppressed
    plan, comp = rel.plan, rel.comparison
    return {
        "n_cells": t.n_cells,
        "n_suppressed": int(sup.sum()),
        "n_primary": int((sup & ~t.secondary).sum()),
        "n_secondary": int(t.secondary.sum()),
        "n_disclosed": int((sup & w.disclosed).sum()),
        "n_disclosed_primary_only": int(
            (rel.primary.suppressed & rel.primary_worst.disclosed).sum()
        ),
        "kappa_max": w.max_upper,
        "kappa_published": w.max_published,
        "certified": w.all_certified,
        "target_kappa": rel.target_kappa,
        "bound": rel.bound,
        "objective": rel.objective,
        "margins": ", ".join(t.margin_names()),
        "h": rel.h,
        "r": rel.r,
        "planner_cost": None if plan is None else float(plan.objective_value),
        "planner_lower_bound": None if plan is None else float(plan.lower_bound),
        "planner_gap": None if plan is None else float(plan.gap),
        "classical_secondary": int(rel.classical.n_secondary),
        "classical_above_kappa": None if comp is None else len(comp.classical_above),
    }
