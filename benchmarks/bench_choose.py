"""The Sender's choice (``persuasive.choose``): how long the optimiser takes, in one run.

* ``choose_table`` on the bundled Fair crosstab (24 cells) for three Receiver models, and on
  generated tables of 10^5, 10^6 and 10^7 cells (one int64 key, negative-binomial counts), with
  the threshold search alone (``calibrate_threshold``) beside it;
* ``choose_mean`` for a few classes: the whole call (the 25-point frontier included), the
  search alone (a frontier of no points) and the number of certificate evaluations;
* ``choose_linear`` on the bundled Fair data (6366 rows): three statistics exact, exposed
  (every subset searched) and with calibrated noise; the 12 group means of religious ×
  occupation (< 3, = 3, > 3) subsets, exact; ten of them with the overall mean and the mean
  without row 17 (exposed, 12 statistics: every subset searched in order of loss); all twelve
  with those two (14 statistics: greedy); beside the statistics' matrix alone
  (``statistics_matrix``).

Prints best-of-N wall times; asserts nothing. Run from the repository root:
``python benchmarks/bench_choose.py``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from persuasive.choose import choose_linear, choose_mean, choose_table
from persuasive.choose import mean as mean_module
from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    SmallCellReceiver,
)
from persuasive.release.calibrate import calibrate_threshold

ROOT = Path(__file__).resolve().parents[1]
CROSSTAB = ROOT / "examples" / "data" / "fair_crosstab.csv"
FAIR = ROOT / "examples" / "data" / "fair.csv"


def best_of(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The least wall time of ``repeats`` calls (seconds) and the last result."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def uncached(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with the Receiver models' memoised α(h) cleared first: every repeat computes α."""
    from persuasive.classes import receivers

    def run() -> Any:
        receivers._poisson_alpha.cache_clear()
        receivers._nbinom_alpha.cache_clear()
        return fn()

    return run


def tables() -> None:
    print("choose_table (best of 5, memoised α(h) cleared; 'search' = calibrate_threshold alone)")
    receivers = [
        ("Poisson 1:40, κ ≤ 3", PoissonReceiver(1.0, 40.0), 3.0),
        ("NegBin 1:40 size 2, κ ≤ 1", NegativeBinomialReceiver(1.0, 40.0, 2.0), 1.0),
        ("small-cell α = 0.5, κ ≤ 1", SmallCellReceiver(0.5), 1.0),
    ]
    keys = ["religious", "occupation"]
    for label, rc, target in receivers:
        t, c = best_of(
            uncached(
                partial(
                    choose_table, CROSSTAB, keys=keys, count="n", receiver=rc, target_kappa=target
                )
            ),
            5,
        )
        ts, _ = best_of(uncached(partial(calibrate_threshold, rc, target)), 5)
        h = "-" if c.best.parameter is None else f"{c.best.parameter:g}"
        print(
            f"  fair_crosstab.csv (24 cells) {label:<28}: {t * 1e3:8.2f} ms  "
            f"(search {ts * 1e3:6.2f} ms)  best {c.best.family} h = {h}, loss {c.best.loss:g}"
        )
    rng = np.random.default_rng(0)
    rc = PoissonReceiver(1.0, 40.0)
    for n in (10**5, 10**6, 10**7):
        frame = pl.DataFrame(
            {"id": np.arange(n, dtype=np.int64), "n": rng.negative_binomial(1, 1 / 21, size=n)}
        )
        for objective in ("count", "total"):
            t, c = best_of(
                uncached(partial(choose_table, frame, keys="id", count="n", receiver=rc,
                                 target_kappa=3.0, objective=objective)),
                3,
            )  # fmt: skip
            print(
                f"  generated {n:>10,} cells, Poisson 1:40, κ ≤ 3, {objective:<5}    : "
                f"{t * 1e3:8.1f} ms  ({n / t / 1e6:6.1f} M cells/s)  best h = "
                f"{c.best.parameter:g}, loss {c.best.loss:g}"
            )


