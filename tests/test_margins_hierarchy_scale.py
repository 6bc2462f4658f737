"""Hierarchies at size (issue 12): the planner works over the cells that nest only, and splits
components by the margins no finer published margin implies. Checked against the same table
with the non-nesting combinations as ordinary known zeros (full incidence columns, every grid
cell in the search, coarser parts) and against ``verify``, which recomputes the certificate from
the published files alone."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from persuasive.classes.receivers import PoissonReceiver
from persuasive.margins import (
    MarginTable,
    attacker_intervals,
    lower_bound,
    search,
    worst_case_losses,
)
from persuasive.margins.constraints import full_incidence
from persuasive.margins.implied import implied_free_rows
from persuasive.margins.planner import plan_suppression
from persuasive.release.margins import release_table_with_margins

KEYS = ["region", "district", "municipality", "var"]
MARGINS = "municipality,district+var,district,region+var,region,var,total"
RECEIVER = PoissonReceiver(1.0, 10.0)


def hierarchy_frame(r: int, d: int, m: int, v: int, share: float, seed: int) -> pl.DataFrame:
    """r regions > d districts each > m municipalities each, x v levels (as the benchmark)."""
    rng = np.random.default_rng(seed)
    n_mun = r * d * m
    counts = rng.poisson(12.0, (n_mun, v))
    small = rng.random((n_mun, v)) < share
    counts = np.where(small, rng.integers(0, 5, (n_mun, v)), np.maximum(counts, 5)).ravel()
    mun, var = (x.ravel() for x in np.indices((n_mun, v)))
    dist = mun // m
    return pl.DataFrame(
        {
            "region": dist // d,
            "district": dist,
            "municipality": mun,
            "var": var,
            "n": counts.ravel(),
        }
    )


def release_of(frame: pl.DataFrame) -> Any:
    return release_table_with_margins(
        frame, keys=KEYS, count="n", h=5, receiver=RECEIVER, margins=MARGINS, target_kappa=6.0,
        hierarchy="region>district>municipality",
    )  # fmt: skip


def known_zeros(p: MarginTable) -> MarginTable:
    """The same table with the non-nesting combinations as ordinary known cells of count 0
    (the dense representation: full incidence columns, every grid cell in the search)."""
    return MarginTable(p.counts, h=p.h, margins=p.margins, dims=p.dims, known=p.known)


@pytest.fixture(scope="module")
def release() -> Any:
    return release_of(hierarchy_frame(2, 3, 4, 4, 0.08, seed=7))


def test_the_search_over_nesting_cells_is_the_dense_search(monkeypatch: pytest.MonkeyPatch) -> None:
    # with the split into independent parts switched off, the planner over the cells that nest
    # must take exactly the steps of the planner over the dense grid with known zeros
    monkeypatch.setattr(search, "independent_parts", lambda AT, cells: [cells])
    rel = release_of(hierarchy_frame(2, 2, 3, 4, 0.1, seed=2))
    p = rel.primary
    assert int(p.structural.sum()) == p.n_cells - 48  # 2*2*3 municipalities x 4 levels nest
    dense = known_zeros(p)
    assert not dense.structural.any() and np.array_equal(dense.known, p.known)
    plan = plan_suppression(dense, RECEIVER, 6.0, bound="publication")
    ours = rel.plan
    assert ours.n_secondary > 0  # the instance needs secondary cells
    assert np.array_equal(plan.pattern, ours.pattern)
    assert np.array_equal(plan.secondary, ours.secondary)
    assert plan.lower_bound == ours.lower_bound and plan.certified == ours.certified
    for name in ("kappa_upper", "kappa_published", "disclosed", "certified"):
        assert np.array_equal(getattr(plan.worst, name), getattr(ours.worst, name))


def test_the_release_audits_as_the_dense_table(release: Any) -> None:
    # the release's pattern put on the dense table: the same statuses, kappa bounds, attacker
    # intervals and lower bound, computed with full incidence columns and no implied margins
    ours, p = release.plan, release.primary
    assert ours.n_secondary > 0 and ours.certified
    dense = known_zeros(p).with_suppressed(ours.pattern, ours.secondary)
    w = worst_case_losses(dense, RECEIVER, r=5)
    for name in ("kappa_upper", "kappa_published", "estimate"):
        assert np.allclose(getattr(w, name), getattr(release.worst, name), rtol=0, atol=1e-9)
    for name in ("disclosed", "certified", "computed_exactly"):
        assert np.array_equal(getattr(w, name), getattr(release.worst, name))
    assert float(w.kappa_published[dense.suppressed].max()) <= 6.0
    att, mine = attacker_intervals(dense), release.intervals
    assert np.array_equal(att.cells, mine.cells)
    assert np.allclose(att.lower, mine.lower) and np.allclose(att.upper, mine.upper)
    assert lower_bound(known_zeros(p)) == lower_bound(p)
    shown = release.published
    assert shown.height == 96  # 2*3*4 municipalities x 4 levels: the structural zeros left out
    status = shown["suppressed"].fill_null("released").value_counts().sort("suppressed")
    cells = dict(status.iter_rows())
    assert cells.get("secondary", 0) == int(dense.secondary.sum())
    assert cells.get("primary", 0) == int((dense.suppressed & ~dense.secondary).sum())


def test_implied_margins_are_those_under_a_finer_margin_through_the_nesting(
    release: Any,
) -> None:
    p = release.primary
    sizes = [int(np.prod([p.shape[a] for a in m])) for m in p.margins]
    keep = implied_free_rows(full_incidence(p)[0].tocsr(), sizes)
    kept = {
        name
        for name, size, start in zip(
            p.margin_names(), sizes, itertools.accumulate([0, *sizes]), strict=False
        )
        if keep[start : start + size].all()
    }
    # independently: M is implied when its keys lie in the ancestor closure of a finer margin's
    parent = {"district": "region", "municipality": "district"}

    def closure(keys: set[str]) -> set[str]:
        out = set(keys)
        for k in keys:
            while k in parent:
                k = parent[k]
                out.add(k)
        return out

    names = {n: set() if n == "total" else set(n.split("+")) for n in p.margin_names()}
    finest = [n for n in names if not any(names[n] < closure(names[o]) for o in names if o != n)]
    assert kept == set(finest) == {"municipality", "district+var"}


def test_the_certificate_is_recomputed_from_the_publication(release: Any, tmp_path: Path) -> None:
    from persuasive.report.verify import verify_certificate

    out = tmp_path / "out"
    release.write(out)
    check = verify_certificate(out / "certificate.json", published=out)
    assert check.ok and check.consistent and check.published_checked, check.mismatches
    assert check.recomputed is not None
    kappa = check.recomputed["guarantee"]["kappa"]
    assert kappa == pytest.approx(release.verdict.kappa_published, abs=1e-9)
