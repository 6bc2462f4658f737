"""The MIP in the margins release (issue 12): ``method=`` / ``--method``, the time limit, and the
planner's outcome stated by the Verdict in the summary, the report and the certificate.

Oracles: the greedy's pattern on the same table (the MIP's is never larger); enumeration of
every secondary pattern by increasing size, each audited by ``worst_case_losses`` on the whole
table (the optimum the MIP may call "optimal", and an upper end for any valid lower bound);
``persuasive verify`` recomputing the certificate from the published files.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from persuasive.classes.receivers import PoissonReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.margins import InfeasiblePlanError, MarginTable, worst_case_losses
from persuasive.margins import optimal as opt
from persuasive.margins.planning import audit
from persuasive.margins.public_bound import publication_lower_bound
from persuasive.release.margins import release_table_with_margins

RC = PoissonReceiver(1.0, 10.0)  # B(0) = 10, B(1) = 7.70, B(2) = 6.09
runner = CliRunner()


def _frame(counts: np.ndarray) -> pl.DataFrame:
    i, j = np.indices(counts.shape).reshape(2, -1)
    return pl.DataFrame({"a": i.tolist(), "b": j.tolist(), "n": counts.ravel().tolist()})


def _release(counts: np.ndarray, kappa: float, method: str, **kw: object):  # type: ignore[no-untyped-def]
    return release_table_with_margins(
        _frame(counts), keys=["a", "b"], count="n", h=3, receiver=RC, margins="rows,cols",
        target_kappa=kappa, method=method, **kw,
    )  # fmt: skip


def _random(seed: int) -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(seed)
    small = rng.random((3, 4)) < 0.25
    counts = np.where(small, rng.integers(0, 3, (3, 4)), rng.integers(3, 12, (3, 4)))
    return counts, float(rng.choice([7.0, 8.0, 9.5]))


def _brute_count(t: MarginTable, kappa: float) -> int | None:
    """Fewest secondary cells such that every suppressed cell is computed exactly and its
    bound over every table consistent with the publication is <= kappa (None: no pattern)."""
    free = np.flatnonzero(~t.suppressed.ravel())
    for k in range(free.size + 1):
        for extra in itertools.combinations(free, k):
            sup = t.suppressed.ravel().copy()
            sup[list(extra)] = True
            sec = sup & ~t.suppressed.ravel()
            tt = t.with_suppressed(sup.reshape(t.shape), sec.reshape(t.shape))
            w = worst_case_losses(tt, RC)
            if w.all_certified and np.all(w.kappa_published[tt.suppressed] <= kappa):
                return k
    return None


def _outcome(counts: np.ndarray, kappa: float, method: str):  # type: ignore[no-untyped-def]
    try:
        return _release(
            # a limit no run reaches: the MIP's outcome must not depend on the machine's load
            counts,
            kappa,
            method,
            **({} if method == "greedy" else {"mip_time_limit": 3600}),
        )
    except InfeasiblePlanError:
        return None


@pytest.mark.parametrize("seed", [1, 8, 17, 20, 25])  # 20: MIP 3 < greedy 4; 25: refused
def test_mip_pattern_never_larger_than_greedy_and_optimal_only_at_the_enumerated_optimum(seed):
    counts, kappa = _random(seed)
    greedy, mip = _outcome(counts, kappa, "greedy"), _outcome(counts, kappa, "mip")
    best = _brute_count(MarginTable(counts, h=3, margins="rows,cols"), kappa)
    if greedy is None or mip is None:
        assert mip is None or not mip.verdict.released or best is not None
        if mip is None:  # 25: refused, naming a cell no pattern protects; enumeration agrees
            assert best is None
        return
    g, m = greedy.verdict, mip.verdict
    for vd in (g, m):  # certified (published) or refused (nothing), never in between
        assert vd.released == vd.holds == (vd.n_failing == 0)
    if g.released:
        assert m.released  # the MIP falls back to the greedy's pattern at worst
    if m.released:
        assert m.lower_bound <= m.cost, m.gap_words()
        assert m.public_lower_bound <= m.cost
        assert best is not None and best <= m.cost
    if g.released and m.released:
        assert m.cost <= g.cost, (m.gap_words(), g.gap_words())
    assert m.mip in ("optimal", "infeasible", "uncertified"), m.mip  # never a time-out here
    if m.mip == "optimal":
        assert m.pattern_by == "mip" and m.optimal and m.cost == best
        assert "optimality proven" in str(m.method_words())


def _completions(t: MarginTable) -> list[np.ndarray]:
    """Every table consistent with the publication of ``t``: the hidden cells within their
    supports (primary 0..h-1, secondary >= h) with the published row and column totals."""
    x, sup, sec = t.counts, t.suppressed, t.secondary
    rows, cols = x.sum(axis=1), x.sum(axis=0)
    res_r = rows - np.where(sup, 0, x).sum(axis=1)
    res_c = cols - np.where(sup, 0, x).sum(axis=0)
    cells = [tuple(c) for c in np.argwhere(sup)]
    ranges = [
        range(3, int(min(res_r[i], res_c[j])) + 1) if sec[i, j] else range(3) for i, j in cells
    ]
    out = []
    for vals in itertools.product(*ranges):
        y = x.copy()
        for (i, j), val in zip(cells, vals, strict=True):
            y[i, j] = val
        if np.array_equal(y.sum(axis=1), rows) and np.array_equal(y.sum(axis=0), cols):
            out.append(y)
    return out


@pytest.mark.parametrize("seed", [2, 11, 28])
def test_publication_lower_bound_is_at_most_the_optimum_and_the_same_on_every_completion(seed):
    counts, kappa = _random(seed)
    t = MarginTable(counts, h=3, margins="rows,cols")
    best = _brute_count(t, kappa)
    assert best is None or publication_lower_bound(t, RC, kappa, 3) <= best
    rel = _outcome(counts, kappa, "mip")
    # each seed's table is released (by the MIP, or the greedy's pattern it falls back to): a
    # refusal here would leave the final pattern's checks below unrun
    assert rel is not None and rel.verdict.released
    final = rel.table
    lb = publication_lower_bound(final, RC, kappa, 3)
    assert lb == rel.verdict.public_lower_bound and lb <= rel.verdict.n_secondary
    assert best is not None and lb <= best
    completions = _completions(final)
    assert any(np.array_equal(y, counts) for y in completions)
    for y in completions:  # the bound reads only what the publication shows
        other = MarginTable(y, h=3, margins="rows,cols").with_suppressed(
            final.suppressed, final.secondary
        )
        assert publication_lower_bound(other, RC, kappa, 3) == lb


def test_certified_not_proven_pattern_is_set_beside_the_greedy(monkeypatch):
    """A certified MIP pattern without an optimality proof (a time-out) is kept only when it
    is not larger than the greedy's (stubbed outcomes: the greedy's pattern plus one cell)."""
    counts = np.array([[0, 9, 8], [7, 6, 9], [8, 9, 7]])
    t = MarginTable(counts, h=3, margins="rows,cols")
    from persuasive.margins.planner import plan_suppression

    greedy = plan_suppression(t, RC, 7.0)
    assert greedy.certified
    extra = greedy.pattern.copy()
    extra[1, 1] = True  # one more cell hidden: still certified, one more secondary
    big = t.with_suppressed(extra, extra & ~t.suppressed)
    worst = audit(big, RC, 3, kappa=7.0)
    assert np.all(worst.kappa_upper[big.suppressed] <= 7.0)
    stub = opt.MipOutcome("certified", big, worst, greedy.objective_value + 1, 0.0, 4, 3, 0.1, "")
    monkeypatch.setattr(opt, "optimal_pattern", lambda *a, **k: stub)
    plan = plan_suppression(t, RC, 7.0, method="mip")
    assert (plan.method, plan.mip, plan.objective_value) == (
        "greedy", "certified", greedy.objective_value,
    )  # fmt: skip
    same = t.with_suppressed(greedy.pattern, greedy.secondary)
    tie = opt.MipOutcome(
        "certified", same, audit(same, RC, 3, kappa=7.0), greedy.objective_value, 0.0, 4, 3,
        0.1, "",
    )  # fmt: skip
    monkeypatch.setattr(opt, "optimal_pattern", lambda *a, **k: tie)
    plan = plan_suppression(t, RC, 7.0, method="mip")
    assert (plan.method, plan.mip) == ("mip", "certified")


def test_time_limit_reaches_the_program_and_auto_beyond_its_reach_is_stated(monkeypatch):
    seen = []
    real = opt.optimal_pattern

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        seen.append(k["time_limit"])
        return real(*a, **k)

    monkeypatch.setattr(opt, "optimal_pattern", spy)
    counts = np.array([[0, 9, 8], [7, 6, 9], [8, 9, 7]])
    rel = _release(counts, 7.0, "mip", mip_time_limit=3.5)
    assert seen == [3.5] and rel.verdict.mip_time_limit == 3.5
    rel = _release(counts, 7.0, "auto")
    assert seen == [3.5, opt.TIME_LIMIT]
    monkeypatch.setattr(opt, "AUTO_MAX_CELLS", 8)
    rel = _release(counts, 7.0, "auto")
    vd = rel.verdict
    assert seen == [3.5, opt.TIME_LIMIT]  # not run on 9 > 8 cells
    assert (vd.pattern_by, vd.mip) == ("greedy", "too_large")
    assert "beyond the MIP's reach" in str(vd.method_words())
    s = rel.summary()
    assert s["planner_mip"] == "too_large" and s["planner_method"] == "auto"
    assert rel.params.plan and dict(rel.params.plan)["mip"] == "too_large"


@pytest.mark.parametrize("kw", [{"method": "mip"}, {"method": "auto", "mip_time_limit": 5}])
def test_method_without_a_target_is_refused_not_ignored(kw):
    """The command line refuses --method without --target-kappa; the API ignored it (no plan,
    the greedy's nothing) while the release said method 'mip'."""
    counts = np.array([[0, 9, 8], [7, 6, 9], [8, 9, 7]])
    with pytest.raises(ValidationError, match=f"^method = '{kw['method']}' needs target_kappa"):
        _release(counts, None, **kw)  # type: ignore[arg-type]
    assert _release(counts, None, "greedy").plan is None  # the greedy default: no plan


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"method": "fast"}, "method must be one of greedy, auto, mip; got 'fast'"),
        ({"method": "mip", "mip_time_limit": -1}, "mip_time_limit must be in (0, inf); got -1"),
        ({"method": "mip", "mip_time_limit": 0}, "mip_time_limit must be in (0, inf); got 0"),
        ({"method": "mip", "mip_time_limit": float("nan")}, "mip_time_limit must be a finite"),
        ({"method": "mip", "mip_time_limit": True}, "mip_time_limit must be a real number"),
        ({"method": "greedy", "mip_time_limit": 5}, "mip_time_limit = 5: the time limit of"),
    ],
)
def test_bad_method_or_time_limit_is_one_line_naming_it(kw, says):
    with pytest.raises(ValidationError) as err:
        _release(np.array([[0, 9, 8], [7, 6, 9], [8, 9, 7]]), 7.0, **kw)  # type: ignore[arg-type]
    assert says in str(err.value) and "\n" not in str(err.value)


