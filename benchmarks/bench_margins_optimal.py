"""Greedy vs the MIP with audit cuts for the secondary pattern (issue 12). Not a test.

Tables as in ``bench_planner.py``: Poisson(12) counts with a share of cells replaced by small
counts 0..h-1 (fixed seed), h = 3, row and column totals published, Receiver model
PoissonReceiver(1, 10) (B(0) = 10, B(1) = 7.70, B(2) = 6.09), objective ``count``. Printed per
table: the proven lower bound (the planner's covering bound), then for the greedy
(``method="greedy"``) and the program (``optimal_pattern``, within ``--time-limit``): secondary
cells, whether certified, time, and for the program its status, solves, cuts and the bound
HiGHS proved for every certified pattern.

    python benchmarks/bench_margins_optimal.py [--sizes 30x20,100x100] [--shares 0.01,0.05]
                                               [--kappa 7.0] [--time-limit 60]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from persuasive.classes.receivers import PoissonReceiver
from persuasive.margins import InfeasiblePlanError, MarginTable, plan_suppression
from persuasive.margins.optimal import optimal_pattern


def make_table(d1: int, d2: int, share: float, seed: int = 2026) -> MarginTable:
    rng = np.random.default_rng(seed)
    counts = rng.poisson(12.0, (d1, d2))
    small = rng.random((d1, d2)) < share
    counts = np.where(small, rng.integers(0, 3, (d1, d2)), np.maximum(counts, 3))
    return MarginTable(counts, h=3, margins="rows,cols")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="30x20,100x100")
    ap.add_argument("--shares", default="0.01,0.05")
    ap.add_argument("--kappa", type=float, default=7.0)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--mcmc-audit", action="store_true", help="run the greedy's final chain")
    args = ap.parse_args()
    rc = PoissonReceiver(1.0, 10.0)
    for size in args.sizes.split(","):
        d1, d2 = (int(s) for s in size.split("x"))
        for share in (float(s) for s in args.shares.split(",")):
            t = make_table(d1, d2, share)
            print(
                f"{size}, {share:.0%} small ({int(t.suppressed.sum())} primary), kappa = "
                f"{args.kappa:g}:",
                flush=True,
            )
            t0 = time.perf_counter()
            try:
                g = plan_suppression(t, rc, args.kappa, mcmc_audit=args.mcmc_audit)
                gtxt = f"{g.n_secondary} secondary, certified {g.certified}, optimal {g.optimal}"
                lb = g.lower_bound
            except InfeasiblePlanError as exc:
                gtxt, lb = f"refused ({str(exc)[:60]}...)", float("nan")
            tg = time.perf_counter() - t0
            print(f"  lower bound {lb:g}\n  greedy: {gtxt}, {tg:.2f} s", flush=True)
            out = optimal_pattern(t, rc, args.kappa, time_limit=args.time_limit)
            n_sec = "-" if out.table is None else str(int(out.table.secondary.sum()))
            print(
                f"  MIP:    {n_sec} secondary, status {out.status}, {out.rounds} solves, "
                f"{out.cuts} cuts, HiGHS bound {out.mip_bound:.6g}, {out.seconds:.2f} s\n"
                f"          {out.message}",
                flush=True,
            )


if __name__ == "__main__":
    main()
