"""Magnitude tables with margins (docs/magnitude.md §6): the κ of suppressed cells against the
exact worst case over the class, by brute force (dense Gaussian conditioning on the whole
publication, every coalition of at most m contributors, random and corner spreads), the
greedy secondary suppression, the attacker's intervals against enumeration, and the release
end to end (verify exit 0; a refusal exit 1 with nothing written)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.magnitude import MagnitudeClass, certify_cells, contributions
from persuasive.magnitude.margins import attacker_intervals, incidence, parse, protect
from persuasive.release.magnitude import release_magnitude

ROOT = Path(__file__).resolve().parents[1]
GRUNFELD = ROOT / "examples" / "data" / "grunfeld.csv"
runner = CliRunner()


def table(seed: int, rows: int = 2, cols: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    out, unit = [], 0
    for a in range(rows):
        for b in range(cols):
            for _ in range(int(rng.integers(1, 5))):
                out.append((f"a{a}", f"b{b}", f"u{unit}", round(float(rng.lognormal(0, 1.3)), 3)))
                unit += 1
    return pl.DataFrame(out, schema=["a", "b", "id", "v"], orient="row")


def publication_matrix(c, inc, suppressed):
    """Rows: each published cell's total and each margin total, over all contributions."""
    n = c.value.size
    rows = []
    for cell in np.flatnonzero(~suppressed):
        r = np.zeros(n)
        r[c.cell == cell] = 1.0
        rows.append(r)
    for g in range(inc.n_groups):
        member = np.any(inc.group == g, axis=0)  # cells in group g
        rows.append(member[c.cell].astype(float))
    return np.asarray(rows)


def worst_rho2(a, scale, known, i, gamma, rng, draws):
    """max over spreads in [1, γ] (corners and random) of ρ_i² given A x (known columns
    removed), by dense conditioning."""
    unknown = np.flatnonzero(~known)
    k = int(np.flatnonzero(unknown == i)[0])
    au = a[:, unknown]
    au = au[np.abs(au).sum(axis=1) > 0]
    best = 0.0
    corners = [np.where(unknown == i, gamma, 1.0), np.full(unknown.size, gamma)]
    cands = corners + [rng.uniform(1.0, gamma, size=unknown.size) for _ in range(draws)]
    cands += [np.where(rng.uniform(size=unknown.size) < 0.5, 1.0, gamma) for _ in range(draws)]
    for s in cands:
        var = (s * scale[unknown]) ** 2
        g = au @ (var[:, None] * au.T)
        b = au[:, k] * var[k]
        explained = float(b @ np.linalg.pinv(g, rcond=1e-12) @ b) / var[k]
        best = max(best, explained)
    return best


@pytest.mark.parametrize(
    ("seed", "m", "gamma"), [(0, 0, 1.0), (1, 1, 1.0), (2, 1, 2.0), (3, 2, 1.5)]
)
def test_margin_kappa_bounds_the_exact_worst_case(seed, m, gamma):
    df = table(seed)
    c = contributions(df, keys=["a", "b"], value="v", unit="id")
    cls = MagnitudeClass(1.0, 1.0, gamma)
    cert = certify_cells(c, cls, m)
    inc = incidence(c.cells, parse("a,b,total", ["a", "b"]))
    target = (
        float(np.quantile(cert.cell[np.isfinite(cert.cell)], 0.5))
        if np.isfinite(cert.cell).any()
        else 3.0
    )
    out = protect(c, cert.cell, cls, m, inc, max(target, 2.0))
    a = publication_matrix(c, inc, out.suppressed)
    rng = np.random.default_rng(seed)
    n = c.value.size
    checked = 0
    for cell in np.flatnonzero(out.suppressed):
        members = np.flatnonzero(c.cell == cell)
        for i in members:
            others = [j for j in range(n) if j != i]
            for size in range(m + 1):
                for coalition in itertools.combinations(others, size):
                    known = np.zeros(n, dtype=bool)
                    known[list(coalition)] = True
                    rho2 = worst_rho2(a, c.value, known, int(i), gamma, rng, draws=6)
                    exact = 1.0 - math.log1p(-min(rho2, 1.0)) if rho2 < 1 else math.inf
                    assert exact <= out.kappa[cell] * (1 + 1e-9) + 1e-12, (cell, i, coalition)
                    checked += 1
    assert checked > 0


