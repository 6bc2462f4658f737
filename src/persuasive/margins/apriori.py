r"""A-priori bounds: cells the Receiver knows to lie in a box before the release (issue 12).

The a-priori file of τ-Argus states, for some cells, bounds :math:`a_j \le x_j \le \bar a_j` that
are public already. A Receiver who knows them holds a prior of the class *conditioned on the
box* :math:`R = \prod_j [a_j, \bar a_j]`,

.. math:: Q^R(y) = Q(y \mid y \in R) = \prod_j q_j(y_j \mid a_j \le y_j \le \bar a_j),

still independent across cells. Its posterior given the publication is the class's posterior
with every suppressed cell's support intersected with its box (:mod:`persuasive.margins
.constraints`): still the same for every member (the tilt is constant on the fibre), so the
exact DP, the Markov chain, the attacker and the switching bound all run on the intersected
supports. The score changes through the prior marginal only: for a suppressed cell below r,

.. math:: \sup_{Q} \Delta_i^r = \log \Pi^R_i(x_i) + B_i(x_i), \qquad
          B_i(v) = \max_{\mu \in \{\mu_-, \mu_+\}} \big[-\log F_\mu(v)
          + \log F_\mu([a_i, \bar a_i])\big],

exact: in the natural parameter :math:`\theta` the truncated law is again an exponential
family, :math:`\log F_\theta(v \mid [a, \bar a]) = \theta v + \log g(v) - A_{[a,\bar a]}(\theta)`
with :math:`A_{[a,\bar a]}` convex, so :math:`-\log F_\theta(v \mid [a,\bar a])` is convex in
:math:`\theta` and its supremum over the mean range (θ increasing in μ) is at an end, attained by a
common-mean member. The proof is in ``docs/margins_apriori.md`` (Bon et al. 2026, Prop 8's
class with margins). A box :math:`a_j = \bar a_j` pins the cell: it is a *known* cell
(:class:`~persuasive.margins.table.MarginTable`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    Receiver,
    SmallCellReceiver,
)
from persuasive.margins.known import NO_UPPER

#: Boxes at most this wide get their mass by summing the pmf in the log domain.
MAX_DIRECT: int = 4096

__all__ = ["box_surprise", "log_box_mass", "prior_box_mass", "surprise"]


def _family(receiver: Receiver, means: Any) -> Any:
    if isinstance(receiver, PoissonReceiver):
        return stats.poisson(means)
    assert isinstance(receiver, NegativeBinomialReceiver)
    return stats.nbinom(receiver.size, receiver.size / (receiver.size + np.asarray(means)))


def surprise(receiver: Receiver, values: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r""":math:`B(v) = \sup_\mu -\log F_\mu(v)` over the mean range, and the mean attaining it.

    Exact: :math:`\mu \mapsto \log F_\mu(v)` is unimodal with its maximum at :math:`\mu = v`
    (Poisson: derivative :math:`v/\mu - 1`; negative binomial of size n:
    :math:`v/\mu - (v+n)/(n+\mu)`), so the supremum of its negative is at an end of the range.
    ∞ for :class:`SmallCellReceiver` (its class holds priors with :math:`q(v) \to 0`).

    Examples
    --------
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> b, mu = surprise(PoissonReceiver(1.0, 4.0), [0, 2])
    >>> [round(float(z), 6) for z in b], mu.tolist()       # -log Poi(0; 4), -log Poi(2; 4)
    ([4.0, 1.920558], [4.0, 4.0])
    """
    vals = np.asarray(values, dtype=np.float64)
    if isinstance(receiver, SmallCellReceiver):
        return np.full(vals.shape, math.inf), np.full(vals.shape, math.nan)
    ends = np.array([receiver.mean_min, receiver.mean_max])  # type: ignore[attr-defined]
    with np.errstate(divide="ignore"):
        lp = _family(receiver, ends.reshape((2,) + (1,) * vals.ndim)).logpmf(vals[None])
    worst = np.argmin(lp, axis=0)
    return -np.min(lp, axis=0), ends[worst]


def _lse_rows(x: NDArray[np.float64]) -> NDArray[np.float64]:
    m = np.max(x, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(np.exp(x - m).sum(axis=1)) + m[:, 0])


def log_box_mass(
    logpmf: Any, logcdf: Any, logsf: Any, lower: NDArray[np.int64], upper: NDArray[np.int64]
) -> NDArray[np.float64]:
    r"""The log mass of a box per entry,

    .. math:: \log F([a, \bar a]) = \log \sum_{y=a}^{\bar a} F(y),

    for a law given by vectorised ``logpmf``, ``logcdf``, ``logsf`` (each ``f(values, rows)``:
    ``rows`` indexes the entries; ``upper`` :data:`NO_UPPER` is :math:`\bar a = \infty`).

    A box at most :data:`MAX_DIRECT` wide sums the pmf (logsumexp); an open box
    :math:`[a, \infty)` is :math:`\log P(X \ge a)`; a wider finite box is the difference of the
    two tail forms, each where it is accurate (lower tail below the median, upper above). A
    result that is not finite is replaced by 0 (:math:`P \le 1`): that only *raises*
    :math:`B`, so κ errs upwards. Always :math:`\le 0`.
    """
    lower = np.asarray(lower, dtype=np.int64)
    upper = np.asarray(upper, dtype=np.int64)
    n = lower.size
    out = np.zeros(n)
    trivial = (lower <= 0) & (upper == NO_UPPER)
    width = np.where(upper == NO_UPPER, NO_UPPER, upper - lower)
    direct = np.flatnonzero(~trivial & (width < MAX_DIRECT))
    for chunk in np.array_split(direct, max(1, direct.size // 256)):
        if chunk.size == 0:
            continue
        w = int(width[chunk].max()) + 1
        vals = lower[chunk][:, None] + np.arange(w)[None, :]
        rows = np.broadcast_to(chunk[:, None], vals.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = np.asarray(logpmf(vals, rows), dtype=np.float64)
        lp = np.where(vals <= upper[chunk][:, None], lp, -np.inf)
        out[chunk] = _lse_rows(lp)
    open_ = np.flatnonzero(~trivial & (upper == NO_UPPER))
    if open_.size:
        with np.errstate(divide="ignore", invalid="ignore"):
            out[open_] = logsf(lower[open_] - 1.0, open_)
    wide = np.flatnonzero(~trivial & (upper != NO_UPPER) & (width >= MAX_DIRECT))
    if wide.size:
        a, b = lower[wide] - 1.0, upper[wide].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lca, lcb = logcdf(a, wide), logcdf(b, wide)
            lsa, lsb = logsf(a, wide), logsf(b, wide)
            low = lcb + np.log(-np.expm1(lca - lcb))
            high = lsa + np.log(-np.expm1(lsb - lsa))
        out[wide] = np.where(lca >= np.log(0.5), high, low)
    out = np.where(np.isfinite(out), out, 0.0)  # unknown: P <= 1 (a larger kappa)
    return np.minimum(out, 0.0)


def _family_mass(receiver: Any, lower: Any, upper: Any) -> NDArray[np.float64]:
    """``out[e, k]``: log mass of box k under the mean range's end e (mean_min, mean_max)."""
    lo = np.asarray(lower, dtype=np.int64).ravel()
    up = np.asarray(upper, dtype=np.int64).ravel()
    out = np.zeros((2, lo.size))
    for e, mu in enumerate((receiver.mean_min, receiver.mean_max)):
        law = _family(receiver, mu)
        out[e] = log_box_mass(
            lambda v, _r, f=law: f.logpmf(v),
            lambda v, _r, f=law: f.logcdf(v),
            lambda v, _r, f=law: f.logsf(v),
            lo,
            up,
        )
    return out


