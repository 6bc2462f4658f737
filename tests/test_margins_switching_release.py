"""The switching bound wired into the planner, the release's verdict and the certificate (issue 12).

With the exact DP switched off (``max_states`` forced to 1, so every component of more than one
cell is "too large"), the proven switching bound of ``docs/margins_bounds.md`` certifies cells
against the target. Checked: the plan, the verdict and the certificate agree cell by cell;
``verify`` recomputes the certificate from the published files and agrees; every bound used is
at least the exact value the DP gives with the default ``max_states`` (the oracle); tampering
with a cell's ``certified`` or the guarantee's ``exact`` is named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from persuasive.classes.receivers import PoissonReceiver
from persuasive.files.output import OutputFolder
from persuasive.margins import MarginTable, planner, planning, worst
from persuasive.margins.planner import plan_suppression
from persuasive.margins.posterior import MAX_DP_STATES
from persuasive.release.margins import release_table_with_margins
from persuasive.release.pipeline import publish
from persuasive.report.certificate import digest_of
from persuasive.report.verify import verify_certificate

RC = PoissonReceiver(1, 10)
#: (counts, target): tables whose suppressed cells the switching bound certifies with no DP
CASES = [
    (np.array([[1, 6, 7], [5, 1, 6], [7, 6, 5]]), 7.0),
    (np.array([[0, 6, 7, 8], [5, 1, 6, 9], [7, 6, 5, 0], [6, 8, 9, 7]]), 8.0),
    (np.array([[0, 6, 7], [5, 6, 6], [7, 6, 5]]), 8.0),  # the 0: B(0) = 10, the bound below 8
]


def exact_losses(table: MarginTable) -> Any:
    """The oracle: the exact DP with the default max_states (before it is forced small)."""
    out = worst.worst_case_losses(table, RC, max_states=MAX_DP_STATES)
    assert out.computed_exactly.all()
    return out


@pytest.fixture
def small_dp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every default ``max_states`` (planner, audits, certificate) forced to 1: the DP is
    skipped on every component of more than one cell."""
    for f in (worst.worst_case_losses, planner.plan_suppression, planning.audit):
        assert f.__kwdefaults__ is not None
        monkeypatch.setitem(f.__kwdefaults__, "max_states", 1)


def _frame(counts: np.ndarray) -> pl.DataFrame:
    idx = np.indices(counts.shape).reshape(2, -1)
    return pl.DataFrame({"a": idx[0], "b": idx[1], "n": counts.ravel()})


def _release(counts: np.ndarray, target: float, folder: Path, bound: str) -> Any:
    rel = release_table_with_margins(
        _frame(counts), keys=["a", "b"], count="n", h=3, receiver=RC, margins="rows,cols",
        target_kappa=target, bound=bound,
    )  # fmt: skip
    publish(rel, OutputFolder(folder))
    return rel, json.loads((folder / "certificate.json").read_text())


def _by_key(doc: dict[str, Any], shape: tuple[int, ...]) -> dict[int, dict[str, Any]]:
    return {int(np.ravel_multi_index(tuple(map(int, c["key"])), shape)): c for c in doc["cells"]}


