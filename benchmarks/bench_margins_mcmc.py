"""MCMC posterior of a large suppressed-table component: new sampler vs the old single chain.

Tables as in the issue: counts uniform in [3, 40), about 5% of the cells replaced by 0..2
(seed 2026), h = 3, margins rows and columns. Each forms one large component (479 cells at
100 x 100, 2591 at 1000 x 50). Prior: the common-mean member of ``PoissonReceiver(1, 10)`` that
``worst_case_losses`` uses.

For each size the script prints

- ``old``: the previous implementation, kept below verbatim as the baseline (dense RREF kernel in
  a Python loop with ``Fraction`` rounding; one chain; per sweep one heat-bath step per basis
  vector, along a random basis vector or the signed sum of two). Its kernel time is measured;
  its sweep time is measured on ``--baseline-sweeps`` sweeps and *extrapolated* to the default
  4000 + 500 sweeps (printed as such);
- ``new``: :func:`persuasive.margins.mcmc.sample_marginals` at the defaults of
  ``posterior_marginals`` (``n_sweeps=4000`` summed over 8 chains, ``burn_in=500`` per chain)
  and at ``n_sweeps=32000``, with the mean and largest reported error (estimated TV, 3 s.e.)
  and the TV distance between the marginals of two seeds;
- ``audit``: ``worst_case_losses`` end to end (new sampler, defaults).

Not a test; asserts nothing. Timings depend on the machine and its load.

    python benchmarks/bench_margins_mcmc.py [--sizes 100x100,1000x50] [--baseline-sweeps 20]

Reference run (2026-11-29; 2-core container shared with other jobs, load average about 2.8;
numpy 2.4, scipy 1.17). The extrapolated old time agrees with the ~190 s measured for the whole
100 x 100 audit before the change; "TV(2 seeds)" is the distance between two runs of the new
sampler, an independent check of the reported error:

```
100 x 100: component of 479 cells, 198 margin entries
  old    kernel 0.54 s, 45.7 ms/sweep (20 measured); 4500 sweeps: 206.1 s (extrapolated)
  new    n_sweeps  4000:  1.18 s | error mean 0.054 max 0.166 | TV(2 seeds) mean 0.019 max 0.106
  new    n_sweeps 32000:  5.65 s | error mean 0.020 max 0.073 | TV(2 seeds) mean 0.007 max 0.041
  audit  worst_case_losses, defaults: 0.88 s
1000 x 50: component of 2591 cells, 980 margin entries
  old    kernel 28.22 s, 316.1 ms/sweep (20 measured); 4500 sweeps: 1450.7 s (extrapolated)
  new    n_sweeps  4000:  6.74 s | error mean 0.032 max 0.132 | TV(2 seeds) mean 0.011 max 0.060
  new    n_sweeps 32000: 27.57 s | error mean 0.011 max 0.041 | TV(2 seeds) mean 0.004 max 0.027
  audit  worst_case_losses, defaults: 8.79 s
```
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction
from math import lcm

import numpy as np
from scipy import sparse
from scipy.special import logsumexp

from persuasive.classes.receivers import PoissonReceiver
from persuasive.margins import MarginTable, worst_case_losses
from persuasive.margins.constraints import constraint_system
from persuasive.margins.mcmc import sample_marginals
from persuasive.margins.posterior import MCMC_BURN_IN, MCMC_SWEEPS, _widths, cell_log_grid
from persuasive.margins.worst import _common_prior

RECEIVER = PoissonReceiver(1, 10)


def make_table(d1: int, d2: int) -> MarginTable:
    rng = np.random.default_rng(2026)
    c = rng.integers(3, 40, size=(d1, d2))
    m = rng.random((d1, d2)) < 0.05
    c[m] = rng.integers(0, 3, m.sum())
    return MarginTable(c, h=3, margins="rows,cols")


def component(t: MarginTable):
    """The largest component: (A, true values, lo, logw), as posterior_marginals builds them."""
    cs = constraint_system(t)
    prior = _common_prior(RECEIVER, t.n_cells)
    widths = _widths(cs, prior)
    width = int(widths.max())
    logw = cell_log_grid(prior, cs.cells, cs.lo, width)
    logw[np.arange(width)[None, :] >= widths[:, None]] = -np.inf
    cols = max(cs.components(), key=len)
    A = cs.A[cs.rows_of(cols)][:, cols]
    return A, t.counts.ravel()[cs.cells][cols], cs.lo[cols], logw[cols]


# ---------------------------------------------------------------- the old implementation


def old_integer_kernel(A):
    M = A.toarray().astype(np.float64)
    m, n = M.shape
    pivots: list[int] = []
    r = 0
    for c in range(n):
        if r == m:
            break
        p = r + int(np.argmax(np.abs(M[r:, c])))
        if abs(M[p, c]) < 1e-9:
            continue
        M[[r, p]] = M[[p, r]]
        M[r] /= M[r, c]
        others = np.arange(m) != r
        M[others] -= np.outer(M[others, c], M[r])
        pivots.append(c)
        r += 1
    free = [c for c in range(n) if c not in set(pivots)]
    basis = []
    for f in free:
        vec = [Fraction(0)] * n
        vec[f] = Fraction(1)
        for row, pc in enumerate(pivots):
            vec[pc] = -Fraction(M[row, f]).limit_denominator(1000)
        den = lcm(*(x.denominator for x in vec))
        ints = np.array([int(x * den) for x in vec], dtype=np.int64)
        if not np.any(A @ ints):
            basis.append(ints)
    return np.array(basis, dtype=np.int64).reshape(-1, n)


def old_sweeps(moves, start, lo, logw, n_sweeps, rng):
    """The old chain without its bookkeeping: ``n_sweeps`` sweeps of len(moves) steps."""
    y = (start - lo).astype(np.int64)
    hi = np.array([np.flatnonzero(np.isfinite(row)).max() for row in logw])
    for _ in range(n_sweeps):
        for _ in range(moves.shape[0]):
            mv = moves[rng.integers(moves.shape[0])]
            if rng.random() < 0.5 and moves.shape[0] > 1:
                mv = mv + rng.choice((-1, 1)) * moves[rng.integers(moves.shape[0])]
            nz = np.flatnonzero(mv)
            if nz.size == 0:
                continue
            step, cur = mv[nz], y[nz]
            up = np.where(step > 0, (hi[nz] - cur) // step, cur // -step)
            dn = np.where(step > 0, cur // step, (hi[nz] - cur) // -step)
            ts = np.arange(-int(dn.min()), int(up.min()) + 1)
            vals = cur[None, :] + ts[:, None] * step[None, :]
            lw = logw[nz[None, :], vals].sum(axis=1)
            p = np.exp(lw - logsumexp(lw))
            y[nz] = cur + int(rng.choice(ts, p=p / p.sum())) * step
    return y


# ---------------------------------------------------------------- the run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100x100,1000x50")
    ap.add_argument("--baseline-sweeps", type=int, default=20)
    args = ap.parse_args()
    for size in args.sizes.split(","):
        d1, d2 = (int(s) for s in size.split("x"))
        t = make_table(d1, d2)
        A, start, lo, logw = component(t)
        print(f"{d1} x {d2}: component of {A.shape[1]} cells, {A.shape[0]} margin entries")

        t0 = time.perf_counter()
        moves = old_integer_kernel(sparse.csr_array(A))
        t_kernel = time.perf_counter() - t0
        t0 = time.perf_counter()
        old_sweeps(moves, start, lo, logw, args.baseline_sweeps, np.random.default_rng(0))
        per = (time.perf_counter() - t0) / args.baseline_sweeps
        total = MCMC_SWEEPS + MCMC_BURN_IN
        print(
            f"  old    kernel {t_kernel:.2f} s, {per * 1e3:.1f} ms/sweep ({args.baseline_sweeps} "
            f"measured); {total} sweeps: {t_kernel + per * total:.1f} s (extrapolated)"
        )

        for n_sweeps in (MCMC_SWEEPS, 8 * MCMC_SWEEPS):
            runs = []
            for seed in (0, 1):
                t0 = time.perf_counter()
                lp, err = sample_marginals(
                    A,
                    start,
                    lo,
                    logw,
                    n_sweeps=n_sweeps,
                    burn_in=MCMC_BURN_IN,
                    rng=np.random.default_rng(seed),
                )
                runs.append((time.perf_counter() - t0, np.exp(lp), err))
            tv = 0.5 * np.abs(runs[0][1] - runs[1][1]).sum(axis=1)
            print(
                f"  new    n_sweeps {n_sweeps:5d}: {runs[0][0]:5.2f} s | error mean "
                f"{runs[0][2].mean():.3f} max {runs[0][2].max():.3f} | TV(2 seeds) mean "
                f"{tv.mean():.3f} max {tv.max():.3f}"
            )
        t0 = time.perf_counter()
        worst_case_losses(t, RECEIVER)
        print(f"  audit  worst_case_losses, defaults: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