@pytest.fixture(scope="module")
def table_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mip") / "t.csv"
    _frame(np.array([[0, 9, 8], [7, 6, 9], [8, 9, 7]])).write_csv(path)
    return path


def _cli(table_csv: Path, *extra: str) -> list[str]:
    return [
        "release", "table", str(table_csv), "--keys", "a,b", "--count", "n", "--h", "3",
        "--poisson-mean", "1:10", "--margins", "rows,cols", *extra,
    ]  # fmt: skip


def test_cli_method_mip_end_to_end_and_verify(table_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = _cli(table_csv, "--target-kappa", "7", "--method", "mip", "--mip-time-limit", "10")
    res = runner.invoke(app, [*args, "--out", str(out), "--report"])
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "pattern by the MIP (HiGHS), optimality proven" in res.stdout
    cert = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    plan = cert["claim"]["plan"]
    assert (plan["method"], plan["pattern"], plan["mip"], plan["optimal"]) == (
        "mip", "mip", "optimal", True,
    )  # fmt: skip
    assert plan["mip_time_limit"] == 10.0
    assert cert["plan"]["secondary"] == cert["publication"]["secondary"] == 3
    assert cert["plan"]["gap"] == 3 - cert["plan"]["lower_bound"]
    report = next(out.rglob("report.md")).read_text(encoding="utf-8")
    assert "pattern chosen by | the MIP (HiGHS), optimality proven" in report
    ver = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert ver.exit_code == 0, ver.stdout + ver.stderr
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "j"), "--json"])
    summary = json.loads(res.stdout)["summary"]
    assert summary["planner_pattern_by"] == "mip" and summary["planner_mip"] == "optimal"
    assert summary["planner_relative_gap"] == pytest.approx(summary["planner_gap"] / 3)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--target-kappa", "7", "--method", "best"], "--method must be greedy, auto, mip; got"),
        (["--target-kappa", "7", "--method", "mip", "--mip-time-limit", "-2"], "seconds > 0"),
        (["--target-kappa", "7", "--method", "mip", "--mip-time-limit", "soon"], "'soon'"),
        (["--target-kappa", "7", "--method", "auto", "--mip-time-limit", "inf"], "'inf'"),
        # float() takes these, but they are not a number of seconds as written
        (["--target-kappa", "7", "--method", "mip", "--mip-time-limit", "1_0"], "finite"),
        (["--target-kappa", "7", "--method", "mip", "--mip-time-limit", "1e400"], "'1e400'"),
        (["--target-kappa", "7", "--method", "mip", "--mip-time-limit", "nan"], "'nan'"),
        (["--target-kappa", "7", "--mip-time-limit", "5"], "needs --method mip or --method"),
        (["--method", "mip"], "--method needs --target-kappa K"),
    ],
)
def test_cli_bad_values_exit_2_and_write_nothing(
    table_csv: Path, tmp_path: Path, extra: list[str], says: str
) -> None:
    out = tmp_path / "never"
    res = runner.invoke(app, [*_cli(table_csv, *extra), "--out", str(out)])
    assert res.exit_code == 2, res.stdout + res.stderr
    assert says in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not out.exists()


