r"""Prop 6 (Bon et al. 2026): probabilistic DP is persuasive privacy with the log score.

.. math::

    M \text{ is } (\varepsilon, \delta)\text{-PDP} \iff
    M \text{ is } (L, \mathcal H, \varepsilon, \delta)\text{-PP} \iff
    M \text{ is } (L, \mathcal H_x, \varepsilon, \delta)\text{-PP},

so the exact worst-case failure probability is the PDP tail

.. math::

    \delta(\varepsilon) = \sup_{x \sim x'} \mathbb P_x\big[\ell_{x,x'}(T) > \varepsilon\big],
    \qquad \ell_{x,x'}(t) = \log\frac{m(x,t)}{m(x',t)},

(a loss exactly equal to ε is not a failure) and
:math:`\kappa(\delta) = \inf\{\varepsilon \ge 0 : \delta(\varepsilon) \le \delta\}`.
The supremum over two-point priors is the limit :math:`Q(\{x\}) \to 0` (docs/math.md §6).

Neighbours: for the noise mechanisms (Laplace, Gaussian, geometric) and the deterministic
releases the data are integer vectors and :math:`x \sim x'` when they differ by one in one
coordinate (sensitivity 1; the scalar case n = 1 is the usual one). For finite kernels the
datasets are the rows ``0..K-1`` with ``|i - j| = 1`` or the explicit ``pairs`` of
:class:`~persuasive.NeighbourPriors`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from persuasive.certify.registry import Bound, Theorem, all_of, score_names
from persuasive.classes import NeighbourPriors
from persuasive.closed.pdp import (  # noqa: F401  (re-exported: the closed forms of Prop 6)
    _DETERMINISTIC,
    _NOISE,
    _exact_tail,
    finite_delta,
    finite_kappa,
    finite_matrix,
    finite_pairs,
    gaussian_delta,
    gaussian_kappa,
    geometric_delta,
    geometric_kappa,
    geometric_keep,
    laplace_delta,
    laplace_kappa,
    loss_table,
    loss_table_up,
    rr_delta,
    rr_kappa,
    rr_keep,
)
from persuasive.definitions import PersuasivePrivacy
from persuasive.mechanisms import (
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    LinearStatistic,
    Mechanism,
    RandomizedResponse,
)
from persuasive.scores import LogScore


def _deterministic_leaks(mechanism: Mechanism, priors: NeighbourPriors) -> bool:
    """Whether some neighbouring datasets give different outputs (then the loss is ∞)."""
    if priors.pairs is None:
        if isinstance(mechanism, LinearStatistic):
            return bool(np.any(mechanism.A != 0))
        return True  # ExactMean, and CellSuppression at cell values h - 1 vs h
    pts = np.asarray(priors.pairs, dtype=np.float64)
    f = mechanism._f  # type: ignore[attr-defined]
    return bool(np.any(f(pts[:, :1]) != f(pts[:, 1:])))


class Prop6(Theorem):
    """Exact δ(ε) and κ(δ) for (L, 𝓗 or 𝓗_x, κ, δ)-PP = PDP (Prop 6, Bon et al. 2026).

    Examples
    --------
    >>> import persuasive as pp
    >>> th = Prop6()
    >>> d = pp.probabilistic_dp(1.0, 0.05)
    >>> round(th.delta_at(pp.LaplaceMechanism(1.0), d, 0.5), 8)
    0.61059961
    >>> th.kappa_at(pp.RandomizedResponse(2.0, 4), d, 0.05)[0]
    2.0
    """

    name = "prop6"
    basis = "Prop 6 (Bon et al. 2026)"

    def supports(self, mechanism: Mechanism, definition: Any) -> str | None:
        if not isinstance(definition, PersuasivePrivacy):
            return "needs a PersuasivePrivacy (tail) definition"
        if not all_of(definition.scores, LogScore):
            return f"needs scores = LogScore only; got {score_names(definition.scores)}"
        if not isinstance(definition.priors, NeighbourPriors):
            return (
                f"needs priors = NeighbourPriors (𝓗 or 𝓗_x); got {type(definition.priors).__name__}"
            )
        pairs = definition.priors.pairs
        if isinstance(mechanism, _NOISE):
            if pairs is not None:
                return (
                    "noise mechanisms use the default integer relation |x - x'| <= 1; "
                    "explicit pairs are for finite kernels"
                )
            return None
        if isinstance(mechanism, _DETERMINISTIC):
            return None
        matrix = finite_matrix(mechanism)
        if matrix is None:
            return (
                f"{type(mechanism).__name__} is not a Laplace/Gaussian/geometric mechanism, "
                "a deterministic release or a finite kernel (or Joint/Chain of them)"
            )
        found = finite_pairs(definition.priors, matrix.shape[0])
        return found if isinstance(found, str) else None

    def delta_at(self, mechanism: Mechanism, definition: Any, kappa: float) -> float:
        eps = float(kappa)
        if math.isinf(eps):
            return 0.0
        if isinstance(mechanism, GaussianMechanism):
            return gaussian_delta(mechanism.sigma, eps)
        if isinstance(mechanism, LaplaceMechanism):
            return laplace_delta(mechanism.scale, eps)
        if isinstance(mechanism, GeometricMechanism):
            return geometric_delta(mechanism.scale, eps)
        if isinstance(mechanism, RandomizedResponse):
            return rr_delta(mechanism.epsilon, mechanism.k, eps)
        if isinstance(mechanism, _DETERMINISTIC):
            return 1.0 if _deterministic_leaks(mechanism, definition.priors) else 0.0
        matrix = finite_matrix(mechanism)
        assert matrix is not None
        pairs = finite_pairs(definition.priors, matrix.shape[0])
        assert not isinstance(pairs, str)
        return finite_delta(matrix, pairs, eps)

    def kappa_at(self, mechanism: Mechanism, definition: Any, delta: float) -> Bound:
        notes = [
            "exact: PP with the log score over two-point neighbour priors equals "
            "probabilistic DP (Prop 6); the worst prior is the limit Q({x}) -> 0"
        ]
        if isinstance(mechanism, GaussianMechanism):
            k = gaussian_kappa(mechanism.sigma, delta)
        elif isinstance(mechanism, LaplaceMechanism):
            k = laplace_kappa(mechanism.scale, delta)
        elif isinstance(mechanism, GeometricMechanism):
            k = geometric_kappa(mechanism.scale, delta)
        elif isinstance(mechanism, RandomizedResponse):
            k = rr_kappa(mechanism.epsilon, mechanism.k, delta)
        elif isinstance(mechanism, _DETERMINISTIC):
            leaks = _deterministic_leaks(mechanism, definition.priors)
            k = math.inf if leaks else 0.0
            if leaks:
                notes.append(
                    "a deterministic release separates some neighbours: the loss is "
                    "+inf with probability 1, so no finite kappa holds for delta < 1"
                )
        else:
            matrix = finite_matrix(mechanism)
            assert matrix is not None
            pairs = finite_pairs(definition.priors, matrix.shape[0])
            assert not isinstance(pairs, str)
            k = finite_kappa(matrix, pairs, delta)
            notes.append(
                "finite kernel: exact enumeration over neighbouring rows and outputs; "
                "ties loss = kappa are decided in floating point (log m(x,t) - log m(x',t))"
            )
        if isinstance(mechanism, _NOISE):
            notes.append(
                "noise mechanism: integer data, neighbours differ by 1 in one "
                "coordinate (sensitivity 1)"
            )
        return k, True, tuple(notes)
