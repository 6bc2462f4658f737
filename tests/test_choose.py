"""The Sender's choice (eq. 5): :mod:`persuasive.choose` against brute force, and ``persuasive
choose`` on the command line.

* Means: over a geometric grid of noise sds (and the exact mean), the certified point of least
  expected squared error is never better than ``choose_mean``'s best and is within the grid's
  resolution of it; the chosen σ's κ, recomputed by ``gaussian_noise_kappa`` /
  ``bounded_error_kappa``, meets the target. Cases: noise cannot pay (best exact), only noise
  meets the target (Prop 7's class with V, and the bounded-error class), the bounded-error
  exact mean, and nothing but withholding.
* Tables: over h = 2..50 on random tables with Poisson, negative-binomial and small-cell
  Receivers, for both objectives, the certified threshold of least loss (the smallest such h
  among ties) is ``choose_table``'s.
* Bad input: one-line ValidationErrors; the command line's exit statuses 0/1/2 and its files.

The frontier of ``choose_mean`` (25 σ, about 0.05 s each) is not what these tests check, so most
cases run with a 3-point frontier (:data:`persuasive.choose.mean.FRONTIER_POINTS`); one test
keeps the default.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from persuasive.certify.bounded_error import bounded_error_kappa
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.choose import Choice, choose_mean, choose_table
from persuasive.choose import mean as choose_mean_module
from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    Receiver,
    SmallCellReceiver,
)
from persuasive.cli import app
from persuasive.cli._app import DEBUG
from persuasive.errors import ValidationError

ROOT = Path(__file__).resolve().parents[1]
CROSSTAB = ROOT / "examples" / "data" / "fair_crosstab.csv"
FRAME_COLUMNS = ["family", "parameter", "kappa", "delta", "loss", "certified"]
runner = CliRunner()


# ----------------------------------------------------------------------------------- means


@dataclass(frozen=True)
class MeanCase:
    name: str
    r1: float
    r2: float
    delta: float
    v: float | None
    r0: float | None
    target: float
    family: str  # the expected best
    grid_points: int  # points of the σ grid, V/100 .. 100 V

    def kwargs(self) -> dict[str, Any]:
        return {
            "r1": self.r1,
            "r2": self.r2,
            "target_kappa": self.target,
            "delta": self.delta,
            "max_mean_sd": self.v,
            "max_person_error": self.r0,
        }

    def kappa(self, sigma: float) -> float:
        """The certified κ of the mean plus N(0, sigma²) (sigma = 0: the exact mean),
        recomputed from the certificates, not from persuasive.choose."""
        if self.r0 is not None:
            return bounded_error_kappa(
                self.r1, self.r2, max_person_error=self.r0, max_mean_sd=self.v, sigma=sigma,
                delta=self.delta if sigma else 0.0,
            )  # fmt: skip
        if sigma == 0.0:
            return self.r1 + math.log(self.r2)  # Prop 7
        return gaussian_noise_kappa(self.r1, self.r2, sigma, self.v, self.delta)[0]

    def grid(self) -> np.ndarray:
        scale = 1.0 if self.v is None else self.v
        return np.geomspace(scale / 100.0, scale * 100.0, self.grid_points)


MEAN_CASES = [
    # r1 + log r2 = 2.39 <= z^2_0.95 = 2.71: noise cannot beat the exact mean (Prop 7's class)
    MeanCase("noise-cannot-pay", 1.0, 4.0, 0.05, None, None, 3.0, "exact", 0),
    # the exact mean's 5.39 misses 4.5; a prior sd of the mean <= 0.1 lets noise certify it
    MeanCase("only-noise-V", 4.0, 4.0, 0.05, 0.1, None, 4.5, "gaussian", 61),
    # bounded error on every person (docs/release_means.md (e)): noise reaches κ = 1
    MeanCase("only-noise-r0", 1.0, 4.0, 0.05, 1.0, 1.0, 1.0, "gaussian", 61),
    # the bounded-error class certifies the exact mean at 2.079 < Prop 7's 2.386
    MeanCase("exact-r0", 1.0, 4.0, 0.1, 1.0, 0.1, 2.2, "exact", 0),
    # κ <= 1 against Prop 7's class: every noise stays above the chi-square quantile
    # r0 without V: the exact mean's bound min(r1 + log r2, log r2 + r0^2, ...) is 1.636
    MeanCase("exact-r0-no-V", 1.0, 4.0, 0.05, None, 0.5, 2.0, "exact", 0),
    # r0 and V at delta = 0: only the pointwise bound -log(1 - c gamma) + r0^2 certifies noise
    MeanCase("noise-r0-delta-0", 1.0, 4.0, 0.0, 1.0, 0.5, 1.5, "gaussian", 61),
    MeanCase("withhold", 1.0, 4.0, 0.05, None, None, 1.0, "withhold", 25),
    MeanCase("withhold-V", 1.0, 4.0, 0.05, 1.0, None, 2.0, "withhold", 25),
]


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(DEBUG, "on", False)


@pytest.fixture(scope="module")
def small_frontier() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(choose_mean_module, "FRONTIER_POINTS", 3)
        yield


@pytest.fixture(scope="module")
def mean_choices(small_frontier: None) -> dict[str, Choice]:
    return {case.name: choose_mean(**case.kwargs()) for case in MEAN_CASES}


def _grid_best(case: MeanCase) -> tuple[float, float | None, float | None]:
    """Brute force: (loss, σ, largest uncertified σ below it) of the certified point of least
    expected squared error among the exact mean and the grid (σ None: the exact mean; loss
    inf: nothing on the grid is certified). The grid is scanned upwards to its first certified
    point: every point below it is evaluated, none above can have a smaller error."""
    if case.kappa(0.0) <= case.target:
        return 0.0, None, None
    below = None
    for s in case.grid():
        if case.kappa(float(s)) <= case.target:
            return float(s) ** 2, float(s), below
        below = float(s)
    return math.inf, None, below


@pytest.mark.parametrize("case", MEAN_CASES, ids=lambda c: c.name)
def test_choose_mean_against_brute_force(case: MeanCase, mean_choices: dict[str, Choice]) -> None:
    choice = mean_choices[case.name]
    best = choice.best
    assert best is not None and best.family == case.family, choice.statement()
    grid_loss, grid_sigma, below = _grid_best(case)
    assert best.loss <= grid_loss  # the grid never does better
    if case.family == "exact":
        assert grid_loss == 0.0 and best.loss == 0.0 and best.parameter is None
        assert case.kappa(0.0) <= best.kappa + 1e-12 and best.kappa <= case.target
    elif case.family == "withhold":
        assert math.isinf(grid_loss) and math.isinf(best.loss)
        assert not any(x.certified for x in choice.candidates if x.family != "withhold")
        assert case.kappa(0.0) > case.target
    else:
        sigma = best.parameter
        assert sigma is not None and grid_sigma is not None and below is not None
        ratio = float(case.grid()[1] / case.grid()[0])
        # within the grid's resolution: below < σ* <= the grid's best < σ* * ratio
        assert below < sigma <= grid_sigma * (1 + 1e-12)
        assert grid_sigma <= sigma * ratio
        assert math.isclose(best.loss, sigma**2)
        # the chosen σ's κ, recomputed, meets the target; a σ 0.1 % smaller does not
        assert case.kappa(sigma) <= case.target
        assert math.isclose(case.kappa(sigma), best.kappa, rel_tol=0, abs_tol=1e-12)
        assert case.kappa(sigma / 1.001) > case.target
        assert case.kappa(0.0) > case.target  # else the exact mean would be best


def test_choose_mean_candidates_and_statement(mean_choices: dict[str, Choice]) -> None:
    for case in MEAN_CASES:
        choice = mean_choices[case.name]
        fams = [x.family for x in choice.candidates]
        assert fams == ["exact", "gaussian", "laplace", "coarsening", "withhold"]
        for x in choice.candidates:
            assert x.reason and "\n" not in x.reason
            assert x.certified == (x.kappa <= case.target)
        # Laplace is certified only against the bounded-error class, and then dominated
        unoffered = ("coarsening",) if case.r0 is not None else ("laplace", "coarsening")
        assert not any(x.certified for x in choice.candidates if x.family in unoffered)
        assert choice.best is not None and choice.best.family != "laplace"
        text = choice.statement()
        assert "\n" not in text
        if case.family == "withhold":
            assert text.startswith("Only withholding") and "exact:" in text
        else:
            assert text.startswith("Best certified mechanism") and case.family in text


def test_choose_mean_frontier_default() -> None:
    """The default frontier: 25 σ from V/100 to 100 V after the exact mean, κ non-increasing in σ
    (the monotonicity the bisection rests on), certified exactly when κ meets the target."""
    choice = choose_mean(r1=1.0, r2=4.0, target_kappa=1.0, max_mean_sd=1.0, max_person_error=1.0)
    pts = choice.frontier
    assert pts[0].family == "exact" and len(pts) == 1 + choose_mean_module.FRONTIER_POINTS
    sig = [p.parameter for p in pts[1:]]
    assert sig[0] == pytest.approx(0.01) and sig[-1] == pytest.approx(100.0)
    ks = [p.kappa for p in pts[1:]]
    assert all(a >= b for a, b in itertools.pairwise(ks))
    assert all(p.certified == (p.kappa <= 1.0) for p in pts)
    frame = choice.to_frame()
    assert frame.columns == FRAME_COLUMNS and frame.height == len(pts)


def test_choose_mean_delta_zero_only_the_exact_mean() -> None:
    c = choose_mean(r1=1.0, r2=4.0, target_kappa=3.0, delta=0.0)
    assert c.best is not None and c.best.family == "exact"
    gauss = next(x for x in c.candidates if x.family == "gaussian")
    assert not gauss.certified and math.isinf(gauss.kappa)
    assert [p.family for p in c.frontier] == ["exact"]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"r1": 0.0, "r2": 4.0, "target_kappa": 1.0}, "r1 must be in (0, inf); got 0"),
        ({"r1": 1.0, "r2": 1.0, "target_kappa": 1.0}, "r2 must be in (1, inf)"),
        ({"r1": 1.0, "r2": 4.0, "target_kappa": -1.0}, "target_kappa must be in [0, inf)"),
        ({"r1": 1.0, "r2": 4.0, "target_kappa": math.nan}, "target_kappa must be a finite"),
        ({"r1": 1.0, "r2": 4.0, "target_kappa": 1.0, "delta": 1.0}, "delta must be in [0, 1)"),
        ({"r1": 1.0, "r2": 4.0, "target_kappa": 1.0, "max_mean_sd": 0.0}, "max_mean_sd must be"),
        (
            {"r1": 1.0, "r2": 4.0, "target_kappa": 1.0, "max_mean_sd": 1.0, "max_person_error": -1},
            "max_person_error must be in (0, inf)",
        ),
    ],
)
def test_choose_mean_bad_input(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        choose_mean(**kwargs)
    assert fragment in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------------------------- tables


def _receivers(rng: np.random.Generator) -> list[Receiver]:
    lo = float(rng.uniform(0.0, 5.0))
    return [
        PoissonReceiver(lo, lo + float(rng.uniform(1.0, 30.0))),
        NegativeBinomialReceiver(
            lo, lo + float(rng.uniform(1.0, 20.0)), float(rng.uniform(0.5, 5))
        ),
        SmallCellReceiver(float(rng.uniform(0.05, 0.9))),
    ]


def _random_table(rng: np.random.Generator) -> pl.DataFrame:
    n = int(rng.integers(3, 40))
    counts = rng.negative_binomial(1.0, 1.0 / (1.0 + float(rng.uniform(2.0, 40.0))), size=n)
    return pl.DataFrame({"a": np.arange(n) % 5, "b": np.arange(n) // 5, "n": counts})


def _table_brute_force(
    counts: np.ndarray, receiver: Receiver, target: float, objective: str
) -> tuple[int | None, float]:
    """(the certified h of least loss over h = 2..50, smallest among ties; its loss)."""
    best_h, best_loss = None, math.inf
    for h in range(2, 51):
        if not receiver.kappa(h) <= target:
            continue
        small = counts[counts < h]
        loss = float(small.size if objective == "count" else small.sum())
        if loss < best_loss:
            best_h, best_loss = h, loss
    return best_h, best_loss


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("objective", ["count", "total"])
def test_choose_table_against_brute_force(seed: int, objective: str) -> None:
    rng = np.random.default_rng(1000 + seed)
    frame = _random_table(rng)
    counts = frame.get_column("n").to_numpy()
    for receiver in _receivers(rng):
        # a target between κ(2) and κ(50), so that h* falls inside the brute force's range
        k2, k50 = receiver.kappa(2), receiver.kappa(50)
        target = float(rng.uniform(k50, k2)) if k2 > k50 else float(rng.choice([k2, k2 / 2]))
        choice = choose_table(
            frame, keys=["a", "b"], count="n", receiver=receiver, target_kappa=target,
            objective=objective,
        )  # fmt: skip
        supp = next(x for x in choice.candidates if x.family == "suppression")
        bf_h, bf_loss = _table_brute_force(counts, receiver, target, objective)
        whole = float(counts.size if objective == "count" else counts.sum())
        withhold = next(x for x in choice.candidates if x.family == "withhold")
        assert withhold.certified and withhold.loss == whole
        if bf_h is None:
            assert not supp.certified, (receiver, target)
            assert choice.best is withhold
            continue
        assert supp.certified and supp.parameter == bf_h and supp.loss == bf_loss
        assert receiver.kappa(bf_h) == supp.kappa <= target
        assert choice.best is not None and choice.best.loss == min(bf_loss, whole)
        # the frontier: every h from 2 on, its loss and whether it meets the target
        for p in choice.frontier:
            h = int(p.parameter or 0)
            small = counts[counts < h]
            assert p.loss == (small.size if objective == "count" else small.sum())
            assert p.certified == (receiver.kappa(h) <= target)


def test_choose_table_docstring_case_and_bundled_data() -> None:
    c = choose_table(
        CROSSTAB, keys="religious,occupation".split(","), count="n",
        receiver=PoissonReceiver(1.0, 40.0), target_kappa=3.0,
    )  # fmt: skip
    assert c.best is not None and c.best.family == "suppression"
    h = int(c.best.parameter or 0)
    counts = pl.read_csv(CROSSTAB).get_column("n").to_numpy()
    assert c.best.loss == (counts < h).sum()
    assert PoissonReceiver(1.0, 40.0).kappa(h) <= 3.0 < PoissonReceiver(1.0, 40.0).kappa(h - 1)


def test_choose_table_bad_input() -> None:
    frame = pl.DataFrame({"k": list("abc"), "n": [1, 5, 2]})
    rc = PoissonReceiver(1.0, 10.0)
    cases: list[tuple[Any, dict[str, Any], str]] = [
        (frame, {"objective": "cells"}, "objective must be one of count, total; got 'cells'"),
        (frame, {"target_kappa": -1.0}, "target_kappa must be in [0, inf)"),
        (frame, {"count": "m"}, "count column 'm' does not exist"),
        (frame.with_columns(n=pl.Series([1, -5, 2])), {}, "is negative (-5)"),
    ]
    for data, extra, fragment in cases:
        kwargs = {"keys": "k", "count": "n", "receiver": rc, "target_kappa": 1.0, **extra}
        with pytest.raises(ValidationError) as info:
            choose_table(data, **kwargs)
        assert fragment in str(info.value) and "\n" not in str(info.value)


def test_choose_table_refuses_a_non_receiver() -> None:
    frame = pl.DataFrame({"k": list("abc"), "n": [1, 5, 2]})
    with pytest.raises(ValidationError, match="receiver must be a Receiver model"):
        choose_table(frame, keys="k", count="n", receiver="poisson", target_kappa=1.0)  # type: ignore[arg-type]


def test_statement_when_suppression_ties_with_withholding() -> None:
    frame = pl.DataFrame({"k": list("abc"), "n": [1, 2, 3]})  # h* = 6 suppresses every cell
    c = choose_table(
        frame, keys="k", count="n", receiver=PoissonReceiver(1.0, 10.0), target_kappa=3.0
    )
    supp = next(x for x in c.candidates if x.family == "suppression")
    assert supp.certified and c.best is not None and c.best.family == "suppression"
    assert c.best.loss == 3.0 and not c.statement().startswith("Only withholding meets")


# ---------------------------------------------------------------------------- command line


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


TABLE = ["choose", "table", str(CROSSTAB), "--keys", "religious,occupation", "--count", "n"]


def test_cli_table_exit_0_with_frontier_and_plot(tmp_path: Path) -> None:
    csv, png = tmp_path / "frontier.csv", tmp_path / "frontier.png"
    res = invoke(*TABLE, "--poisson-mean", "1:40", "--target-kappa", "3", "--frontier", str(csv),
                 "--plot", str(png))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert "Best certified mechanism" in res.stdout and "suppression" in res.stdout
    assert png.stat().st_size > 1000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    got = pl.read_csv(csv)
    assert got.columns == FRAME_COLUMNS
    want = choose_table(
        CROSSTAB, keys=["religious", "occupation"], count="n",
        receiver=PoissonReceiver(1.0, 40.0), target_kappa=3.0,
    ).to_frame()  # fmt: skip
    assert got.height == want.height
    assert got.get_column("parameter").to_list() == want.get_column("parameter").to_list()
    assert got.get_column("loss").to_list() == want.get_column("loss").to_list()
    assert got.get_column("certified").to_list() == want.get_column("certified").to_list()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frontier.csv", "frontier.png"]


def test_cli_table_json_and_objective_total() -> None:
    res = invoke(*TABLE, "--negbin-mean", "1:40", "--negbin-size", "2", "--target-kappa", "1",
                 "--objective", "total", "--json")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert set(doc) >= {"best", "candidates", "frontier", "statement", "target_kappa", "utility"}
    assert doc["best"]["family"] == "suppression" and doc["utility"] == "total count suppressed"
    want = choose_table(
        CROSSTAB, keys=["religious", "occupation"], count="n",
        receiver=NegativeBinomialReceiver(1.0, 40.0, 2.0), target_kappa=1.0, objective="total",
    )  # fmt: skip
    assert want.best is not None and doc["best"]["parameter"] == want.best.parameter
    assert doc["best"]["loss"] == want.best.loss


def test_cli_table_exit_1_only_withholding() -> None:
    res = invoke(*TABLE, "--alpha", "0.5", "--target-kappa", "0.1")
    assert res.exit_code == 1, res.stderr
    assert "Only withholding meets κ ≤ 0.1" in res.stdout


def test_cli_mean_exit_0_and_1() -> None:
    res = invoke("choose", "mean", "--r1", "1", "--r2", "4", "--target-kappa", "3", "--delta", "0")
    assert res.exit_code == 0, res.stderr
    assert "Best certified mechanism for κ ≤ 3" in res.stdout and "exact" in res.stdout
    res = invoke("choose", "mean", "--r1", "1", "--r2", "4", "--target-kappa", "1", "--delta", "0")
    assert res.exit_code == 1, res.stderr
    assert (
        "Only withholding meets κ ≤ 1" in res.stdout
        and "Gaussian noise has no finite" in res.stdout
    )


def test_cli_mean_noise_json_frontier(
    tmp_path: Path, mean_choices: dict[str, Choice], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(choose_mean_module, "FRONTIER_POINTS", 3)
    csv = tmp_path / "f.parquet"
    res = invoke("choose", "mean", "--r1", "1", "--r2", "4", "--target-kappa", "1",
                 "--max-mean-sd", "1", "--max-person-error", "1", "--json",
                 "--frontier", str(csv))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    want = mean_choices["only-noise-r0"].best
    assert want is not None and doc["best"]["family"] == "gaussian"
    assert doc["best"]["parameter"] == want.parameter and doc["files"] == {"frontier": str(csv)}
    frame = pl.read_parquet(csv)
    assert frame.columns == FRAME_COLUMNS and frame.height == 4


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["mean", "--r1", "0", "--r2", "4", "--target-kappa", "1"], "--r1 must be in (0, inf)"),
        (["mean", "--r1", "1", "--r2", "4"], "Missing option '--target-kappa'"),
        (["mean", "--r1", "1", "--r2", "4", "--target-kappa", "-1"], "--target-kappa must be"),
        (["mean", "--r1", "1", "--r2", "4", "--target-kappa", "1", "--delta", "1"], "--delta"),
        (["mean", "--r1", "1", "--r2", "4", "--target-kappa", "1", "--max-person-error", "-2"],
         "--max-person-error must be in (0, inf); got -2"),
        (["mean", "--r1", "1", "--r2", "4", "--target-kappa", "1", "--max-mean-sd", "1",
          "--max-person-error", "0"], "--max-person-error must be in (0, inf); got 0"),
        (["mean", "--r1", "1", "--r2", "4", "--target-kappa", "1", "--plot", "{tmp}/p.jpg"],
         "--plot must name a .png, .pdf or .svg file; got"),
        (["mean", "--r1", "1", "--r2", "4", "--target-kappa", "1", "--frontier", "{tmp}/x/f.csv"],
         "the folder"),
        (["mean", "--r1", "1", "--r2", "4", "--target-kappa", "1", "--frontier", "{tmp}/a.csv",
          "--plot", "{tmp}/a.csv"], "--plot must name"),
        ([*TABLE[1:], "--target-kappa", "1"], "state the Receiver with exactly one of"),
        ([*TABLE[1:], "--poisson-mean", "1-40", "--target-kappa", "1"], "--poisson-mean must be"),
        ([*TABLE[1:], "--alpha", "0.5", "--target-kappa", "1", "--objective", "cells"],
         "--objective must be count or total; got 'cells'"),
        ([*TABLE[1:3], "--count", "m", "--keys", "religious", "--alpha", "0.5",
          "--target-kappa", "1"], "count column 'm' does not exist"),
        ([*TABLE[1:], "--alpha", "0.5", "--target-kappa", "1", "--frontier", str(CROSSTAB),
          "--force"], "is the input DATA"),
    ],
)  # fmt: skip
def test_cli_bad_input_exit_2_nothing_written(
    args: list[str], fragment: str, tmp_path: Path
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    before = CROSSTAB.read_bytes()
    res = invoke("choose", *args)
    assert res.exit_code == 2, (res.stdout, res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], lines
    assert "Traceback" not in res.stderr + res.stdout
    assert list(tmp_path.iterdir()) == []
    assert CROSSTAB.read_bytes() == before


def test_cli_existing_file_needs_force(tmp_path: Path) -> None:
    csv = tmp_path / "f.csv"
    csv.write_text("mine\n", encoding="utf-8")
    base = [*TABLE, "--alpha", "0.5", "--target-kappa", "1", "--frontier", str(csv)]
    res = invoke(*base)
    assert res.exit_code == 2 and "--frontier" in res.stderr and "--force" in res.stderr
    assert csv.read_text(encoding="utf-8") == "mine\n"
    res = invoke(*base, "--force")
    assert res.exit_code == 0, res.stderr
    assert pl.read_csv(csv).columns == FRAME_COLUMNS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv"]


def test_cli_files_are_written_together_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure while drawing the plot leaves neither the frontier nor a temporary file."""
    from persuasive.cli import choose_output

    def broken(*_: Any) -> None:
        raise RuntimeError("the plot failed")

    monkeypatch.setattr(choose_output, "_write_plot", broken)
    res = invoke(*TABLE, "--alpha", "0.5", "--target-kappa", "1", "--frontier",
                 str(tmp_path / "f.csv"), "--plot", str(tmp_path / "f.png"))  # fmt: skip
    assert res.exit_code == 3 and "the plot failed" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_cli_help_is_readable() -> None:
    import re

    noise = re.compile(r"<(str|int|float|bool|path)>|\b(INTEGER|FLOAT|TEXT|PATH)\b")
    for cmd in (["choose"], ["choose", "mean"], ["choose", "table"]):
        res = invoke(*cmd, "--help")
        assert res.exit_code == 0 and not noise.search(res.stdout), res.stdout
    text = invoke("choose", "mean", "--help").stdout
    for shown in ("--max-person-error R0", "--frontier FILE.csv", "--plot FILE.png"):
        assert shown in text


