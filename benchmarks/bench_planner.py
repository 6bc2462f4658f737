"""Secondary suppression planner: time on 100 x 100 and 1000 x 50 tables (issue 5).

Counts are Poisson(12) with about 5% of cells replaced by small counts (0..h-1), fixed seed;
margins rows and columns; Receiver model Poisson means in [1, 5]; h = 3. Printed beside a
reference measured in the same run: one full audit of the final pattern (``worst_case_losses``
on the whole table, the check the planner itself ends with) and a numpy pass over the table.
Not a test; asserts nothing.

    python benchmarks/bench_planner.py [--sizes 100x100,1000x50] [--kappa 3.0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from persuasive.margins import MarginTable
from persuasive.margins.classical import classical_pattern
from persuasive.margins.losses import worst_case_losses
from persuasive.margins.planner import InfeasiblePlanError, plan_suppression
from persuasive.release.receivers import PoissonReceiver


def make_table(d1: int, d2: int, seed: int = 2026, share: float = 0.05) -> MarginTable:
    rng = np.random.default_rng(seed)
    counts = rng.poisson(12.0, (d1, d2))
    small = rng.random((d1, d2)) < share
    counts = np.where(small, rng.integers(0, 3, (d1, d2)), np.maximum(counts, 3))
    return MarginTable(counts, h=3, margins="rows,cols")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100x100,1000x50")
    ap.add_argument("--kappa", type=float, default=3.0)
    ap.add_argument("--grid", type=int, default=2)
    args = ap.parse_args()
    rc = PoissonReceiver(1.0, 5.0)
    for size in args.sizes.split(","):
        d1, d2 = (int(s) for s in size.split("x"))
        t = make_table(d1, d2)
        t0 = time.perf_counter()
        ref = np.sort(t.counts, axis=1).sum()
        t_np = time.perf_counter() - t0
        t0 = time.perf_counter()
        cl = classical_pattern(t)
        t_cl = time.perf_counter() - t0
        print(
            f"{size}: {int(t.suppressed.sum())} primary cells; numpy sort pass "
            f"{t_np * 1e3:.1f} ms (ref {ref}); classical rule {t_cl:.2f} s, "
            f"{cl.n_secondary} secondary"
        )
        t0 = time.perf_counter()
        try:
            plan = plan_suppression(t, rc, args.kappa, grid=args.grid)
        except InfeasiblePlanError as exc:
            print(f"  planner refused after {time.perf_counter() - t0:.1f} s: {exc}")
            continue
        t_plan = time.perf_counter() - t0
        t0 = time.perf_counter()
        worst_case_losses(plan.table, rc, grid=args.grid)
        t_audit = time.perf_counter() - t0
        print(
            f"  planner {t_plan:.2f} s: {plan.n_secondary} secondary (lower bound "
            f"{plan.lower_bound:g}), {plan.iterations} steps, certified={plan.certified}; "
            f"one full audit of the final pattern {t_audit:.2f} s "
            f"(ratio {t_plan / t_audit:.1f}x); notes: {plan.notes[:1]}"
        )


if __name__ == "__main__":
    main()
