"""The p% and (n,k)-dominance rules of persuasive.magnitude against ACRO (the SACRO output
checker, a test dependency) on the same crosstab of a magnitude, and against a plain
per-cell recomputation; holdings merged before the rules."""

from __future__ import annotations

import logging
import os
import tempfile
import warnings

import numpy as np
import polars as pl
import pytest

from persuasive.magnitude import contributions, from_cells, nk_dominance, p_percent

acro = pytest.importorskip(
    "acro", reason="acro (the SACRO output checker) is a test dependency: pip install acro"
)


def microdata(seed: int) -> pl.DataFrame:
    """4 × 3 cells, 1 to 6 units each, heavy-tailed values (some dominated cells)."""
    rng = np.random.default_rng(seed)
    rows = []
    unit = 0
    for a in ("a0", "a1", "a2", "a3"):
        for b in ("b0", "b1", "b2"):
            for _ in range(int(rng.integers(1, 7))):
                rows.append((a, b, f"u{unit}", round(float(rng.lognormal(0.0, 1.5)), 3)))
                unit += 1
    return pl.DataFrame(rows, schema=["a", "b", "id", "v"], orient="row")


def acro_flags(df: pl.DataFrame) -> dict[str, set[tuple[str, str]]]:
    """The cells ACRO's NK and p-percent checks flag, by (a, b)."""
    pdf = df.to_pandas()
    disabled = logging.root.manager.disable
    logging.disable(logging.INFO)
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="acro-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.chdir(tmp)
        try:
            session = acro.ACRO(suppress=False)
            table = session.crosstab(pdf.a, pdf.b, values=pdf.v, aggfunc="sum")
            (record,) = session.results.results.values()
        finally:
            os.chdir(old)
            logging.disable(disabled)
    rows, cols = list(table.index), list(table.columns)
    cells = record.sdc["cells"]
    return {
        check: {(rows[i], cols[j]) for i, j in cells[check]}
        for check in ("NKCheck", "PPercentCheck")
    }


def ours(df: pl.DataFrame, **kw) -> dict[str, set[tuple[str, str]]]:
    c = contributions(df, keys=["a", "b"], value="v", unit="id", **kw)
    keys = list(c.cells.iter_rows())
    return {
        "NKCheck": {keys[j] for j in np.flatnonzero(nk_dominance(c))},
        "PPercentCheck": {keys[j] for j in np.flatnonzero(p_percent(c))},
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rules_agree_with_acro(seed):
    df = microdata(seed)
    theirs = acro_flags(df)
    mine = ours(df)
    assert mine == theirs
    assert theirs["NKCheck"] and theirs["PPercentCheck"]  # the data exercises both rules


def test_holdings_merge_before_the_rules():
    """ACRO sees one row per contributor: the holdings summed beforehand give the same flags
    as persuasive's holding column."""
    df = microdata(4)
    groups = {f"u{k}": f"G{k // 3}" for k in range(0, 60, 2)}  # even units in groups of 3 ids
    df = df.with_columns(pl.col("id").replace_strict(groups, default=None).alias("h"))
    merged = (
        df.with_columns(pl.coalesce(pl.lit("holding ") + pl.col("h"), pl.col("id")).alias("id"))
        .group_by("a", "b", "id")
        .agg(pl.col("v").sum())
    )
    assert ours(df, holding="h") == acro_flags(merged)
    assert ours(df, holding="h") != ours(df)  # the holdings change something here


def test_rules_by_plain_recomputation():
    rng = np.random.default_rng(9)
    vals = [list(rng.lognormal(0, 1.5, size=rng.integers(1, 8))) for _ in range(200)]
    c = from_cells(vals)
    want_p, want_nk = [], []
    for vs in vals:
        s = sorted(vs, reverse=True)
        t = sum(s)
        want_p.append(t - s[0] - (s[1] if len(s) > 1 else 0.0) < 0.1 * s[0])
        want_nk.append(sum(s[:3]) >= 0.8 * t)
    assert p_percent(c, 0.1).tolist() == want_p
    assert nk_dominance(c, 3, 0.8).tolist() == want_nk


def test_pp_rule_at_least_as_strict_below_the_thresholds():
    """docs/magnitude.md §3: a p%-flagged cell has κ(1) > r1 + log r2 + log(1 + γ²/p²), a
    (2,k)-flagged cell κ(1) ≥ r1 + log r2 + log(1 + γ²k²/(4(1−k)²)); random cells, some
    crafted near the boundaries."""
    from persuasive.magnitude import MagnitudeClass, certify_cells

    rng = np.random.default_rng(12)
    vals = [list(rng.lognormal(0, 2.0, size=rng.integers(3, 9))) for _ in range(3000)]
    vals += [[10.0, 9.0, *rng.uniform(0, 0.3, size=rng.integers(1, 5))] for _ in range(500)]
    c = from_cells(vals)
    for r1, r2, gamma in [(1.0, 1.0, 1.0), (0.5, 2.0, 1.5)]:
        cls = MagnitudeClass(r1, r2, gamma)
        kappa = certify_cells(c, cls, 1).cell
        flagged_p = p_percent(c, 0.1)
        flagged_nk = nk_dominance(c, 2, 0.9)
        assert flagged_p.sum() > 100 and flagged_nk.sum() > 100
        assert np.all(kappa[flagged_p] > cls.base + np.log1p(gamma**2 / 0.1**2))
        bound = cls.base + np.log1p(gamma**2 * 0.9**2 / (4 * 0.1**2))
        assert np.all(kappa[flagged_nk] >= bound * (1 - 1e-12))
        assert np.any(~flagged_p & ~flagged_nk & (kappa > bound))  # the converse fails
