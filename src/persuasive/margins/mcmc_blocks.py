r"""The heat-bath updates of the Markov chains of :mod:`persuasive.margins.mcmc`.

Moves are coloured so that moves of one colour touch disjoint cells and are updated together;
a move whose cells have few joint states gets its heat-bath law tabulated once (``_TableBlock``),
the others are drawn directly from the cells' log weights (``_DirectBlock``). The chain, its
error estimate and their checks are in :mod:`persuasive.margins.mcmc`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

#: Largest number of joint states of a move's cells for which its heat-bath law is tabulated.
MAX_TABLE_STATES: int = 6561

#: Largest total number of tabulated entries (states x candidate steps) per component.
MAX_TABLE_ENTRIES: int = 1 << 23


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