@pytest.mark.parametrize("bound", ["publication", "table"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_plan_verdict_and_certificate_agree_cell_by_cell(
    small_dp: None, tmp_path: Path, case: int, bound: str
) -> None:
    counts, target = CASES[case]
    rel, doc = _release(counts, target, tmp_path / "out", bound)
    plan, vd, t = rel.plan, rel.verdict, rel.table
    sup = t.suppressed.ravel()
    assert plan.certified and vd.released and vd.ok and doc["guarantee"]["holds"]
    # some cells are certified by the bound, none of them computed exactly
    by_bound = plan.worst.by_bound.ravel() & sup
    assert by_bound.any() and vd.n_by_bound == int(by_bound.sum()) and vd.n_switching >= 1
    assert not plan.worst.computed_exactly.ravel()[by_bound].any()
    if case == 2:  # the 0 needs the switching bound: learning it outright costs B(0) = 10 > 8
        full = worst.surprise(RC, t.counts.ravel())[0]
        assert np.any(by_bound & (full > target) & plan.worst.switching.ravel())
    # (a) one per-cell answer: plan, verdict, certificate, custodian file
    plan_cert = sup & plan.worst.certified.ravel()
    cells = _by_key(doc, t.shape)
    assert sorted(cells) == np.flatnonzero(sup).tolist()
    cert_cert = np.zeros_like(sup)
    cert_cert[list(cells)] = [cells[i]["certified"] for i in cells]
    assert np.array_equal(plan_cert, sup) and plan.uncertified_cells.size == 0
    assert np.array_equal(vd.cell_certified.ravel(), plan_cert)
    assert np.array_equal(cert_cert, plan_cert)
    assert np.array_equal(rel.cells["certified"].to_numpy(), plan_cert | ~sup)
    assert vd.n_certified == int(sup.sum()) == sum(c["certified"] for c in doc["cells"])
    # exact: false wherever a bound stands in; disclosed is stated only where computed exactly
    exact = plan.worst.computed_exactly.ravel()
    assert doc["guarantee"]["exact"] is False and vd.n_exact == int((sup & exact).sum())
    assert all(cells[i]["disclosed"] is None for i in np.flatnonzero(by_bound))
    statement = doc["guarantee"]["statement"]
    assert "switching bound" in statement and "_" not in statement
    # (b) verify recomputes the certificate from the published files, with the claim's target
    res = verify_certificate(tmp_path / "out" / "certificate.json", published=tmp_path / "out")
    assert res.consistent and res.ok and res.claims, res.mismatches
    # (c) every bound used is at least the exact value (the DP, default max_states)
    oracle = exact_losses(t)
    tol = 1e-9
    assert np.all(plan.worst.kappa_upper.ravel()[sup] >= oracle.kappa_upper.ravel()[sup] - tol)
    pub = plan.worst.kappa_published.ravel()
    assert np.all(pub[sup] >= oracle.kappa_published.ravel()[sup] - tol)
    want = oracle.kappa_published if bound == "publication" else oracle.kappa_upper
    assert np.all(plan.losses.ravel()[sup] >= want.ravel()[sup] - tol)
    for i, c in cells.items():
        assert c["kappa_published"] >= oracle.kappa_published.ravel()[i] - tol
    assert vd.kappa_published >= oracle.max_published - tol
    assert np.all(oracle.kappa_published.ravel()[sup] <= target + tol)  # sound certification


def test_tampering_with_certified_or_exact_is_named(small_dp: None, tmp_path: Path) -> None:
    counts, target = CASES[0]
    folder = tmp_path / "out"
    _, doc = _release(counts, target, folder, "publication")
    k = next(i for i, c in enumerate(doc["cells"]) if c["certified"])
    for edit, field in (("cells", "certified"), ("guarantee", "exact")):
        forged = json.loads(json.dumps(doc))
        if edit == "cells":
            forged["cells"][k]["certified"] = False
        else:
            forged["guarantee"]["exact"] = True
        forged["digest"] = digest_of(forged)
        res = verify_certificate(forged, published=folder)
        assert not res.ok and not res.consistent
        assert any(field in m for m in res.mismatches), res.mismatches


def test_kappa_upper_within_but_kappa_published_above(small_dp: None) -> None:
    """The case the switching engineer warned of: the bound at the table meets κ, the bound over
    the publication does not. Planned against the publication, those cells are never taken for
    an exact component (search.reconcile) nor certified; against the table, they are."""
    t = MarginTable(CASES[0][0], h=3, margins="rows,cols")
    pub_plan = plan_suppression(t, RC, 7.0, bound="publication")
    w = pub_plan.worst
    sup = pub_plan.pattern
    k = float(np.max(w.kappa_upper[sup & w.by_bound]))
    kp = float(np.max(w.kappa_published[sup & w.by_bound]))
    assert k < kp  # a target between the two
    kappa = (k + kp) / 2
    by_table = plan_suppression(t, RC, kappa, bound="table")
    assert by_table.certified and by_table.worst.by_bound[by_table.pattern].any()
    oracle = exact_losses(by_table.table)
    assert np.all(oracle.kappa_upper[by_table.pattern] <= kappa + 1e-9)
    try:
        by_pub = plan_suppression(t, RC, kappa, bound="publication")
    except planning.InfeasiblePlanError:
        return  # refused: no pattern reached; nothing was wrongly certified
    cert = by_pub.worst.certified & by_pub.pattern
    assert np.all(by_pub.losses[cert] <= kappa)  # certified only by kappa_published
    assert by_pub.certified is bool(np.all(by_pub.losses[by_pub.pattern] <= kappa))
    assert by_pub.certified is (by_pub.uncertified_cells.size == 0)


def test_without_a_target_nothing_is_certified_by_the_bound(small_dp: None) -> None:
    t = MarginTable(CASES[0][0], h=3, margins="rows,cols")
    plan = plan_suppression(t, RC, 7.0)
    none = worst.worst_case_losses(plan.table, RC)
    assert not none.by_bound.any()
    assert np.array_equal(none.certified, none.computed_exactly)
    assert not none.computed_exactly[plan.pattern].all()