GOOD = {
    "method": "mip", "mip_time_limit": 20.0, "objective": "count", "bound": "publication",
    "pattern": "mip", "mip": "optimal", "optimal": True,
}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"method": "best"}, "claim.plan.method"),
        ({"method": "greedy"}, "claim.plan.method"),  # with a time limit and a MIP outcome
        ({"mip_time_limit": 0}, "claim.plan.mip_time_limit"),
        ({"mip_time_limit": True}, "claim.plan.mip_time_limit"),
        ({"mip": "fast"}, "claim.plan.mip"),
        ({"mip": "too_large"}, "claim.plan.mip"),  # only auto skips the program
        ({"pattern": "greedy"}, "claim.plan.pattern"),  # the MIP proved optimality
        ({"mip": "time_limit"}, "claim.plan.pattern"),  # the MIP's pattern, not certified
        ({"optimal": None}, "claim.plan.optimal"),
        ({"optimal": "yes"}, "claim.plan.optimal"),
        ({"zz": 1}, "claim.plan.zz"),
    ],
)
def test_inconsistent_claim_plan_is_refused_naming_the_field(change, field):
    from persuasive.report.margins_plan import read_plan

    assert dict(read_plan({"plan": GOOD, "target_kappa": 7.0})) == GOOD
    greedy = {**GOOD, "method": "greedy", "mip_time_limit": None, "pattern": "greedy",
              "mip": None, "optimal": None}  # fmt: skip
    assert dict(read_plan({"plan": greedy, "target_kappa": 7.0})) == greedy
    with pytest.raises(ValidationError, match=field.replace(".", r"\.")):
        read_plan({"plan": {**GOOD, **change}, "target_kappa": 7.0})
    bad = dict(GOOD)
    del bad["bound"]
    with pytest.raises(ValidationError, match=r"claim\.plan\.bound: missing"):
        read_plan({"plan": bad, "target_kappa": 7.0})
    with pytest.raises(ValidationError, match="target_kappa"):
        read_plan({"plan": GOOD, "target_kappa": None})
