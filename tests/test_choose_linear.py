"""The Sender's choice for linear statistics (:func:`persuasive.choose.choose_linear`) against
brute force, ``pp.optimise``, the report, and ``persuasive choose linear``.

The oracle: on small random A (k <= 4 statistics of n <= 6 people, means and sums over random
subsets, with and without someone exposed), every subset S of the statistics and every σ of a
geometric grid (plus 0, and the σ the search returned): S must expose nobody — checked by
rank, ``rank([A_S; e_i]) = rank(A_S)``, not by the library's variance-spread test — and its κ
is ``r1 + log r2`` at σ = 0 or ``gaussian_noise_kappa(r1, r2, σ, V, δ)`` (the certificate
itself, not the vectorised :class:`ClassCurve` the search uses); the loss is
``Σ_{j∉S} c_j + |S| σ²``. The brute-force best is then compared with the search's:

* the search is exact (nobody exposed; or someone exposed and k <= EXHAUSTIVE_MAX, every
  subset searched): its loss equals the brute-force best, is at most every grid point's, its
  mechanism is recomputed to meet the target (what it keeps exposes nobody, by rank), and its
  σ is minimal (κ at σ(1 − 1e-6) misses the target);
* the greedy search (forced with EXHAUSTIVE_MAX = 0, as above 12 statistics): its loss is never
  below the brute-force best (which includes the search's own configuration); the gap is
  measured by ``test_greedy_gap`` (printed with ``pytest -s``) and shown on a constructed case.
"""

from __future__ import annotations

import itertools
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import persuasive as pp
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.choose import Choice, choose_linear
from persuasive.cli import app
from persuasive.errors import ValidationError

ROOT = Path(__file__).resolve().parents[1]
FAIR = ROOT / "examples" / "data" / "fair.csv"
runner = CliRunner()

#: The classes the random cases use: (r1, r2, V, δ). Noise pays only in the first.
CONFIGS = ((1.0, 4.0, 1.0, 0.5), (1.0, 4.0, None, 0.05), (0.5, 2.0, 2.0, 0.3))
TARGETS = (0.8, 1.2, 1.8, 2.5)
GRID = 24


@cache
def kappa_noise(r1: float, r2: float, v: float | None, delta: float, sigma: float) -> float:
    return float(gaussian_noise_kappa(r1, r2, sigma, v, delta)[0])


def exposes(a: np.ndarray) -> bool:
    """Someone's value is a combination of the rows of ``a`` (by rank)."""
    if a.shape[0] == 0:
        return False
    r = np.linalg.matrix_rank(a)
    eye = np.eye(a.shape[1])
    return any(np.linalg.matrix_rank(np.vstack([a, eye[i]])) == r for i in range(a.shape[1]))


def brute_force(
    a: np.ndarray, costs: np.ndarray, r1: float, r2: float, v: float | None, delta: float,
    target: float, extra: float | None,
) -> tuple[float, tuple[int, ...], float]:  # fmt: skip
    """(least loss, kept rows, σ) over every subset and σ in the grid (and ``extra``)."""
    k = a.shape[0]
    scale = 1.0 if v is None else v
    sigmas = [0.0, *np.geomspace(scale / 50, scale * 50, GRID).tolist()]
    if extra:
        sigmas.append(extra)
    feasible = [s for s in sigmas if (r1 + math.log(r2) if s == 0 else
                                      kappa_noise(r1, r2, v, delta, s)) <= target]  # fmt: skip
    best = (float(costs.sum()), (), 0.0)
    for size in range(1, k + 1):
        for rows in itertools.combinations(range(k), size):
            if exposes(a[list(rows)]):
                continue
            out = float(costs[[j for j in range(k) if j not in rows]].sum())
            for s in feasible:
                loss = out + size * s * s
                if loss < best[0] - 1e-12:
                    best = (loss, rows, s)
    return best


