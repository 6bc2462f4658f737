r"""App. C, Props 11–13 (Bon et al. 2026): persuasive privacy in expectation with the log score.

**[RECON, docs/math.md §7]** — the appendix is missing from every available source; this is our
reconstruction, checked numerically. For the log score and a two-point prior
:math:`Q_q \in \mathcal H` the prior predictive is :math:`qM(x) + (1-q)M(x')` and, by convexity
of the divergence in its second argument, the worst prior is the limit :math:`q \to 0`:

.. math::

    \sup_{Q \in \mathcal H}\ \varphi^{-1}\big(\mathbb E_x[\varphi(\Delta_L(Q,T,x))]\big)
    = \sup_{x \sim x'} D\big(M(x) \,\|\, M(x')\big),

with :math:`D = \mathrm{KL}` for the plain mean (Prop 11, (1, ε)-RDP), the Rényi divergence
:math:`D_\alpha` for :math:`\varphi_\alpha(t) = e^{(\alpha-1)t}` (Prop 12, Mironov 2017) and
:math:`\mathbb E_x[g_f(\ell_{x,x'})]`, :math:`g_f(t) = f(e^t)e^{-t}`, for an f-divergence
(Prop 13). The last equals :math:`D_f(M(x)\|M(x'))` whenever :math:`M(x') \ll M(x)` (every noise
mechanism and RR); for finite kernels whose supports differ it omits the term
:math:`f(0)\,M(x')(\{m(x,\cdot) = 0\})`, because the Receiver's loss is only evaluated at outputs
that x can produce. A loss :math:`+\infty` contributes :math:`f'(\infty)` (1/2 for TV, ∞ else).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats
from scipy.special import logsumexp

from persuasive.certify._rounding import above, div_up, up
from persuasive.certify.prop6 import finite_matrix, finite_pairs, loss_table_up
from persuasive.certify.registry import Bound, Theorem, all_of, score_names
from persuasive.classes import NeighbourPriors
from persuasive.definitions import FDivergence, Mean, PersuasivePrivacyExpectation, Renyi
from persuasive.mechanisms import (
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    Mechanism,
)
from persuasive.scores import LogScore

_NOISE = (LaplaceMechanism, GaussianMechanism, GeometricMechanism)


def _kind(risk: Any) -> tuple[str, float]:
    if isinstance(risk, Mean):
        return "kl", 1.0
    if isinstance(risk, Renyi):
        return "renyi", float(risk.alpha)
    assert isinstance(risk, FDivergence)
    return risk.name, 1.0


def gaussian_risk(sigma: float, kind: str, alpha: float = 1.0) -> float:
    r"""Closed forms at sensitivity 1: KL :math:`1/(2\sigma^2)`, Rényi :math:`\alpha/(2\sigma^2)`,
    χ² :math:`e^{1/\sigma^2}-1`, TV :math:`2\Phi(1/(2\sigma))-1`."""
    s2 = sigma * sigma
    if kind == "kl":
        return 0.5 / s2
    if kind == "renyi":
        return alpha / (2.0 * s2)
    if kind == "chi2":
        return math.expm1(1.0 / s2)
    return float(1.0 - 2.0 * stats.norm.sf(0.5 / sigma))


def laplace_risk(b: float, kind: str, alpha: float = 1.0) -> float:
    r"""Closed forms at sensitivity 1: KL :math:`1/b + e^{-1/b} - 1`; Rényi (Mironov 2017)
    :math:`\frac{1}{\alpha-1}\log\big(\frac{\alpha}{2\alpha-1}e^{(\alpha-1)/b}
    + \frac{\alpha-1}{2\alpha-1}e^{-\alpha/b}\big)`; χ² :math:`e^{D_2}-1`;
    TV :math:`1 - e^{-1/(2b)}`."""
    if kind == "kl":
        return 1.0 / b + math.expm1(-1.0 / b)
    if kind in ("renyi", "chi2"):
        a = alpha if kind == "renyi" else 2.0
        log_e = np.logaddexp(
            math.log(a / (2 * a - 1)) + (a - 1) / b, math.log((a - 1) / (2 * a - 1)) - a / b
        )
        d = float(log_e / (a - 1))
        return d if kind == "renyi" else math.expm1(d)
    return -math.expm1(-0.5 / b)


def discrete_risk(
    loss: NDArray[np.float64], p: NDArray[np.float64], kind: str, alpha: float = 1.0
) -> float:
    r"""The worst row of :math:`\mathbb E_x[\cdot]` for losses ``loss`` with probabilities ``p``
    (shape (P, J); entries with p = 0 are ignored): KL :math:`\mathbb E\ell`, Rényi
    :math:`\frac1{\alpha-1}\log\mathbb E e^{(\alpha-1)\ell}`, TV
    :math:`\mathbb E|1-e^{-\ell}|/2`, χ² :math:`\mathbb E(e^{\ell}-2+e^{-\ell})`."""
    if loss.shape[0] == 0:
        return 0.0
    pos = p > 0
    ell = np.where(pos, loss, 0.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if kind == "renyi":
            vals = logsumexp(
                np.where(pos, np.log(np.where(pos, p, 1.0)) + (alpha - 1) * ell, -np.inf), axis=1
            ) / (alpha - 1)
        else:
            if kind == "kl":
                g = ell
            elif kind == "tv":
                g = np.abs(np.expm1(-ell)) / 2.0
            else:
                g = np.expm1(ell) + np.expm1(-ell)
            vals = np.sum(np.where(pos, p * g, 0.0), axis=1)
    return float(np.max(vals))


def geometric_risk(b: float, kind: str, alpha: float = 1.0) -> float:
    """Two-sided geometric: the loss is +1/b w.p. 1/(1 + e^{-1/b}) and -1/b otherwise."""
    p = 1.0 / (1.0 + math.exp(-1.0 / b))
    return discrete_risk(np.array([[1.0 / b, -1.0 / b]]), np.array([[p, 1.0 - p]]), kind, alpha)


def _laplace_magnitude(b: float, kind: str, alpha: float, value: float) -> float:
    """Size of the terms of :func:`laplace_risk` (its rounding error is a few ulps of it)."""
    if kind in ("renyi", "chi2"):
        a = alpha if kind == "renyi" else 2.0
        terms = abs(math.log(a / (2 * a - 1))) + abs(math.log((a - 1) / (2 * a - 1))) + a / b
        mag = (terms + (a - 1) / b) / (a - 1)
        return mag * (1.0 + abs(value)) if kind == "chi2" else mag
    return abs(value) + 1.0 / b + 1.0


class AppC(Theorem):
    """Worst expected risk of (L, 𝓗, κ; φ)-PPE: the worst neighbour divergence (App. C).

    [RECON, docs/math.md §7]

    Examples
    --------
    >>> import persuasive as pp
    >>> d = pp.renyi_dp(5.0, 1.0)
    >>> AppC().kappa_at(pp.GaussianMechanism(2.0), d, 0.0)[0]
    0.625
    """

    name = "appc"
    basis = "App. C, Props 11-13 (Bon et al. 2026) [RECON]"

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        if not isinstance(definition, PersuasivePrivacyExpectation):
            return "needs a PersuasivePrivacyExpectation definition"
        if not all_of(definition.scores, LogScore):
            return f"needs scores = LogScore only; got {score_names(definition.scores)}"
        if not isinstance(definition.priors, NeighbourPriors):
            return f"needs priors = NeighbourPriors; got {type(definition.priors).__name__}"
        if isinstance(mechanism, _NOISE):
            if definition.priors.pairs is not None:
                return (
                    "noise mechanisms use the default integer relation |x - x'| <= 1; "
                    "explicit pairs are for finite kernels"
                )
            return None
        matrix = finite_matrix(mechanism)
        if matrix is None:
            return (
                f"{type(mechanism).__name__} is not a Laplace/Gaussian/geometric mechanism "
                "or a finite kernel (or Joint/Chain of finite kernels)"
            )
        found = finite_pairs(definition.priors, matrix.shape[0])
        return found if isinstance(found, str) else None

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        kind, alpha = _kind(definition.risk)
        notes = [
            "[RECON, docs/math.md §7] reconstructed App. C: the worst two-point prior is the "
            "limit q -> 0, giving the worst neighbour divergence (supremum, not attained)"
        ]
        # every value is rounded up past its floating-point error (the magnitude of its terms;
        # persuasive.certify._rounding), so that holds never follows from rounding
        if isinstance(mechanism, GaussianMechanism):
            k = gaussian_risk(mechanism.sigma, kind, alpha)
            if kind in ("kl", "renyi"):  # alpha / (2 sigma^2): rational, rounded up exactly
                k = div_up(alpha if kind == "renyi" else 1.0, 2.0 * mechanism.sigma**2)
                if Fraction(2.0 * mechanism.sigma**2) != 2 * Fraction(mechanism.sigma) ** 2:
                    k = up(k, 2)  # sigma^2 itself was rounded
            else:
                k = above(k, abs(k) * (1.0 + alpha) + 1.0)
        elif isinstance(mechanism, LaplaceMechanism):
            k = laplace_risk(mechanism.scale, kind, alpha)
            k = above(k, _laplace_magnitude(mechanism.scale, kind, alpha, k))
        elif isinstance(mechanism, GeometricMechanism):
            k = geometric_risk(mechanism.scale, kind, alpha)
            k = above(k, (abs(k) + 1.0 / mechanism.scale + 1.0) * (1.0 + alpha))
        else:
            matrix = finite_matrix(mechanism)
            assert matrix is not None
            pairs = finite_pairs(definition.priors, matrix.shape[0])
            assert not isinstance(pairs, str)
            loss, p = loss_table_up(matrix, pairs)
            k = discrete_risk(loss, p, kind, alpha)
            finite = np.isfinite(loss) & (p > 0)
            scale = float(np.max(np.abs(np.where(finite, loss, 0.0)), initial=0.0))
            k = above(k, (abs(k) + scale + 1.0) * (1.0 + alpha) * max(1.0, p.shape[1] / 8.0))
            notes.append("finite kernel: exact sums over neighbouring rows and outputs")
            if kind in ("tv", "chi2") and np.any(
                (matrix[pairs[:, 0]] == 0) & (matrix[pairs[:, 1]] > 0)
            ):
                notes.append(
                    "supports differ: the value is E_x[g_f(loss)], which omits "
                    "f(0) M(x')(m(x, .) = 0) from D_f(M(x) || M(x'))"
                )
        return float(k), True, tuple(notes)
