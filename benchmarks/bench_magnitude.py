"""Magnitude release (issue 15): ``release_magnitude`` on 10^6 contributions in 10^4 cells
against a polars group-by sum of the same data (the totals alone), best of 3.

Not a test (no asserts). ``release_magnitude`` does the group-by of contributors (units summed
per cell), the sort within cells, the certificate (κ against outsiders and coalitions of up to
m insiders, segment sums), the p% and (n,k) flags and the published and custodian frames.

    python benchmarks/bench_magnitude.py [--rows 1000000] [--cells 10000] [--insiders 1]

Reference run (2026-12-01, the 2-core container, shared): polars group-by sum 20.8 ms,
release_magnitude 745 ms (36x); most of it is the group-by of contributors and the sort within
cells (polars), the certificate itself about 70 ms.
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
    args = ap.parse_args()
    rng = np.random.default_rng(0)
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


if __name__ == "__main__":
    main()