def random_case(seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(2, 5)), int(rng.integers(3, 7))
    a = np.zeros((k, n))
    for j in range(k):
        mask = rng.random(n) < 0.6
        if not mask.any():
            mask[rng.integers(n)] = True
        a[j, mask] = 1.0 / mask.sum() if rng.random() < 0.5 else 1.0
    r1, r2, v, delta = CONFIGS[seed % len(CONFIGS)]
    costs = rng.uniform(0.05, 3.0, size=k) if rng.random() < 0.7 else None
    return dict(a=a, r1=r1, r2=r2, v=v, delta=delta, target=TARGETS[seed % 4], costs=costs)


def run(case: dict[str, Any]) -> tuple[Choice, np.ndarray]:
    c = choose_linear(
        case["a"], r1=case["r1"], r2=case["r2"], target_kappa=case["target"],
        delta=case["delta"], max_stat_sd=case["v"], withhold_cost=case["costs"],
    )  # fmt: skip
    k = case["a"].shape[0]
    if case["costs"] is not None:
        costs = np.asarray(case["costs"])
    else:
        costs = np.full(k, math.inf if case["v"] is None else case["v"] ** 2)
    return c, costs


def recheck(c: Choice, case: dict[str, Any], costs: np.ndarray) -> None:
    """The best's mechanism recomputed: nobody exposed by what is kept, κ meets the target,
    the loss is what it says, and σ is minimal."""
    b = c.best
    assert b is not None and b.certified
    k = case["a"].shape[0]
    names = [f"s{j}" for j in range(k)]
    kept = [j for j in range(k) if names[j] not in b.withheld]
    if b.family == "withhold":
        kept = []
    assert not exposes(case["a"][kept])
    sigma = b.parameter or 0.0
    if not kept:
        kap = 0.0
    elif sigma == 0.0:
        kap = case["r1"] + math.log(case["r2"])
    else:
        kap = kappa_noise(case["r1"], case["r2"], case["v"], case["delta"], sigma)
        below = kappa_noise(case["r1"], case["r2"], case["v"], case["delta"], sigma * (1 - 1e-6))
        assert below > case["target"]  # no smaller σ meets the target
    assert kap <= case["target"] and b.kappa <= case["target"]
    withheld = [j for j in range(k) if j not in kept]
    loss = float(costs[withheld].sum()) + len(kept) * sigma**2
    assert b.loss == pytest.approx(loss, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(16))
def test_choose_linear_against_brute_force(seed: int) -> None:
    case = random_case(seed)
    c, costs = run(case)
    recheck(c, case, costs)
    extra = c.best.parameter if c.best is not None else None
    args = (case["r1"], case["r2"], case["v"], case["delta"], case["target"], extra)
    brute, _, _ = brute_force(case["a"], costs, *args)
    assert c.best is not None and c.exact_search
    grid_only, _, _ = brute_force(case["a"], costs, *args[:-1], None)
    assert c.best.loss <= grid_only + 1e-9  # no grid point does better
    assert c.best.loss == pytest.approx(brute, rel=1e-9, abs=1e-12)


@pytest.fixture
def small_frontier(monkeypatch: pytest.MonkeyPatch) -> None:
    """3-point frontiers: what these tests check is not the frontier, and each point of a
    mean's (or the bounded-error class's) frontier costs a certificate evaluation (~0.05 s)."""
    from persuasive.choose import linear, mean

    monkeypatch.setattr(mean, "FRONTIER_POINTS", 3)
    monkeypatch.setattr(linear, "FRONTIER_POINTS", 3)


