r"""Monte Carlo in bounded memory: draws generated and reduced in chunks.

An audit's Monte Carlo statistic is the k-th largest of N sampled losses (the Clopper–Pearson
rank of :func:`persuasive.audit.core.clopper_pearson_rank`), or the mean and variance of a risk
(App. C). Holding N draws at once is what made a huge ``n_samples`` raise ``MemoryError``; here
the N draws are split into chunks of at most :data:`CHUNK_VALUES` values, chunk i drawn from its
own generator ``default_rng([seed, i])`` so that any chunk can be drawn again to recover the
witness output, and only a bounded summary is kept:

* k <= :data:`EXACT_RANK`: a running buffer of the k largest values (exact k-th largest);
* larger k: a pilot chunk fixes a few thousand thresholds (its own sampled values), one pass
  counts the draws at or above each, and the reported value is the largest threshold reached
  by at least k draws. It is at most the exact k-th largest, so
  :math:`P[\ell \ge \hat v] \ge P[\ell \ge \ell_{(k)}] > \delta` still holds at the stated
  confidence (a smaller value only weakens the claim), and it is a loss actually attained by a
  drawn output (the pilot's).

Memory stays below a few times ``CHUNK_VALUES`` floats whatever N; time grows linearly in N,
and :data:`MAX_SAMPLES` caps N.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from persuasive import _domains as dm
from persuasive.errors import ValidationError

#: Largest number of float64 values drawn at once (per array: about 16 MB).
CHUNK_VALUES: int = 2**21

#: Ranks up to this use an exact running buffer of the k largest values.
EXACT_RANK: int = 2**16

#: Largest n_samples accepted by an audit: the declared domain (memory is bounded by the
#: chunking; this bounds the running time, about a minute per 1e8 draws of a scalar loss).
MAX_SAMPLES: int = dm.N_SAMPLES_MAX

#: Number of pilot thresholds per series for large ranks: half dense around the target rank,
#: half spread geometrically over the pilot's ranks.
N_THRESHOLDS: int = 4096

#: A draw function: ``draw(rng, size)`` returns the losses of ``size`` draws, shape (S, size)
#: for S series (e.g. one per neighbour pair) computed from the same outputs.
Draw = Callable[[np.random.Generator, int], NDArray[np.float64]]


def chunk_sizes(n: int, chunk: int) -> list[int]:
    """Sizes of the chunks of n draws (all ``chunk`` but the last).

    Examples
    --------
    >>> from persuasive.audit.stream import chunk_sizes
    >>> chunk_sizes(10, 4)
    [4, 4, 2]
    """
    full, rest = divmod(n, chunk)
    return [chunk] * full + ([rest] if rest else [])


def chunk_rng(seed: int, i: int) -> np.random.Generator:
    """The generator of chunk i (independent streams, reproducible from ``seed``)."""
    return np.random.default_rng([seed, i])


def _kth_index(a: NDArray[np.float64], k: int) -> int:
    """Index of the k-th largest entry of ``a`` (ties allowed)."""
    top = int(np.argmax(a))
    if k == 1:
        return top
    if np.count_nonzero(a == a[top]) >= k:  # an atom at the maximum (introselect is slow on ties)
        return top
    pos = a.size - k
    return int(np.argpartition(a, pos)[pos])


def stream_kth_largest(
    draw: Draw, n: int, k: int, seed: int, chunk: int
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], bool]:
    r"""For each series, a value :math:`\hat v \le \ell_{(k)}` (the k-th largest of the n draws;
    equal to it when ``exact``) and the (chunk, row) of a draw whose loss is :math:`\hat v`.

    Returns ``(values, chunk_index, row, exact)``.

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.audit.stream import stream_kth_largest
    >>> def draw(rng, size):
    ...     return rng.normal(size=(1, size))
    >>> v, c, r, exact = stream_kth_largest(draw, 10_000, 10, seed=1, chunk=1_000)
    >>> again = draw(np.random.default_rng([1, int(c[0])]), 1_000)[0, int(r[0])]
    >>> exact, bool(v[0] == again)
    (True, True)
    """
    sizes = chunk_sizes(n, chunk)
    if len(sizes) == 1:
        losses = draw(chunk_rng(seed, 0), n)
        rows = np.array([_kth_index(row, k) for row in losses], dtype=np.int64)
        vals = losses[np.arange(losses.shape[0]), rows]
        return vals, np.zeros(rows.size, dtype=np.int64), rows, True
    if k <= EXACT_RANK:
        return (*_top_k(draw, sizes, k, seed), True)
    return (*_thresholds(draw, sizes, k, n, seed), False)


def _top_k(
    draw: Draw, sizes: list[int], k: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Exact k-th largest with a running buffer of the k largest (value, chunk, row)."""
    buf_v: NDArray[np.float64] | None = None
    buf_c = buf_r = np.zeros((0, 0), dtype=np.int64)
    for i, size in enumerate(sizes):
        losses = draw(chunk_rng(seed, i), size)
        s = losses.shape[0]
        rows = np.broadcast_to(np.arange(size, dtype=np.int64), (s, size))
        if buf_v is None:
            vals, cs, rs = losses, np.full((s, size), i, dtype=np.int64), rows
        else:
            vals = np.concatenate([buf_v, losses], axis=1)
            cs = np.concatenate([buf_c, np.full((s, size), i, dtype=np.int64)], axis=1)
            rs = np.concatenate([buf_r, rows], axis=1)
        if vals.shape[1] > k:
            keep = np.argpartition(vals, vals.shape[1] - k, axis=1)[:, vals.shape[1] - k :]
            vals = np.take_along_axis(vals, keep, axis=1)
            cs = np.take_along_axis(cs, keep, axis=1)
            rs = np.take_along_axis(rs, keep, axis=1)
        buf_v, buf_c, buf_r = vals, cs, rs
    assert buf_v is not None
    j = np.argmin(buf_v, axis=1)  # the k-th largest is the least of the k largest
    idx = np.arange(buf_v.shape[0])
    return buf_v[idx, j], buf_c[idx, j], buf_r[idx, j]


