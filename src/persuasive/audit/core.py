r"""Shared pieces of the search-based audits: tail quantiles, two-point losses, results.

An audit exhibits a *lower* bound on κ. For a witness (S, x, Q) the exhibited value at δ is the
upper (1 − δ)-quantile of the relative loss under :math:`T \sim M(x, \cdot)`,

.. math::

    k^\ast = \max\{k : \mathbb P_x[\Delta_S(Q, T, x) \ge k] > \delta\},

so that :math:`\mathbb P_x[\Delta_S > \kappa'] \ge \mathbb P_x[\Delta_S \ge k^\ast] > \delta` and
(𝒮, 𝒬_x, κ', δ)-PP fails for every κ' < k* (Definition 3, Bon et al. 2026).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from persuasive import _tolerances as tol
from persuasive.errors import ValidationError
from persuasive.results import Audit, Witness

#: An exact tail mass counts as exceeding δ only if it does so by more than this amount, so
#: that rounding in a cumulative sum (e.g. a mass of exactly δ = 0.05 summed as 0.0500000001)
#: never manufactures a violation. Errs towards a smaller (more conservative) audit κ.
MASS_ATOL: float = 1e-12

#: Default grid of two-point prior weights q = Q({x}) used by neighbour audits (Prop 6): the
#: supremum is the limit q -> 0, so the grid reaches down to ``TWO_POINT_Q_MIN``; q = 1 (the
#: point mass, Δ = 0) is included so that an audit never reports less than 0.
DEFAULT_Q_GRID: NDArray[np.float64] = np.concatenate(
    [np.logspace(math.log10(tol.TWO_POINT_Q_MIN), math.log10(0.5), 24), [1.0]]
)


def two_point_delta(q: ArrayLike, ell: ArrayLike) -> NDArray[np.float64]:
    r"""The log-score loss of the two-point prior :math:`Q_q` (Prop 6; docs/math.md §6).

    .. math:: \Delta_q = -\log\big(q + (1 - q)e^{-\ell}\big), \qquad
              \ell = \log\frac{m(x, T)}{m(x', T)} \in (-\infty, +\infty],

    computed stably as :math:`-\mathrm{logaddexp}(\log q, \log(1 - q) - \ell)`, and for
    :math:`|\ell| \le 1` as :math:`-\mathrm{log1p}((1-q)\,\mathrm{expm1}(-\ell))` (exact 0 at
    :math:`\ell = 0`);
    :math:`\ell = +\infty` gives :math:`-\log q` and q = 1 gives 0.

    Examples
    --------
    >>> from persuasive.audit.core import two_point_delta
    >>> round(float(two_point_delta(1e-9, 1.0)), 6), float(two_point_delta(1.0, 3.0))
    (1.0, 0.0)
    """
    qq = np.asarray(q, dtype=np.float64)
    ll = np.asarray(ell, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = -np.logaddexp(np.log(qq), np.log1p(-qq) - ll)
        # Near ℓ = 0 use -log1p(-(1 - q)(1 - e^{-ℓ})), exact at ℓ = 0 (no 1e-16 residue).
        near = -np.log1p((1.0 - qq) * np.expm1(-ll))
    out = np.where(np.abs(ll) <= 1.0, near, out)
    return np.asarray(out, dtype=np.float64)


def tail_quantile(values: ArrayLike, probs: ArrayLike, delta: float) -> tuple[float, int]:
    r"""Exact upper quantile :math:`\max\{k : P[V \ge k] > \delta\}` of a finite distribution.

    Returns the value and the index of the output attaining it (``-inf, -1`` when no value has
    tail mass above δ, e.g. an empty support).

    Examples
    --------
    >>> from persuasive.audit.core import tail_quantile
    >>> tail_quantile([3.0, 1.0, 2.0], [0.1, 0.6, 0.3], 0.2)
    (2.0, 2)
    >>> tail_quantile([3.0, 1.0, 2.0], [0.1, 0.6, 0.3], 0.0)
    (3.0, 0)
    """
    v = np.asarray(values, dtype=np.float64)
    p = np.asarray(probs, dtype=np.float64)
    keep = np.flatnonzero(p > 0)
    if keep.size == 0:
        return -np.inf, -1
    order = keep[np.argsort(-v[keep], kind="stable")]
    cum = np.cumsum(p[order])
    hit = np.flatnonzero(cum > delta + MASS_ATOL)
    if hit.size == 0:
        return -np.inf, -1
    idx = int(order[hit[0]])
    return float(v[idx]), idx


@functools.lru_cache(maxsize=256)
def clopper_pearson_rank(n: int, delta: float, confidence: float) -> int:
    r"""Smallest count k whose one-sided Clopper–Pearson lower bound exceeds δ.

    With N samples and the k-th largest sample :math:`v_{(k)}`, the event
    :math:`\{P[V \ge v_{(k)}] > \delta\}` holds with probability at least ``confidence`` when
    :math:`\mathrm{Beta}^{-1}(1 - \text{confidence};\ k,\ N - k + 1) > \delta`. δ = 0 gives
    k = 1 (the maximum, observed with positive probability). Returns 0 when no k ≤ N works.

    Examples
    --------
    >>> from persuasive.audit.core import clopper_pearson_rank
    >>> clopper_pearson_rank(1000, 0.0, 0.99), clopper_pearson_rank(1000, 0.1, 0.99)
    (1, 124)
    """
    if delta <= 0.0:
        return 1

    def lower(k: int) -> float:
        return float(stats.beta.ppf(1.0 - confidence, k, n - k + 1))

    if lower(n) <= delta:
        return 0
    lo, hi = 1, n  # lower(hi) > delta; find the smallest such k
    while lo < hi:
        mid = (lo + hi) // 2
        if lower(mid) > delta:
            hi = mid
        else:
            lo = mid + 1
    return lo


def required_rank(n: int, delta: float, confidence: float) -> int:
    """:func:`clopper_pearson_rank`, or a ValidationError when ``n`` samples are too few to
    exhibit a tail of mass above δ at that confidence."""
    k = clopper_pearson_rank(n, delta, confidence)
    if k == 0:
        raise ValidationError(
            f"n_samples = {n} is too small to exhibit a tail of mass above delta = {delta:g} "
            f"at confidence {confidence:g}; increase n_samples"
        )
    return k


def q_grid_or_default(q_grid: ArrayLike | None) -> NDArray[np.float64]:
    """Validate a grid of two-point weights q in (0, 1] (default :data:`DEFAULT_Q_GRID`)."""
    if q_grid is None:
        return DEFAULT_Q_GRID
    g = np.atleast_1d(np.asarray(q_grid, dtype=np.float64))
    if g.ndim != 1 or g.size == 0 or not np.all((g > 0) & (g <= 1)):
        raise ValidationError(
            f"q_grid must be a non-empty 1-d array of weights in (0, 1]; got {q_grid!r}"
        )
    return g


def finish(
    definition: Any,
    kappa: float,
    witness: Witness | None,
    method: str,
    *,
    confidence: float = 1.0,
    evaluations: int = 0,
    notes: tuple[str, ...] = (),
) -> Audit:
    """Build the :class:`~persuasive.results.Audit` (holds = κ <= definition κ + LOSS_ATOL)."""
    delta = float(getattr(definition, "delta", 0.0))
    holds = bool(kappa <= definition.kappa + tol.LOSS_ATOL)
    return Audit(
        kappa=float(kappa),
        delta=delta,
        witness=witness,
        method=method,
        holds=holds,
        confidence=float(confidence),
        evaluations=int(evaluations),
        notes=notes,
    )
