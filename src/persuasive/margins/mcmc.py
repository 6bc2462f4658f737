r"""Markov chain Monte Carlo for components too large for the exact DP.

The chain lives on the fibre :math:`\{y \in \mathbb Z^n : A y = b,\ \ell \le y \le u\}` and
targets :math:`\Pi(y) \propto \prod_i q_i(y_i)`. A move is an integer vector :math:`m` with
:math:`A m = 0` (so every margin is preserved), drawn from a basis of the kernel of A (for 2-D
row/column margins these are the alternating cycles of the bipartite row–column graph, e.g. the
2×2 "swaps" :math:`+1,-1,-1,+1`) or the sum / difference of two basis vectors. Along the line
:math:`y + t m` the chain draws t exactly from :math:`\Pi` restricted to the feasible segment
(heat bath), so each move leaves Π invariant and the chain is reversible.

**Error statement.** The chain is started at the true table (a feasible point) and run
``n_sweeps`` sweeps after ``burn_in``; the returned ``mc_error`` per cell is the batch-means
estimate :math:`\tfrac12 \sum_v 3\,\widehat{se}(\hat\pi_v)` of the total-variation error of the
estimated marginal (≈ 3 standard errors). It is an **estimate, not a certificate**: the moves
connect the fibre when they contain a Markov basis (Diaconis & Sturmfels 1998), which a lattice
basis need not be (it is for two-way tables with full row/column margins, where the 2×2 swaps
are a Markov basis), and batch means assume the chain has mixed. Results built on it carry
``exact = False``.
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.special import logsumexp

#: Number of batches for the batch-means error estimate.
N_BATCHES: int = 20


def integer_kernel(A: sparse.csr_array) -> NDArray[np.int64]:
    """Integer basis vectors of ker A (rows), from the reduced row echelon form of A.

    Exact for totally unimodular A (2-D margins: entries in {0, ±1}); otherwise the rational
    kernel is scaled to integers and checked, and vectors failing ``A m = 0`` are dropped.
    """
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


def sample_marginals(
    A: sparse.csr_array,
    start: NDArray[np.int64],
    lo: NDArray[np.int64],
    logw: NDArray[np.float64],
    *,
    n_sweeps: int,
    burn_in: int,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Heat-bath chain on the fibre; returns (log marginals like the DP, TV error estimate)."""
    n, width = logw.shape
    moves = integer_kernel(A)
    y = (start - lo).astype(np.int64)  # shifted: value index into logw
    counts = np.zeros((N_BATCHES, n, width))
    if moves.shape[0] == 0:  # the fibre is one point
        counts[:, np.arange(n), y] = 1.0
    else:
        total = burn_in + n_sweeps
        per_batch = max(1, n_sweeps // N_BATCHES)
        hi = np.array([np.flatnonzero(np.isfinite(row)).max() for row in logw])
        for sweep in range(total):
            for _ in range(moves.shape[0]):
                # a basis vector, or the signed sum of two (a symmetric, state-independent
                # choice of direction, so the heat bath keeps Π invariant)
                mv = moves[rng.integers(moves.shape[0])]
                if rng.random() < 0.5 and moves.shape[0] > 1:
                    mv = mv + rng.choice((-1, 1)) * moves[rng.integers(moves.shape[0])]
                nz = np.flatnonzero(mv)
                if nz.size == 0:
                    continue
                step, cur = mv[nz], y[nz]
                # feasible t: 0 <= cur + t*step <= hi
                up = np.where(step > 0, (hi[nz] - cur) // step, cur // -step)
                dn = np.where(step > 0, cur // step, (hi[nz] - cur) // -step)
                ts = np.arange(-int(dn.min()), int(up.min()) + 1)
                vals = cur[None, :] + ts[:, None] * step[None, :]
                lw = logw[nz[None, :], vals].sum(axis=1)
                p = np.exp(lw - logsumexp(lw))
                y[nz] = cur + int(rng.choice(ts, p=p / p.sum())) * step
            if sweep >= burn_in:
                bt = min((sweep - burn_in) // per_batch, N_BATCHES - 1)
                counts[bt, np.arange(n), y] += 1.0
    per = counts / np.maximum(counts.sum(axis=2, keepdims=True), 1.0)
    est = counts.sum(axis=0) / counts.sum(axis=(0, 2))[:, None]
    se = per.std(axis=0, ddof=1) / np.sqrt(N_BATCHES)
    err = 0.5 * (3.0 * se).sum(axis=1)
    with np.errstate(divide="ignore"):
        return np.log(est), err