def means() -> None:
    print("choose_mean (one call each; 'search' = the same call with a frontier of no points)")
    cases = [
        ("Prop 7 r = (1, 4), κ ≤ 3", {"r1": 1.0, "r2": 4.0, "target_kappa": 3.0}),
        ("Prop 7 r = (1, 4), κ ≤ 1", {"r1": 1.0, "r2": 4.0, "target_kappa": 1.0}),
        (
            "V = 0.1, r = (4, 4), κ ≤ 4.5",
            {"r1": 4.0, "r2": 4.0, "target_kappa": 4.5, "max_mean_sd": 0.1},
        ),
        (
            "V = 1, r0 = 1, r = (1, 4), κ ≤ 1",
            {
                "r1": 1.0,
                "r2": 4.0,
                "target_kappa": 1.0,
                "max_mean_sd": 1.0,
                "max_person_error": 1.0,
            },
        ),
    ]
    import persuasive.choose.mean as cm

    real_g, real_b = cm.gaussian_noise_kappa, cm.bounded_error_kappa
    calls = [0]

    def counted(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*a: Any, **k: Any) -> Any:
            calls[0] += 1
            return fn(*a, **k)

        return wrapper

    for label, kw in cases:
        t_full, c = best_of(partial(choose_mean, **kw), 1)
        default = mean_module.FRONTIER_POINTS
        mean_module.FRONTIER_POINTS = 0
        try:
            t_search, _ = best_of(partial(choose_mean, **kw), 1)
            calls[0] = 0
            cm.gaussian_noise_kappa, cm.bounded_error_kappa = counted(real_g), counted(real_b)
            choose_mean(**kw)
            n_search = calls[0]
        finally:
            mean_module.FRONTIER_POINTS = default
            cm.gaussian_noise_kappa, cm.bounded_error_kappa = real_g, real_b
        b = c.best
        what = b.family if b.parameter is None else f"{b.family} σ = {b.parameter:.4g}"
        print(
            f"  {label:<34}: {t_full:6.2f} s  (search {t_search:5.2f} s, {n_search:3d} κ "
            f"evaluations)  best {what}"
        )


def linear() -> None:
    from persuasive.release.statistics import statistics_matrix

    print(
        "choose_linear on fair.csv (6366 rows; best of 3, the memoised ClassCurve cleared; "
        "'A' = statistics_matrix alone)"
    )
    frame = pl.read_csv(FAIR)
    three = [("overall", "mean", "true"), ("rel4", "mean", "religious = 4")]
    groups = [
        (f"r{r}o{o}", "mean", f"religious = {r} AND occupation {op} 3")
        for r in (1, 2, 3, 4) for o, op in ((0, "<"), (1, "="), (2, ">"))
    ]  # fmt: skip
    no17 = ("no17", "mean", "row_id != 17")
    cases = [
        ("2 statistics, exact, κ ≤ 3", three, {"target_kappa": 3.0}),
        ("3 with no17 (exposed), κ ≤ 3", [*three, no17], {"target_kappa": 3.0}),
        ("3 statistics, noise, κ ≤ 1.5, V = 1, δ = 0.5",
         [*three, ("rel1", "mean", "religious = 1")],
         {"target_kappa": 1.5, "max_stat_sd": 1.0, "delta": 0.5}),
        ("12 group means, exact, κ ≤ 3", groups, {"target_kappa": 3.0}),
        ("10 group means + overall + no17 (exposed)", [*groups[:10], three[0], no17],
         {"target_kappa": 3.0}),
        ("12 group means + overall + no17 (exposed)", [*groups, three[0], no17],
         {"target_kappa": 3.0}),
    ]  # fmt: skip
    from persuasive.choose import linear_kappa

    for label, stats, kw in cases:
        call = partial(choose_linear, frame, value="affairs", statistics=stats, r1=1.0, r2=4.0,
                       max_stat_sd=kw.pop("max_stat_sd", 1.0), **kw)  # fmt: skip

        def cold(call: Callable[[], Any] = call) -> Any:  # the certificate's cells not cached
            linear_kappa._curve.cache_clear()
            return call()

        t, c = best_of(cold, 3)
        ta, _ = best_of(partial(statistics_matrix, frame, stats, value="affairs"), 3)
        b = c.best
        what = b.family + (f" σ = {b.parameter:.4g}" if b.parameter else "")
        if b.withheld:
            what += f" withholding {', '.join(b.withheld)}"
        exact = "exact" if c.exact_search else "greedy"
        print(
            f"  {label:<44}: {t * 1e3:8.1f} ms  (A {ta * 1e3:6.1f} ms)  {exact:<6} best {what}, "
            f"loss {b.loss:.4g}"
        )


def main() -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_choose: {os.cpu_count()} CPUs, load average {load:.2f}")
    tables()
    linear()
    means()


if __name__ == "__main__":
    main()
