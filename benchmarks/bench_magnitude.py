"""Magnitude release (issue 15): ``release_magnitude`` on 10^6 contributions in 10^4 cells
against a polars group-by sum of the same data (the totals alone), best of 3.

Not a test (no asserts). ``release_magnitude`` does the group-by of contributors (units summed
per cell), the sort within cells, the certificate (κ against outsiders and coalitions of up to
m insiders, segment sums), the p% and (n,k) flags and the published and custodian frames.

    python benchmarks/bench_magnitude.py [--rows 1000000] [--cells 10000] [--insiders 1]
    python benchmarks/bench_magnitude.py --margins [--rows 100000] [--grid 50x40]

``--margins``: a two-key table (``--grid`` rows × columns) with its row, column and grand
totals published, public sizes, outsiders, target 4: primary and secondary suppression (the
candidates ranked all at once by ``persuasive.magnitude.margins.candidate_explained``) and the
attacker's intervals.

Reference run (2026-12-01, the 2-core container, shared): polars group-by sum 20.8 ms,
release_magnitude 745 ms (36x); most of it is the group-by of contributors and the sort within
cells (polars), the certificate itself about 70 ms.

``--margins`` (2026-12-01, the same container, load about 5, OMP_NUM_THREADS=1): 432-568 ms, 42
cells suppressed (41 secondary); the per-candidate QR loop it replaced took 20.7-25.1 s on the same
table (same pattern, κ equal to 2e-15). With BLAS's default threads on the loaded machine: 0.6-4.7
s. ``--grid 100x100``: 13.0 s, 371 suppressed (193 secondary), of which about 10 s are the
attacker's intervals (two HiGHS linear programs per suppressed cell).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from persuasive.release.magnitude import release_magnitude


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--insiders", type=int, default=1)
    ap.add_argument("--margins", action="store_true")
    ap.add_argument("--grid", default="50x40")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    if args.margins:
        margins_run(args, rng)
        return
    df = pl.DataFrame(
        {
            "cell": rng.integers(0, args.cells, size=args.rows),
            "unit": np.arange(args.rows),
            "value": np.round(rng.lognormal(0.0, 1.5, size=args.rows), 2),
        }
    )

    def group_by() -> None:
        df.group_by("cell").agg(pl.col("value").sum())

    def release() -> None:
        release_magnitude(
            df, keys="cell", value="value", unit="unit", target_kappa=3.0, insiders=args.insiders
        )

    t_gb, t_rel = best(group_by), best(release)
    print(f"{args.rows:,} contributions in {args.cells:,} cells, insiders m = {args.insiders}")
    print(f"polars group-by sum : {t_gb * 1e3:8.1f} ms")
    print(f"release_magnitude   : {t_rel * 1e3:8.1f} ms   ratio {t_rel / t_gb:.1f}x")


def margins_run(args: argparse.Namespace, rng: np.random.Generator) -> None:
    rows = 100_000 if args.rows == 1_000_000 else args.rows
    ra, cb = (int(x) for x in args.grid.split("x"))
    df = pl.DataFrame(
        {
            "a": rng.integers(0, ra, size=rows),
            "b": rng.integers(0, cb, size=rows),
            "unit": np.arange(rows),
            "value": np.round(rng.lognormal(2.0, 2.0, size=rows), 2),
            "size": np.round(rng.lognormal(2.0, 1.0, size=rows), 2),
        }
    )
    out: dict[str, object] = {}

    def release() -> None:
        out["rel"] = release_magnitude(
            df, keys="a,b", value="value", unit="unit", size="size", insiders=0,
            target_kappa=4.0, margins="a,b,total",
        )  # fmt: skip

    t = best(release)
    cells = out["rel"].cells  # type: ignore[attr-defined]
    print(f"{rows:,} contributions in {ra} x {cb} cells, margins a, b, total; outsiders, K = 4")
    print(
        f"release_magnitude with margins: {t * 1e3:8.1f} ms; "
        f"{int(cells['suppressed'].sum())} suppressed ({int(cells['secondary'].sum())} secondary)"
    )


if __name__ == "__main__":
    main()