def test_one_suppressed_cell_in_a_row_needs_a_partner():
    """With row and column totals, a lone suppressed cell is its row total minus the others:
    the greedy suppresses a second cell in its row, and the pattern is certified."""
    df = pl.DataFrame(
        {
            "a": ["r0"] * 6 + ["r1"] * 6,
            "b": ["c0", "c0", "c1", "c1", "c2", "c2"] * 2,
            "id": [f"u{k}" for k in range(12)],
            "v": [10.0, 1.0] + [8.0, 7.0] * 5,
        }
    )
    c = contributions(df, keys=["a", "b"], value="v", unit="id")
    cls = MagnitudeClass(1.0)
    cert = certify_cells(c, cls, 0)
    assert (cert.cell > 3.0).tolist() == [True, False, False, False, False, False]
    out = protect(c, cert.cell, cls, 0, incidence(c.cells, parse("a,b", ["a", "b"])), 3.0)
    assert out.refused is None and len(out.secondary) >= 1
    assert np.all(out.kappa[out.suppressed] <= 3.0)
    lone = protect(c, cert.cell, cls, 0, incidence(c.cells, parse("a", ["a", "b"])), 100.0)
    assert not lone.suppressed.any()  # nothing above 100


def test_attacker_intervals_against_enumeration():
    """Two suppressed cells in one row and column sums known: the range of each over a fine
    grid of non-negative solutions."""
    a = np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]])
    totals = np.array([3.0, 2.0, 5.0, 4.0])
    supp = np.array([True, True, False, False])
    lo, hi = attacker_intervals(a, totals, supp)
    # y0 + y1 = 5 (row), y0 = 7 - 4 = 3 (third equation): y0 fixed, y1 = 2
    grid = [(y0, 5 - y0) for y0 in np.linspace(0, 5, 501) if abs(y0 + 4 - 7) < 1e-9]
    assert lo[0] == pytest.approx(min(g[0] for g in grid)) and hi[0] == pytest.approx(3.0)
    assert lo[1] == pytest.approx(2.0) and hi[1] == pytest.approx(2.0)
    assert np.isnan(lo[2]) and np.isnan(hi[3])


