"""Greedy vs the MIP with audit cuts for the secondary pattern (issue 12). Not a test.

Tables as in ``bench_planner.py``: Poisson(12) counts with a share of cells replaced by small
counts 0..h-1 (fixed seed), h = 3, row and column totals published, Receiver model
PoissonReceiver(1, 10) (B(0) = 10, B(1) = 7.70, B(2) = 6.09), objective ``count``; with
``--fair`` also Fair's religious x occupation table of ``docs/margins_release.md`` (h = 10,
negative binomial 1:40 size 1, kappa 4.5, bound publication). Printed per table and method
(``plan_suppression(method="greedy")`` and ``method="mip"``, within ``--time-limit``, what
``release table --margins --method mip`` runs): secondary cells, the proven lower bound (the
planner's covering bound), the gap (absolute and relative), certified, optimal, wall clock, and
for the MIP its outcome (status, solves, cuts, HiGHS' bound) and which method's pattern was
kept.

    python benchmarks/bench_margins_optimal.py [--sizes 30x20,100x100] [--shares 0.01,0.05]
                                               [--kappa 7.0] [--time-limit 60] [--fair]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from persuasive.classes.receivers import PoissonReceiver
from persuasive.margins import InfeasiblePlanError, MarginTable, plan_suppression


def make_table(d1: int, d2: int, share: float, seed: int = 2026) -> MarginTable:
    rng = np.random.default_rng(seed)
    counts = rng.poisson(12.0, (d1, d2))
    small = rng.random((d1, d2)) < share
    counts = np.where(small, rng.integers(0, 3, (d1, d2)), np.maximum(counts, 3))
    return MarginTable(counts, h=3, margins="rows,cols")


def fair() -> tuple[MarginTable, object, float, str]:
    """The Fair table of ``docs/margins_release.md`` (from ``examples/data``)."""
    from pathlib import Path

    import polars as pl

    from persuasive.classes.receivers import NegativeBinomialReceiver

    path = Path(__file__).resolve().parents[1] / "examples" / "data" / "fair_crosstab.csv"
    t = MarginTable.from_frame(
        pl.read_csv(path), keys=("religious", "occupation"), count="n", h=10, margins="rows,cols"
    )
    return t, NegativeBinomialReceiver(1, 40, 1), 4.5, "publication"


def run(t: MarginTable, rc: object, kappa: float, bound: str, args: argparse.Namespace) -> None:
    for method in ("greedy", "mip"):
        t0 = time.perf_counter()
        try:
            p = plan_suppression(
                t, rc, kappa, bound=bound, method=method, mcmc_audit=args.mcmc_audit,
                time_limit=None if method == "greedy" else args.time_limit,
            )  # fmt: skip
        except InfeasiblePlanError as exc:
            print(f"  {method:6}: refused ({str(exc)[:70]}...), {time.perf_counter() - t0:.2f} s")
            continue
        dt = time.perf_counter() - t0
        rel = p.gap / p.objective_value if p.objective_value else 0.0
        print(
            f"  {method:6}: {p.n_secondary} secondary, lower bound {p.lower_bound:g}, gap "
            f"{p.gap:g} ({rel:.0%}), certified {p.certified}, optimal {p.optimal}, {dt:.2f} s"
            + ("" if method == "greedy" else f"; pattern by {p.method}, MIP {p.mip}"),
            flush=True,
        )
        for note in p.notes:
            if note.startswith("MIP"):
                print(f"          {note[:200]}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="30x20,100x100")
    ap.add_argument("--shares", default="0.01,0.05")
    ap.add_argument("--kappa", type=float, default=7.0)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--mcmc-audit", action="store_true", help="run the greedy's final chain")
    ap.add_argument("--fair", action="store_true", help="also the Fair table of the docs")
    args = ap.parse_args()
    rc = PoissonReceiver(1.0, 10.0)
    if args.fair:
        t, nb, kappa, bound = fair()
        print(f"Fair religious x occupation (24 cells), kappa = {kappa:g}, bound {bound}:")
        run(t, nb, kappa, bound, args)
    for size in args.sizes.split(","):
        if not size:
            continue
        d1, d2 = (int(s) for s in size.split("x"))
        for share in (float(s) for s in args.shares.split(",")):
            t = make_table(d1, d2, share)
            print(
                f"{size}, {share:.0%} small ({int(t.suppressed.sum())} primary), kappa = "
                f"{args.kappa:g}:",
                flush=True,
            )
            run(t, rc, args.kappa, "table", args)


if __name__ == "__main__":
    main()