@pytest.fixture
def greedy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search as above EXHAUSTIVE_MAX statistics: greedy."""
    from persuasive.choose import linear

    monkeypatch.setattr(linear, "EXHAUSTIVE_MAX", 0)


def test_greedy_gap(greedy: None) -> None:
    """On random cases where someone is exposed: how far greedy withholding is from the best
    subset (printed; asserted only never below it)."""
    gaps, cases = [], 0
    for seed in range(100, 140):
        case = random_case(seed)
        if not exposes(case["a"]):
            continue
        cases += 1
        c, costs = run(case)
        recheck(c, case, costs)
        extra = c.best.parameter if c.best is not None else None
        brute, _, _ = brute_force(
            case["a"], costs, case["r1"], case["r2"], case["v"], case["delta"],
            case["target"], extra,
        )  # fmt: skip
        assert c.best is not None and c.best.loss >= brute - 1e-9
        assert not c.exact_search and "NOT an exact search" in " ".join(c.notes)
        gaps.append(c.best.loss - brute)
    worse = [g for g in gaps if g > 1e-9]
    print(
        f"greedy withholding: {cases} exposed cases, {len(worse)} above the best subset"
        + (f" (largest gap {max(worse):.4g})" if worse else "")
    )
    assert cases >= 8


def test_greedy_is_not_exact_on_a_constructed_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows 'all' (mean of persons 0-2), 'ab' (mean of 0, 1) and 'c' (person 2). By hand: 'c'
    alone is x_2, and 3·all − 2·ab = x_2, so every set of two or three rows exposes row 2, and
    'all' alone or 'ab' alone exposes nobody. With costs (5, 1, 0.1) the best is to keep 'all'
    (loss 1 + 0.1 = 1.1). Greedy withholding (by κ under an independent prior, blind to the
    costs) keeps 'ab' instead (loss 5.1); the exhaustive search finds 'all'."""
    from persuasive.choose import linear

    a = np.array([[1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    costs = [5.0, 1.0, 0.1]
    kw: dict[str, Any] = dict(names=["all", "ab", "c"], r1=1.0, r2=4.0, target_kappa=3.0,
                              withhold_cost=costs)  # fmt: skip
    brute, kept, _ = brute_force(a, np.array(costs), 1.0, 4.0, None, 0.05, 3.0, None)
    assert kept == (0,) and brute == pytest.approx(1.1)
    exact = choose_linear(a, **kw)
    assert exact.exact_search and exact.best.withheld == ("ab", "c")
    assert exact.best.loss == pytest.approx(1.1)
    monkeypatch.setattr(linear, "EXHAUSTIVE_MAX", 0)
    slow = choose_linear(a, **kw)
    assert not slow.exact_search and slow.best.withheld == ("all", "c")
    assert slow.best.loss == pytest.approx(5.1)


def test_frame_and_matrix_give_the_same_choice() -> None:
    from persuasive.release.statistics import statistics_matrix

    df = pl.DataFrame({"y": [1.0, 2.0, 6.0, 3.0, 5.0], "g": [1, 1, 2, 2, 2]})
    stats = [("all", "mean", "true"), ("g1", "sum", "g = 1"), ("no4", "mean", "row_id != 4")]
    names, a = statistics_matrix(df, stats, value="y")
    kw = dict(r1=1.0, r2=4.0, target_kappa=3.0, max_stat_sd=1.0)
    by_frame = choose_linear(df, value="y", statistics=stats, **kw)
    by_matrix = choose_linear(a, names=names, **kw)
    assert by_frame.candidates == by_matrix.candidates
    assert by_frame.best is not None and by_frame.best.withheld  # 'no4' exposes row 4


def test_cost_of_withholding_defaults_and_mapping() -> None:
    a = [[0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0.0, 0.0]]
    kw = dict(r1=1.0, r2=4.0, target_kappa=0.1, delta=0.5)
    assert choose_linear(a, **kw, max_stat_sd=2.0).best.loss == 8.0  # V² each
    assert choose_linear(a, **kw).best.loss == math.inf  # no V: a withheld statistic is ∞
    c = choose_linear(a, **kw, max_stat_sd=2.0, withhold_cost={"s1": 0.5})
    assert c.best.loss == 4.5  # s0 at V² = 4, s1 as given
    for bad, frag in [(-1.0, "withhold_cost must be >= 0"), ({"zz": 1.0}, "do not exist"),
                      ("x", "withhold_cost must be a number")]:  # fmt: skip
        with pytest.raises(ValidationError, match=frag) as err:
            choose_linear(a, **kw, withhold_cost=bad)
        assert "\n" not in str(err.value)


def test_noise_then_withholding_what_costs_less_than_sigma2() -> None:
    """Nobody exposed, noise needed: a statistic is withheld exactly when its cost is below σ²."""
    a = [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]
    c = choose_linear(a, r1=1.0, r2=4.0, target_kappa=1.5, delta=0.5, max_stat_sd=1.0,
                      withhold_cost=[0.1, 10.0])  # fmt: skip
    s = c.best.parameter
    assert c.best.family == "withhold_some" and c.best.withheld == ("s0",)
    assert c.best.loss == pytest.approx(0.1 + s * s)
    assert kappa_noise(1.0, 4.0, 1.0, 0.5, s) <= 1.5 < kappa_noise(1.0, 4.0, 1.0, 0.5, s * 0.999)


# ------------------------------------------------------------------------------ optimise


def test_optimise_dispatches(small_frontier: None) -> None:
    m = pp.optimise(r1=1.0, r2=4.0, target_kappa=3.0)
    assert m.best is not None and m.best.family == "exact" and m.utility == "expected squared error"
    t = pp.optimise(
        ROOT / "examples" / "data" / "fair_crosstab.csv", keys=["religious", "occupation"],
        count="n", receiver=pp.PoissonReceiver(1, 40), target_kappa=3.0,
    )  # fmt: skip
    assert t.best is not None and t.best.parameter == 31.0
    a = [[0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0.0, 0.0]]
    assert (
        pp.optimise(a, r1=1.0, r2=4.0, target_kappa=3.0).candidates
        == choose_linear(a, r1=1.0, r2=4.0, target_kappa=3.0).candidates
    )


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        (("x.csv",), {"r1": 1.0}, "optimise needs a mean"),
        ((), {}, "optimise needs a mean"),
        ((), {"r1": 1.0, "r2": 4.0, "target_kappa": 1.0, "bogus": 1}, "does not take ['bogus']"),
        ((), {"r1": 1.0, "r2": 4.0}, "needs ['target_kappa']"),
        (
            (np.eye(2),),
            {"r1": 1.0, "r2": 4.0, "target_kappa": 1.0, "keys": "k"},
            "a table does not take ['r1', 'r2']",
        ),
    ],
)
def test_optimise_bad_input_one_line(args: tuple[Any, ...], kwargs: dict[str, Any],
                                     fragment: str) -> None:  # fmt: skip
    with pytest.raises(ValidationError) as err:
        pp.optimise(*args, **kwargs)
    assert fragment in str(err.value) and "\n" not in str(err.value)


# ------------------------------------------------------------------------------ report


def test_report_html_and_folder(tmp_path: Path) -> None:
    import base64
    import re

    c = choose_linear([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], r1=1.0, r2=4.0, target_kappa=1.5,
                      delta=0.5, max_stat_sd=1.0)  # fmt: skip
    page = c.to_html()
    assert c.statement().split(".")[0] in page.replace("&#x27;", "'")
    assert "Mechanisms searched" in page and "The frontier" in page
    assert "<h2>The choice</h2>" in page and "The guarantee" not in page  # a choice, not a proof
    assert not re.search(r'(src|href)="(?!data:)', page)  # self-contained
    png = base64.b64decode(re.search(r'data:image/png;base64,([^"]+)"', page).group(1))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    paths = c.write_report(tmp_path / "rep")
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == [
        ".persuasive-output.json", "frontier.png", "report.html", "report.md"
    ]  # fmt: skip
    assert paths["html"].read_text(encoding="utf-8") == page
    md = paths["markdown"].read_text(encoding="utf-8")
    assert "## The choice" in md and c.statement() in md
    with pytest.raises(ValidationError, match="exists and is not empty"):
        c.write_report(tmp_path / "rep")
    c.write_report(tmp_path / "rep", force=True)


# ------------------------------------------------------------------------------ CLI

STATS = ("--stat", "overall:mean:true", "--stat", "rel4:mean:religious = 4")
LINEAR = ("choose", "linear", str(FAIR), "--value", "affairs", "--r1", "1", "--r2", "4")


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


def test_cli_linear_exit_0_report_and_json(tmp_path: Path) -> None:
    res = invoke(*LINEAR, *STATS, "--target-kappa", "1.5", "--max-stat-sd", "1", "--delta",
                 "0.5", "--report", str(tmp_path / "rep"), "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["best"]["family"] == "gaussian" and doc["best"]["kappa"] <= 1.5
    assert doc["files"]["report"] == str(tmp_path / "rep" / "report.html")
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert "fair.csv" in html and "Mechanisms searched" in html


def test_cli_linear_exposed_withholds_and_says_how() -> None:
    res = invoke(*LINEAR, *STATS, "--stat", "no17:mean:row_id != 17", "--target-kappa", "3")
    assert res.exit_code == 0, res.output
    assert "withholding no17" in res.stdout and "the choice is exact" in res.stdout


def test_cli_linear_exit_1_only_withholding() -> None:
    res = invoke(*LINEAR, *STATS, "--target-kappa", "0.1", "--max-stat-sd", "1")
    assert res.exit_code == 1 and "Only withholding" in res.stdout


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (("--withhold-cost", "-1"), "--withhold-cost must be C or NAME=C"),
        (("--withhold-cost", "zz=1"), "do not exist"),
        (("--r1", "0"), "--r1"),
        ((), "give the statistics"),
    ],
)
def test_cli_linear_bad_input_exit_2_nothing_written(
    tmp_path: Path, extra: tuple[str, ...], fragment: str
) -> None:
    stats = () if fragment == "give the statistics" else STATS
    res = invoke(*LINEAR, *stats, "--target-kappa", "1", *extra, "--report", str(tmp_path / "r"),
                 "--frontier", str(tmp_path / "f.csv"))  # fmt: skip
    assert res.exit_code == 2 and fragment in res.stderr, res.output
    assert res.stderr.count("error:") == 1 and list(tmp_path.iterdir()) == []


