"""Timing of the linear-statistics analysis (issue 4): dense n = 5,000, structured n = 10^6.

Each time is printed next to one numpy matrix product of the same size measured in the same
run: Σ (n x n) @ Aᵀ (n x k) for dense, and an (n x k)ᵀ @ (n x p) product for structured.
Run: ``python benchmarks/bench_linear.py``.
"""

from __future__ import annotations

import time

import numpy as np

from persuasive.linear import StructuredCovariance, analyse


def best_of(fn, repeat: int = 3) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main() -> None:
    rng = np.random.default_rng(0)
    n, k = 5_000, 20
    low = rng.standard_normal((n, 50))
    cov = low @ low.T / 50 + np.eye(n)
    a = rng.standard_normal((k, n)) / n
    mu = np.zeros(n)
    ref = best_of(lambda: cov @ a.T)
    run = best_of(lambda: analyse(mu, cov, a, 0.01).kappa(1.0, 0.05))
    run0 = best_of(lambda: analyse(mu, cov, a).kappa(1.0))
    print(
        f"dense n={n} k={k}: analyse+kappa noisy {run:.3f}s, exact {run0:.3f}s; "
        f"numpy Sigma@A.T {ref:.3f}s (ratio {run / ref:.1f})"
    )

    n, groups = 1_000_000, 10
    g = rng.integers(0, groups, n)
    s = StructuredCovariance.block_equicorrelated(g, rng.uniform(0.5, 2.0, n), 0.3)
    a = np.vstack([(g == j) / (g == j).sum() for j in range(groups)] + [np.full(n, 1 / n)])
    mu = np.zeros(n)
    k = a.shape[0]
    ref = best_of(lambda: a @ s.U)
    run = best_of(lambda: analyse(mu, s, a, 1e-4).kappa(1.0, 0.05), repeat=2)
    run0 = best_of(lambda: analyse(mu, s, a).kappa(1.0), repeat=2)
    print(
        f"structured n={n} k={k} p={groups}: analyse+kappa noisy {run:.3f}s, exact "
        f"{run0:.3f}s; numpy A@U ({k}x{n} @ {n}x{groups}) {ref:.3f}s (ratio {run / ref:.1f})"
    )


if __name__ == "__main__":
    main()