def _thresholds(
    draw: Draw, sizes: list[int], k: int, n: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Largest pilot threshold reached by at least k of the n draws (a lower bound on the
    k-th largest), and the pilot row that attains it."""
    pilot = draw(chunk_rng(seed, 0), sizes[0])
    s, m = pilot.shape
    order = np.argsort(-pilot, axis=1, kind="stable")  # descending
    target = k / n * m  # the pilot rank of the k-th largest of n
    half = N_THRESHOLDS // 2
    width = 8.0 * np.sqrt(max(target, 1.0)) + 64.0
    dense = np.linspace(target - width, target + width, half)
    spread = np.geomspace(1.0, m, half)
    ranks = np.unique(np.clip(np.concatenate([dense, spread, [m]]), 1, m).astype(np.int64) - 1)
    cand_rows = order[:, ranks]  # (S, R) pilot rows, by increasing rank = decreasing value
    cand = np.take_along_axis(pilot, cand_rows, axis=1)
    thr = cand[:, ::-1]  # ascending thresholds
    thr_rows = cand_rows[:, ::-1]
    counts = np.zeros(thr.shape, dtype=np.int64)
    for i, size in enumerate(sizes):
        losses = pilot if i == 0 else draw(chunk_rng(seed, i), size)
        for row in range(s):
            # draws >= thr[j] for every j: bin by the number of thresholds at or below each
            idx = np.searchsorted(thr[row], losses[row], side="right")
            hist = np.bincount(idx, minlength=thr.shape[1] + 1)
            counts[row] += np.cumsum(hist[::-1])[::-1][1:]
    vals = np.full(s, -np.inf)  # -inf: no threshold is reached by k draws (no claim)
    rows = np.zeros(s, dtype=np.int64)
    for row in range(s):
        ok = np.flatnonzero(counts[row] >= k)
        if ok.size:
            vals[row], rows[row] = thr[row, ok[-1]], thr_rows[row, ok[-1]]
    return vals, np.zeros(s, dtype=np.int64), rows


def stream_moments(
    transform: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    draw: Draw,
    n: int,
    seed: int,
    chunk: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    r"""Shifted moments of ``transform(losses)`` (shape (G, S, size) per chunk) over n draws,
    for CLT bounds on a risk (App. C): returns ``(shift, mean, sd)`` with
    :math:`e^{\text{shift}}\cdot` (mean, sd) the mean and sd (ddof 1) of :math:`e^{g}` when
    ``transform`` returns log-values (Rényi), i.e. moments of :math:`e^{g - \text{shift}}`.
    The running shift is the largest value seen, so nothing overflows."""
    shift: NDArray[np.float64] | None = None
    s1 = s2 = np.zeros(0)
    for i, size in enumerate(chunk_sizes(n, chunk)):
        g = transform(draw(chunk_rng(seed, i), size))
        top = g.max(axis=-1)
        if shift is None:
            shift = top
            s1 = np.zeros(top.shape)
            s2 = np.zeros(top.shape)
        new = np.maximum(shift, top)
        with np.errstate(invalid="ignore", over="ignore"):
            scale = np.where(np.isfinite(shift), np.exp(shift - new), 0.0)
        w = np.exp(g - new[..., None])
        s1 = s1 * scale + w.sum(axis=-1)
        s2 = s2 * scale**2 + (w * w).sum(axis=-1)
        shift = new
    assert shift is not None
    mean = s1 / n
    var = np.maximum(s2 - n * mean**2, 0.0) / (n - 1)
    return shift, mean, np.sqrt(var)


def stream_plain_moments(
    transform: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    draw: Draw,
    n: int,
    seed: int,
    chunk: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and sd (ddof 1) of ``transform(losses)`` over n draws, by chunks (Welford-style
    pairwise merge of chunk means and sums of squared deviations)."""
    count = 0
    mean = m2 = np.zeros(0)
    for i, size in enumerate(chunk_sizes(n, chunk)):
        g = transform(draw(chunk_rng(seed, i), size))
        cm = g.mean(axis=-1)
        cm2 = ((g - cm[..., None]) ** 2).sum(axis=-1)
        if count == 0:
            mean, m2 = cm, cm2
        else:
            d = cm - mean
            tot = count + size
            mean = mean + d * size / tot
            m2 = m2 + cm2 + d * d * count * size / tot
        count += size
    return mean, np.sqrt(m2 / (count - 1))


def kth_output(
    sample: Callable[[np.random.Generator, int], NDArray[np.float64]],
    loss: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    n: int,
    k: int,
    rng: np.random.Generator,
    in_memory: int | None = None,
) -> NDArray[np.float64]:
    """The output whose loss is the k-th largest of n sampled outputs (or, when n exceeds
    ``in_memory``, a sampled output whose loss is at most that, by :func:`stream_kth_largest`).

    ``sample(rng, size)`` draws outputs (leading axis = draws); ``loss`` maps them to losses.
    Up to ``in_memory`` (default 4 CHUNK_VALUES) draws are taken at once from ``rng`` itself.
    """
    if n <= (4 * CHUNK_VALUES if in_memory is None else in_memory):
        t = sample(rng, n)
        losses = loss(t)
        return np.asarray(t[_kth_index(losses, k)])
    seed = int(rng.integers(2**63))
    chunk = CHUNK_VALUES

    def draw(g: np.random.Generator, size: int) -> NDArray[np.float64]:
        return loss(sample(g, size))[None, :]

    vals, chunks, rows, _ = stream_kth_largest(draw, n, k, seed, chunk)
    if not np.isfinite(vals[0]):  # pragma: no cover - k close to n
        raise ValidationError(
            f"n_samples = {n}: no sampled loss is reached by the {k} largest draws; the "
            "Clopper-Pearson rank is too close to n_samples"
        )
    size = chunk_sizes(n, chunk)[int(chunks[0])]
    return np.asarray(sample(chunk_rng(seed, int(chunks[0])), size)[int(rows[0])])