def test_cli_frontier_inside_report_is_refused(tmp_path: Path) -> None:
    (tmp_path / "rep").mkdir()
    res = invoke("choose", "mean", "--r1", "1", "--r2", "4", "--target-kappa", "3", "--report",
                 str(tmp_path / "rep"), "--frontier", str(tmp_path / "rep" / "f.csv"))  # fmt: skip
    assert res.exit_code == 2 and "inside the --report folder" in res.stderr


def test_cli_mean_report(tmp_path: Path, small_frontier: None) -> None:
    res = invoke("choose", "mean", "--r1", "1", "--r2", "4", "--target-kappa", "3", "--report",
                 str(tmp_path / "rep"), "-q")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "Prop 7" in (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")


def test_cli_linear_help_is_readable() -> None:
    import re

    res = invoke("choose", "linear", "--help")
    noise = re.compile(r"<(str|int|float|bool|path)>|\b(INTEGER|FLOAT|TEXT|PATH)\b")
    assert res.exit_code == 0 and not noise.search(res.stdout), res.stdout
    for shown in ("--withhold-cost", "--report DIR", "--stat NAME:KIND:WHERE"):
        assert shown in res.stdout


# ------------------------------------------------------------------- bounded error (r0)


@pytest.mark.parametrize(("target", "r0"), [(0.5, 1.0), (1.2, 0.5)])
def test_bounded_error_class_noise_pays(target: float, r0: float, small_frontier: None) -> None:
    """With every person's error at most r0 (docs/linear_bounded.md) noise meets targets the
    exact release misses. The chosen σ is checked by the class certificate itself
    (``linear_bounded_error_kappa`` on A: the class check and the registry's path), minimal
    (σ(1 − 1e-6) misses), and no σ of a grid gives a smaller loss."""
    from persuasive.certify.linear_bounded_error import linear_bounded_error_kappa

    a = [[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]]
    kw = dict(max_person_error=r0, max_stat_sd=1.0, delta=0.05)
    c = choose_linear(a, r1=1.0, r2=4.0, target_kappa=target, withhold_cost=1e6, **kw)
    b = c.best
    assert b is not None and b.family == "gaussian" and c.exact_search

    def kap(s: float) -> float:
        return linear_bounded_error_kappa(a, 1.0, 4.0, noise_sd=s, **kw)

    assert kap(0.0) > target  # the exact release misses the target
    assert kap(b.parameter) <= target < kap(b.parameter * (1 - 1e-6))
    grid = np.geomspace(0.05, 200.0, 8)
    feasible = [s for s in grid if kap(float(s)) <= target]
    assert feasible and b.loss <= 2 * min(feasible) ** 2 + 1e-12
    assert b.loss == pytest.approx(2 * b.parameter**2)


def test_cli_linear_max_person_error(small_frontier: None) -> None:
    res = invoke(*LINEAR, *STATS, "--target-kappa", "0.5", "--max-stat-sd", "1",
                 "--max-person-error", "1", "--withhold-cost", "1e6", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["best"]["family"] == "gaussian" and doc["best"]["kappa"] <= 0.5
    assert "docs/linear_bounded.md" in doc["candidates"][0]["reason"]


def test_greedy_path_keeps_a_safe_statistic_on_ties(greedy: None) -> None:
    """s2 = x_1 and s3 = x_3 each expose someone; s0 = x_1 + x_2 and s1 = mean(x_1, x_2, x_3)
    do not alone, but together they do (3·s1 − s0 = x_3). So the best keeps one statistic
    (loss 3; brute force by rank). Every trial of greedy_withhold is at κ = ∞; its ties go to
    the drop leaving the fewest people exposed, and it keeps one safe statistic (it used to drop
    by index and keep nothing). The greedy search then reaches the brute-force loss."""
    a = np.array([[0, 1, 1, 0], [0, 1 / 3, 1 / 3, 1 / 3], [0, 1, 0, 0], [0, 0, 0, 1.0]])
    costs = np.ones(4)
    brute, kept, _ = brute_force(a, costs, 1.0, 4.0, None, 0.05, 3.0, None)
    assert len(kept) == 1 and brute == 3.0
    from persuasive.choose.linear import _greedy_kept

    got = _greedy_kept(a, 1.0)
    assert len(got) == 1 and got[0] in (0, 1)  # a safe one (s2, s3 expose x_1, x_3)
    c = choose_linear(a, r1=1.0, r2=4.0, target_kappa=3.0, withhold_cost=1.0)
    assert not c.exact_search and c.best.loss == 3.0 and len(c.best.withheld) == 3
    assert {"s2", "s3"} <= set(c.best.withheld)


def test_cli_table_report_and_force(tmp_path: Path) -> None:
    table = ("choose", "table", str(ROOT / "examples" / "data" / "fair_crosstab.csv"), "--keys",
             "religious,occupation", "--count", "n", "--poisson-mean", "1:40", "--target-kappa",
             "3", "--report", str(tmp_path / "rep"), "-q")  # fmt: skip
    res = invoke(*table)
    assert res.exit_code == 0, res.output
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert "suppression (31)" in html and "24 cells" in html
    again = invoke(*table)
    assert again.exit_code == 2 and "pass --force" in again.stderr
    assert invoke(*table, "--force").exit_code == 0
