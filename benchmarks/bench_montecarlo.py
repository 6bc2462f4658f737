"""Monte Carlo tail audit throughput against raw numpy sampling of the same mechanism.

For the Gaussian and Laplace mechanisms (n = 1, two neighbours), times one
``neighbour_mc_audit`` (sample once, privacy loss against both neighbours, Clopper–Pearson
rank, two-point loss over the q grid) and the bare ``rng.normal`` / ``rng.laplace`` call drawing
the same number of samples, and prints the ratio of throughputs measured in this run.
Target: audit throughput >= 0.5 x raw sampling.

Run: ``python benchmarks/bench_montecarlo.py``
"""

from __future__ import annotations

import time

import numpy as np

import persuasive as pp
from persuasive.audit.core import DEFAULT_Q_GRID
from persuasive.audit.montecarlo import neighbour_mc_audit

N, REPEATS = 1_000_000, 5


def _best(f) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    d = pp.probabilistic_dp(1.0, 0.05)
    for mech, raw in ((pp.GaussianMechanism(1.0), "normal"), (pp.LaplaceMechanism(1.0), "laplace")):
        rng = np.random.default_rng(0)
        t_raw = _best(lambda r=rng, name=raw: getattr(r, name)(0.0, 1.0, size=(N, 1)))
        t_audit = _best(
            lambda m=mech, r=rng: neighbour_mc_audit(m, d, None, DEFAULT_Q_GRID, N, 0.99, r)
        )
        print(
            f"{type(mech).__name__:18s} raw sampling {N / t_raw / 1e6:7.1f} M/s | "
            f"MC tail audit {N / t_audit / 1e6:7.1f} M/s | ratio {t_raw / t_audit:.2f} "
            f"(target >= 0.5)"
        )


if __name__ == "__main__":
    main()
