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

from fractions import Fraction
from typing import Any

import numpy as np

from persuasive._rounding import above, div_up, up
from persuasive.certify.registry import Bound, Theorem, all_of, score_names
from persuasive.classes import NeighbourPriors
from persuasive.closed.divergences import (
    _laplace_magnitude,
    discrete_risk,
    gaussian_risk,
    geometric_risk,
    laplace_risk,
)
from persuasive.closed.pdp import finite_matrix, finite_pairs, loss_table_up
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
        # persuasive._rounding), so that holds never follows from rounding
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
