r"""Audits of compositions (many releases of the same data) against neighbour priors (Prop 6).

For :math:`M_1 \otimes \cdots \otimes M_K` released on the same x, the likelihood is the
product, so the privacy loss against a neighbour x' is the sum of the parts' losses,
:math:`\ell_{x,x'}(T) = \sum_i \log m_i(x, T_i) - \log m_i(x', T_i)` (the same pair in every
part), and the two-point prior's loss is :math:`\Delta_q = -\log(q + (1 - q)e^{-\ell})`
(Prop 6, Bon et al. 2026; docs/math.md §6).

* **Exact** (finite kernels whose product has at most :data:`EXACT_OUTPUTS` outputs): the
  composition is enumerated as one finite kernel (:func:`finite_composition`).
* **Monte Carlo** otherwise: outputs of every part are drawn, the summed loss computed, and
  the Clopper–Pearson statistic of :mod:`persuasive.audit.montecarlo` taken, in chunks of
  bounded memory (:mod:`persuasive.audit.stream`); the witness output is drawn again from its
  chunk's generator. The same engine serves any single mechanism when ``n_samples`` is too
  large to hold at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.audit.core import finish, required_rank, two_point_delta
from persuasive.audit.expectation import g_f, normal_quantile
from persuasive.audit.montecarlo import _noise_loss
from persuasive.audit.stream import (
    CHUNK_VALUES,
    chunk_rng,
    chunk_sizes,
    stream_kth_largest,
    stream_moments,
    stream_plain_moments,
)
from persuasive.classes import NeighbourPriors
from persuasive.definitions import FDivergence, PersuasivePrivacy, Renyi
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import Composition, FiniteKernel, Mechanism
from persuasive.mechanisms.composed import ComposedRelease
from persuasive.priors import TwoPointPrior
from persuasive.results import Audit, Witness

#: A composition of finite kernels is enumerated exactly when its product kernel has at most
#: this many outputs; larger ones are audited by Monte Carlo.
EXACT_OUTPUTS: int = 4096


def leaves(mechanism: Mechanism) -> list[Mechanism]:
    """The releases of a (nested) composition in output order (``ComposedRelease`` expanded).

    Examples
    --------
    >>> import persuasive as pp
    >>> g = pp.GaussianMechanism(1.0)
    >>> len(leaves(pp.Composition(g, pp.ComposedRelease([g], [3]))))
    4
    """
    if isinstance(mechanism, Composition):
        return leaves(mechanism.first) + leaves(mechanism.second)
    if isinstance(mechanism, ComposedRelease):
        return [leaf for part in mechanism._expanded() for leaf in leaves(part)]
    return [mechanism]


def assemble(mechanism: Mechanism, outputs: Iterator[Any]) -> Any:
    """The composition's output (nested like ``mechanism.sample``) from its leaves' outputs."""
    if isinstance(mechanism, Composition):
        return (assemble(mechanism.first, outputs), assemble(mechanism.second, outputs))
    if isinstance(mechanism, ComposedRelease):
        return tuple(assemble(part, outputs) for part in mechanism._expanded())
    return next(outputs)


def _select(t: Any, row: int) -> Any:
    if isinstance(t, tuple):
        return tuple(_select(e, row) for e in t)
    return np.asarray(t)[row]


def finite_composition(mechanism: Mechanism) -> tuple[FiniteKernel, Callable[[Any], Any]] | None:
    """The composition as one finite kernel (product of its parts' rows) and the map from the
    product's outputs to the composition's, or None (a part is not finite, the parts act on
    different datasets, or the product has more than :data:`EXACT_OUTPUTS` outputs)."""
    from persuasive.audit.enumeration import finite_view

    parts = leaves(mechanism)
    views = []
    for leaf in parts:
        try:
            view = finite_view(leaf)
        except (UnsupportedCombinationError, ValidationError):
            view = None
        if view is None or not isinstance(view[0], FiniteKernel):
            return None
        views.append((view[0], view[1]))
    mats = [np.asarray(kern.matrix) for kern, _ in views]
    if len({m.shape[0] for m in mats}) != 1:
        return None
    sizes = [m.shape[1] for m in mats]
    if math.prod(sizes) > EXACT_OUTPUTS:
        return None
    prod = mats[0]
    for m in mats[1:]:
        prod = (prod[:, :, None] * m[:, None, :]).reshape(prod.shape[0], -1)
    prod = prod / prod.sum(axis=1, keepdims=True)  # rows sum to one up to rounding

    def to_out(t: Any) -> Any:
        idx = np.unravel_index(int(t), sizes)
        return assemble(
            mechanism, iter(to(float(i)) for (_, to), i in zip(views, idx, strict=True))
        )

    return FiniteKernel(prod), to_out


class LossDraw:
    r"""Draws of the summed privacy loss :math:`\ell_{x,x'}(T)` against each neighbour x'.

    ``draw(rng, size)`` returns an (S, size) array (S neighbours); :meth:`output` draws the same
    chunk again and returns the composition's output at one row. Additive noise parts whose
    neighbours differ in one coordinate use the noise alone (:func:`_noise_loss`); other parts
    their ``sample`` and ``log_likelihood``.
    """

    def __init__(self, mechanism: Mechanism, x: NDArray[np.float64], neighbours: list[Any]):
        self.mechanism = mechanism
        self.x = x
        self.neighbours = [np.asarray(p, dtype=np.float64) for p in neighbours]
        self.parts = leaves(mechanism)
        diffs = [x - xp for xp in self.neighbours]
        self.single = all(np.count_nonzero(d) == 1 for d in diffs)
        self.coord = [(int(np.flatnonzero(d)[0]), float(d[np.flatnonzero(d)[0]])) for d in diffs]
        self.dim = int(x.shape[0])

    def _noise(self, leaf: Mechanism) -> bool:
        return self.single and _noise_loss(leaf, np.zeros(1), 1.0) is not None

    def _run(self, rng: np.random.Generator, size: int, row: int | None) -> Any:
        total = np.zeros((len(self.neighbours), size))
        outs = []
        for leaf in self.parts:
            if self._noise(leaf):
                z = leaf._noise(rng, (size, self.dim))  # type: ignore[attr-defined]
                for s, (j, d) in enumerate(self.coord):
                    total[s] += _noise_loss(leaf, z[:, j], d)
                if row is not None:
                    outs.append(self.x + z[row])
                continue
            t = leaf.sample(self.x, size, rng)
            lx = np.asarray(leaf.log_likelihood(self.x, t), dtype=np.float64).reshape(size)
            for s, xp in enumerate(self.neighbours):
                lxp = np.asarray(leaf.log_likelihood(xp, t), dtype=np.float64).reshape(size)
                with np.errstate(invalid="ignore"):
                    total[s] += np.where(np.isneginf(lxp), np.inf, lx - lxp)
            if row is not None:
                outs.append(_select(t, row))
        return total if row is None else assemble(self.mechanism, iter(outs))

    def __call__(self, rng: np.random.Generator, size: int) -> NDArray[np.float64]:
        return np.asarray(self._run(rng, size, None))

    def output(self, rng: np.random.Generator, size: int, row: int) -> Any:
        return self._run(rng, size, row)

    def chunk(self, extra: int = 1) -> int:
        """Draws per chunk so that one chunk holds about CHUNK_VALUES values."""
        return max(1, CHUNK_VALUES // (self.dim + extra * len(self.neighbours) + 1))


def _finite_rows(mechanism: Mechanism) -> int | None:
    from persuasive.closed.pdp import finite_matrix

    rows = {
        m.shape[0] for m in (finite_matrix(leaf) for leaf in leaves(mechanism)) if m is not None
    }
    return min(rows) if rows else None


def _datasets(
    mechanism: Mechanism, priors: NeighbourPriors, x: Any
) -> tuple[NDArray[np.float64], int | None]:
    rows = _finite_rows(mechanism)
    if x is not None:
        xs = np.asarray(x, dtype=np.float64)
        return (xs.reshape(1, -1) if xs.ndim <= 1 else xs), rows
    if rows is not None:
        return np.arange(float(rows))[:, None], rows
    if priors.pairs is not None:
        return np.array(sorted({float(i) for i, _ in priors.pairs}))[:, None], rows
    return np.zeros((1, 1)), rows


def _neighbours(priors: NeighbourPriors, xx: NDArray[np.float64], rows: int | None) -> list[Any]:
    nbs = [np.asarray(p, dtype=np.float64) for p in priors.neighbours(xx)]
    if rows is not None:  # finite parts act on the datasets 0..rows-1 only
        nbs = [p for p in nbs if p.shape == (1,) and 0 <= p[0] < rows]
    return nbs


def mc_audit(
    mech: Mechanism,
    definition: Any,
    x: Any,
    q_grid: NDArray[np.float64],
    n_samples: int,
    confidence: float,
    rng: np.random.Generator,
) -> Audit:
    r"""Monte Carlo audit of (L, 𝓗, κ, δ)-PP or PPE by summed losses, in bounded memory.

    Examples
    --------
    >>> import persuasive as pp
    >>> m = pp.ComposedRelease.repeat(pp.LaplaceMechanism(3.0), 2)
    >>> a = pp.audit(m, pp.probabilistic_dp(1.0, 0.1), rng=0, n_samples=20_000)
    >>> round(a.kappa, 6), a.method  # both atoms +1/3 (probability 1/4 > 0.1)
    (0.666667, 'monte-carlo')
    """
    priors: NeighbourPriors = definition.priors
    xs, rows = _datasets(mech, priors, x)
    plan = [(xx, _neighbours(priors, xx, rows)) for xx in xs]
    plan = [(xx, nbs) for xx, nbs in plan if nbs]
    n_tests = max(sum(len(nbs) for _, nbs in plan), 1)
    tail = isinstance(definition, PersuasivePrivacy)
    best, best_w, evals, streamed = -np.inf, None, 0, False
    if tail:
        k = required_rank(n_samples, definition.delta, 1.0 - (1.0 - confidence) / n_tests)
    else:
        z = normal_quantile(confidence, n_tests * q_grid.size)
    for xx, nbs in plan:
        draw = LossDraw(mech, xx, nbs)
        seed = int(rng.integers(2**63))
        evals += q_grid.size * len(nbs)
        if tail:
            chunk = draw.chunk()
            vals, chunks, rws, exact = stream_kth_largest(draw, n_samples, k, seed, chunk)
            streamed |= not exact
            for s, xp in enumerate(nbs):
                if not np.isfinite(vals[s]) and vals[s] < 0:
                    continue
                dq = two_point_delta(q_grid, vals[s])
                g = int(np.argmax(dq))
                if dq[g] > best:
                    size = chunk_sizes(n_samples, chunk)[int(chunks[s])]
                    t = draw.output(chunk_rng(seed, int(chunks[s])), size, int(rws[s]))
                    best = float(dq[g])
                    best_w = Witness(definition.scores[0], xx, TwoPointPrior(xx, xp, q_grid[g]), t)
        else:
            low = _risk_lower(definition.risk, draw, q_grid, n_samples, seed, z)  # (G, S)
            gi, si = (int(u) for u in np.unravel_index(int(np.argmax(low)), low.shape))
            if low[gi, si] > best:
                best = float(low[gi, si])
                best_w = Witness(
                    definition.scores[0], xx, TwoPointPrior(xx, nbs[si], q_grid[gi]), None
                )
    kind = "one-sided Clopper-Pearson" if tail else "one-sided normal (CLT, asymptotic)"
    notes = [
        f"{kind} bound at confidence {confidence:g}, Bonferroni over {n_tests} neighbour "
        f"pair(s); {n_samples} samples per dataset; the loss is the sum over "
        f"{len(leaves(mech))} release(s) at the same neighbour pair",
        f"supremum over q is the limit q -> 0 (Prop 6); grid down to q = {q_grid.min():g}",
    ]
    if streamed:
        notes.append(
            "streamed in chunks: the reported loss is a sampled loss at most the k-th largest "
            "of the n draws (a valid, slightly conservative, lower bound)"
        )
    return finish(
        definition,
        best,
        best_w,
        "monte-carlo",
        confidence=confidence,
        evaluations=evals,
        notes=tuple(notes),
    )


def _risk_lower(
    risk: Any,
    draw: LossDraw,
    q_grid: NDArray[np.float64],
    n: int,
    seed: int,
    z: float,
) -> NDArray[np.float64]:
    """CLT lower confidence bound of the risk of each (q, neighbour): shape (G, S)."""
    chunk = draw.chunk(extra=q_grid.size + 1)
    q = q_grid[:, None, None]
    if isinstance(risk, Renyi):
        a1 = risk.alpha - 1.0
        shift, mean, sd = stream_moments(
            lambda ell: a1 * two_point_delta(q, ell[None]), draw, n, seed, chunk
        )
        low = mean - z * sd / math.sqrt(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(
                np.where(low > 0, (shift + np.log(np.maximum(low, 1e-300))) / a1, -np.inf)
            )

    def transform(ell: NDArray[np.float64]) -> NDArray[np.float64]:
        d = two_point_delta(q, ell[None])
        return g_f(risk.name, d) if isinstance(risk, FDivergence) else d

    mean, sd = stream_plain_moments(transform, draw, n, seed, chunk)
    return np.asarray(mean - z * sd / math.sqrt(n))
