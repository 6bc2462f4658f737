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
state of the move's cells when there are at most ``MAX_TABLE_STATES``, else computed from the log
weights at each step). Disjoint supports make the simultaneous update equal to the sequential
one; each update leaves :math:`\Pi` invariant, and neither the moves nor their order depend on
the state, so every sweep leaves :math:`\Pi` invariant. ``n_chains`` independent chains run in
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

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import linprog

from persuasive._progress import task
from persuasive.margins.moves import MoveSet, integer_kernel, markov_moves

__all__ = ["MoveSet", "integer_kernel", "markov_moves", "sample_marginals"]

#: Batches per chain for the batch-means error estimate.
N_BATCHES: int = 5

#: Default number of independent chains run side by side.
N_CHAINS: int = 8


#: Largest number of joint states of a move's cells for which its heat-bath law is tabulated.
MAX_TABLE_STATES: int = 6561

#: Largest total number of tabulated entries (states x candidate steps) per component.
MAX_TABLE_ENTRIES: int = 1 << 23

#: Number of standard errors in the reported error.
N_SE: float = 3.0


# ----------------------------------------------------------------------------- the sampler


def _colours(moves: sparse.csr_array) -> list[NDArray[np.intp]]:
    """Greedy colouring of the moves (shortest first): moves of one colour have disjoint
    supports. Returns the move indices of each colour."""
    n = moves.shape[1]
    length = np.diff(moves.indptr)
    used = [0] * n
    groups: dict[int, list[int]] = {}
    for i in np.argsort(length, kind="stable").tolist():
        cols = moves.indices[moves.indptr[i] : moves.indptr[i + 1]].tolist()
        mask = 0
        for c in cols:
            mask |= used[c]
        colour = (~mask & (mask + 1)).bit_length() - 1
        for c in cols:
            used[c] |= 1 << colour
        groups.setdefault(colour, []).append(i)
    return [np.asarray(groups[c], dtype=np.intp) for c in sorted(groups)]


def _pack(moves: sparse.csr_array, idx: NDArray[np.intp]) -> tuple[NDArray[np.intp], ...]:
    """(cells, steps), shape (K, L): the moves ``idx`` padded with the dummy cell n, step 0."""
    n = moves.shape[1]
    length = np.diff(moves.indptr)[idx]
    K, L = idx.size, int(length.max())
    cells = np.full((K, L), n, dtype=np.intp)
    steps = np.zeros((K, L), dtype=np.int64)
    k = np.repeat(np.arange(K), length)
    pos = np.arange(k.size) - np.repeat(np.cumsum(length) - length, length)
    src = np.concatenate([np.arange(moves.indptr[i], moves.indptr[i + 1]) for i in idx])
    cells[k, pos] = moves.indices[src]
    steps[k, pos] = moves.data[src]
    return cells, steps


