r"""Brier and spherical scores on finite data spaces (negatively oriented).

Both are strictly proper on a finite space (Gneiting & Raftery 2007, §3.1) and so are privacy
scores in the sense of Prop 2 (Bon et al. 2026), with the Appendix B privacy function
:math:`\rho(d, x) = S(d, x)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive.errors import ValidationError
from persuasive.priors.base import Prior, as_dataset
from persuasive.priors.cells import IndependentCellsPrior
from persuasive.priors.discrete import DiscretePrior
from persuasive.scores.base import Score


def _pmf_and_sq_norm(P: Prior, xs: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    """(P({x}) for each dataset row of xs, ||P||_2^2 = sum_y P({y})^2)."""
    if isinstance(P, DiscretePrior):
        sq = float(P.probs @ P.probs)
    elif isinstance(P, IndependentCellsPrior) and all(isinstance(c, np.ndarray) for c in P.cells):
        sq = float(np.prod([c @ c for c in P.cells]))
    else:
        raise ValidationError(
            f"P must be a belief on a finite space (DiscretePrior, or IndependentCellsPrior with "
            f"finite pmf arrays) for the Brier and spherical scores; got {P!r}"
        )
    if xs.shape[-1] != P.dim:
        raise ValidationError(
            f"x must have n = {P.dim} entries to match the belief; got shape {xs.shape}"
        )
    pmf = np.exp(np.asarray(P.logpdf(xs), dtype=np.float64))
    return pmf.reshape(xs.shape[0]), sq


def _rows(x: ArrayLike) -> NDArray[np.float64]:
    return as_dataset(x)[None, :]


@dataclass(frozen=True)
class BrierScore(Score):
    r"""The Brier (quadratic) score on a finite data space (Brier 1950).

    .. math:: \mathrm{BS}(P, x) = \sum_{y \in \mathsf X} \big(P(\{y\}) - \mathbf 1\{y = x\}\big)^2
              = \lVert P \rVert_2^2 - 2 P(\{x\}) + 1

    Negatively oriented, strictly proper, with values in [0, 2]. An outcome outside the support
    of P has :math:`P(\{x\}) = 0`. Beliefs: ``DiscretePrior`` (any dimension), or
    ``IndependentCellsPrior`` whose cells are finite pmf arrays.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.DiscretePrior([0, 1, 2], [0.2, 0.5, 0.3])
    >>> round(pp.BrierScore()(q, 1), 6)
    0.38
    """

    def __call__(self, P: Prior, x: ArrayLike) -> float:
        return float(self._evaluate_many(P, _rows(x))[0])

    def _evaluate_many(self, P: Prior, xs: NDArray[np.float64]) -> NDArray[np.float64]:
        pmf, sq = _pmf_and_sq_norm(P, np.asarray(xs, dtype=np.float64))
        return sq - 2.0 * pmf + 1.0

    def describe(self) -> dict[str, Any]:
        return {"score": "BrierScore"}


@dataclass(frozen=True)
class SphericalScore(Score):
    r"""The spherical score on a finite data space, negatively oriented (Gneiting & Raftery
    2007, eq. 11, sign flipped).

    .. math:: \mathrm{Sph}(P, x) = -\frac{P(\{x\})}{\lVert P \rVert_2}, \qquad
              \lVert P \rVert_2 = \Big(\sum_{y} P(\{y\})^2\Big)^{1/2}

    Strictly proper, with values in [-1, 0]; an outcome outside the support of P scores 0.
    Beliefs as for :class:`BrierScore`.

    Examples
    --------
    >>> import persuasive as pp
    >>> q = pp.DiscretePrior([0, 1], [0.6, 0.4])
    >>> round(pp.SphericalScore()(q, 0), 6)
    -0.83205
    """

    def __call__(self, P: Prior, x: ArrayLike) -> float:
        return float(self._evaluate_many(P, _rows(x))[0])

    def _evaluate_many(self, P: Prior, xs: NDArray[np.float64]) -> NDArray[np.float64]:
        pmf, sq = _pmf_and_sq_norm(P, np.asarray(xs, dtype=np.float64))
        return -pmf / np.sqrt(sq)

    def describe(self) -> dict[str, Any]:
        return {"score": "SphericalScore"}
