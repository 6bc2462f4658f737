r"""Closed forms of probabilistic DP (Prop 6, Bon et al. 2026) for the noise mechanisms and
finite kernels, shared by the Prop 6 certificate (:mod:`persuasive.certify.prop6`) and the
privacy-loss distributions (:mod:`persuasive.pld`).

At sensitivity 1 the exact PDP tail :math:`\delta(\varepsilon) = \sup_{x\sim x'}
\mathbb P_x[\ell_{x,x'}(T) > \varepsilon]` and its inverse :math:`\kappa(\delta)` have closed
forms (``docs/math.md`` §6); every value is rounded up past its floating-point error
(:mod:`persuasive._rounding`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from persuasive import _tolerances as tol
from persuasive._rounding import EPS, above, div_up, loss_up, up
from persuasive.classes import NeighbourPriors
from persuasive.mechanisms import (
    CellSuppression,
    Chain,
    ExactMean,
    FiniteKernel,
    GaussianMechanism,
    GeometricMechanism,
    Joint,
    LaplaceMechanism,
    LinearStatistic,
    Mechanism,
)

_NOISE = (LaplaceMechanism, GaussianMechanism, GeometricMechanism)
_DETERMINISTIC = (ExactMean, LinearStatistic, CellSuppression)


def finite_matrix(mechanism: Mechanism) -> NDArray[np.float64] | None:
    """The row-stochastic matrix of a finite kernel, or of a Joint/Chain of finite kernels
    (nested allowed); ``None`` for anything else."""
    if isinstance(mechanism, FiniteKernel):
        return np.asarray(mechanism.matrix)
    if isinstance(mechanism, (Joint, Chain)):
        m, k = finite_matrix(mechanism.first), finite_matrix(mechanism.post)
        if m is None or k is None or k.shape[0] != m.shape[1]:
            return None
        if isinstance(mechanism, Chain):
            return m @ k
        return (m[:, :, None] * k[None, :, :]).reshape(m.shape[0], -1)
    return None


def finite_pairs(priors: NeighbourPriors, n_inputs: int) -> NDArray[np.intp] | str:
    """Ordered neighbouring pairs among rows ``0..K-1`` as a (P, 2) array, or a reason."""
    if priors.pairs is not None:
        bad = [p for p in priors.pairs if max(p) >= n_inputs]
        if bad:
            return (
                f"NeighbourPriors pairs mention dataset {max(bad[0])} but the kernel has "
                f"only {n_inputs} inputs (rows 0..{n_inputs - 1})"
            )
    pairs = priors.neighbour_pairs(range(n_inputs))
    return np.asarray(pairs, dtype=np.intp).reshape(-1, 2)


def loss_table(
    matrix: NDArray[np.float64], pairs: NDArray[np.intp]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Privacy losses :math:`\ell_{x,x'}(t)` and their probabilities under :math:`M(x,\cdot)`,
    both of shape (P, J); outputs impossible under x get probability 0 and loss :math:`-\infty`."""
    p = matrix[pairs[:, 0]]
    p_prime = matrix[pairs[:, 1]]
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(p) - np.log(p_prime)
    loss = np.where(p > 0, loss, -np.inf)
    return loss, p