def _prop8_boxed(table: Any, receiver: Any, small: NDArray[np.bool_], out: tuple[Any, ...]) -> None:
    r"""Prop 8 with a-priori boxes (no margin): a primary cell's posterior is its prior on
    :math:`S_i = [a_i, \min(\bar a_i, h-1)]`, so its loss is :math:`-\log P_\mu(X \in S_i \mid X
    \in [a_i, \bar a_i])`, largest at :math:`\mu_+` (the truncated family keeps its monotone
    likelihood ratio, so :math:`P_\mu(X < h \mid \text{box})` decreases in μ): exact. Written
    into ``out = (lower, upper, est, pub)`` for the boxed cells (flat)."""
    lw, up = table.lower.ravel(), table.upper.ravel()
    cells = np.flatnonzero(small & ((lw > 0) | (up != NO_UPPER)))
    law = _family(receiver, receiver.mean_max)

    def mass(a: Any, b: Any) -> NDArray[np.float64]:
        return log_box_mass(
            lambda q, _r: law.logpmf(q),
            lambda q, _r: law.logcdf(q),
            lambda q, _r: law.logsf(q),
            a,
            b,
        )

    val = mass(lw[cells], up[cells]) - mass(lw[cells], np.minimum(up[cells], table.h - 1))
    for arr in out:
        arr[cells] = np.maximum(val, 0.0)


