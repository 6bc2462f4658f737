r"""Cycle moves of the margin-entry graph, for the Markov chains of :mod:`persuasive.margins.mcmc`.

When every cell lies in at most two constraint rows, the cells are the edges of a graph on the
margin entries, and alternating cycles of that graph are moves (:math:`A m = 0`): a shortest
cycle through each cell, random short cycles, and the fundamental cycles of a spanning forest
that complete a generating set (the argument is in the docstring of
:mod:`persuasive.margins.mcmc`). :func:`persuasive.margins.moves.markov_moves` assembles them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

#: Longest cycle searched as the short move through each cell (graph case).
MAX_CYCLE: int = 8

#: Lengths of the random cycles added as moves, and random walks per cell for each length.
CYCLE_LENGTHS: tuple[int, ...] = (4, 6)
WALKS_PER_CELL: int = 32

#: Random cycles are added while every cell is in fewer than this many moves.
MAX_LOAD: int = 16


# ----------------------------------------------------------------------------- cycle moves


def _graph_rows(A: sparse.csc_array) -> NDArray[np.intp]:
    """Constraint rows kept for the graph: greedily by support size, a row is kept when no cell
    then lies in more than two kept rows."""
    Ar = sparse.csr_array(A)
    order = np.argsort(np.diff(Ar.indptr), kind="stable")
    load = np.zeros(A.shape[1], dtype=np.int64)
    keep = []
    for k in order:
        cols = Ar.indices[Ar.indptr[k] : Ar.indptr[k + 1]]
        if np.all(load[cols] < 2):
            load[cols] += 1
            keep.append(int(k))
    return np.sort(np.asarray(keep, dtype=np.intp))


def _cycle_signs(nodes: list[int], edges: list[int], ground: int) -> list[int]:
    """Alternating signs along a closed walk (edge j joins nodes[j] and nodes[j+1]); a walk
    through the ground node starts there, where the constraint is void. Signed edge codes:
    ``e`` for +1, ``-e-1`` for -1."""
    if ground in nodes:
        g = nodes.index(ground)
        edges = edges[g:] + edges[:g]
    return [e if j % 2 == 0 else -e - 1 for j, e in enumerate(edges)]


@dataclass(frozen=True)
class _Graph:
    """The constraint graph: nodes are margin entries plus a ground node, edges are cells."""

    ends: NDArray[np.intp]  # (2, n_edges)
    n_nodes: int
    ground: int
    adj: list[list[tuple[int, int]]]  # (neighbour, edge) per node, loops excluded

    @classmethod
    def build(cls, ends: NDArray[np.intp], n_nodes: int, ground: int) -> _Graph:
        adj: list[list[tuple[int, int]]] = [[] for _ in range(n_nodes)]
        for e, (u, v) in enumerate(ends.T.tolist()):
            if u != v:
                adj[u].append((v, e))
                adj[v].append((u, e))
        # a fixed pseudo-random neighbour order spreads shortest paths (ties) over the graph,
        # so that no cell ends up in many moves
        shuffle = np.random.default_rng(0x5EED)
        adj = [[a[k] for k in shuffle.permutation(len(a)).tolist()] for a in adj]
        return cls(ends, n_nodes, ground, adj)

    @property
    def n_edges(self) -> int:
        return int(self.ends.shape[1])


def _shortest_cycles(g: _Graph) -> list[list[int]]:
    """For every edge, a shortest cycle through it (at most ``MAX_CYCLE`` edges), by BFS."""
    out: list[list[int]] = []
    for e, (u, v) in enumerate(g.ends.T.tolist()):
        if u == v:
            continue
        prev: dict[int, tuple[int, int]] = {u: (-1, -1)}
        frontier = [u]
        found = False
        for _ in range(MAX_CYCLE - 1):
            nxt = []
            for x in frontier:
                for y, f in g.adj[x]:
                    if f == e or y in prev:
                        continue
                    prev[y] = (x, f)
                    if y == v:
                        found = True
                        break
                    nxt.append(y)
                if found:
                    break
            if found or not nxt:
                break
            frontier = nxt
        if not found:
            continue
        nodes, edges = [v], []
        x = v
        while x != u:
            x, f = prev[x]
            nodes.append(x)
            edges.append(f)
        out.append(_cycle_signs(nodes, [*edges, e], g.ground))  # v -> ... -> u, then e
    return out


def _find(parent: list[int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _weakly_fundamental(g: _Graph, M: sparse.csr_array) -> tuple[list[int], NDArray[np.bool_]]:
    """Rows of M (cycles, tried shortest first, in repeated passes) forming a weakly fundamental
    family: each kept cycle has an edge in no earlier kept cycle and raises the cycle-space
    dimension of the covered subgraph by exactly one. Returns (kept rows, covered edges)."""
    parent = list(range(g.n_nodes))
    covered = [False] * g.n_edges
    ends = g.ends.T.tolist()
    kept: list[int] = []
    pending = np.argsort(np.diff(M.indptr), kind="stable").tolist()
    while pending:
        rest = []
        for i in pending:
            new = [e for e in M.indices[M.indptr[i] : M.indptr[i + 1]].tolist() if not covered[e]]
            if not new:
                continue  # in the span of the kept ones
            local: dict[int, int] = {}
            merges = 0
            for e in new:
                a, b = _find(parent, ends[e][0]), _find(parent, ends[e][1])
                while a in local:
                    a = local[a]
                while b in local:
                    b = local[b]
                if a != b:
                    local[a] = b
                    merges += 1
            if len(new) - merges != 1:
                rest.append(i)
                continue
            for e in new:
                covered[e] = True
                a, b = _find(parent, ends[e][0]), _find(parent, ends[e][1])
                parent[a] = b
            kept.append(i)
        if len(rest) == len(pending):
            break
        pending = rest
    return kept, np.asarray(covered, dtype=bool)


def _spanning_forest(g: _Graph, prefer: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """A spanning forest whose restriction to the ``prefer`` edges spans their subgraph: BFS
    over the preferred edges, then the other edges joined by union-find (index order)."""
    tree = np.zeros(g.n_edges, dtype=bool)
    parent = list(range(g.n_nodes))
    seen = [False] * g.n_nodes
    for root in range(g.n_nodes):
        if seen[root]:
            continue
        seen[root] = True
        queue = deque([root])
        while queue:
            x = queue.popleft()
            for y, e in g.adj[x]:
                if prefer[e] and not seen[y]:
                    seen[y] = True
                    tree[e] = True
                    parent[y] = root
                    queue.append(y)
    for e, (u, v) in enumerate(g.ends.T.tolist()):
        if prefer[e] or u == v:
            continue
        a, b = _find(parent, u), _find(parent, v)
        if a != b:
            parent[a] = b
            tree[e] = True
    return tree


def _tree_cycles(g: _Graph, tree: NDArray[np.bool_], edges: NDArray[np.intp]) -> list[list[int]]:
    """The fundamental cycle of each (non-tree) edge in ``edges`` with respect to ``tree``."""
    n = g.n_nodes
    parent, pedge, depth = [-1] * n, [-1] * n, [-1] * n
    for root in [g.ground, *range(n)]:
        if depth[root] >= 0:
            continue
        depth[root] = 0
        queue = deque([root])
        while queue:
            x = queue.popleft()
            for y, e in g.adj[x]:
                if tree[e] and depth[y] < 0:
                    depth[y], parent[y], pedge[y] = depth[x] + 1, x, e
                    queue.append(y)
    out: list[list[int]] = []
    for e in edges.tolist():
        u, v = int(g.ends[0, e]), int(g.ends[1, e])
        if u == v:
            out.append([e])
            continue
        up_nodes, up_edges = [u], []  # u -> lca
        dn_nodes, dn_edges = [v], []  # v -> lca
        a, b = u, v
        while a != b:
            if depth[a] >= depth[b]:
                up_edges.append(pedge[a])
                a = parent[a]
                up_nodes.append(a)
            else:
                dn_edges.append(pedge[b])
                b = parent[b]
                dn_nodes.append(b)
        nodes = up_nodes + dn_nodes[-2::-1]  # closed walk u -> lca -> v -> (e) -> u
        out.append(_cycle_signs(nodes, up_edges + dn_edges[::-1] + [e], g.ground))
    return out


def _cycle_moves(A: sparse.csr_array, g: _Graph) -> tuple[sparse.csr_array, bool]:
    """Short cycle moves and whether they contain an integral basis of ker A (False when the
    cycles of the graph do not describe ker A: some fundamental cycle is not a move)."""
    n = A.shape[1]
    short = _to_matrix(_shortest_cycles(g), n)
    S = _normalise(short[np.flatnonzero(_is_move(A, short))])
    R = _sampled_cycles(g, np.random.default_rng(0))
    R = _normalise(R[np.flatnonzero(_is_move(A, R))])
    load = np.asarray(abs(S).sum(axis=0)).ravel().astype(np.int64)
    S = _normalise(sparse.vstack([S, R[_capped(R, load, MAX_LOAD)]]))
    kept, covered = _weakly_fundamental(g, S)
    tree = _spanning_forest(g, covered)
    need = np.flatnonzero(~tree & ~covered)
    C = _to_matrix(_tree_cycles(g, tree, need), n)
    if len(kept) + C.shape[0] == int((~tree).sum()) and _is_move(A, C).all():
        return _normalise(sparse.vstack([S, C])), True
    # fall back on every fundamental cycle of a BFS forest (an integral basis if all are moves)
    tree = _spanning_forest(g, np.zeros(g.n_edges, dtype=bool))
    F = _to_matrix(_tree_cycles(g, tree, np.flatnonzero(~tree)), n)
    if not _is_move(A, F).all():
        return S, False
    return _normalise(sparse.vstack([S, F])), True


def _sampled_cycles(g: _Graph, rng: np.random.Generator) -> sparse.csr_array:
    """Random short cycles (lengths in ``CYCLE_LENGTHS``), found by ``WALKS_PER_CELL`` random
    walks from each cell that close into a simple cycle; deduplicated, signs alternating (from
    the ground node when the cycle passes through it). Validity is checked by the caller."""
    ends, n_nodes, ground, n_edges = g.ends, g.n_nodes, g.ground, g.n_edges
    inc = sparse.csr_array(
        (np.ones(2 * n_edges), (ends.ravel(), np.tile(np.arange(n_edges), 2))),
        shape=(n_nodes, n_edges),
    )
    ptr, idx = inc.indptr, inc.indices
    deg = np.diff(ptr)
    lo_end, hi_end = np.minimum(ends[0], ends[1]), np.maximum(ends[0], ends[1])
    keys = lo_end.astype(np.int64) * n_nodes + hi_end
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    out: list[sparse.csr_array] = []
    for length in CYCLE_LENGTHS:
        e0 = np.repeat(np.arange(n_edges), WALKS_PER_CELL)
        flip = rng.random(e0.size) < 0.5
        u = np.where(flip, ends[1, e0], ends[0, e0])
        v = np.where(flip, ends[0, e0], ends[1, e0])
        nodes, edges = [u], []
        x = u
        for _ in range(length - 2):
            f = idx[ptr[x] + (rng.random(x.size) * deg[x]).astype(np.intp)]
            x = ends[0, f] + ends[1, f] - x
            nodes.append(x)
            edges.append(f)
        nodes.append(v)
        N = np.stack(nodes, axis=1)  # (trials, length)
        q = np.minimum(x, v).astype(np.int64) * n_nodes + np.maximum(x, v)
        at = np.minimum(np.searchsorted(sorted_keys, q), n_edges - 1)
        closing = order[at]
        ok = (sorted_keys[at] == q) & (v != u)
        Ns = np.sort(N, axis=1)
        ok &= np.all(Ns[:, 1:] != Ns[:, :-1], axis=1)  # a simple cycle
        E = np.stack([*edges, closing, e0], axis=1)[ok]  # edge j joins nodes j and j + 1
        N = N[ok]
        if E.shape[0] == 0:
            continue
        at_ground = np.where((N == ground).any(axis=1), np.argmax(N == ground, axis=1), 0)
        sign = 1 - 2 * ((np.arange(length)[None, :] - at_ground[:, None]) % 2)
        key = np.sort(E, axis=1)
        _, first = np.unique(key, axis=0, return_index=True)
        first = np.sort(first)
        rows = np.repeat(np.arange(first.size), length)
        out.append(
            sparse.csr_array(
                (sign[first].ravel(), (rows, E[first].ravel())), shape=(first.size, n_edges)
            )
        )
    if not out:
        return sparse.csr_array((0, n_edges), dtype=np.int64)
    return sparse.csr_array(sparse.vstack(out), dtype=np.int64)


def _capped(M: sparse.csr_array, load: NDArray[np.int64], cap: int) -> NDArray[np.intp]:
    """Rows of M kept, in order, while every cell stays in at most ``cap`` moves (``load`` is
    updated in place)."""
    keep = []
    for i in range(M.shape[0]):
        cols = M.indices[M.indptr[i] : M.indptr[i + 1]]
        if load[cols].max() < cap:
            load[cols] += 1
            keep.append(i)
    return np.asarray(keep, dtype=np.intp)


def _to_matrix(cycles: list[list[int]], n: int) -> sparse.csr_array:
    rows = np.repeat(np.arange(len(cycles)), [len(c) for c in cycles])
    codes = np.fromiter((x for c in cycles for x in c), dtype=np.int64, count=rows.size)
    cols = np.where(codes >= 0, codes, -codes - 1)
    vals = np.where(codes >= 0, 1, -1)
    return sparse.csr_array((vals, (rows, cols)), shape=(len(cycles), n))


def _is_move(A: sparse.csr_array, M: sparse.csr_array) -> NDArray[np.bool_]:
    """Rows m of M with A m = 0."""
    if M.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    bad = (abs(sparse.csr_array(A @ M.T)) > 0).astype(np.int64).sum(axis=0)
    return np.asarray(bad).ravel() == 0


def _normalise(M: sparse.csr_array) -> sparse.csr_array:
    """First nonzero positive, duplicates removed (first occurrence kept), order preserved."""
    M = sparse.csr_array(M, dtype=np.int64)
    M.sort_indices()
    seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    keep = []
    sign = np.ones(M.shape[0], dtype=np.int64)
    for i in range(M.shape[0]):
        lo, hi = M.indptr[i], M.indptr[i + 1]
        if lo == hi:
            continue
        s = 1 if M.data[lo] > 0 else -1
        key = (tuple(M.indices[lo:hi].tolist()), tuple((s * M.data[lo:hi]).tolist()))
        if key in seen:
            continue
        seen.add(key)
        keep.append(i)
        sign[i] = s
    M.data *= np.repeat(sign, np.diff(M.indptr))
    return sparse.csr_array(M[np.asarray(keep, dtype=np.intp)], dtype=np.int64)
