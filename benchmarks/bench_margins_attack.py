"""Attacker intervals (issue 12): one re-solved HiGHS model per component vs one cold linprog
per bound. Not a test; asserts nothing.

Tables: Poisson(15) counts (at least h = 5), a share of the cells suppressed, half of them
primary (count replaced by 0..h-1) and half secondary (count >= h, hidden at random), row and
column totals published, fixed seed. The baseline is a copy of the loop ``attacker_intervals``
ran before (``_component_bounds`` at commit 201f64e: random probing objectives, then one cold
``scipy.optimize.linprog`` per unsettled bound), timed in the same run on the same tables; the
two results are compared cell by cell.

    python benchmarks/bench_margins_attack.py [--sizes 30x20,100x100] [--shares 0.05,0.2]
                                              [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np
from scipy.optimize import linprog

from persuasive.errors import PersuasiveError
from persuasive.margins import MarginTable, attacker_intervals
from persuasive.margins.attack import LP_INT_ATOL, _round
from persuasive.margins.constraints import UNBOUNDED, constraint_system

# ------------------------------------------------------------ baseline: the old per-cell loop
N_PROBES = 8


def _old_solve(c: Any, A: Any, b: Any, bounds: Any, cell: int) -> Any:
    res = linprog(c, A_eq=A, b_eq=b, bounds=bounds, method="highs")
    if res.status not in (0, 3):  # 3: unbounded
        raise PersuasiveError(f"linprog failed on cell {cell}: {res.message}")
    return res


def _old_component_bounds(
    A: Any,
    b: Any,
    lo: Any,
    hi: Any,
    start: Any,
    rng: np.random.Generator,
    cells: list[int],
) -> tuple[Any, Any]:
    n = lo.size
    bounds = np.column_stack([lo, hi])
    seen_lo, seen_hi = start.copy(), start.copy()
    lower, upper = np.full(n, np.nan), np.full(n, np.nan)

    def witness(x: Any) -> None:
        np.minimum(seen_lo, x, out=seen_lo)
        np.maximum(seen_hi, x, out=seen_hi)

    for _ in range(min(N_PROBES, n)):
        res = _old_solve(rng.standard_normal(n), A, b, bounds, cells[0])
        if res.status == 0:
            witness(res.x)
    for _ in range(N_PROBES):
        before = int(np.count_nonzero(seen_lo <= lo + LP_INT_ATOL)) + int(
            np.count_nonzero(seen_hi >= hi - LP_INT_ATOL)
        )
        c = (seen_lo > lo + LP_INT_ATOL).astype(np.float64) - (seen_hi < hi - LP_INT_ATOL)
        if not c.any():
            break
        res = _old_solve(c, A, b, bounds, cells[0])
        if res.status != 0:
            break
        witness(res.x)
        after = int(np.count_nonzero(seen_lo <= lo + LP_INT_ATOL)) + int(
            np.count_nonzero(seen_hi >= hi - LP_INT_ATOL)
        )
        if after == before:
            break
    for j in range(n):
        for sign, out, seen, box in ((1.0, lower, seen_lo, lo), (-1.0, upper, seen_hi, hi)):
            if seen[j] * sign <= box[j] * sign + LP_INT_ATOL:
                out[j] = box[j]
                continue
            c = np.zeros(n)
            c[j] = sign
            res = _old_solve(c, A, b, bounds, cells[j])
            if res.status == 3:
                out[j] = -sign * np.inf
            else:
                out[j] = res.x[j]
                witness(res.x)
    return lower, upper


def old_attacker_intervals(table: MarginTable) -> tuple[Any, Any]:
    """The old ``attacker_intervals(table)`` (use_threshold=True): ``(lower, upper)``."""
    cs = constraint_system(table)
    lo = cs.lo.astype(np.float64)
    hi = np.where(cs.hi == UNBOUNDED, np.inf, cs.hi).astype(np.float64)
    lower, upper = lo.copy(), hi.copy()
    true = table.counts.ravel()[cs.cells].astype(np.float64)
    rng = np.random.default_rng(0)
    for cols in cs.components():
        rows = cs.rows_of(cols)
        if rows.size == 0:
            continue
        lower[cols], upper[cols] = _old_component_bounds(
            cs.A[rows][:, cols],
            cs.b[rows].astype(np.float64),
            lo[cols],
            hi[cols],
            true[cols],
            rng,
            [int(c) for c in cs.cells[cols]],
        )
    return _round(lower), _round(upper)


# ------------------------------------------------------------------------------ benchmark
def make_table(
    d1: int, d2: int, share: float, kind: str = "mixed", seed: int = 2026
) -> MarginTable:
    """``mixed``: h = 5, half the suppressed cells primary, half secondary; ``primary``: the
    tables of ``bench_planner.py`` (h = 3, Poisson(12), every suppressed cell primary)."""
    rng = np.random.default_rng(seed)
    if kind == "primary":
        counts = rng.poisson(12.0, (d1, d2))
        small = rng.random((d1, d2)) < share
        counts = np.where(small, rng.integers(0, 3, (d1, d2)), np.maximum(counts, 3))
        return MarginTable(counts, h=3, margins="rows,cols")
    h = 5
    counts = np.maximum(rng.poisson(15.0, (d1, d2)), h)
    primary = rng.random((d1, d2)) < share / 2
    counts[primary] = rng.integers(0, h, int(primary.sum()))
    secondary = ~primary & (rng.random((d1, d2)) < share / 2 / (1 - share / 2))
    return MarginTable(
        counts, h=h, margins="rows,cols", suppressed=primary | secondary, secondary=secondary
    )


def best_of(repeat: int, fn: Any) -> tuple[float, Any]:
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="30x20,100x100")
    ap.add_argument("--shares", default="0.05,0.2", help="shares of suppressed cells")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs (new)")
    ap.add_argument("--repeat-old", type=int, default=1, help="best of this many (baseline)")
    ap.add_argument("--kinds", default="mixed,primary", help="table families (see make_table)")
    args = ap.parse_args()
    print(
        f"load average {os.getloadavg()[0]:.2f}; best of {args.repeat} (new), "
        f"{args.repeat_old} (baseline)"
    )
    cases = [
        (kind, size, float(share))
        for kind in args.kinds.split(",")
        for size in args.sizes.split(",")
        for share in args.shares.split(",")
    ]
    for kind, size, share in cases:
        d1, d2 = (int(s) for s in size.lower().split("x"))
        t = make_table(d1, d2, share, kind)
        cs = constraint_system(t)
        sizes = sorted((c.size for c in cs.components()), reverse=True)
        t_new, new = best_of(args.repeat, lambda t=t: attacker_intervals(t))
        t_old, (lo, hi) = best_of(args.repeat_old, lambda t=t: old_attacker_intervals(t))
        same = np.array_equal(new.lower, lo) and np.array_equal(new.upper, hi)
        with np.errstate(invalid="ignore"):  # inf - inf
            gap = float(np.nanmax(np.abs(np.r_[new.lower - lo, new.upper - hi])))
        print(
            f"{kind:7s} {d1}x{d2} {share:4.0%} suppressed: {cs.cells.size:5d} cells "
            f"({int(t.secondary.sum())} secondary), {len(sizes)} components, largest "
            f"{sizes[0]}, {int(new.exposed.sum())} exposed\n"
            f"   re-solved HiGHS {t_new:8.3f} s | cold linprog per cell {t_old:8.3f} s | "
            f"speed-up {t_old / t_new:6.1f}x | same intervals: "
            f"{'yes' if same else f'NO (max difference {gap:.3g})'}",
            flush=True,
        )


if __name__ == "__main__":
    main()