def box_surprise(
    receiver: Any, values: Any, lower: Any = None, upper: Any = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""The disclosure loss conditioned on an a-priori box, and the mean attaining it,

    .. math:: B(v) = \max_{\mu \in \{\mu_-, \mu_+\}} \big[-\log F_\mu(v)
              + \log F_\mu([a, \bar a])\big]
              = \sup_{\mu \in [\mu_-, \mu_+]} -\log F_\mu(v \mid a \le X \le \bar a),

    with ``lower`` (:math:`a`) and ``upper`` (:math:`\bar a`) broadcast against ``values``
    (None: no box, then exactly :func:`surprise`).

    Exact (module docstring: convex in the natural parameter, so the supremum over the mean
    range is at an end). A value outside its box has prior mass 0 (its B is never used).

    Examples
    --------
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> b, mu = box_surprise(PoissonReceiver(1.0, 4.0), [0, 2], [0, 0], [2, 2])
    >>> [round(float(z), 6) for z in b], mu.tolist()
    ([2.564949, 1.609438], [4.0, 1.0])
    """
    vals = np.asarray(values, dtype=np.float64)
    if lower is None and upper is None:
        return surprise(receiver, vals)
    shape = np.broadcast_shapes(
        vals.shape,
        np.shape(0 if lower is None else lower),
        np.shape(0 if upper is None else upper),
    )
    lo = np.broadcast_to(np.asarray(0 if lower is None else lower, dtype=np.int64), shape)
    up = np.broadcast_to(np.asarray(NO_UPPER if upper is None else upper, dtype=np.int64), shape)
    vals = np.broadcast_to(vals, shape)
    if not hasattr(receiver, "mean_min"):
        return surprise(receiver, vals)
    boxed = (lo > 0) | (up != NO_UPPER)
    if not boxed.any():
        return surprise(receiver, vals)
    ends = np.array([receiver.mean_min, receiver.mean_max])
    # unique boxes: the mass depends on the box only
    pairs = np.stack([lo[boxed], up[boxed]], axis=1)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    mass = _family_mass(receiver, uniq[:, 0], uniq[:, 1])  # (2, n_unique)
    logm = np.zeros((2, *shape))
    logm[:, boxed] = mass[:, np.asarray(inv).ravel()]
    with np.errstate(divide="ignore"):
        lp = _family(receiver, ends.reshape((2,) + (1,) * vals.ndim)).logpmf(vals[None])
    cond = lp - logm
    worst = np.argmin(cond, axis=0)
    return -np.min(cond, axis=0), ends[worst]


def prior_box_mass(prior: Any, lower: Any, upper: Any) -> NDArray[np.float64]:
    r""":math:`\log q_i([a_i, \bar a_i])` per cell of an
    :class:`~persuasive.priors.cells.IndependentCellsPrior` (``lower``, ``upper`` flat, one per
    cell; 0 where there is no box)."""
    lo = np.asarray(lower, dtype=np.int64).ravel()
    up = np.asarray(upper, dtype=np.int64).ravel()
    out = np.zeros(lo.size)
    for i in np.flatnonzero((lo > 0) | (up != NO_UPPER)):

        def pmf(v: Any, _r: Any, i: int = int(i)) -> Any:
            return prior.cell_logpmf(i, np.asarray(v, dtype=np.float64).ravel()).reshape(
                np.shape(v)
            )

        def tail(v: Any, _r: Any, i: int = int(i), upper_tail: bool = False) -> Any:
            c = np.array([prior.cell_cdf_below(i, float(t) + 1.0) for t in np.ravel(v)])
            with np.errstate(divide="ignore"):
                return np.log(1.0 - c if upper_tail else c).reshape(np.shape(v))

        out[i] = log_box_mass(
            pmf,
            tail,
            lambda v, r, i=int(i): tail(v, r, i, True),
            lo[i : i + 1],
            up[i : i + 1],
        )[0]
    return out