def loss_table_up(
    matrix: NDArray[np.float64], pairs: NDArray[np.intp]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r""":func:`loss_table` with every finite loss rounded *up* past its floating-point error
    (:func:`persuasive._rounding.loss_up`): each entry is at least the exact
    :math:`\log m(x,t) - \log m(x',t)` of the matrix entries, so κ and δ computed from it
    never fall below the exact values (a loss of exactly 0, equal entries, stays 0)."""
    loss, p = loss_table(matrix, pairs)
    with np.errstate(divide="ignore"):
        lp, lq = np.log(matrix[pairs[:, 0]]), np.log(matrix[pairs[:, 1]])
    return loss_up(lp, lq, loss), p


def finite_delta(matrix: NDArray[np.float64], pairs: NDArray[np.intp], eps: float) -> float:
    """δ(ε) of a finite kernel by enumeration (ties ℓ = ε are not failures); exact up to the
    losses' floating-point error, which is rounded towards a larger δ."""
    if pairs.shape[0] == 0:
        return 0.0
    loss, p = loss_table_up(matrix, pairs)
    total = float(np.max(np.sum(np.where(loss > eps, p, 0.0), axis=1)))
    if total == 0.0:
        return 0.0
    if p.size <= _EXACT_SUMS:  # the smallest float >= the exact sum
        exact = _exact_tail(loss, p, eps)
        f = float(exact)
        return f if Fraction(f) >= exact else math.nextafter(f, math.inf)
    return min(1.0, up(total * (1.0 + p.shape[1] * EPS)))


#: Tables with at most this many entries have their δ summed exactly (rational arithmetic).
_EXACT_SUMS = 4096


def finite_kappa(matrix: NDArray[np.float64], pairs: NDArray[np.intp], delta: float) -> float:
    """Exact κ(δ) of a finite kernel: the least of 0 and the finite positive loss values c with
    δ(c) ≤ δ (δ(·) is a right-continuous step function), ``inf`` if there is none. The losses
    are rounded up past their floating-point error (:func:`loss_table_up`)."""
    if pairs.shape[0] == 0:
        return 0.0
    loss, p = loss_table_up(matrix, pairs)
    finite_pos = loss[np.isfinite(loss) & (loss > 0) & (p > 0)]
    cands = np.unique(np.concatenate([[0.0], finite_pos]))
    order = np.argsort(loss, axis=1)
    sorted_loss = np.take_along_axis(loss, order, axis=1)
    sorted_p = np.take_along_axis(p, order, axis=1)
    tails = np.concatenate(
        [np.cumsum(sorted_p[:, ::-1], axis=1)[:, ::-1], np.zeros((loss.shape[0], 1))], axis=1
    )
    worst = np.zeros(cands.shape[0])
    for row in range(loss.shape[0]):  # one vectorised search per pair, not per output
        idx = np.searchsorted(sorted_loss[row], cands, side="right")
        worst = np.maximum(worst, tails[row, idx])
    # the cumulative sums err by at most J ulps: decide clear cases by the bounds and the
    # (rare) near-ties exactly, in rational arithmetic (an exact tie tail = δ is not a failure)
    slack = p.shape[1] * EPS
    ok = worst * (1.0 + slack) <= delta
    for c in np.flatnonzero(~ok & (worst * (1.0 - slack) <= delta)):
        ok[c] = _exact_tail(loss, p, float(cands[c])) <= Fraction(delta)
    hit = np.flatnonzero(ok)
    return float(cands[hit[0]]) if hit.size else math.inf


def _exact_tail(loss: NDArray[np.float64], p: NDArray[np.float64], eps: float) -> Fraction:
    """max over rows of the exact (rational) sum of the probabilities with loss > ε."""
    return max(
        (
            sum((Fraction(float(q)) for q in p[r][loss[r] > eps]), Fraction(0))
            for r in range(p.shape[0])
        ),
        default=Fraction(0),
    )


# --- closed forms (sensitivity 1, docs/math.md §6) ------------------------------------------------


# Every closed form is rounded *up* (κ and δ alike) past its floating-point error, so that a
# certificate never holds because of rounding (persuasive._rounding). A comparison of δ
# with a computed probability uses that probability's upper bound, so that rounding can only
# pick the larger κ.


#: Relative size (times eps) of the error bound of a closed form below which a non-positive
#: value is certainly non-positive (so κ = 0 is exact).
CLOSED_FORM_SLACK: float = tol.CLOSED_FORM_C * EPS


def gaussian_delta(sigma: float, eps: float) -> float:
    r""":math:`\delta(\varepsilon) = \Phi(1/(2\sigma) - \varepsilon\sigma)` (rounded up).

    The argument u errs by at most :math:`\epsilon(1/(2\sigma) + |\varepsilon\sigma|)` and
    :math:`d\log\Phi(u)/du \le 1 + |u|`, so the relative error of the value is bounded by
    that times :math:`1 + |u|` (plus the cdf's own ulps, 16 allowed); tiny tails keep their
    relative precision.
    """
    arg = 0.5 / sigma - eps * sigma
    value = float(stats.norm.cdf(arg))
    # the argument's three roundings, amplified by (1 + |u|), and 16 ulps for the cdf itself
    rel = EPS * (16.0 + 4.0 * (1.0 + abs(arg)) * (0.5 / sigma + abs(eps * sigma)))
    return min(1.0, up(value * (1.0 + rel)))


def gaussian_kappa(sigma: float, delta: float) -> float:
    r""":math:`\kappa(\delta) = \max\{0, (1/(2\sigma) - \Phi^{-1}(\delta))/\sigma\}`; ∞ at δ = 0
    (rounded up)."""
    if delta <= 0.0:
        return math.inf
    z = float(stats.norm.ppf(delta))
    value = float((0.5 / sigma - z) / sigma)
    if value <= 0.0 and value + CLOSED_FORM_SLACK * (0.5 / sigma + abs(z)) / sigma <= 0.0:
        return 0.0
    return max(0.0, above(value, (0.5 / sigma + abs(z)) / sigma))


def laplace_delta(b: float, eps: float) -> float:
    r""":math:`1 - \tfrac12 e^{-(1-\varepsilon b)/(2b)}` for :math:`\varepsilon < 1/b`, else 0
    (rounded up)."""
    if eps >= div_up(1.0, b):
        return 0.0
    value = float(-0.5 * math.expm1(-(1.0 - eps * b) / (2.0 * b)) + 0.5)
    return min(1.0, above(value, 1.0 + abs(eps) + 1.0 / b))


def laplace_kappa(b: float, delta: float) -> float:
    r"""Inverse of :func:`laplace_delta`: :math:`1/b + 2\log(2(1-\delta))` on
    :math:`[\tfrac12, 1 - \tfrac12 e^{-1/(2b)}]`, :math:`1/b` below, 0 above (rounded up)."""
    c = div_up(1.0, b)
    if delta < 0.5:
        return c
    value = 1.0 / b + 2.0 * math.log(2.0 * (1.0 - delta))
    # κ(δ) <= κ(0) = 1/b exactly, so the rounded-up value never exceeds c (monotone in δ)
    return min(c, max(0.0, above(value, c + abs(2.0 * math.log(2.0 * (1.0 - delta))))))


def geometric_keep(b: float) -> float:
    r"""Upper bound on :math:`P[\ell = 1/b] = 1/(1 + e^{-1/b})`."""
    return min(1.0, above(1.0 / (1.0 + math.exp(-1.0 / b)), 1.0))


def geometric_delta(b: float, eps: float) -> float:
    r"""Two-sided geometric: the loss is :math:`\pm 1/b`, so
    :math:`\delta(\varepsilon) = 1/(1 + e^{-1/b})` for :math:`\varepsilon < 1/b`, else 0."""
    return 0.0 if eps >= div_up(1.0, b) else geometric_keep(b)


def geometric_kappa(b: float, delta: float) -> float:
    return div_up(1.0, b) if delta < geometric_keep(b) else 0.0


def rr_keep(epsilon0: float, k: int) -> float:
    """Upper bound on the keep probability :math:`e^{\varepsilon_0}/(e^{\varepsilon_0}+k-1)`."""
    value = float(1.0 / (1.0 + (k - 1) * math.exp(-epsilon0)))
    return min(1.0, above(value, 1.0))


def rr_delta(epsilon0: float, k: int, eps: float) -> float:
    r"""k-RR: the loss is :math:`\varepsilon_0, 0, -\varepsilon_0`, so
    :math:`\delta(\varepsilon) = e^{\varepsilon_0}/(e^{\varepsilon_0}+k-1)` for
    :math:`\varepsilon < \varepsilon_0`, else 0."""
    return rr_keep(epsilon0, k) if eps < epsilon0 else 0.0


def rr_kappa(epsilon0: float, k: int, delta: float) -> float:
    return epsilon0 if (epsilon0 > 0 and delta < rr_keep(epsilon0, k)) else 0.0
