"""End to end: a table released with its margins (issue 5), Python API, CLI and the example.

Oracles: disclosure by subtraction by hand (row total minus the released cells) and by an LP
built here with scipy (min = max); the publication bound by brute-force enumeration
(:func:`test_verify_margins.brute_force_published`) and, on the Fair table, by the
one-parameter family of completions written out by hand.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats
from scipy.optimize import linprog
from test_verify_margins import brute_force_published
from typer.testing import CliRunner

from persuasive.classes.receivers import NegativeBinomialReceiver, SmallCellReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.margins import MarginTable
from persuasive.margins.planner import InfeasiblePlanError
from persuasive.release.margins import release_table_with_margins

sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
import margins_table as example

runner = CliRunner()
RECEIVER = NegativeBinomialReceiver(1.0, 40.0, 1.0)
RECEIVER_OPTS = ["--negbin-mean", "1:40", "--negbin-size", "1"]
#: One small cell per row (each alone in its row).
COUNTS = np.array([[1, 9, 8], [7, 2, 9], [8, 9, 7]])


def _frame(counts: np.ndarray = COUNTS) -> pl.DataFrame:
    i, j = np.indices(counts.shape).reshape(2, -1)
    return pl.DataFrame({"a": i, "b": j, "n": counts.ravel()})


def _cli(tmp_path: Path, *args: Any, frame: pl.DataFrame | None = None) -> Any:
    data = tmp_path / "table.csv"
    (_frame() if frame is None else frame).write_csv(data)
    base = ["release", "table", data, "--keys", "a,b", "--count", "n"]
    return runner.invoke(app, [str(a) for a in [*base, *args]])


# ------------------------------------------------------------------------------ Python API


def test_primary_alone_discloses_by_subtraction() -> None:
    rel = release_table_with_margins(
        _frame(), keys=["a", "b"], count="n", h=3, receiver=RECEIVER, margins="rows"
    )
    sup = rel.cells.filter(pl.col("status") == "primary")
    totals = COUNTS.sum(axis=1)
    for row in sup.iter_rows(named=True):
        i, j = row["a"], row["b"]
        assert totals[i] - (COUNTS[i].sum() - COUNTS[i, j]) == row["count"]
        assert row["disclosed"] and row["lower"] == row["upper"] == row["count"]
    assert not rel.ok and rel.above().height == 2  # no target: a disclosed cell fails
    assert rel.published["n"].null_count() == 2
    assert rel.published["suppressed"].drop_nulls().to_list() == ["primary", "primary"]
    assert rel.published_margins["total"].to_list() == totals.tolist()


@pytest.mark.parametrize("bound", ["publication", "table"])
def test_planned_release_meets_the_target(bound: str) -> None:
    kw = {"keys": ["a", "b"], "count": "n", "h": 3, "receiver": RECEIVER, "margins": "rows,cols"}
    rel = release_table_with_margins(_frame(), target_kappa=3.5, bound=bound, **kw)
    assert rel.ok and rel.plan.certified and rel.summary()["n_secondary"] >= rel.plan.lower_bound
    oracle = brute_force_published(rel.table, RECEIVER, 3)
    for cell, want in oracle.items():
        assert rel.worst.kappa_published.flat[cell] == pytest.approx(want, abs=1e-9)
    if bound == "publication":
        assert max(oracle.values()) <= 3.5
    again = release_table_with_margins(_frame(), target_kappa=3.5, bound=bound, **kw)
    assert np.array_equal(again.table.suppressed, rel.table.suppressed)  # deterministic


def test_refusals_name_the_field() -> None:
    kw = {"keys": ["a", "b"], "count": "n", "h": 3, "margins": "rows,cols"}
    with pytest.raises(ValidationError, match="kappa = inf once a margin is published"):
        release_table_with_margins(_frame(), receiver=SmallCellReceiver(0.2), **kw)
    with pytest.raises(ValidationError, match="target_kappa"):
        release_table_with_margins(_frame(), receiver=RECEIVER, target_kappa=-1, **kw)
    zero_row = np.array([[0, 0, 0], [5, 9, 8], [7, 6, 9]])
    with pytest.raises(InfeasiblePlanError, match="target_kappa = 3"):
        release_table_with_margins(_frame(zero_row), receiver=RECEIVER, target_kappa=3, **kw)


def test_given_totals_must_add_up() -> None:
    rel = release_table_with_margins(
        _frame(), keys=["a", "b"], count="n", h=3, receiver=RECEIVER, margins="rows,cols"
    )
    given = rel.published_margins
    same = release_table_with_margins(
        _frame(), keys=["a", "b"], count="n", h=3, receiver=RECEIVER, margins=given
    )
    assert same.table.margins == rel.table.margins
    off = given.with_columns(pl.col("total") + (pl.int_range(pl.len()) == 0).cast(pl.Int64))
    with pytest.raises(ValidationError, match="do not add up"):
        release_table_with_margins(
            _frame(), keys=["a", "b"], count="n", h=3, receiver=RECEIVER, margins=off
        )


# ------------------------------------------------------------------------------ the example


def _lp_exposed(t: MarginTable) -> list[tuple[int, ...]]:
    """Suppressed cells whose LP min equals max over {A y = b, 0 <= y <= h-1} (built here)."""
    sup = np.argwhere(t.suppressed)
    rows, b = [], []
    for axis in range(2):
        for k in range(t.shape[axis]):
            line = t.counts.take(k, axis=axis)
            mask = t.suppressed.take(k, axis=axis)
            rows.append([float(c[axis] == k) for c in sup])
            b.append(line.sum() - line[~mask].sum())
    out = []
    for j, cell in enumerate(sup):
        c = np.zeros(len(sup))
        c[j] = 1
        lo = linprog(c, A_eq=rows, b_eq=b, bounds=(0, t.h - 1)).fun
        hi = -linprog(-c, A_eq=rows, b_eq=b, bounds=(0, t.h - 1)).fun
        if math.isclose(lo, hi):
            out.append(tuple(int(i) for i in cell))
    return out


def test_fair_primary_only_discloses_both_small_cells() -> None:
    rel = example.primary_only()
    disclosed = rel.cells.filter(pl.col("disclosed"))
    assert disclosed.select("religious", "occupation", "count").rows() == [(3, 1, 6), (4, 1, 8)]
    assert _lp_exposed(rel.primary) == [(2, 0), (3, 0)]


def test_fair_classical_rule_stays_above_target_and_ours_verifies(tmp_path: Path) -> None:
    rel = example.planned()
    # the classical pattern hides (3, 6) and (4, 6): y31 = t, y41 = 14 - t, y36 = 47 - t,
    # y46 = 13 + t with t in 5..9 (both primaries < 10); bound of (3, 1) by hand
    law = [stats.nbinom(1.0, 1.0 / (1.0 + mu)) for mu in example.MEAN]
    t = np.arange(5, 10)
    w = np.prod([law[1].pmf(y) for y in (t, 14 - t, 47 - t, 13 + t)], axis=0)
    post = w / w.sum()
    by_hand = max(
        math.log(p) + max(-q.logpmf(v) for q in law) for v, p in zip(t, post, strict=True)
    )
    assert rel.classical_worst.kappa_published[2, 0] == pytest.approx(by_hand, abs=1e-9)
    assert by_hand > example.TARGET_KAPPA
    above = rel.comparison_document()["classical"]["above_kappa"]
    assert above == [{"religious": 3, "occupation": 1}, {"religious": 4, "occupation": 1}]
    res = example.check(rel, tmp_path / "fair")
    assert res.ok, res.mismatches
    cert = json.loads((tmp_path / "fair" / "certificate.json").read_text())
    assert cert["guarantee"]["holds"] is rel.ok is True  # the target is met
    assert cert["guarantee"]["kappa"] <= example.TARGET_KAPPA
    assert cert["claim"]["target_kappa"] == example.TARGET_KAPPA


# ------------------------------------------------------------------------------ CLI


def test_cli_planned_exit_0_files_report_and_verify(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [*RECEIVER_OPTS, "--h", 3, "--margins", "rows,cols", "--target-kappa", 3.5]
    res = _cli(tmp_path, *args, "--out", out, "--report", "--quiet")
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        ".persuasive-output.json",
        "certificate.json",
        "custodian_cells.csv",
        "custodian_comparison.json",
        "margins.csv",
        "released.csv",
        "report",
    ]
    assert (out / "report" / "report.html").is_file()
    released = pl.read_csv(out / "released.csv")
    assert released["n"].null_count() >= 4 and "suppressed" in released.columns
    ok = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert ok.exit_code == 0, ok.output


def test_cli_disclosure_without_target_is_reported(tmp_path: Path) -> None:
    """Each small cell alone in its row is recovered by subtraction: both are named, and the
    certificate states them disclosed (κ is still finite: the guarantee holds, no target)."""
    out = tmp_path / "out"
    res = _cli(tmp_path, *RECEIVER_OPTS, "--h", 3, "--margins", "rows", "--out", out, "--json")
    assert res.exit_code in (0, 1), res.output  # which one: test_cli_exit_status_agrees_...
    doc = json.loads(res.output)
    assert len(doc["problems"]) == 2 and all("disclosed" in s for s in doc["problems"])
    cells = doc["certificate"]["cells"]
    disclosed = sorted(tuple(c["key"]) for c in cells if c["disclosed"] is True)
    assert disclosed == [("0", "0"), ("1", "1")]  # COUNTS' two small cells, as published text
    assert doc["certificate"]["guarantee"]["holds"] is True
    assert (out / "certificate.json").is_file()
    check = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert check.exit_code == 0, check.output


def test_cli_exit_status_agrees_with_the_failing_cells(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = _cli(tmp_path, *RECEIVER_OPTS, "--h", 3, "--margins", "rows", "--out", out, "--json")
    doc = json.loads(res.output)
    fails = [p for p in doc["problems"] if p.startswith("FAILS")]
    assert (res.exit_code == 1) == bool(fails), (res.exit_code, fails)


def test_cli_infeasible_target_refused_nothing_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    zero_row = _frame(np.array([[0, 0, 0], [5, 9, 8], [7, 6, 9]]))
    args = [*RECEIVER_OPTS, "--h", 3, "--margins", "rows,cols", "--target-kappa", 3]
    res = _cli(tmp_path, *args, "--out", out, frame=zero_row)
    assert res.exit_code == 1 and "NOT released" in res.output
    assert not out.exists()


def _margins_file(tmp_path: Path) -> Path:
    path = tmp_path / "totals.csv"
    frame = pl.DataFrame(
        {"margin": ["a"] * 3, "a": [0, 1, 2], "b": [None] * 3, "total": [18, 18, 25]}
    )
    frame.write_csv(path)
    return path


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--margins", "rows,age"], "missing dimension 'age'"),
        (["--margins", "FILE"], "do not add up"),
        (["--margins", "rows", "--target-kappa", "-1"], "--target-kappa"),
        (["--margins", "rows", "--target-kappa", "nan"], "--target-kappa"),
        (["--margins", "rows", "--alpha", "0.2"], "inf once a margin"),
        (["--objective", "total"], "--objective needs --margins"),
        (["--margins", "rows", "--bound", "both"], "--bound"),
    ],
)
def test_cli_bad_input_exit_2_nothing_on_disk(tmp_path: Path, args: list[str], field: str) -> None:
    out = tmp_path / "out"
    args = [str(_margins_file(tmp_path)) if a == "FILE" else a for a in args]
    receiver = [] if "--alpha" in args else RECEIVER_OPTS
    res = _cli(tmp_path, *receiver, "--h", 3, *args, "--out", out)
    assert res.exit_code == 2, res.output
    assert field in res.output and res.output.count("error:") == 1
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


@pytest.mark.parametrize(
    ("counts", "field"), [(np.array([[1, -9, 8], [7, 2, 9], [8, 9, 7]]), "negative")]
)
def test_cli_bad_data_exit_2(tmp_path: Path, counts: np.ndarray, field: str) -> None:
    out = tmp_path / "out"
    res = _cli(
        tmp_path, *RECEIVER_OPTS, "--h", 3, "--margins", "rows", "--out", out, frame=_frame(counts)
    )
    assert res.exit_code == 2 and field in res.output and not out.exists()
    res = _cli(
        tmp_path,
        *RECEIVER_OPTS,
        "--h",
        3,
        "--margins",
        "rows",
        "--out",
        out,
        frame=_frame().head(8),
    )
    # A sparse table is no longer refused (issue 11): the absent cell (2, 2) is a count of
    # zero, published suppressed (tests/test_sparse.py covers the rest).
    assert res.exit_code in (0, 1) and out.is_dir(), res.output
    published = pl.read_csv(out / "released.csv")
    assert published.height == 9
    assert published.filter((pl.col("a") == 2) & (pl.col("b") == 2))["n"].to_list() == [None]


def test_cli_late_failure_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import persuasive.report.margins as report

    def boom(*_: Any) -> None:
        raise ValidationError("report failed late")

    monkeypatch.setattr(report, "margins_report", boom)
    out = tmp_path / "out"
    args = [*RECEIVER_OPTS, "--h", 3, "--margins", "rows,cols", "--target-kappa", 3.5]
    res = _cli(tmp_path, *args, "--out", out, "--report")
    assert res.exit_code == 2 and "report failed late" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_cli_without_margins_is_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = _cli(tmp_path, *RECEIVER_OPTS, "--h", 3, "--out", out, "--quiet")
    assert res.exit_code == 0, res.output
    assert (out / "certificate.json").is_file() and not (out / "margins.csv").exists()
    assert json.loads((out / "certificate.json").read_text())["kind"] == "table"


def test_report_sections(tmp_path: Path) -> None:
    from persuasive.files.output import OutputFolder
    from persuasive.release.pipeline import publish

    rel = release_table_with_margins(
        _frame(),
        keys=["a", "b"],
        count="n",
        h=3,
        receiver=RECEIVER,
        margins="rows,cols",
        target_kappa=3.5,
    )
    files = publish(rel, OutputFolder(tmp_path / "out"), report=True, target_kappa=3.5).files
    md = (files["report"].parent / "report.md").read_text()
    for title in ("Suppressed cells", "Secondary suppression (the planner)", "classical rule"):
        assert title in md
    assert "no plan can cost less than" in md and "--published" in md
    html = files["report"].read_text()
    assert "Secondary suppression (the planner)" in html and "no plan can cost less" in html
    assert sorted(p.name for p in files["report"].parent.iterdir()) == [
        "kappa.png",
        "pattern.png",
        "report.html",
        "report.md",
    ]


def test_a_refused_release_writes_nothing_and_says_what_would_help(tmp_path: Path) -> None:
    """Issue 12: with a target the release is certified or refused; refused, publish raises
    'nothing to publish' and leaves no folder, and the statement gives the κ the pattern found
    reaches (proven) and the other ways out."""
    from persuasive.classes.receivers import PoissonReceiver
    from persuasive.files.output import OutputFolder
    from persuasive.release.pipeline import publish

    counts = np.random.default_rng(0).poisson(8, (30, 20))
    rel = release_table_with_margins(
        _frame(counts), keys=["a", "b"], count="n", h=5, receiver=PoissonReceiver(1, 30),
        margins="rows,cols", target_kappa=3.0,
    )  # fmt: skip
    vd = rel.verdict
    if not vd.refused:
        pytest.skip("certified here (certified bounds for large components)")
    assert not rel.ok and vd.n_failing == int(rel.failing().sum()) > 0
    text = vd.statement()
    assert "a target κ of at least" in text and "fewer margins" in text and "coarser" in text
    with pytest.raises(ValidationError, match="nothing to publish"):
        publish(rel, OutputFolder(tmp_path / "out"))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_cli_counts_agree_with_the_certificate(tmp_path: Path) -> None:
    """Summary, printed table and certificate take their counts from one object."""
    out = tmp_path / "out"
    args = [*RECEIVER_OPTS, "--h", 3, "--margins", "rows,cols", "--target-kappa", 3.5]
    doc = json.loads(_cli(tmp_path, *args, "--out", out, "--json").output)
    s, cert = doc["summary"], doc["certificate"]
    assert s["n_secondary"] == cert["publication"]["secondary"]
    assert s["n_suppressed"] == cert["publication"]["suppressed"]
    assert s["kappa_published"] == cert["guarantee"]["kappa"]
    assert s["holds"] is cert["guarantee"]["holds"] is True
    assert s["n_disclosed_exact"] == sum(c["disclosed"] is True for c in cert["cells"])
    assert doc["comparison"]["planner"]["gap"] == s["planner_gap"]
    text = _cli(tmp_path, *args, "--out", tmp_path / "o2").output
    assert "proven lower bound" in text and "gap" in text