def test_bounded_class_without_v_and_at_delta_0_by_hand() -> None:
    """Against the bounded-error class the exact mean needs no V, and noise is certified at
    δ = 0 by the pointwise bound -log(1 - c γ) + r0² (docs/release_means.md, (e)), written out
    here; Laplace noise is listed at log r2 + r0² and dominated."""
    r1, r2, r0, v = 1.0, 4.0, 0.5, 1.0
    c = 1.0 - 1.0 / r2
    exact = min(r1 + math.log(r2), math.log(r2) + 2 * r0 * r2 * math.sqrt(c * r1),
                math.log(r2) + r0**2)  # fmt: skip
    got = choose_mean(r1=r1, r2=r2, target_kappa=2.0, max_person_error=r0)
    assert got.best.family == "exact" and got.best.kappa == pytest.approx(exact, rel=1e-12)
    lap = next(x for x in got.candidates if x.family == "laplace")
    assert lap.kappa == pytest.approx(math.log(r2) + r0**2, rel=1e-12) and lap.certified
    assert "dominated" in lap.reason and got.best.family == "exact"
    at0 = choose_mean(r1=r1, r2=r2, target_kappa=1.5, delta=0.0, max_mean_sd=v,
                      max_person_error=r0)  # fmt: skip
    sigma = at0.best.parameter
    assert at0.best.family == "gaussian" and sigma is not None

    def pointwise(s: float) -> float:
        g = v * v / (v * v + s * s)
        return -math.log(1.0 - c * g) + r0**2

    assert pointwise(sigma) <= 1.5 + 1e-9 < pointwise(sigma * (1 - 1e-6)) + 1e-9
    # without r0, delta = 0 certifies no noise at all
    plain = choose_mean(r1=r1, r2=r2, target_kappa=1.5, delta=0.0, max_mean_sd=v)
    assert next(x for x in plain.candidates if x.family == "gaussian").kappa == math.inf
