r"""Markov chain Monte Carlo for components too large for the exact DP.

The chains live on the fibre :math:`\mathcal F = \{y \in \mathbb Z^n : A y = b,\ \ell \le y \le
u\}` of one component and target :math:`\Pi(y) \propto \prod_i q_i(y_i)`.

**Moves** (:func:`markov_moves`). A move is an integer vector :math:`m` with :math:`A m = 0`, so
every margin is preserved. Cells whose support is a single value are constants and carry no
move. When the constraint rows can be chosen (greedily, smaller margin entries first) so that
every cell lies in at most two of them — two-way tables with row and column margins (a grand
total is then redundant and set aside), k-D tables with two margins — ``A`` is the incidence
matrix of a graph whose nodes are margin entries (plus a *ground* node, without constraint, for
cells in one chosen entry) and whose edges are cells; a move is a cycle with alternating signs
:math:`+1, -1, +1, \dots` (the 2×2 "swap" is the 4-cycle). The moves are

1. for every cell, a shortest cycle through it (BFS, at most ``MAX_CYCLE`` cells; ties broken by
   a fixed pseudo-random neighbour order, so that no cell collects many moves);
2. random simple cycles of ``CYCLE_LENGTHS`` cells (``WALKS_PER_CELL`` random closed walks from
   every cell, fixed seed), kept while every cell is in fewer than ``MAX_LOAD`` moves;
3. if these do not already contain one, fundamental cycles of a spanning forest completing a
   *weakly fundamental* cycle basis: an ordered basis in which every cycle has a cell no earlier
   one has. Solving for the coefficients of any integer kernel vector from the last basis cycle
   backwards shows that such a basis generates the lattice :math:`\ker A \cap \mathbb Z^n`.

Every move is checked against the full ``A``. Otherwise (e.g. 3-D tables with all two-way
margins) the moves are the integer basis of :math:`\ker A` from its reduced row echelon form
(:func:`integer_kernel`: a lattice basis when the echelon form has no fractions, as for totally
unimodular A), shortened by unimodular pairwise reduction, plus the sums and differences of two
of its vectors that are no longer than either, plus any valid short cycles.

**Kernel.** The moves are coloured so that moves of one colour have disjoint supports. A sweep
visits the colours in a fixed order and updates every move of a colour at once by an exact
heat-bath step: along the line :math:`y + t m`, :math:`t` is drawn from :math:`\Pi` restricted to
the feasible segment :math:`\{t : \ell \le y + t m \le u\}` (its law is tabulated for every joint
state of the move's cells when there are at most ``mcmc_blocks.MAX_TABLE_STATES``, else
computed from the log weights at each step). Disjoint supports make the simultaneous update
equal to the sequential one; each update leaves :math:`\Pi` invariant, and neither the moves
nor their order depend on the state, so every sweep leaves :math:`\Pi` invariant. ``n_chains``
independent chains run in
one vectorised state array: chain 0 starts at the true table, the others at vertices of the LP
relaxation :math:`\{A y = b,\ \ell \le y \le u\}` minimising random linear costs (integral for
totally unimodular A; the true table when a vertex is fractional or has zero prior weight).

**Error statement.** ``n_sweeps`` is the number of recorded sweeps summed over the chains (each
chain records ``ceil(n_sweeps / n_chains)`` sweeps, rounded up to a multiple of ``N_BATCHES``,
after ``burn_in`` discarded sweeps). For each cell and value the standard error of the estimated
probability is the larger of (a) the batch-means estimate over the ``n_chains * N_BATCHES``
within-chain batches and (b) the between-chain estimate
:math:`\mathrm{sd}(\text{chain means})/\sqrt{n_\text{chains}}`. The returned error of a cell is
:math:`\min\{1, \tfrac12 \sum_v 3\,\widehat{se}_v\}`: the total-variation distance that a
deviation of three standard errors in every value would produce. It is an **estimate, not a
certificate**:

- it assumes the chains are irreducible on the fibre. That needs the moves to contain a Markov
  basis of this fibre (Diaconis & Sturmfels 1998). Generating the lattice is not enough: with
  a suppression pattern and cell bounds :math:`\ell \le y \le u` even all 2×2 swaps need not
  connect a two-way fibre (six suppressed cells forming a hexagon have none). The
  Graver basis (all circuits; for a two-way table all alternating cycles) connects every bounded
  fibre but is exponentially large, and only short cycles are used. A chain samples the part of
  the fibre reachable from its start; starts in different parts show up as between-chain spread,
  parts that no chain starts in are not seen at all;
- it assumes the chains have mixed: burn-in long enough and batches longer than the
  autocorrelation time. The dispersed starts make the between-chain term sensitive to slow
  mixing, but only in the directions in which the starts differ;
- a value that no chain visits contributes nothing to the error;
- if every chain ends in a state of zero prior weight (the true table has zero weight and no
  chain left it), the error of every cell is set to 1.

On components the exact DP also solves (two-way tables with row, column and total margins, a
single margin, secondary cells; three-way tables), ``tests/test_margins_mcmc.py`` checks that the
total-variation distance to the exact marginals is at most the reported error + 0.02 in every
cell. Results built on the chain carry ``exact = False``; certificates use exact components only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import linprog

from persuasive._progress import task
from persuasive.margins.mcmc_blocks import _blocks
from persuasive.margins.moves import MoveSet, integer_kernel, markov_moves

__all__ = ["MoveSet", "integer_kernel", "markov_moves", "sample_marginals"]

#: Batches per chain for the batch-means error estimate.
N_BATCHES: int = 5

#: Default number of independent chains run side by side.
N_CHAINS: int = 8


#: Number of standard errors in the reported error.
N_SE: float = 3.0


# ----------------------------------------------------------------------------- the sampler


def _starts(
    A: sparse.csr_array,
    y0: NDArray[np.int64],
    hi: NDArray[np.int64],
    logw: NDArray[np.float64],
    n_chains: int,
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """Starting points (shifted values): the true table for chain 0; for the others a vertex of
    the LP relaxation ``{z: A z = A y0, 0 <= z <= hi}`` minimising a random linear cost, when it
    is integral (always, for totally unimodular A) and has positive weight, else the true table.
    Overdispersed starts let the between-chain spread reveal a chain that does not mix."""
    n = y0.size
    out = np.tile(y0, (n_chains, 1))
    if n_chains == 1 or A.shape[0] == 0:
        return out
    costs = rng.standard_normal((n_chains - 1, n))
    b = A @ y0
    bounds = np.stack([np.zeros(n), hi.astype(np.float64)], axis=1)
    for k in range(1, n_chains):
        res = linprog(costs[k - 1], A_eq=A, b_eq=b, bounds=bounds, method="highs-ds")
        if res.status != 0:
            continue
        z = np.rint(res.x).astype(np.int64)
        if (
            np.abs(res.x - z).max() < 1e-7
            and np.array_equal(A @ z, b)
            and np.all((z >= 0) & (z <= hi))
            and np.isfinite(logw[np.arange(n), z].sum())
        ):
            out[k] = z
    return out


def sample_marginals(
    A: sparse.csr_array,
    start: NDArray[np.int64],
    lo: NDArray[np.int64],
    logw: NDArray[np.float64],
    *,
    n_sweeps: int,
    burn_in: int,
    rng: np.random.Generator,
    n_chains: int = N_CHAINS,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Heat-bath chains on the fibre of one component: posterior marginals and their error.

    Parameters
    ----------
    A : sparse matrix, shape (m, n)
        0/1 constraints of the component (:math:`A y = b`).
    start : ndarray of int64, shape (n,)
        A feasible point (the true values): ``A @ start == b`` within the supports.
    lo : ndarray of int64, shape (n,)
        Support start per cell.
    logw : ndarray of float, shape (n, width)
        ``logw[i, j] = log q_i(lo_i + j)``; -inf beyond the support.
    n_sweeps : int
        Recorded sweeps summed over the chains.
    burn_in : int
        Discarded sweeps at the start of each chain.
    rng : numpy.random.Generator
    n_chains : int, default ``N_CHAINS``
        Independent chains run side by side.

    Returns
    -------
    log_pmf : ndarray, shape (n, width)
        Estimated :math:`\log \Pi(y_i = \ell_i + j)` (-inf where never visited).
    err : ndarray, shape (n,)
        Estimated total-variation error per cell (module docstring: an estimate, not a bound).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import sparse
    >>> A = sparse.csr_array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]])
    >>> logw = np.zeros((4, 3))  # uniform on {0, 1, 2}
    >>> lp, err = sample_marginals(A, np.array([1, 1, 1, 1]), np.zeros(4, np.int64), logw,
    ...                            n_sweeps=4000, burn_in=50, rng=np.random.default_rng(0))
    >>> bool(np.all(np.abs(np.exp(lp) - 1 / 3).sum(axis=1) / 2 <= err + 0.01))
    True
    """
    n, width = logw.shape
    n_chains = max(1, int(n_chains))
    per_chain = -(-max(int(n_sweeps), 1) // n_chains)
    per_chain = -(-per_chain // N_BATCHES) * N_BATCHES
    y0 = np.asarray(start, dtype=np.int64) - np.asarray(lo, dtype=np.int64)
    finite = np.isfinite(logw)
    hi = np.where(finite.any(axis=1), width - 1 - np.argmax(finite[:, ::-1], axis=1), 0)
    hi = np.maximum(hi, y0).astype(np.int64)
    # cells whose support is one value are constants: moves are built on the others
    free = np.flatnonzero(hi > 0)
    sub = markov_moves(sparse.csr_array(A)[:, free]).moves
    if sub.shape[0] == 0:  # the fibre is one point
        log_pmf = np.full((n, width), -np.inf)
        log_pmf[np.arange(n), y0] = 0.0
        return log_pmf, np.zeros(n)
    moves = sparse.csr_array((sub.data, free[sub.indices], sub.indptr), shape=(sub.shape[0], n))
    blocks = _blocks(moves, hi, logw)
    starts = _starts(sparse.csr_array(A), y0, hi, logw, n_chains, rng)
    Y = np.concatenate([starts.T, np.zeros((1, n_chains))]).astype(np.float64)  # (n + 1, C)
    values = np.arange(width, dtype=np.float64)
    counts = np.zeros((N_BATCHES, n, n_chains, width))
    per_batch = per_chain // N_BATCHES
    total = burn_in + per_chain
    chunk = max(1, -(-total // 100))  # report in at most 100 chunks, not per sweep
    with task(f"margins: Markov chain ({n} cells)", total=total) as advance:
        for sweep in range(total):
            for block in blocks:
                block.update(Y, rng)
            if sweep >= burn_in:
                counts[(sweep - burn_in) // per_batch] += Y[:n, :, None] == values
            if (sweep + 1) % chunk == 0 or sweep + 1 == total:
                advance(chunk if (sweep + 1) % chunk == 0 else (sweep + 1) % chunk)
    final = Y[:n].astype(np.int64)
    stuck = not np.all(np.isfinite(logw[np.arange(n)[:, None], final].sum(axis=0)))
    batch = counts / per_batch  # (B, n, C, width) batch means
    est = batch.mean(axis=(0, 2))
    n_b = n_chains * N_BATCHES
    pooled = batch.transpose(0, 2, 1, 3).reshape(n_b, n, width)
    se = pooled.std(axis=0, ddof=1) / np.sqrt(n_b)
    if n_chains > 1:
        chain = batch.mean(axis=0)  # (n, C, width)
        se = np.maximum(se, chain.std(axis=1, ddof=1) / np.sqrt(n_chains))
    err = np.minimum(1.0, 0.5 * N_SE * se.sum(axis=1))
    if stuck:
        err[:] = 1.0
    with np.errstate(divide="ignore"):
        return np.log(est), err
