"""Prop 7 audit throughput: batched marginal-DSS loss of dense Gaussian priors at n = 1000.

Prints priors evaluated per second by ``batch_marginal_loss`` (closed form through s = Σ1, no
posterior formed), next to the one-by-one ``persuasive.relative_loss`` path and the O(n³) class
membership test, all measured in this run. Target: >= 1000 priors/s for the batched loss.

Run: ``python benchmarks/bench_prop7_audit.py``
"""

from __future__ import annotations

import time

import numpy as np

import persuasive as pp
from persuasive.audit.gaussian_search import batch_marginal_loss

N, BATCH, REPEATS = 1000, 32, 5


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(BATCH, N, 64)) / 8.0
    covs = a @ a.transpose(0, 2, 1) + np.eye(N)  # dense, positive definite
    means = rng.normal(size=(BATCH, N))
    x = rng.normal(size=N)
    batch_marginal_loss(means, covs, x)  # warm-up
    t0 = time.perf_counter()
    for _ in range(REPEATS):
        batch_marginal_loss(means, covs, x)
    batched = BATCH * REPEATS / (time.perf_counter() - t0)

    k = 3
    t0 = time.perf_counter()
    for b in range(k):
        pp.relative_loss(pp.MarginalDSS(), pp.GaussianPrior(means[b], covs[b]), pp.ExactMean(), x)
    single = k / (time.perf_counter() - t0)

    cls = pp.GaussianMeanClass(1.0, 4.0)
    t0 = time.perf_counter()
    for b in range(k):
        cls.contains(pp.GaussianPrior(means[b], covs[b]), x)
    member = k / (time.perf_counter() - t0)

    print(f"n = {N}, dense covariances, batch of {BATCH}")
    print(f"batched closed-form loss : {batched:10.1f} priors/s  (target >= 1000)")
    print(f"relative_loss one by one : {single:10.2f} priors/s  (ratio {batched / single:.0f}x)")
    print(f"class membership (eigh)  : {member:10.2f} priors/s  (not part of the batched loss)")


if __name__ == "__main__":
    main()