def _move_reach(moves: sparse.csr_array, hi: NDArray[np.int64]) -> NDArray[np.int64]:
    """Largest |t| that can be feasible for each move: min over its cells of hi // |step|."""
    coo = moves.tocoo()
    reach = np.full(moves.shape[0], np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(reach, coo.row, hi[coo.col] // np.abs(coo.data))
    return reach


@dataclass(frozen=True)
class _TableBlock:
    """Moves of one colour whose heat-bath law is tabulated for every joint state of their cells.

    The state ``Y`` has shape (n + 1, chains); row n is a dummy cell (value 0) padding moves to
    a common length L. ``cdf[start[k] + code]`` is the cumulative law of t in
    ``[-tmax, tmax]`` for move k when its cells hold values with mixed-radix code
    ``code = sum_l y_l * powers[k, l]``."""

    cells: NDArray[np.intp]  # (K, L)
    steps: NDArray[np.float64]  # (K, L, 1)
    powers: NDArray[np.float64]  # (K, 1, L)
    start: NDArray[np.float64]  # (K, 1, 1)
    cdf: NDArray[np.float64]  # (total states, T), last column 1
    tmax: int

    def update(self, Y: NDArray[np.float64], rng: np.random.Generator) -> None:
        cur = Y[self.cells]  # (K, L, C)
        code = np.matmul(self.powers, cur) + self.start  # (K, 1, C)
        cdf = self.cdf[code.astype(np.intp)]  # (K, 1, C, T)
        u = rng.random(code.shape)  # the first t with cdf > u has positive probability
        t = np.argmax(cdf > u[..., None], axis=3) - self.tmax
        Y[self.cells] = cur + self.steps * t


@dataclass(frozen=True)
class _DirectBlock:
    """Moves of one colour whose heat-bath law is computed from the log weights at each step."""

    cells: NDArray[np.intp]  # (K, L)
    steps: NDArray[np.float64]  # (K, L, 1)
    offs: NDArray[np.intp]  # (K, L, 1, T): flat index of value t * step of each cell
    table: NDArray[np.float64]  # flat log weights, padded with -inf (infeasible t: weight 0)
    tmax: int

    def update(self, Y: NDArray[np.float64], rng: np.random.Generator) -> None:
        cur = Y[self.cells]  # (K, L, C)
        lw = self.table[self.offs + cur.astype(np.intp)[..., None]].sum(axis=1)  # (K, C, T)
        top = lw.max(axis=2, keepdims=True)
        with np.errstate(invalid="ignore"):
            cum = np.cumsum(np.exp(lw - top), axis=2)
            cdf = cum / cum[:, :, -1:]
        u = rng.random(cdf.shape[:2])
        t = np.argmax(cdf > u[..., None], axis=2) - self.tmax
        t[~np.isfinite(top[:, :, 0])] = 0  # every candidate has weight 0: stay
        Y[self.cells] = cur + self.steps * t[:, None, :]


def _tabulate(
    cells: NDArray[np.intp],
    steps: NDArray[np.int64],
    hi: NDArray[np.int64],
    logw: NDArray[np.float64],
    tmax: int,
) -> _TableBlock:
    """Tabulate the heat-bath law of each move for every joint state of its cells."""
    width = logw.shape[1]
    radix = hi[cells] + 1  # the dummy cell has hi = 0
    powers = np.cumprod(np.concatenate([np.ones_like(radix[:, :1]), radix[:, :-1]], 1), axis=1)
    size = radix.prod(axis=1)
    start = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
    ts = np.arange(-tmax, tmax + 1)
    cdf = np.empty((int(size.sum()), ts.size))
    L = cells.shape[1]
    _, group = np.unique(radix, axis=0, return_inverse=True)
    group = group.ravel()
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        rad = radix[members[0]].tolist()
        S = int(size[members[0]])
        chunk = max(1, (1 << 21) // (S * ts.size))
        for c0 in range(0, members.size, chunk):
            mk = members[c0 : c0 + chunk]
            # lw[k, y_{L-1}, ..., y_0, t] = sum_l log q_l(y_l + t step_l): code order is C order
            lw = np.zeros((mk.size, *rad[::-1], ts.size))
            for pos in range(L):
                vals = np.arange(rad[pos])[None, :, None] + steps[mk, pos, None, None] * ts
                ok = (vals >= 0) & (vals <= hi[cells[mk, pos]][:, None, None])
                got = logw[cells[mk, pos][:, None, None], np.clip(vals, 0, width - 1)]
                shape = [mk.size] + [1] * L + [ts.size]
                shape[L - pos] = rad[pos]
                lw += np.where(ok, got, -np.inf).reshape(shape)
            lw = lw.reshape(mk.size, S, ts.size)
            top = lw.max(axis=2, keepdims=True)
            with np.errstate(invalid="ignore"):
                cum = np.cumsum(np.exp(lw - top), axis=2)
                law = cum / cum[:, :, -1:]
            law[~np.isfinite(top[:, :, 0])] = ts >= 0  # weight 0 everywhere: stay (t = 0)
            cdf[(start[mk][:, None] + np.arange(S)).ravel()] = law.reshape(-1, ts.size)
    return _TableBlock(
        cells,
        steps[:, :, None].astype(np.float64),
        (powers * (steps != 0))[:, None, :].astype(np.float64),
        start[:, None, None].astype(np.float64),
        cdf,
        tmax,
    )


def _blocks(
    moves: sparse.csr_array, hi: NDArray[np.int64], logw: NDArray[np.float64]
) -> list[_TableBlock | _DirectBlock]:
    """Colour the moves and build, per colour, a tabulated block (moves whose cells have at most
    ``MAX_TABLE_STATES`` joint states, within ``MAX_TABLE_ENTRIES`` in all) and a direct block
    for the others."""
    n, width = logw.shape
    hi_ext = np.append(hi, 0)
    logw_ext = np.vstack([logw, np.full((1, width), -np.inf)])
    logw_ext[n, 0] = 0.0  # the dummy cell: value 0, weight 1
    reach = _move_reach(moves, hi)
    log_states = sparse.csr_array(abs(moves) > 0, dtype=np.float64) @ np.log(hi + 1.0)
    budget = float(MAX_TABLE_ENTRIES)
    plan: list[tuple[bool, NDArray[np.intp]]] = []
    live = np.flatnonzero(reach > 0)  # a move through a cell fixed at its bound never moves
    for sub in _colours(sparse.csr_array(moves[live])):
        idx = live[sub]
        states = np.exp(log_states[idx])
        tab = states <= MAX_TABLE_STATES * 1.0001
        cost = np.cumsum(np.where(tab, states, 0.0)) * (2 * int(reach[idx].max()) + 1)
        tab &= cost <= budget
        if tab.any():
            budget -= float(cost[tab][-1])
            plan.append((True, idx[tab]))
        if not tab.all():
            plan.append((False, idx[~tab]))
    flat, row, pad = np.zeros(0), 0, 0
    if not all(t for t, _ in plan):
        pad = int((reach * abs(moves).max(axis=1).toarray().ravel()).max())
        row = width + 2 * pad
        table = np.full((n + 1, row), -np.inf)
        table[:, pad : pad + width] = logw_ext
        flat = table.ravel()
    out: list[_TableBlock | _DirectBlock] = []
    for tabulated, idx in plan:
        cells, steps = _pack(moves, idx)
        tmax = int(reach[idx].max())
        if tabulated:
            out.append(_tabulate(cells, steps, hi_ext, logw_ext, tmax))
        else:
            ts = np.arange(-tmax, tmax + 1)
            offs = ((cells * row + pad)[:, :, None] + steps[:, :, None] * ts).astype(np.intp)
            out.append(
                _DirectBlock(
                    cells, steps[:, :, None].astype(np.float64), offs[:, :, None], flat, tmax
                )
            )
    return out


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