def test_release_with_margins_end_to_end(tmp_path):
    out = tmp_path / "m"
    res = runner.invoke(
        app,
        [
            "release", "magnitude", str(GRUNFELD), "--keys", "industry,period", "--value",
            "invest", "--unit", "firm", "--size", "market_value", "--target-kappa", "9",
            "--margins", "industry,period,total", "--out", str(out), "--report", "-q",
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert {"released.csv", "margins.csv", "certificate.json"} <= {p.name for p in out.iterdir()}
    check = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert check.exit_code == 0, check.output
    html = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert "Suppressed cells with the margins published" in html
    margins = pl.read_csv(out / "margins.csv")
    df = pl.read_csv(GRUNFELD)
    assert margins.filter(pl.col("margin") == "total")["total"][0] == pytest.approx(
        df["invest"].sum(), rel=1e-12
    )
    by_industry = dict(df.group_by("industry").agg(pl.col("invest").sum()).iter_rows())
    for row in margins.filter(pl.col("margin") == "industry").iter_rows(named=True):
        assert row["total"] == pytest.approx(by_industry[row["industry"]], rel=1e-12)
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["kind"] == "magnitude_margins" and doc["claim"]["margins"] == [
        ["industry"],
        ["period"],
        [],
    ]


def test_refused_with_margins_exit_1_nothing_written(tmp_path):
    rel = release_magnitude(
        GRUNFELD, keys="industry,period", value="invest", unit="firm", size="market_value",
        target_kappa=4.0, margins="industry,period,total",
    )  # fmt: skip
    assert rel.refused and "no published cell sharing a margin with the suppressed" in rel.refusal
    with pytest.raises(ValidationError, match="nothing to publish"):
        rel.write(tmp_path / "x")
    assert not (tmp_path / "x").exists()
    res = runner.invoke(
        app,
        [
            "release", "magnitude", str(GRUNFELD), "--keys", "industry,period", "--value",
            "invest", "--unit", "firm", "--size", "market_value", "--target-kappa", "4",
            "--margins", "industry,period,total", "--out", str(tmp_path / "y"),
        ],
    )  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "NOT released (nothing written): Refused:" in res.output
    assert not (tmp_path / "y").exists()


@pytest.mark.parametrize(
    ("margins", "r2", "message"),
    [
        ("industry,period", 1.0, "margins: 'industry+period'"),
        ("nope", 1.0, "margins: 'nope' must be 'total'"),
        ("industry", 2.0, "r2 must be 1 with margins"),
    ],
)
def test_bad_margins(margins, r2, message):
    m = margins.replace("industry,period", "industry+period") if "," in margins else margins
    with pytest.raises(ValidationError, match=message.replace("+", r"\+")):
        release_magnitude(
            GRUNFELD, keys="industry,period", value="invest", unit="firm", target_kappa=4.0,
            margins=m, r2=r2,
        )  # fmt: skip


def test_public_sizes_make_the_margins_pattern_independent_of_the_values():
    """With --size the primary and secondary pattern depends on public data only: the
    same with the values shuffled and scaled."""
    df = pl.read_csv(GRUNFELD)
    other = df.with_columns(pl.col("invest").shuffle(seed=3) * 5.0)
    kw = dict(keys="industry,period", value="invest", unit="firm", size="market_value",
              insiders=0, target_kappa=5.0, margins="industry,period,total")  # fmt: skip
    a, b = release_magnitude(df, **kw), release_magnitude(other, **kw)
    assert a.cells["secondary"].sum() > 0
    assert a.cells["suppressed"].to_list() == b.cells["suppressed"].to_list()
    assert a.cells["secondary"].to_list() == b.cells["secondary"].to_list()


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_candidate_ranking_matches_the_qr_projection(seed):
    """candidate_explained (Sherman–Morrison on L diag(V) Lᵀ, all candidates at once) against
    _explained recomputed by QR with each candidate added to the unknowns, including candidates
    whose margin reveals them alone and rank-deficient margins (rows, columns and the total)."""
    from persuasive.magnitude.margins import _explained, candidate_explained, incidence

    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    cells = pl.DataFrame(
        {"a": [f"a{i}" for i in range(rows) for _ in range(cols)],
         "b": [f"b{j}" for _ in range(rows) for j in range(cols)]}
    )  # fmt: skip
    a = incidence(cells, (("a",), ("b",), ())).matrix()
    n = a.shape[1]
    supp = np.flatnonzero(rng.uniform(size=n) < 0.4)
    if supp.size == 0:
        supp = np.array([0])
    cand = np.setdiff1d(np.arange(n), supp)
    v_all = rng.lognormal(0, 1, size=n)
    c = int(rng.integers(supp.size))
    got = candidate_explained(a[:, supp], v_all[supp], c, a[:, cand], v_all[cand])
    for k, d in enumerate(cand):
        both = np.sort(np.append(supp, d))
        pos = int(np.flatnonzero(both == supp[c])[0])
        want = _explained(a[:, both], v_all[both], pos)
        assert got[k] == pytest.approx(want, abs=1e-7), (d, got[k], want)


@pytest.mark.parametrize("seed", range(4))
def test_batched_kappa_of_a_pattern_matches_one_cell_at_a_time(seed):
    """_explained_many (one row basis; one QR for targets with the pattern's variance) against
    _explained per target, targets with their own variance and with the shared one."""
    from persuasive.magnitude.margins import _explained, _explained_many, incidence

    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    cells = pl.DataFrame(
        {"a": [f"a{i}" for i in range(rows) for _ in range(cols)],
         "b": [f"b{j}" for _ in range(rows) for j in range(cols)]}
    )  # fmt: skip
    a = incidence(cells, (("a",), ("b",), ())).matrix()
    supp = np.flatnonzero(rng.uniform(size=a.shape[1]) < 0.5)
    if supp.size < 2:
        supp = np.array([0, 1])
    v = rng.lognormal(0, 1, size=supp.size)
    targets = np.arange(supp.size)
    own = np.where(rng.uniform(size=supp.size) < 0.5, v, v * rng.uniform(1, 4, size=supp.size))
    got = _explained_many(a[:, supp], v, targets, own)
    for k in targets:
        w = v.copy()
        w[k] = own[k]
        assert got[k] == pytest.approx(_explained(a[:, supp], w, int(k)), abs=1e-9)
